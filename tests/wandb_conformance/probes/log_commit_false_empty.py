# call: `log(commit=False)` then `log({})`
import wandb

run = wandb.init(project="probe")
for i in range(4):
    run.log({"a": i}, commit=False)
    run.log({"b": i * 2}, commit=False)
    run.log({})
run.finish()
