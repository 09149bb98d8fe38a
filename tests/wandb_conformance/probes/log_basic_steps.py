# call: `wandb.log(dict)`: one step per call
import wandb

wandb.init(project="probe")
for i in range(5):
    wandb.log({"train/loss": 1.0 / (i + 1), "train/acc": i / 5})
wandb.finish()
