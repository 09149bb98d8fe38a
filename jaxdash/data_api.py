"""The names `import jaxdash as wandb` offers for W&B's data types, plots, artifacts, files and alerts.

`jaxdash/__init__.py` re-exports `__all__` from here; the `Run` methods `log_artifact`, `use_artifact`,
`save` and `alert` call `wandb_artifacts.log_artifact_to`, `wandb_artifacts.use_artifact_in`, `files_alerts.save_to`
and `files_alerts.alert_to` with the run.
"""

from __future__ import annotations

from jaxdash import plot
from jaxdash.data_types import Audio, Histogram, Html, Image, Molecule, Object3D, Plotly, Video
from jaxdash.files_alerts import AlertLevel, alert, save
from jaxdash.plot import plot_table
from jaxdash.table import Table
from jaxdash.wandb_artifacts import Artifact, log_artifact, use_artifact

__all__ = [
    "Image", "Table", "Histogram", "Plotly", "Html", "Audio", "Video", "Object3D", "Molecule",
    "plot", "plot_table", "Artifact", "log_artifact", "use_artifact", "save", "alert", "AlertLevel",
]  # fmt: skip
