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
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

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
    if rule.reads != "views":
        return Step(functools.partial(driver.forward_one, s, p), functools.partial(driver.reverse_one, s, p))
    ins, y, g = driver.read(s, s._aval, p), driver.own(s, s._aval, p), driver.own(s, s._aadj, p)
    forward = functools.partial(rule.forward, p, ins, y) if p.inputs else _nothing
    if not rule.derivative:
        return Step(forward, _nothing)
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


def forward(s: State, runs: dict[int, Any] | None) -> None:
    """driver.forward(s, 0, all records, runs) for a Function s, by its steps."""
    fast = runs is not None and compiled.ready(s, runs)  # (the checked sweeps, without runs, stay NumPy's)
    key = ("forward", runs is not None, fast)
    calls = s._steps.get(key)
    if calls is None:
        walk = driver.forward_walk(s, 0, len(s._op), runs)
        calls = s._steps[key] = [call for call in (_forward_call(s, kind, what) for kind, what in
                                                   (compiled.grouped(s, walk) if fast else walk))
                                 if call is not _nothing]
    start = time.perf_counter()
    with np.errstate(all="ignore"):
        for call in calls:
            call()
    if not fast:
        s._swept = getattr(s, "_swept", 0.0) + time.perf_counter() - start


def _forward_call(s: State, kind: int, what: Any) -> Callable[[], None]:
    if kind == driver.RECORD:
        return step(s, what).forward
    if kind == driver.RUN:
        return functools.partial(what.forward, s)
    if kind == compiled.TABLE:
        return functools.partial(compiled.forward, s, *what)
    return functools.partial(driver.scalars_forward, s, *what)


def reverse(s: State, top: int, gen: int, keep: int, check: bool, runs: dict[int, Any] | None) -> int:
    """driver.reverse for a Function s, by its steps (the same count of array records through NumPy)."""
    fast = runs is not None and compiled.ready(s, runs)
    key = ("reverse", top, runs is not None, fast)
    calls = s._steps.get(key)
    if calls is None:
        walk = driver.reverse_walk(s, top, runs)
        calls = s._steps[key] = [
            functools.partial(_record, s._stamp, what, step(s, what).reverse) if kind == driver.RECORD else
            functools.partial(_run, s, what) if kind == driver.RUN else
            functools.partial(compiled.reverse, s, *what) if kind == compiled.TABLE else
            functools.partial(_scalars, s, *what) for kind, what in (compiled.grouped(s, walk) if fast else walk)]
    numpy_records = 0
    start = time.perf_counter()
    with np.errstate(all="ignore"):
        for call in calls:
            numpy_records += call(gen, keep, check)
    if not fast:
        s._swept = getattr(s, "_swept", 0.0) + time.perf_counter() - start
    return numpy_records


def _record(stamps: np.ndarray, row: int, back: Callable[[int, int, bool], None], gen: int, keep: int,
            check: bool) -> bool:
    """Array record row's reverse step, if this pass reached it."""
    if stamps[row] != gen:
        return False
    back(gen, keep, check)
    return True


def _run(s: State, run: Any, gen: int, keep: int, check: bool) -> bool:
    run.reverse(s, gen, keep)
    return False


def _scalars(s: State, reading: np.ndarray, offsets: np.ndarray, lo: int, hi: int, gen: int, keep: int,
             check: bool) -> bool:
    driver.scalars_reverse(s, reading, offsets, lo, hi, gen, keep)
    return False
