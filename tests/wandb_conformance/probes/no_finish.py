# call: no `finish()`: finished at exit, every row kept
import wandb

run = wandb.init(project="probe", config={"lr": 0.1})
for i in range(30):
    wandb.log({"loss": 1.0 / (i + 1)})
