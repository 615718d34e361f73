"""The maps on a Dask cluster (the optional extra ``tape[dask]``): ``client=`` on every F.map*.

The Function travels once, as the bytes of its saved file, to every worker,
which loads and validates it like any other file; the points go in chunks;
results come back in the order of the points, or a clear error names the
chunk that failed. Workers ignore branch changes and report them; the caller
applies its policy (raise, or retrace and redo the point here), as for a local map.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tape.errors import DistributedError
from tape.function import format

if TYPE_CHECKING:
    from tape.function.function import Function


def pack(F: Function) -> bytes:
    """The Function as the bytes of its saved .npz file."""
    buffer = io.BytesIO()
    F.save(buffer)
    return buffer.getvalue()


def run_chunk(cls: Callable[..., Any], raw: Callable[..., tuple[np.ndarray, ...]], blob: bytes, method: str,
              points: np.ndarray, *rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """On a worker: a map's raw results and failed checks for one chunk of points (cls: the
    Function class, and raw: tape.function.maps.raw, which the worker imports when it unpickles them)."""
    F = format.build(cls, format.read(io.BytesIO(blob)), "ignore")
    return raw(F, method, points, *rows)


def check_client(client: Any) -> None:
    if not all(hasattr(client, name) for name in ("submit", "map", "nthreads")):
        raise TypeError(f"client must be a dask.distributed.Client, got {type(client).__name__}")


def map_on(client: Any, F: Function, raw: Callable[..., tuple[np.ndarray, ...]], method: str, points: np.ndarray,
           *rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """Split points (and the per-point rows that go with them) over the client's workers; the
    columns of raw(F, method, ...) (tape.function.maps.raw) for all points, in order (the last: failed checks)."""
    check_client(client)
    workers = sum(client.nthreads().values())
    if not workers:  # else scatter waits for a worker and times out 30 s later with a bare TimeoutError
        raise DistributedError("the Dask cluster has no workers (client.nthreads() is empty): start some first")
    if not len(points):  # no chunk to send: the empty columns, as a worker would make them
        return run_chunk(type(F), raw, pack(F), method, points, *rows)
    bounds = np.linspace(0, len(points), min(len(points), 2 * workers) + 1).astype(int)
    pieces = list(zip(bounds[:-1], bounds[1:], strict=True))
    # a task, not scattered data: when workers die the scheduler can compute it again, where scattered
    # bytes would be lost with them and every chunk cancelled as "already forgotten"
    blob = client.submit(bytes, pack(F), pure=False)
    futures = client.map(run_chunk, [type(F)] * len(pieces), [raw] * len(pieces), [blob] * len(pieces),
                         [method] * len(pieces),
                         *([array[a:b] for a, b in pieces] for array in (points, *rows)), pure=False)
    parts = []
    for k, (future, (a, b)) in enumerate(zip(futures, pieces, strict=True)):
        try:
            columns = future.result()
        except Exception as exc:
            for rest in futures[k:]:
                rest.cancel()
            raise DistributedError(f"chunk {k} of {len(pieces)} (points {a} to {b - 1}) failed "
                                   f"on a Dask worker: {type(exc).__name__}: {exc}") from exc
        if any(len(column) != b - a for column in columns):
            raise DistributedError(f"chunk {k} came back with {len(columns[0])} rows for {b - a} points")
        parts.append(columns)
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))
