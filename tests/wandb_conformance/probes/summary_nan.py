# call: a NaN in `run.summary` (the last value logged, and one set)
import wandb

run = wandb.init(project="probe")
run.log({"loss": 1.0, "acc": 0.5})
run.log({"loss": float("nan"), "acc": 0.75})
run.summary["best"] = float("nan")
run.finish()
