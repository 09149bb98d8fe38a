# call: `define_metric("val/*", summary="max")`
import wandb

run = wandb.init(project="probe")
run.define_metric("val/*", summary="max")
for i in range(3):
    run.log({"val/acc": [0.2, 0.9, 0.4][i], "val/f1": [0.1, 0.3, 0.2][i], "loss": 1.0})
run.finish()
