# call: `config.setdefaults(dict)`
import wandb

run = wandb.init(project="probe", config={"lr": 0.5})
wandb.config.setdefaults({"lr": 0.1, "epochs": 10})
print("OUT", wandb.config.lr, wandb.config.epochs)
run.finish()
