# call: `config.x`, `config["x"]`, `in`, `get`, `keys`
import wandb

run = wandb.init(project="probe", config={"lr": 0.01, "layers": [64, 32]})
c = wandb.config
print("OUT", c.lr, c["lr"], c.layers, "lr" in c, c.get("missing", 5), sorted(c.keys()))
run.finish()
