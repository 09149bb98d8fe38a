# call: `log(a, commit=False); log(b)`: one step
import wandb

run = wandb.init(project="probe")
for i in range(3):
    run.log({"val/loss": 0.5 - i / 10}, commit=False)
    run.log({"train/loss": 1.0 - i / 10})
run.finish()
