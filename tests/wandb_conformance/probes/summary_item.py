# call: `run.summary[k] = v`, `summary.k = v`, `wandb.summary`, `summary.update`
import wandb

run = wandb.init(project="probe")
run.log({"acc": 0.7})
run.summary["best_acc"] = 0.9
wandb.run.summary.best_loss = 0.1
wandb.summary["final_epoch"] = 3
run.summary.update({"test_acc": 0.95})
print("OUT", run.summary["best_acc"], run.summary.best_loss)
run.finish()
