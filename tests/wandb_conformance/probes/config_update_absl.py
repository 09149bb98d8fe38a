# call: `config.update(absl.flags.FLAGS)`
import wandb
from absl import flags

flags.DEFINE_float("learning_rate", 0.1, "lr")
flags.DEFINE_integer("num_epochs", 3, "epochs")
FLAGS = flags.FLAGS
FLAGS(["probe", "--num_epochs=7"])
wandb.init(project="probe")
wandb.config.update(FLAGS)
print("OUT", wandb.config.learning_rate, wandb.config.num_epochs)
wandb.finish()
