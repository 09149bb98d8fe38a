# call: `wandb.watch(model)` (W&B raises without PyTorch; the run goes on)
import wandb

run = wandb.init(project="probe")
params = {"w": [0.0, 1.0], "b": 0.0}  # a JAX user's parameters: no PyTorch module to hook
try:
    wandb.watch(params, log="gradients", log_freq=10)
except Exception:  # noqa: BLE001 - W&B's own answer here is an error; what matters is that the run goes on
    pass
run.log({"loss": 1.0})
run.finish()
