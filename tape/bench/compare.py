"""The comparisons of tape-bench: other engines and the C reference, timed interleaved with ours."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tape.bench import c_reference, engines, programs
from tape.bench.timing import interleaved


def bench_compare(name: str, size: int, repeat: int, progress: Callable[[str], None]) -> tuple[list, list]:
    """Other engines beside ours, interleaved run by run, at the same size."""
    rows, notes = [], []
    for engine in engines.ENGINES[1:]:
        if name not in engine.workloads:
            continue
        reason = engine.missing()
        if reason:
            notes.append(reason)
            continue
        esize = min(size, engine.cap.get(name, size))
        plan = programs.PLANS[name](esize)
        calls = plan["calls"] if name == "seed" else 1
        for mode, factory, ours_factory in (("record + gradient", engine.dynamic, engines.tape_dynamic),
                                            ("replayed value_and_grad", engine.compiled, engines.tape_compiled)):
            if factory is None:
                continue
            try:
                setup, theirs = engines.timed_setup(factory, name, plan)
            except Exception as exc:  # an optional engine failing must not end the run
                notes.append(f"{engine.name}: {type(exc).__name__}: {exc}")
                continue
            ours_s, theirs_s = interleaved(ours_factory(name, plan), theirs, repeat, calls, progress,
                                           f"{name} {esize:,}: {engine.name}")
            rows.append({"engine": engine.name, "mode": mode, "size": esize, "setup_s": setup,
                         "ours_s": ours_s, "theirs_s": theirs_s, "ratio": theirs_s / ours_s, "note": engine.note})
    rows += compare_recorder(name, size, repeat, progress)
    if name == "rdag":
        rows += compare_c(size, repeat, progress, notes)
    return rows, notes


def compare_recorder(name: str, size: int, repeat: int, progress: Callable[[str], None]) -> list:
    """The Python recorder's own rows: rdag with every handle kept in a list against plain floats kept
    the same way (the floor) and against itself with tape.pace_gc(False); seed's tape.grad(f)(x) against
    the articles' Node engine (a micrograd-style engine) doing value and gradient."""
    plan = programs.PLANS[name](size)
    pairs: tuple[tuple[str, str, Callable[[], object]], ...]
    if name == "rdag":
        def kept() -> object:
            return engines.tape_record(name, plan, keep_all=True)

        pairs = (("record, every handle kept", "plain floats kept in a list (no gradient)",
                  engines.plain_floats(name, plan)),
                 ("record, every handle kept", "the same with tape.pace_gc(False)",
                  lambda: engines.tape_record_unpaced(name, plan)))
    elif name == "seed":
        kept = engines.tape_grad(name, plan)  # type: ignore[assignment]
        pairs = (("tape.grad(f)(x)", "articles' Node engine, value and gradient",
                  engines.baseline_dynamic(name, plan)),)
    else:
        return []
    calls = plan["calls"] if name == "seed" else 1
    rows = []
    for mode, engine, theirs in pairs:
        ours_s, theirs_s = interleaved(kept, theirs, repeat, calls, progress, f"{name} {size:,}: {engine}")
        rows.append({"engine": engine, "mode": mode, "size": size, "setup_s": 0.0, "ours_s": ours_s,
                     "theirs_s": theirs_s, "ratio": theirs_s / ours_s, "note": "interleaved, medians"})
    return rows


def compare_c(size: int, repeat: int, progress: Callable[[str], None], notes: list) -> list:
    with tempfile.TemporaryDirectory() as workdir:
        c = c_reference.c_reference(Path(workdir))
        if c is None:
            notes.append("C reference skipped: no C compiler found")
            return []
        t, xs, out = engines.tape_record("rdag", programs.rdag_plan(size))
        F = t.function(xs, out)
        x = t._val[: len(xs)].copy()
        t.backward(out)
        reached = t._stamp[: len(t)] == t._gen
        ours_adjoints = t._adj[: len(t)][reached].copy()
        c_reference.run_c_reverse(c, t, out)
        same = np.array_equal(ours_adjoints, t._adj[: len(t)][t._stamp[: len(t)] == t._gen])
        notes.append(f"C reference adjoints identical to Numba's: {same}")
        rows = []
        modes = (("reverse sweep", lambda: t.backward(out), lambda: c_reference.run_c_reverse(c, t, out)),
                 ("forward + reverse", lambda: F.value_and_grad(x), lambda: c_reference.run_c_pair(c, t, out)))
        for mode, ours, theirs in modes:
            o, th = interleaved(ours, theirs, repeat, 1, progress, f"rdag {size:,}: C {mode}")
            rows.append({"engine": "C (gcc -O2), same arrays", "mode": mode, "size": size, "setup_s": 0.0,
                         "ours_s": o, "theirs_s": th, "ratio": th / o, "note": "tape/bench/c_reference.py"})
        return rows
