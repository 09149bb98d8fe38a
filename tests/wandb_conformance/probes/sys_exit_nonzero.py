# call: `sys.exit(3)`: state failed, exit code kept
import sys

import wandb

run = wandb.init(project="probe")
run.log({"loss": 1.0})
sys.exit(3)
