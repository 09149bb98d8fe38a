# call: `log(step=s)` twice: merged into one step
import wandb

run = wandb.init(project="probe")
run.log({"a": 1}, step=3)
run.log({"b": 2}, step=3)
run.log({"c": 3}, step=4)
run.log({"d": 4})
run.finish()
