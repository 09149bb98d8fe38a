# call: `define_metric(name)`, `define_metric("val/*", step_metric=)`
import wandb

run = wandb.init(project="probe")
run.define_metric("epoch")
run.define_metric("val/*", step_metric="epoch")
for i in range(6):
    run.log({"train/loss": 1.0 / (i + 1)})
    if i % 2 == 1:
        run.log({"val/loss": 0.5 / (i + 1), "epoch": i // 2})
run.finish()
