# call: `init(group=, job_type=)`
import wandb

run = wandb.init(project="probe", group="exp-1", job_type="worker", config={"worker": 3})
for i in range(4):
    run.log({"loss": 1.0 - i / 10})
run.finish()
