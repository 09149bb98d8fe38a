# call: `init(settings=wandb.Settings(...))`
import wandb

run = wandb.init(project="probe", settings=wandb.Settings(console="off", quiet=True))
run.log({"loss": 1.0})
run.finish()
