# call: SIGTERM: every row kept, state stopped
# expect: {"state": "stopped", "history": {"0": {"loss": 1.0}, "1": {"loss": 0.5}, "2": {"loss": 0.25}}, "summary": {"loss": 0.25}}
import os
import signal

import wandb

run = wandb.init(project="probe")
for loss in (1.0, 0.5, 0.25):
    run.log({"loss": loss})
os.kill(os.getpid(), signal.SIGTERM)
