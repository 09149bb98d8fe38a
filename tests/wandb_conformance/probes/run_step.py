# call: `run.step` through commit=False and step=
import wandb

run = wandb.init(project="probe")
print("OUT", run.step)
run.log({"a": 1})
print("OUT", run.step)
run.log({"b": 1}, commit=False)
print("OUT", run.step)
run.log({"c": 1}, step=10)
print("OUT", run.step)
run.finish()
