"""Many `run.log` rows handed to wandb-core in one hop, not one hop per row.

`run.log` builds a record and then waits while wandb's asyncio thread writes it to the wandb-core
socket: a thread hop, a wake-up and a `send` for every row. Logging every step of a loop that runs
4,000 steps a second, that hop was most of W&B's CPU, on the cores the training loop wants
(`python -m benchmarks.wandb_rows`: 77 us of Python + 63 us of wandb-core a row one at a time,
23 + 36 us in one hop per block of 1,000: 0.42x).

Inside `with one_hop(run):` every call is still `run.log` (its checks, its step bookkeeping, its
record), but the records it would publish are kept, then sent in order by one coroutine on wandb's
own asyncio thread, through wandb's own client. Where this wandb's internals differ from the ones
this was written against (wandb 0.31: `Run._interface` an `InterfaceSock` with `_publish`,
`_assign`, `_client` and `_asyncer`), the block runs unbatched, as plain `run.log` calls.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

_NEEDED = ("_publish", "_assign", "_client", "_asyncer")
_lock = threading.Lock()  # one batch at a time per process: a second block waits for the first


def _interface(run: Any) -> Any | None:
    """The run's socket interface, if it has everything a batch needs."""
    interface = getattr(run, "_interface", None)
    if interface is None or not all(hasattr(interface, name) for name in _NEEDED):
        return None
    if "_publish" in vars(interface):  # someone else's wrapper: leave it alone
        return None
    return interface


@contextlib.contextmanager
def one_hop(run: Any) -> Iterator[None]:
    """Batch the records that `run.log` (and `define_metric`) publish inside the block; send them at its end."""
    interface = _interface(run)
    if interface is None:
        yield
        return
    with _lock:
        records: list[Any] = []
        interface._publish = lambda record, nowait=False: records.append(record)  # noqa: ARG005
        try:
            yield
        finally:
            del interface._publish  # the class's own `_publish` again, for every other caller
            if records:
                interface._asyncer.run(lambda: _send(interface, records))


async def _send(interface: Any, records: list[Any]) -> None:
    """Publish `records` in order, as `InterfaceSock._publish` does one by one."""
    from wandb.proto import wandb_server_pb2 as spb

    for record in records:
        interface._assign(record)
        request = spb.ServerRequest()
        request.record_publish.CopyFrom(record)
        await interface._client.publish(request)
