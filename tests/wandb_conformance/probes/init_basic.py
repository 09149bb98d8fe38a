# call: `wandb.init(project, config)`, `run.log`, `run.finish`
import wandb

run = wandb.init(project="probe", config={"lr": 0.01, "epochs": 3})
for epoch in range(3):
    run.log({"loss": 1.0 / (epoch + 1), "epoch": epoch})
run.finish()
