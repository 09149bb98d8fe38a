# call: `WANDB_RUN_GROUP`, `WANDB_TAGS`, `WANDB_NOTES`, `WANDB_JOB_TYPE`
import wandb

# env: WANDB_RUN_GROUP=env-group WANDB_TAGS=a,b WANDB_NOTES=from-env WANDB_JOB_TYPE=eval
run = wandb.init(project="probe")
run.log({"loss": 1.0})
run.finish()
