"""map_value_and_grad on a Dask cluster (the optional extra ``tape[dask]``).

The Function travels once, as the bytes of its saved file, to every worker,
which loads and validates it like any other file; the points go in chunks;
results come back in the order of the points, or a clear error names the
chunk that failed. Branch policy is applied by the caller, as for a local map.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import numpy as np

from tape import _format
from tape._replay import Replay
from tape.errors import TapeError


class DistributedError(TapeError, RuntimeError):
    """A chunk of points failed on a Dask worker."""


def pack(F: Replay) -> bytes:
    """The Function as the bytes of its saved .npz file."""
    buffer = io.BytesIO()
    F.save(buffer)
    return buffer.getvalue()


def run_chunk(cls: Callable[..., Any], blob: bytes, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """On a worker: values, gradients and failed checks of one chunk of points (cls: the
    Function class, which the worker imports when it unpickles it)."""
    F = cls(_format.read(io.BytesIO(blob)), on_branch_change="ignore")
    return F._map_reverse_raw(points, np.ones((len(points), 1)))


def map_value_and_grad_on(client, F: Replay, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split points over the client's workers; (values (N, 1), gradients (N, n), failed (N,)) in order."""
    workers = sum(client.nthreads().values())
    if not workers:  # else scatter waits for a worker and times out 30 s later with a bare TimeoutError
        raise DistributedError("the Dask cluster has no workers (client.nthreads() is empty): start some first")
    bounds = np.linspace(0, len(points), min(len(points), 2 * workers) + 1).astype(int)
    chunks = [points[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    # a task, not scattered data: when workers die the scheduler can compute it again, where scattered
    # bytes would be lost with them and every chunk cancelled as "already forgotten"
    blob = client.submit(bytes, pack(F), pure=False)
    futures = client.map(run_chunk, [type(F)] * len(chunks), [blob] * len(chunks), chunks, pure=False)
    parts = []
    for k, (future, chunk) in enumerate(zip(futures, chunks, strict=True)):
        try:
            values, grads, failed = future.result()
        except Exception as exc:
            for rest in futures[k:]:
                rest.cancel()
            raise DistributedError(f"chunk {k} of {len(chunks)} (points {bounds[k]} to {bounds[k + 1] - 1}) failed "
                                   f"on a Dask worker: {type(exc).__name__}: {exc}") from exc
        if values.shape != (len(chunk), 1) or grads.shape != (len(chunk), F.n_inputs):
            raise DistributedError(f"chunk {k} came back with {len(values)} rows for {len(chunk)} points")
        parts.append((values, grads, failed))
    if not parts:
        return np.empty((0, 1)), np.empty((0, F.n_inputs)), np.empty(0, np.int64)
    values, grads, failed = (np.concatenate(column) for column in zip(*parts, strict=True))
    return values, grads, failed
