# call: `config.update` changing a value without allow_val_change
import wandb

run = wandb.init(project="probe", config={"lr": 0.1})
try:
    wandb.config.update({"lr": 0.2})
    print("OUT changed")
except Exception as exc:
    print("OUT refused", type(exc).__name__)
print("OUT", wandb.config.lr)
run.finish()
