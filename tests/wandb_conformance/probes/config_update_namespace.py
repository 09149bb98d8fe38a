# call: `config.update(argparse.Namespace)`
import argparse

import wandb

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--lr", type=float, default=0.01)
args = parser.parse_args(["--lr", "0.5"])
wandb.init(project="probe")
wandb.config.update(args)
wandb.log({"loss": 1.0})
print("OUT", wandb.config.batch_size, wandb.config.lr)
wandb.finish()
