# call: `init(dir=)`
import os

import wandb

os.makedirs("out", exist_ok=True)
run = wandb.init(project="probe", dir="out")
run.log({"loss": 0.5})
run.log({"loss": 0.25})
wandb.finish()
