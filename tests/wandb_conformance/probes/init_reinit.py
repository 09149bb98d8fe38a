# call: `init(reinit=True)`: one run after another (cross-validation folds)
import wandb

for fold in range(2):
    run = wandb.init(project="probe", group="cv", name=f"fold-{fold}", reinit=True, config={"fold": fold})
    run.log({"val_loss": 0.5 + fold})
    run.finish()
