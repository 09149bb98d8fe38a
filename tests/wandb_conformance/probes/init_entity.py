# call: `init(entity=, anonymous=, sync_tensorboard=, monitor_gym=)`
import wandb

run = wandb.init(entity="my-team", project="probe", anonymous="allow", sync_tensorboard=False, monitor_gym=False)
run.log({"loss": 0.5})
run.finish()
