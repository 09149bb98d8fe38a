# call: `wandb.plot.confusion_matrix`
import wandb

run = wandb.init(project="probe")
run.log({"conf": wandb.plot.confusion_matrix(y_true=[0, 1, 1, 2], preds=[0, 1, 2, 2], class_names=["a", "b", "c"])})
run.finish()
