# call: nested dicts in `log` (W&B keys `a.b`)
import wandb

run = wandb.init(project="probe")
run.log({"train": {"loss": 0.5, "acc": 0.8}, "lr": 0.1})
run.log({"train": {"loss": 0.4, "acc": 0.9}, "lr": 0.05})
run.finish()
