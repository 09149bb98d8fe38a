# call: `init(tags=, notes=)`
import wandb

run = wandb.init(project="probe", tags=["baseline", "jax"], notes="first try with the small model")
run.log({"loss": 1.0})
run.finish()
