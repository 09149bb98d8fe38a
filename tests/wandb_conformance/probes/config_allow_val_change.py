# call: `config.update(d, allow_val_change=True)`
import wandb

run = wandb.init(project="probe", config={"lr": 0.1})
wandb.config.update({"lr": 0.05}, allow_val_change=True)
print("OUT", wandb.config.lr)
run.finish()
