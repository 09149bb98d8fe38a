# call: `wandb.save(path)`
from pathlib import Path

import wandb

run = wandb.init(project="probe")
Path("model.ckpt").write_text("weights")
wandb.save("model.ckpt")
run.log({"loss": 1.0})
run.finish()
