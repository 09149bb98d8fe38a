# call: `log(step=)`
import wandb

run = wandb.init(project="probe")
for i in range(4):
    run.log({"loss": 1.0 / (i + 1)}, step=i * 10)
run.finish()
