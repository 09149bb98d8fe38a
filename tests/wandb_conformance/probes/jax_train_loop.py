# call: a jitted JAX training loop: config, per-step `log`, validation with `commit=False`, summary
import jax
import jax.numpy as jnp
import wandb

config = {"lr": 0.1, "steps": 20, "seed": 0}
run = wandb.init(project="probe-jax", config=config, job_type="train")
x = jnp.linspace(-1.0, 1.0, 32)
y = 2.0 * x - 1.0


@jax.jit
def step(params, lr):
    def loss_fn(p):
        return jnp.mean((p[0] * x + p[1] - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return params - lr * grads, loss


params = jnp.zeros(2)
for i in range(wandb.config.steps):
    params, loss = step(params, wandb.config.lr)
    if i % 5 == 4:
        wandb.log({"val/w": params[0], "val/b": params[1]}, commit=False)
    wandb.log({"train/loss": loss})
run.summary["final_loss"] = float(loss)
run.finish()
