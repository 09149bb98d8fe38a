# call: `wandb.Artifact`, `add_file`, `run.log_artifact`
from pathlib import Path

import wandb

run = wandb.init(project="probe")
Path("data.csv").write_text("x,y\n1,2\n")
art = wandb.Artifact("dataset", type="dataset", description="tiny")
art.add_file("data.csv")
run.log_artifact(art)
run.log({"loss": 1.0})
run.finish()
