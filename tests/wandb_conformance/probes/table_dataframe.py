# call: `wandb.Table(dataframe=)`
import pandas as pd
import wandb

run = wandb.init(project="probe")
df = pd.DataFrame({"x": [1, 2, 3], "y": [0.5, 0.25, 0.125], "name": ["a", "b", "c"]})
run.log({"frame": wandb.Table(dataframe=df)})
run.finish()
