# call: a NumPy array in `log` (a histogram)
import numpy as np
import wandb

run = wandb.init(project="probe")
rng = np.random.default_rng(0)
for i in range(2):
    run.log({"weights": rng.normal(size=100), "loss": 1.0 - i / 2})
run.finish()
