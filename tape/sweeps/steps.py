"""A Function's sweeps as lists of steps decided once: tape/sweeps/driver.py's sweeps without the lookups.

A Function's arenas, plans and records never change (tape/function/array_replay.py), so what
driver.forward and driver.reverse look up at every record of every call (the views an array record
reads, its region, its inputs' adjoint regions, the elements its elem records read, which records a
fused run covers) is decided at the first call and kept: each sweep is a list of steps (a stretch of
scalar records, a fused run, an array record), and a call runs the list. The steps do what the
driver does, in its order, with the same NumPy calls, so the numbers are the driver's bit for bit
(tests/test_array_records.py compares them). Measured (a chain of 1,000 3-d elementwise records of
2,000 elements, which no run fuses; replayed value_and_grad, interleaved medians on a loaded 2-core
machine): Python per record per sweep 5.6 -> 3.4 µs and 7.7 -> 4.8 µs in two runs (value_and_grad
0.66x), the forward alone 3.1 -> 1.8 µs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from tape.kernels._sweeps import forward_sweep, reverse_range
from tape.kernels.array_kinds import unbroadcast
from tape.kernels.array_ops import INPUT, RULE
from tape.kernels.ops import LEAF
from tape.sweeps import driver
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


def _forward_steps(s: State, runs: dict[int, Any] | None) -> list[Callable[[], None]]:
    """driver.forward's walk over all records, as steps."""
    stop = len(s._op)
    rows, elems, offsets = driver.schedule(s, stop)
    steps: list[Callable[[], None]] = []
    lo, done, dead = 0, -1, frozenset[int]()
    for i in [*rows, stop]:
        if lo < i:
            reading = elems[np.searchsorted(elems, lo):np.searchsorted(elems, i)]
            steps.append(functools.partial(_scalars_forward, s, reading, driver.elements(s, reading, offsets), lo, i))
        if runs and i in runs:
            steps.append(functools.partial(runs[i].forward, s))
            done, dead = runs[i].rows[-1], runs[i].dead
        elif i < stop and (i > done or i in dead) and step(s, i).forward is not _nothing:
            steps.append(step(s, i).forward)
        lo = i + 1
    return steps


def _scalars_forward(s: State, reading: np.ndarray, elements: np.ndarray, lo: int, hi: int) -> None:
    if len(reading):
        s._val[reading] = s._aval[elements]  # elem records take their values
    forward_sweep(s._op, s._in0, s._in1, s._val, s._consts, lo, hi)


def forward(s: State, runs: dict[int, Any] | None) -> None:
    """driver.forward(s, 0, all records, runs) for a Function s, by its steps."""
    key = ("forward", runs is not None)
    steps = s._steps.get(key)
    if steps is None:
        steps = s._steps[key] = _forward_steps(s, runs)
    with np.errstate(all="ignore"):
        for run in steps:
            run()


Back = Callable[[int, int, bool], bool]  # a reverse step: whether it ran an array record through NumPy


def _reverse_steps(s: State, top: int, runs: dict[int, Any] | None) -> list[Back]:
    """driver.reverse's walk from record top down, as steps."""
    arrays, elems, offsets = driver.schedule(s, top + 1)
    steps: list[Back] = []
    hi, done = top + 1, top + 1
    for i in [*arrays[::-1], -1]:
        if i + 1 < hi:
            reading = elems[np.searchsorted(elems, i + 1):np.searchsorted(elems, hi)]
            steps.append(functools.partial(_scalars_reverse, s, reading, offsets, i + 1, hi))
        if runs and i in runs:
            steps.append(functools.partial(_run_reverse, s, runs[i]))
            done = runs[i].rows[0]
        elif 0 <= i < done and RULE[s._op[i]].derivative:
            steps.append(functools.partial(_record_reverse, s._stamp, i, step(s, i).reverse))
        hi = i
    return steps


def _scalars_reverse(s: State, reading: np.ndarray, offsets: np.ndarray, lo: int, hi: int, gen: int, keep: int,
                     check: bool) -> bool:
    reverse_range(s._op, s._in0, s._in1, s._val, s._adj, s._stamp, s._consts, lo, hi, gen, keep)
    driver._elems_back(s, reading, offsets, gen, keep)
    return False


def _run_reverse(s: State, run: Any, gen: int, keep: int, check: bool) -> bool:
    run.reverse(s, gen, keep)
    return False


def _record_reverse(stamps: np.ndarray, row: int, back: Callable[[int, int, bool], None], gen: int, keep: int,
                    check: bool) -> bool:
    if stamps[row] != gen:
        return False
    back(gen, keep, check)
    return True


def reverse(s: State, top: int, gen: int, keep: int, check: bool, runs: dict[int, Any] | None) -> int:
    """driver.reverse for a Function s, by its steps; how many array records with a derivative went
    through NumPy (driver.reverse also counts those without one, which make no product: 0 either way
    where nothing was left unchecked)."""
    key = ("reverse", top, runs is not None)
    steps = s._steps.get(key)
    if steps is None:
        steps = s._steps[key] = _reverse_steps(s, top, runs)
    numpy_records = 0
    with np.errstate(all="ignore"):
        for back in steps:
            numpy_records += back(gen, keep, check)
    return numpy_records
