# call: `wandb.alert(title, text, level=wandb.AlertLevel.WARN)`
import wandb

run = wandb.init(project="probe")
run.log({"loss": float("nan")})
wandb.alert(title="Loss is NaN", text="loss became NaN at step 0", level=wandb.AlertLevel.WARN)
run.finish()
