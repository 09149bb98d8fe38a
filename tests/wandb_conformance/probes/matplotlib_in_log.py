# call: a matplotlib figure in `log`
import matplotlib
import wandb

matplotlib.use("Agg")
import matplotlib.pyplot as plt

run = wandb.init(project="probe")
fig, ax = plt.subplots()
ax.plot([0, 1, 2], [3, 1, 2])
run.log({"chart": fig})
run.finish()
