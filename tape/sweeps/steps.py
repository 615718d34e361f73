"""A Function's sweeps as lists of steps decided once: tape/sweeps/driver.py's sweeps without the lookups.

A Function's arenas, plans and records never change (tape/function/array_replay.py), so what
driver.forward and driver.reverse look up at every record of every call (the views an array record
reads, its region, its inputs' adjoint regions, the elements its elem records read, which records a
fused run covers) is decided at the first call and kept: each sweep is the driver's list of calls
(driver.forward_calls, reverse_calls: a stretch of scalar records, a fused run, an array record),
each array record's call prepared here (Step), and a call of the Function runs the lists. The steps
do what the driver does, in its order, with the same NumPy calls, so the numbers are the driver's bit for bit
(tests/test_array_records.py compares them). Measured (a chain of 1,000 3-d elementwise records of
2,000 elements, which no run fuses; replayed value_and_grad, interleaved medians on a loaded 2-core
machine): Python per record per sweep 5.6 -> 3.4 µs and 7.7 -> 4.8 µs in two runs (value_and_grad
0.66x), the forward alone 3.1 -> 1.8 µs.

What a stretch of scalar records does is decided once too (whether the Numba kernels have work there,
which elements its elem records read: few are read and sent one by one), so are a fused run's inputs'
adjoint regions; a sweep enters np.errstate only where one of its calls runs NumPy's arithmetic; and
beside the compiled tables a small fused run without a sum becomes their rows (compiled.kept). Measured
(bench/array_programs.py's MLP, 12 records, replayed value_and_grad, thread CPU): Python per call
about 30 -> 10 µs, 1.8x -> 1.25x hand NumPy.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from tape.base import gc_pacing
from tape.kernels.array_ops import INPUT, RULE
from tape.kernels.array_rule import unbroadcast
from tape.kernels.ops import LEAF
from tape.sweeps import compiled, driver
from tape.sweeps.driver import Plan, State


class Step(NamedTuple):
    """An array record's two sweeps, over its views of the arenas, its 0-d constants as numbers, its
    inputs' adjoint regions and their stamp rule (driver.accumulate's), all found once."""

    forward: Callable[[], None]
    reverse: Callable[[int, int, bool], None]


def _nothing(*args: Any) -> None:
    """The step of a record with nothing to do (a constant's forward, a record without a derivative)."""


def step(s: State, row: int) -> Step:
    """Array record row's Step in Function s, kept in s._steps: its arenas and plans are fixed, and so are its
    constants (calls write inputs and params, which are input records), read here as numbers once."""
    found = s._steps.get(row)
    if found is None:
        found = s._steps[row] = _step(s, s._plans[s._in0[row]])
    return found


def _step(s: State, p: Plan) -> Step:
    rule = RULE[p.code]
    if rule.reads != "views":  # (an input's forward does nothing)
        return Step(_nothing if rule.reads == "none" else functools.partial(driver.forward_one, s, p),
                    functools.partial(driver.reverse_one, s, p))
    ins, y = driver.read(s, s._aval, p), driver.own(s, s._aval, p)
    forward = functools.partial(rule.forward, p, ins, y) if p.inputs else _nothing
    if not rule.derivative:  # (a constant: its region may lie past the adjoint arena, layout.compact)
        return Step(forward, _nothing)
    g = driver.own(s, s._aadj, p)
    stamps, targets = s._stamp, []
    for v in p.inputs:  # (record, whether v covers its region, that region's adjoint, v's adjoint, accumulates)
        q = s._plans[s._in0[v.record]]
        targets.append((v.record, v == driver.whole(v.record, q), driver.own(s, s._aadj, q),
                        driver.view(s, s._aadj, v), v.shape, int(s._op[v.record]) in (LEAF, INPUT))
                       if driver._wants(s, v) else None)

    def reverse(gen: int, keep: int, check: bool) -> None:  # driver.accumulate, over the regions above
        for target, send in zip(targets, rule.vjp(p, g, ins, y, check), strict=True):
            if send is None or target is None:
                continue
            j, covers, region, place, shape, accumulates = target
            c = unbroadcast(send(), shape)
            stamp = stamps[j]
            if not (stamp == gen or (stamp >= keep and accumulates)):
                stamps[j] = gen
                if covers:  # + 0.0 turns -0.0 into +0.0, as a zeroed adjoint would
                    np.add(c, 0.0, out=region)
                    continue
                region[...] = 0.0
            place += c

    return Step(forward, reverse)


class Sweep(NamedTuple):
    """A sweep's calls, and what makes the context they run in: np.errstate(all="ignore") where one of them runs
    NumPy's arithmetic, else none (its enter and exit cost about 1 µs; Numba's kernels raise no NumPy warning)."""

    calls: list[Callable[..., Any]]
    quiet: Callable[[], Any]


def _sweep(calls: list[tuple[Callable[..., Any], bool]]) -> Sweep:
    calls = [(call, numpy) for call, numpy in calls if call is not _nothing]
    numpy = any(numpy for _, numpy in calls)
    return Sweep([call for call, _ in calls], functools.partial(np.errstate, all="ignore") if numpy else
                 contextlib.nullcontext)


def forward(s: State, runs: dict[int, Any] | None) -> None:
    """driver.forward(s, 0, all records, runs) for a Function s, by its steps."""
    sweep, fast = _chosen(s, ("forward", runs is not None), runs, _forward_sweep)
    start = 0.0 if fast else time.perf_counter()
    with sweep.quiet():
        for call in sweep.calls:
            call()
    if not fast:
        _count(s, time.perf_counter() - start)


def _chosen(s: State, key: tuple, runs: dict[int, Any] | None,
            make: Callable[[State, tuple, dict[int, Any] | None, bool], Sweep]) -> tuple[Sweep, bool]:
    """(the sweep of key, whether it runs the compiled tables), made once by make: by the tables where runs are
    given and compiled.ready (the checked sweeps, without runs, stay NumPy's). Ready stays so: from then on the
    sweep is found under key itself, without asking (about 1 µs a call)."""
    sweep = s._steps.get(key)
    if sweep is not None:
        return sweep, True
    fast = runs is not None and compiled.ready(s, runs)
    sweep = s._steps.get((*key, fast))
    if sweep is None:
        with gc_pacing.paused():  # (as a Function's making: its tables' garbage dies by reference counting)
            sweep = s._steps[(*key, fast)] = make(s, key, runs, fast)
    if fast:
        s._steps[key] = sweep
    return sweep, fast


def _forward_sweep(s: State, key: tuple, runs: dict[int, Any] | None, fast: bool) -> Sweep:
    walk = driver.forward_walk(s, 0, len(s._op), compiled.kept(s, runs) if fast and runs else runs)
    return _sweep([_forward_call(s, kind, what) for kind, what in (compiled.grouped(s, walk, "forward") if fast else
                                                                    walk)])


def _count(s: State, seconds: float) -> None:
    """A sweep by NumPy's steps: on s's clock (compiled.PAYBACK) and the process's (compiled.CLOCK)."""
    s._swept = getattr(s, "_swept", 0.0) + seconds
    compiled.CLOCK.add(seconds)


def _forward_call(s: State, kind: int, what: Any) -> tuple[Callable[[], None], bool]:
    """A walk's item as a call, and whether it runs NumPy's arithmetic."""
    if kind == driver.RECORD:
        return step(s, what).forward, True
    if kind == driver.RUN:
        return what.bound(s)[0], False
    if kind == compiled.TABLE:
        return functools.partial(compiled.forward, s, *what), False
    return _scalars_forward(s, *what), False


def reverse(s: State, top: int, gen: int, keep: int, check: bool, runs: dict[int, Any] | None) -> int:
    """driver.reverse for a Function s, by its steps (the same count of array records through NumPy)."""
    sweep, fast = _chosen(s, ("reverse", top, runs is not None), runs, _reverse_sweep)
    numpy_records = 0
    start = 0.0 if fast else time.perf_counter()
    with sweep.quiet():
        for call in sweep.calls:
            numpy_records += call(gen, keep, check)
    if not fast:
        _count(s, time.perf_counter() - start)
    return numpy_records


def _reverse_sweep(s: State, key: tuple, runs: dict[int, Any] | None, fast: bool) -> Sweep:
    walk = driver.reverse_walk(s, key[1], compiled.kept(s, runs) if fast and runs else runs)
    return _sweep([
        (functools.partial(_record, s._stamp, what, step(s, what).reverse), True) if kind == driver.RECORD else
        (_run(s, what), False) if kind == driver.RUN else
        (functools.partial(compiled.reverse, s, *what), False) if kind == compiled.TABLE else
        _scalars_reverse(s, *what) for kind, what in (compiled.grouped(s, walk, "reverse", True) if fast else walk)])


def _record(stamps: np.ndarray, row: int, back: Callable[[int, int, bool], None], gen: int, keep: int,
            check: bool) -> bool:
    """Array record row's reverse step, if this pass reached it."""
    if stamps[row] != gen:
        return False
    back(gen, keep, check)
    return True


def _prepare(s: State, j: int, zero: bool = True) -> Callable[[int, int], bool]:
    """driver._prepared for record j of a Function s, its adjoint region and whether it accumulates (driver.stale)
    found once: whether it was stale (then stamped, and zeroed unless not zero)."""
    region, stamps = driver.own(s, s._aadj, s._plans[s._in0[j]]), s._stamp
    accumulates = int(s._op[j]) in (LEAF, INPUT)

    def prepare(gen: int, keep: int) -> bool:
        if driver.stale(stamps[j], gen, keep, accumulates):
            if zero:
                region[...] = 0.0
            stamps[j] = gen
            return True
        return False

    return prepare


def _run(s: State, run: Any) -> Callable[[int, int, bool], bool]:
    """A fused run's reverse (its Run.reverse), its inputs' adjoint regions found once; the region of its line
    (Run.line) not zeroed where stale: its back assigns it."""
    back, line = run.bound(s)[1], run.line(s)
    prepares = [_prepare(s, j, k != line) for k, j in enumerate(run.inputs)]

    def reverse(gen: int, keep: int, check: bool) -> bool:
        reached = run.reached(s, gen)
        if reached is not None:
            stale = [prepare(gen, keep) for prepare in prepares]
            back(*reached, line >= 0 and stale[line])
        return False

    return reverse


def _scalars(s: State, reading: np.ndarray, offsets: np.ndarray, lo: int, hi: int, gen: int, keep: int,
             check: bool) -> bool:
    driver.scalars_reverse(s, reading, offsets, lo, hi, gen, keep)
    return False


FEW = 16  # elem records of a stretch, at most, read or sent one by one (NumPy's fancy indexing costs about 0.6 µs a
# call, np.add.at about 5 µs with the selection of the records reached)


def _scalars_forward(s: State, reading: np.ndarray, places: np.ndarray, lo: int, hi: int) -> Callable[[], None]:
    """driver.scalars_forward with what it decides found once: the Numba kernels only where the stretch has work
    (driver._leaves), the elem records' reads one by one where they are few."""
    val, aval = s._val, s._aval
    kernel = None if driver._leaves(s, lo, hi) else functools.partial(driver.forward_scalars, s._op, s._in0, s._in1,
                                                                      val, s._consts, lo, hi)
    pairs = list(zip(reading.tolist(), places.tolist(), strict=True)) if len(reading) <= FEW else None

    def forward() -> None:
        if pairs is None:
            val[reading] = aval[places]
        else:
            for row, place in pairs:
                val[row] = aval[place]
        if kernel is not None:
            kernel()

    return forward


def _scalars_reverse(s: State, reading: np.ndarray, offsets: np.ndarray, lo: int,
                     hi: int) -> tuple[Callable[[int, int, bool], bool], bool]:
    """driver.scalars_reverse, and whether it runs NumPy's arithmetic; where the elem records are few, with what it
    decides found once, they send their adjoints one by one as np.add.at adds them (in their order back; in
    Python floats, which warn of nothing)."""
    if len(reading) > FEW:
        return functools.partial(_scalars, s, reading, offsets, lo, hi), True
    args = None if driver._leaves(s, lo, hi) else (s._op, s._in0, s._in1, s._val, s._adj, s._stamp, s._consts, lo, hi)
    stamps, adj, aadj, records = s._stamp, s._adj, s._aadj, s._in0[reading].tolist()
    prepares = {j: _prepare(s, j) for j in set(records)}
    sends = [(row, place, prepares[j]) for row, place, j in
             zip(reading.tolist(), driver.elements(s, reading, offsets).tolist(), records, strict=True)][::-1]

    def one_by_one(gen: int, keep: int, check: bool) -> bool:
        if args is not None:  # (driver.reverse_range looked up each time: its kernel, not its Twin, once that is ready)
            driver.reverse_range(*args, gen, keep)
        for row, place, prepare in sends:
            if stamps[row] == gen:
                a = float(adj[row])
                if a != 0.0:
                    prepare(gen, keep)
                    aadj[place] = float(aadj[place]) + a
        return False

    return one_by_one, False
