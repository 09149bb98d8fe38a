# call: `log(step=)` below the current step: dropped
import wandb

run = wandb.init(project="probe")
run.log({"a": 1}, step=5)
run.log({"a": 2}, step=3)
run.log({"a": 3}, step=6)
run.finish()
