# call: `define_metric(summary="min"/"max")`
import wandb

run = wandb.init(project="probe")
run.define_metric("loss", summary="min")
run.define_metric("acc", summary="max")
for loss, acc in [(0.9, 0.1), (0.3, 0.8), (0.5, 0.6)]:
    run.log({"loss": loss, "acc": acc})
run.finish()
