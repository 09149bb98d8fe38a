# call: nested dicts in `config`
import wandb

run = wandb.init(project="probe", config={"optimizer": {"name": "adam", "lr": 0.001}, "model": {"depth": 4}})
print("OUT", wandb.config.optimizer["lr"], wandb.config["model"]["depth"])
run.log({"loss": 1.0})
run.finish()
