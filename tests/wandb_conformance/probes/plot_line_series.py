# call: `wandb.plot.line_series`
import wandb

run = wandb.init(project="probe")
xs = [0, 1, 2, 3]
run.log({"series": wandb.plot.line_series(xs=xs, ys=[[1, 2, 3, 4], [4, 3, 2, 1]], keys=["up", "down"], title="two")})
run.finish()
