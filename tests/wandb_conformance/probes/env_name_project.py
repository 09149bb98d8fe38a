# call: `WANDB_NAME`, `WANDB_PROJECT`
import wandb

# env: WANDB_NAME=env-run WANDB_PROJECT=env-project
run = wandb.init()
run.log({"loss": 1.0})
print("OUT", run.name, run.project)
run.finish()
