# call: config set after logging
import wandb

run = wandb.init(project="probe")
for i in range(3):
    run.log({"loss": 1.0 / (i + 1)})
wandb.config.final_lr = 0.001
run.finish()
