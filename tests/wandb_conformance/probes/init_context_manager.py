# call: `with wandb.init() as run:`
import wandb

with wandb.init(project="probe", config={"lr": 3e-4}) as run:
    for i in range(3):
        run.log({"loss": 3 - i})
