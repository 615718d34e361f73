"""tape-bench's tape.jit rows of array programs written as Numba users write them: an RK4 whose state is a Var
array (a helper ``rhs`` taking and returning it), an n-body step adding forces into ``acc[i, 0]``, an explicit
heat equation written into ``un[i]`` with the arrays swapped. Each is recorded by tape.jit and, beside it, run as
``numba.njit`` on floats (the same source: the value's speed of light, no tape); record + gradient
(``tape.value_and_grad``, a fresh tape) against a replayed ``F.value_and_grad`` of the traced program, interleaved;
and the first call (tape.jit's compile, or its load from the cache) against numba.njit's compile. SIZE: records
per program (about; whole steps)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

import tape
from tape.bench.programs import JIT_ARRAY_RK4, JIT_HEAT, JIT_NBODY

SIZE = 10**6
_BODIES = np.random.default_rng(2).standard_normal((32, 2))
# name: (source, x0, the data after x0 for a number of steps)
JIT_ARRAYS: dict[str, tuple[str, np.ndarray, Callable[[int], tuple]]] = {
    "rk4-array": (JIT_ARRAY_RK4, np.array([1.1, 0.4]),
                  lambda steps: (steps, 1e-4, np.array([0.7, -0.4]), np.array([-0.3, 0.2]))),
    "nbody": (JIT_NBODY, _BODIES, lambda steps: (steps, 0.01, np.linspace(0.5, 1.5, 32))),
    "heat": (JIT_HEAT, np.sin(np.linspace(0.0, 3.0, 2000)), lambda steps: (steps, 0.25)),
}
JIT_ARRAY_WORKLOADS = {"jit-arrays": (SIZE, "records", 120)}  # default size, unit, bytes per unit


def load(source: str, helpers: Callable[[Any], Any] | None = None) -> Any:
    """f of source; ``helpers``: a decorator for the other functions there (numba.njit)."""
    namespace: dict[str, Any] = {"tape": tape, "math": math, "np": np}
    exec(compile(source, "<bench>", "exec"), namespace)
    for name, value in list(namespace.items()):
        if helpers and callable(value) and name != "f" and getattr(value, "__module__", 0) is None:
            namespace[name] = helpers(value)
    return namespace["f"]


def _seconds(fn: Callable[..., object], *args: Any) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _records(jf: Any, x0: np.ndarray, data: tuple) -> int:
    t = tape.Tape(capacity=1 << 16)
    jf(t.array(x0), *data)
    return len(t) - x0.size


def bench_jit_arrays(size: int, repeat: int, progress: Callable[[str], None]) -> dict[str, dict[str, float]]:
    """Per program: records, ns per record (tape.jit recording, numba.njit on floats, record + gradient, replay)
    and first-call seconds; medians of ``repeat`` (at least 3) interleaved runs."""
    rows = {}
    for name, (source, x0, data_of) in JIT_ARRAYS.items():
        progress(f"tape.jit {name}: first call (compile, or load from the cache)")
        f = load(source, numba.njit)
        jf = tape.jit(f)
        first = _seconds(_records, jf, x0, data_of(1))
        per_step = _records(jf, x0, data_of(2)) - _records(jf, x0, data_of(1))
        data = data_of(max(1, size // per_step))
        plain = numba.njit(load(source, numba.njit))
        plain_first = _seconds(plain, x0, *data)
        total = scalar(jf, x0, data_of(1))
        value_and_grad, F = tape.value_and_grad(total), tape.trace(total, x0, data=data)
        recorded: Any = value_and_grad(x0, *data)
        replayed: Any = F.value_and_grad(x0)
        if not all(np.allclose(a, b, rtol=1e-12, atol=0.0) for a, b in zip(recorded, replayed, strict=True)):
            raise AssertionError(f"tape-bench: {name}'s record + gradient and its replay disagree")
        t = tape.Tape(capacity=1 << 16)
        jf(t.array(x0), *data)  # the tape grown to the program (a user's loop reuses it: ``t.clear()``)
        times: dict[str, list[float]] = {"record": [], "njit": [], "record_gradient": [], "replay": []}
        for run in range(max(repeat, 3)):
            progress(f"tape.jit {name}: run {run + 1}")
            t.clear()
            xs = t.array(x0)
            times["record"].append(_seconds(jf, xs, *data))
            times["njit"].append(_seconds(plain, x0, *data))
            times["record_gradient"].append(_seconds(value_and_grad, x0, *data))
            times["replay"].append(_seconds(F.value_and_grad, x0))
        n = len(t) - x0.size
        rows[name] = {"records": n, **{f"{k}_ns_per_record": statistics.median(v) / n * 1e9 for k, v in times.items()},
                      "first_call_s": first, "njit_first_call_s": plain_first}
    return rows


def scalar(jf: Any, x0: np.ndarray, data: tuple) -> Any:
    """jf where it returns a Var, else a tape.jit function of the sum of the Var array it returns."""
    if isinstance(jf(tape.Tape().array(x0), *data), tape.Var):
        return jf

    def total(xs: Any, *data: Any) -> Any:
        return jf(xs, *data).sum()
    return tape.jit(total)


def report_jit_arrays(rows: dict[str, dict[str, float]]) -> str:
    lines = ["\ntape.jit on arrays (Numba code with Var arrays), ns per record, medians:",
             f"  {'program':<10}{'records':>10}{'tape.jit':>10}{'njit':>8}{'rec+grad':>10}{'replay':>8}"
             f"{'ratio':>7}{'first call s':>14}{'njit s':>8}"]
    for name, r in rows.items():
        lines.append(f"  {name:<10}{r['records']:>10,}{r['record_ns_per_record']:>10.1f}"
                     f"{r['njit_ns_per_record']:>8.2f}{r['record_gradient_ns_per_record']:>10.1f}"
                     f"{r['replay_ns_per_record']:>8.1f}"
                     f"{r['record_gradient_ns_per_record'] / r['replay_ns_per_record']:>6.2f}x"
                     f"{r['first_call_s']:>14.2f}{r['njit_first_call_s']:>8.2f}")
    lines.append("  (njit: the same source on floats, no tape; ratio: record + gradient / replayed F.value_and_grad)")
    return "\n".join(lines)
