# call: `wandb.Plotly(fig)` and a plotly figure in `log`
import plotly.graph_objects as go
import wandb

run = wandb.init(project="probe")
fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2]))
run.log({"wrapped": wandb.Plotly(fig)})
run.log({"raw": fig})
run.finish()
