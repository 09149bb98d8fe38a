"""`wandb.Table` under `import jaxdash as wandb`: rows under named columns, from lists or a pandas DataFrame.

Same constructor and methods as wandb's (`columns=`, `data=`, `rows=`, `dataframe=`, `add_data`,
`add_column`, `get_column`, `get_index`, `iterrows`); like wandb's, a row of the wrong length raises
a ValueError naming the row. Logged, the table is the run store's artifacts/tables/<key>.json (the
page's table), TensorBoard's text at the end and a `wandb.Table` in the W&B copy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from runwriters.base import Table as StoreTable


class Table:
    """`wandb.Table(columns=None, data=None, rows=None, dataframe=None, dtype=None, optional=True, ...)`."""

    MAX_ROWS = 10000
    MAX_ARTIFACT_ROWS = 200000

    def __init__(
        self,
        columns: Sequence[str] | None = None,
        data: Sequence[Sequence[Any]] | np.ndarray | None = None,
        rows: Sequence[Sequence[Any]] | None = None,
        dataframe: Any = None,
        dtype: Any = None,
        optional: Any = True,
        allow_mixed_types: bool = False,
        log_mode: str | None = None,
    ) -> None:
        if dataframe is None and data is not None and hasattr(data, "columns") and hasattr(data, "itertuples"):
            dataframe, data = data, None  # wandb.Table(data=df) is a DataFrame too
        if dataframe is not None:
            columns = [str(c) for c in dataframe.columns]
            data = [list(r) for r in dataframe.itertuples(index=False, name=None)]
        data = rows if data is None else data
        body = [list(r) for r in (np.asarray(data).tolist() if isinstance(data, np.ndarray) else data or [])]
        width = len(body[0]) if body else 0
        self.columns = [str(c) for c in columns] if columns is not None else [f"Column {i + 1}" for i in range(width)]
        self.data: list[list[Any]] = []
        for row in body:
            self.add_data(*row)

    def add_data(self, *data: Any) -> None:
        """Append one row (as wandb's `Table.add_data`)."""
        if len(data) != len(self.columns):
            raise ValueError(f"wandb.Table.add_data: {len(data)} cells for {len(self.columns)} columns {self.columns}")
        self.data.append(list(data))

    def add_column(self, name: str, data: Sequence[Any] | np.ndarray, optional: bool = False) -> None:
        """Add a column of `len(data)` cells (as wandb's: the table must be empty or that long)."""
        cells = np.asarray(data).tolist() if isinstance(data, np.ndarray) else list(data)
        if name in self.columns:
            raise ValueError(f"wandb.Table.add_column: column {name!r} exists")
        if self.data and len(cells) != len(self.data):
            raise ValueError(f"wandb.Table.add_column({name!r}): {len(cells)} cells for {len(self.data)} rows")
        if not self.data:
            self.data = [[] for _ in cells]
        self.columns.append(str(name))
        for row, cell in zip(self.data, cells, strict=True):
            row.append(cell)

    def get_column(self, name: str, convert_to: str | None = None) -> list[Any] | np.ndarray:
        """The cells of one column; `convert_to="numpy"` gives an array."""
        i = self.columns.index(name)
        cells = [row[i] for row in self.data]
        return np.array(cells) if convert_to == "numpy" else cells

    def get_index(self) -> list[int]:
        """Row indices (wandb returns an index column)."""
        return list(range(len(self.data)))

    def iterrows(self) -> Iterator[tuple[int, list[Any]]]:
        """(index, row) of every row."""
        yield from enumerate(self.data)

    def get_dataframe(self) -> Any:
        """The table as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.data, columns=self.columns)

    def to_store(self) -> StoreTable:
        """The run store's table (numbers as plain values, images as nested pixel lists)."""
        return StoreTable(list(self.columns), [[_plain(c) for c in r] for r in self.data])

    def __len__(self) -> int:
        return len(self.data)


def _plain(cell: Any) -> Any:
    if isinstance(cell, (str, int, float, bool)) or cell is None:
        return cell
    pixels = getattr(cell, "pixels", None)
    if isinstance(pixels, np.ndarray):
        return pixels.tolist()  # a wandb.Image cell: a nested list the W&B writer turns back into an image
    try:
        arr = np.asarray(cell)
    except Exception:  # noqa: BLE001 - an object numpy cannot take: its text
        return str(cell)
    if arr.dtype == object:
        return str(cell)
    return arr.item() if arr.size == 1 else arr.tolist()
