# call: an uncaught exception: rows kept, state failed
import wandb

run = wandb.init(project="probe")
for i in range(5):
    run.log({"loss": 1.0 / (i + 1)})
raise RuntimeError("diverged")
