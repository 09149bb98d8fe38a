# call: `wandb.config.x = v`, `wandb.config["x"] = v` after init
import wandb

wandb.init(project="probe")
wandb.config.step_size = 0.001
wandb.config["batch_size"] = 32
config = wandb.config
config.dropout = 0.1
wandb.log({"loss": 1.0})
wandb.finish()
