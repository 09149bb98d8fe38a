# call: NaN and inf in `log`
import wandb

run = wandb.init(project="probe")
run.log({"loss": float("nan")})
run.log({"loss": float("inf")})
run.log({"loss": 0.5})
run.finish()
