# call: `init(mode="disabled")`
import wandb

run = wandb.init(project="probe", mode="disabled", config={"lr": 1})
run.log({"acc": 0.5})
print("OUT", wandb.config["lr"])
run.finish()
