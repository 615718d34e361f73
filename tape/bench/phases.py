"""The phases that time tape itself: record, replay, sweeps, Function calls, maps, Jacobians, compile."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable

import numba
import numpy as np

import tape
from tape.bench import engines, programs
from tape.bench.timing import summary, timings
from tape.kernels import compiling
from tape.kernels.compiling import cache_dir


def bench_ours(name: str, size: int, repeat: int, progress: Callable[[str], None]) -> dict:
    """Every phase of tape on one workload at one size."""
    plan = programs.PLANS[name](size)
    t, xs, out = engines.tape_record(name, plan)
    n = len(t)
    x = np.asarray(plan["x"], dtype=np.float64)
    F = t.function(xs, out)
    calls = plan["calls"] if name == "seed" else 1

    def repeated(fn):  # (each call's result dropped, as a loop's: a list of 2,000 seed tapes, 400 MB, timed the
        def run():  # page faults of fresh memory, a record at 50-89 µs where it costs 20)
            for _ in range(calls):
                fn()
        return fn if calls == 1 else run

    v = np.ones_like(x)
    jit = jit_compile(name, plan)
    phases = {
        "record": lambda: engines.tape_record(name, plan),
        **({"record, every handle kept": lambda: engines.tape_record(name, plan, keep_all=True)}
           if name == "rdag" else {}),  # a live Python object per record: CPython's GC walks them
        **({"record, tape.jit": lambda data=jit["data"]: engines.tape_jit_record(name, plan, data)}
           if jit else {}),  # compiled (or loaded) beforehand: jit["first_call_s"]
        "record + gradient": engines.tape_dynamic(name, plan),
        **({"record + gradient, tape.jit": engines.tape_jit_gradient(name, plan, jit["data"])}
           if jit else {}),  # tape.value_and_grad of it: the tape of its last call reused
        **({"tape.grad(f)(x)": engines.tape_grad(name, plan)} if name == "seed" else {}),
        **({"record, array API": lambda: engines.tape_array_record(name, plan)}
           if name in ("rosenbrock", "mlp") else {}),
        "forward replay": lambda: t.forward(xs, x),
        "reverse sweep": lambda: t.backward(out),
        "Function: value": lambda: F(x),
        "Function: value_and_grad": lambda: F.value_and_grad(x),
        "Function: jvp": lambda: F.jvp(x, v),
        "Function: hvp": lambda: F.hvp(x, v),
    }
    results = {phase: summary(timings(repeated(fn), repeat, progress, f"{name} {size:,}: {phase}"), n * calls)
               for phase, fn in phases.items()}
    maps = bench_map(F, x, repeat, progress, f"{name} {size:,}")
    tracemalloc.start()
    engines.tape_dynamic(name, plan)()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    stats = F.stats()
    return {"workload": name, "size": size, "records": n, "calls": calls, "constants": t.n_consts,
            "comparisons": stats["comparisons_checked"], "phases": results, "map": maps,
            "tape_bytes_per_record": tape.BYTES_PER_RECORD + 8 * t.n_consts / n,
            "function_working_bytes_per_record": stats["working_bytes"] / n,
            "peak_traced_bytes": peak, "gc_enabled": gc.isenabled(),
            "jit": {k: v for k, v in jit.items() if k != "data"} if jit else None}


def jit_compile(name: str, plan: dict) -> dict | None:
    """The first call of the workload's tape.jit program (compile, or load from the cache), timed,
    its records checked against the Python recorder's; None for a workload without one."""
    if name not in programs.JITTED:
        return None
    data = programs.jit_data(name, plan)
    cached = sum(engines.tape_jitted(name).dispatcher.stats.cache_hits.values())
    start = time.perf_counter()
    t, _, _ = engines.tape_jit_record(name, plan, data)
    seconds = time.perf_counter() - start
    loaded = sum(engines.tape_jitted(name).dispatcher.stats.cache_hits.values()) > cached
    p, _, _ = engines.tape_record(name, plan)
    n = len(p)
    fields = ("_op", "_in0", "_in1", "_val")
    if len(t) != n or not all(np.array_equal(getattr(t, a)[:n], getattr(p, a)[:n]) for a in fields):
        raise AssertionError(f"tape-bench: {name}'s tape.jit program records differently from the Python one")
    return {"first_call_s": seconds, "from_cache": loaded, "data": data}


def bench_map(F, x: np.ndarray, repeat: int, progress: Callable[[str], None], label: str) -> dict:
    """map_value_and_grad over many points near x, on one thread and on all of them."""
    points = int(min(10_000, max(4, 2_000_000 // len(F))))
    X = x + np.random.default_rng(3).uniform(-1e-3, 1e-3, (points, len(x)))
    threads = numba.get_num_threads()
    out = {}
    for k in sorted({1, threads}):
        numba.set_num_threads(k)
        try:
            phase = f"map_value_and_grad, {k} thread{'s' if k > 1 else ''}"
            out[phase] = summary(timings(lambda: F.map_value_and_grad(X), repeat, progress, f"{label}: {phase}"),
                                 len(F) * points)
            out[phase]["points"] = points
        finally:
            numba.set_num_threads(threads)
    return out


def bench_jacobian(repeat: int, progress: Callable[[str], None]) -> dict:
    """The Jacobian of a 100-input, 100-output tape: forward vs reverse, 1 vs k directions per sweep."""
    rng = np.random.default_rng(4)
    W = rng.normal(size=(100, 100)).tolist()

    def f(x):
        return [programs.pairwise_sum([tape.tanh(W[j][i] * x[i]) for i in range(100)]) for j in range(100)]

    F = tape.trace(f, rng.uniform(-1, 1, 100))
    x = rng.uniform(-1, 1, 100)
    rows = {}
    for mode in ("forward", "reverse"):
        for block in (1, 16, 100):
            label = f"{mode}, {block} direction{'s' if block > 1 else ''} per sweep"
            seconds = timings(lambda m=mode, b=block: F.jacobian(x, mode=m, block=b), repeat,  # type: ignore[misc]
                              progress, f"jacobian: {label}")
            rows[label] = float(np.median(seconds))
    rows["value_and_grad of one output (for scale)"] = float(np.median(timings(
        lambda: F.vjp(x, np.eye(100)[0]), repeat, progress, "jacobian: one vjp")))
    return {"records": len(F), "seconds": rows}


COMPILE_PROBE = """
import time
start = time.perf_counter()
import numba, numpy
imported = time.perf_counter()
import tape
t = tape.Tape()
x = t.var(0.5)
y = tape.sin(x) * x + 1.0
t.forward([x], [0.25])
t.backward(y)
F = t.function([x], y)
F([0.3]); F.value_and_grad([0.3])
tape.log(0.0)
G = tape.trace(lambda v: (tape.tanh(v) * v[0] + (v - 1.0) * v).sum(), numpy.linspace(0.0, 1.0, 5000))
G.value_and_grad(numpy.ones(5000))  # array records
print(imported - start, time.perf_counter() - imported)
from tape.sweeps import fused_runs
fused_runs.untwinned()  # the fused kernels too (not their NumPy twins), untimed
R = tape.trace(lambda v: ((v[1:] - v[:-1] ** 2) ** 2).sum(), numpy.ones(5000))  # a fused run
R.value_and_grad(numpy.ones(5000))
"""


def compile_times() -> dict[str, float]:
    """Seconds to import tape and take a first gradient of a scalar tape, a Function and an array
    program in a fresh process, after importing NumPy and Numba: with an empty
    Numba cache (compile), then with it filled."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        # the tape this process runs, not one that python -c finds first in the working directory (a checkout's
        # root, where the README's lines run: its kernels would be other files, and the compile paid twice)
        probe = f"import sys; sys.path.insert(0, {os.path.dirname(os.path.dirname(tape.__file__))!r})\n{COMPILE_PROBE}"
        runs = [subprocess.run([sys.executable, "-c", probe], env=env, check=True,
                               capture_output=True, text=True) for _ in range(2)]
        # what the probe compiled, for this process to load rather than compile again: Numba's
        # NUMBA_CACHE_DIR locator and tape's lay files out alike (one subfolder per source folder)
        target = os.environ.get("NUMBA_CACHE_DIR") or cache_dir()
        for folder, _, files in os.walk(cache):
            into = os.path.join(target, os.path.relpath(folder, cache))
            os.makedirs(into, exist_ok=True)
            for name in files:
                if not os.path.exists(os.path.join(into, name)):
                    shutil.copy2(os.path.join(folder, name), into)
    (numba_import, first), (_, cached) = (map(float, r.stdout.split()) for r in runs)
    return {"numpy_numba_import_s": numba_import, "first_call_s": first, "cached_load_s": cached}


def warm_up() -> None:
    """Load the compiled kernels before timing anything: this process times steady state, so a kernel loads or
    compiles at its first use (compiling.EAGER, until main returns), not after its stand-ins have run seconds."""
    compiling.EAGER = True
    t = tape.Tape()
    x = t.var(0.5)
    y = tape.sin(x) + 1.0
    t.forward([x], [0.5])
    t.backward(y)
    F = t.function([x], y)
    F([0.1])
    F.value_and_grad([0.1])
