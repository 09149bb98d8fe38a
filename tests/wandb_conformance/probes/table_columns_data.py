# call: `wandb.Table(columns=, data=)`
import wandb

run = wandb.init(project="probe")
table = wandb.Table(columns=["id", "pred", "label"], data=[[0, 3, 3], [1, 5, 2]])
run.log({"predictions": table})
run.finish()
