# call: `wandb.Image(matplotlib figure)`
import matplotlib
import wandb

matplotlib.use("Agg")
import matplotlib.pyplot as plt

run = wandb.init(project="probe")
fig, ax = plt.subplots()
ax.plot([0, 1, 2], [0, 1, 4])
run.log({"curve_png": wandb.Image(fig, caption="y = x^2")})
run.finish()
