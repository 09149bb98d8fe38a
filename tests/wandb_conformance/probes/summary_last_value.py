# call: summary = last logged value; read back; overwritten
import wandb

run = wandb.init(project="probe")
for i in range(4):
    run.log({"loss": 4 - i, "acc": i / 4})
print("OUT", run.summary["loss"], run.summary["acc"])
run.summary["loss"] = 0.0
run.finish()
