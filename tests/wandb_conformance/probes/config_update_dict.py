# call: `config.update(dict)`, `run.config.update`
import wandb

run = wandb.init(project="probe", config={"lr": 0.1})
wandb.config.update({"epochs": 5, "optimizer": "adam"})
run.config.update({"warmup": 100})
run.log({"loss": 1.0})
run.finish()
