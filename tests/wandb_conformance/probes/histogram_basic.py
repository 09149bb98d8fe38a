# call: `wandb.Histogram(values)` per step
import numpy as np
import wandb

run = wandb.init(project="probe")
rng = np.random.default_rng(0)
for _i in range(3):
    run.log({"grads": wandb.Histogram(rng.normal(size=500))})
run.finish()
