# call: `init(save_code=True, job_type=)`
import wandb

run = wandb.init(project="probe", save_code=True, job_type="train")
run.log({"loss": 1.0})
run.finish()
