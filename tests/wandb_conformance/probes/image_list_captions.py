# call: a list of `wandb.Image` with captions
import numpy as np
import wandb

run = wandb.init(project="probe")
images = [wandb.Image(np.full((6, 6), i * 40, dtype=np.uint8), caption=f"digit {i}") for i in range(3)]
run.log({"examples": images})
run.finish()
