# call: `wandb.plot.line`
import wandb

run = wandb.init(project="probe")
table = wandb.Table(data=[[x, x * x] for x in range(5)], columns=["x", "y"])
run.log({"square": wandb.plot.line(table, "x", "y", title="y = x^2")})
run.finish()
