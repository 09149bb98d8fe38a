# call: no `finish()` with a step left open by `commit=False`
import wandb

run = wandb.init(project="probe")
for i in range(3):
    wandb.log({"a": i})
wandb.log({"b": 1}, commit=False)
