# call: `define_metric(hidden=True)`
import wandb

run = wandb.init(project="probe")
run.define_metric("debug/grad_norm", hidden=True)
for i in range(3):
    run.log({"debug/grad_norm": 1.0 + i, "loss": 1.0})
run.finish()
