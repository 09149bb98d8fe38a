# call: `define_metric(summary="first")`, `summary="none"`, `summary="last"`
import wandb

run = wandb.init(project="probe")
run.define_metric("val_loss", summary="first")
run.define_metric("noise", summary="none")
run.define_metric("lr", summary="last")
for v in [0.5, 0.2, 0.7]:
    run.log({"val_loss": v, "noise": v * 2, "lr": v / 10})
run.finish()
