import wandb

run = wandb.init(project="probe")
try:
    wandb.watch(None)
    print("OUT watched")
except Exception as exc:
    print("OUT refused", type(exc).__name__)
run.log({"loss": 1.0})
run.finish()
