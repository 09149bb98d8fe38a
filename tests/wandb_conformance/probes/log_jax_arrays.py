# call: JAX arrays (0-d device arrays) in `log`
import jax.numpy as jnp
import wandb

run = wandb.init(project="probe")
for i in range(3):
    loss = jnp.mean(jnp.arange(4.0) * i)
    run.log({"loss": loss, "acc": jnp.float32(i / 4)})
run.finish()
