# call: string values in `summary`
import wandb

run = wandb.init(project="probe")
run.log({"loss": 0.5})
run.summary["status"] = "converged"
run.summary["best_model"] = "ckpt-12"
run.finish()
