import wandb

run = wandb.init(project="probe")
run.define_metric("val_loss", summary="best", goal="minimize")
run.define_metric("noise", summary="none")
for v in [0.5, 0.2, 0.7]:
    run.log({"val_loss": v, "noise": v * 2})
run.finish()
