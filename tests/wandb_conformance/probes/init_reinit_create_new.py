# call: `init(reinit="create_new")`: two runs at once
import wandb

a = wandb.init(project="probe", name="a", reinit="create_new")
b = wandb.init(project="probe", name="b", reinit="create_new")
a.log({"x": 1})
b.log({"x": 2})
a.log({"x": 3})
b.finish()
a.finish()
