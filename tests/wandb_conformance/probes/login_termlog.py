# call: `wandb.login()`, `wandb.termlog()`
import wandb

wandb.login(anonymous="never", relogin=False)
wandb.termlog("starting")
run = wandb.init(project="probe")
run.log({"loss": 1.0})
run.finish()
