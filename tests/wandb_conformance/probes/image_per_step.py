# call: `wandb.Image(array, caption=)` at every step
import numpy as np
import wandb

run = wandb.init(project="probe")
for i in range(3):
    run.log({"pred": wandb.Image(np.full((4, 4, 3), i / 3), caption=f"step {i}"), "loss": 1.0 / (i + 1)})
run.finish()
