# call: `init(config=argparse.Namespace)`
import argparse

import wandb

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args([])
run = wandb.init(project="probe", config=args)
run.log({"loss": 1.0})
print("OUT", wandb.config.lr, wandb.config.epochs)
run.finish()
