# call: strings in `log`
import wandb

run = wandb.init(project="probe")
run.log({"phase": "warmup", "loss": 1.0})
run.log({"phase": "train", "loss": 0.5})
run.finish()
