# call: `run.project/.name/.id/.step/.dir/.group/.job_type/.notes/.tags`, `wandb.run`
import os

import wandb

run = wandb.init(project="probe-attrs", name="attrs", id="attrs0001")
run.log({"a": 1})
run.log({"a": 2})
print("OUT", run.project, run.name, run.id, run.step, os.path.isdir(run.dir), wandb.run is run)
print("OUT", run.group, run.job_type, run.notes, list(run.tags))
run.finish()
