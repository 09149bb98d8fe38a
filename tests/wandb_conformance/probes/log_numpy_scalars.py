# call: NumPy scalars and 0-d arrays in `log`
import numpy as np
import wandb

run = wandb.init(project="probe")
run.log({"f32": np.float32(0.5), "i64": np.int64(7), "arr0d": np.array(1.25), "f64": np.float64(2.5)})
run.finish()
