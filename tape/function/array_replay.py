"""Replay of Functions that hold array records: the sweeps of tape/sweeps/driver.py over a Function's copies.

A Function without array records replays in one Numba call (tape/function/replay.py);
one with them sets its inputs, runs tape/sweeps/driver.py's forward and reverse over
its own arrays and arenas (allocated once, reused by every call) and
re-evaluates the checked comparisons afterwards. Inputs and outputs are
pieces: a scalar record is one number, an array record all its elements, in
the order given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tape.debug import nans
from tape.kernels.ops import ARRAY_BASE
from tape.sweeps import arenas, compiled, driver, fused_runs, fusion, layout, steps, vectors
from tape.sweeps import plans as _plans

if TYPE_CHECKING:
    from tape.function.function import Function


def checking(F: Function) -> bool:
    """Whether calls look for the first inf/NaN (check_finite, or inside tape.debug_nans())."""
    return F.check_finite or nans.active()


def pieces(F: Function, rows: np.ndarray) -> list[tuple[int, int, int]]:
    """(row, start, stop) of each record in the flat vector of rows' numbers."""
    pieces, start = [], 0
    for row in rows.tolist():
        size = F._plans[int(F._in0[row])].size if F._op[row] >= ARRAY_BASE else 1
        pieces.append((row, start, start + size))
        start += size
    return pieces


def slot(F: Function, row: int, scalars: np.ndarray, arena: np.ndarray) -> np.ndarray:
    """Record row's numbers, flat and writable: its region of an arena, or its entry of a scalar column."""
    if F._op[row] >= ARRAY_BASE:
        return driver.own(F, arena, F._plans[int(F._in0[row])]).reshape(-1)
    return scalars[row:row + 1]


def place(F: Function, pieces: list[tuple[int, int, int]], numbers: np.ndarray) -> None:
    """Write numbers into the records of pieces (leaves: scalar records or array inputs)."""
    for row, start, stop in pieces:
        slot(F, row, F._val, F._aval)[...] = numbers[start:stop]


def kept(F: Function, which: str) -> list[tuple[int, np.ndarray, int, int]]:
    """(row, slot, start, stop) of each input piece in F's values or (``which`` "adjoints") adjoints, or (``which``
    "outputs") each output piece in its adjoints, found at the first call: the arenas never move (F._steps, emptied
    by every install)."""
    found: list[tuple[int, np.ndarray, int, int]] | None = F._steps.get(which)
    if found is None:
        scalars, arena = (F._val, F._aval) if which == "values" else (F._adj, F._aadj)
        found = F._steps[which] = [(row, slot(F, row, scalars, arena), start, stop)
                                   for row, start, stop in (F._out_pieces if which == "outputs" else F._in_pieces)]
    return found


def sweep_forward(F: Function, point: np.ndarray, fused: bool = True, watching: bool | None = None) -> int:
    """Set the inputs, recompute every record (fused runs leave the values of members nothing
    else reads unwritten: ``fused=False`` for the derivatives that read them); the first failed
    check, or -1. watching: checking(F), where the caller has asked."""
    slots = kept(F, "values")
    if len(slots) == 1:  # x one piece: no slice of it (0.3 µs)
        slots[0][1][...] = point
    else:
        rows, starts, arrays = split(F, "values")
        F._val[rows] = point[starts]
        for _, numbers, start, stop in arrays:
            numbers[...] = point[start:stop]
    steps.forward(F, F._runs_first if fused and not (checking(F) if watching is None else watching) else None)
    return first_failed(F)


def first_failed(F: Function) -> int:
    """The first recorded comparison that comes out otherwise at the current values, or -1 (the kernels' first_failed,
    by NumPy: a small tape's twinned first uses compile no kernel for it)."""
    if not len(F._check_rows):
        return -1
    failed = np.flatnonzero((F._val[F._check_rows] != 0.0) != F._check_expected)
    return int(failed[0]) if len(failed) else -1


def collect(F: Function, pieces: list[tuple[int, int, int]], scalars: np.ndarray, arena: np.ndarray,
             gen: int | None = None) -> np.ndarray:
    """The numbers of pieces from a scalar column and an arena (with gen: zero where the stamp is not gen)."""
    return gathered(F, [(row, slot(F, row, scalars, arena), start, stop) for row, start, stop in pieces], gen)


def split(F: Function, which: str) -> tuple[np.ndarray, np.ndarray, list[tuple[int, np.ndarray, int, int]]]:
    """kept(F, which)'s scalar records as (rows, starts), one fancy index for all, and its array records' pieces: a
    softmax's 650 params as scalar records, set and gathered one by one, took 0.4 of its 0.74 ms a value_and_grad."""
    found = F._steps.get((which, "split"))
    if found is None:
        slots = kept(F, which)
        one = [(row, start) for row, _, start, _ in slots if F._op[row] < ARRAY_BASE]
        found = F._steps[which, "split"] = (np.array([r for r, _ in one], np.int64),
                                            np.array([start for _, start in one], np.int64),
                                            [piece for piece in slots if F._op[piece[0]] >= ARRAY_BASE])
    return found


def gathered(F: Function, slots: list[tuple[int, np.ndarray, int, int]], gen: int | None = None,
             size: int | None = None) -> np.ndarray:
    """collect's numbers from the slots of its pieces (into size numbers, where given: other pieces filled after)."""
    if len(slots) == 1 and size is None:  # one piece: its copy (0.8 µs at 4,224 elements; an empty array filled, 1.7)
        row, numbers, _, _ = slots[0]
        return numbers.copy() if gen is None or F._stamp[row] == gen else np.zeros(len(numbers))
    out = np.empty(size if size is not None else slots[-1][3] if slots else 0)
    for row, numbers, start, stop in slots:
        out[start:stop] = numbers if gen is None or F._stamp[row] == gen else 0.0
    return out


def param_values(F: Function) -> np.ndarray:
    """The params as they are now, one flat vector."""
    return collect(F, F._param_pieces, F._val, F._aval)


def outputs(F: Function) -> np.ndarray:
    return collect(F, F._out_pieces, F._val, F._aval)


def sweep_reverse(F: Function, weights: np.ndarray, check: bool = False, watching: bool | None = None) -> np.ndarray:
    """The gradient for output weights, after _sweep_forward (a new generation per call); watching: checking(F),
    where the caller has asked.

    The products go unchecked for 0 * inf (tape/sweeps/driver.py's reverse): a NaN made so cannot vanish
    on its way to an input except where the checked sweep sends 0 as well, so a gradient without
    NaN is the checked sweep's, and one with a NaN is swept again, checked."""
    F._gen += 1
    gen = F._gen
    seeds = kept(F, "outputs")
    if weights is F._ones and len(seeds) == 1:  # value_and_grad's seed: driver.seed's first add to a fresh adjoint
        # (1.0 + 0.0), written (0.1 µs; driver.seed 0.8)
        row, numbers, _, _ = seeds[0]
        numbers[...] = 1.0
        F._stamp[row] = gen
    else:
        for row, start, stop in F._out_pieces:
            driver.seed(F, row, weights[start:stop] if F._op[row] >= ARRAY_BASE else weights[start], gen, gen)
    runs = None if (checking(F) if watching is None else watching) else F._runs_last
    unchecked = steps.reverse(F, F._top, gen, gen, check, runs)
    slots = kept(F, "adjoints")
    if len(slots) == 1:
        grad = gathered(F, slots, gen)
    else:
        rows, starts, arrays = split(F, "adjoints")
        grad = gathered(F, arrays, gen, slots[-1][3])
        grad[starts] = np.where(F._stamp[rows] == gen, F._adj[rows], 0.0)
    if not check and unchecked and has_nan(grad):
        return sweep_reverse(F, weights, True, watching)
    return grad


def has_nan(a: np.ndarray) -> bool:
    """Whether a (of any shape) holds a NaN: its minimum is NaN exactly then (1.4 µs at 4,224 elements,
    np.isnan(a).any() 2.1; a sum would also be NaN for inf + -inf, a @ a warns of overflow at huge numbers)."""
    least = np.minimum.reduce(a, axis=None) if a.size else 0.0
    return bool(least != least)


def array_tangents(F: Function, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scalar tangents (n + 1, 1), tangent arena) for an input direction, after _at: vector mode's one direction."""
    dot, adot = np.zeros((len(F._op) + 1, 1)), np.zeros(len(F._aval))
    for row, start, stop in F._in_pieces:
        slot(F, row, dot[:, 0], adot)[...] = direction[start:stop]
    vectors.tangents(F, dot, adot[None])
    return dot, adot


def install_arrays(F: Function, plans: list[driver.Plan], arena: np.ndarray) -> None:
    """F's arenas, pieces and fused runs (compiled.kept's: the others' members are rows, laid out as such), its
    first-order sweeps on regions shared by liveness (tape/sweeps/layout.py) where that is smaller, the recorded
    plans' offsets then kept in F._recorded."""
    F._recorded = None
    _install(F, plans, arena, 0)  # the caller's arena, read (0-d constants, by fusion) until replaced
    if plans:
        runs = list(F._runs_first.values())
        kept = list(compiled.kept(F, F._runs_first).values()) if runs else runs  # (the others' members: rows)
        ids = set(map(id, kept))
        shared, size, back, adjoints = layout.laid(F, kept, F._output_rows, np.concatenate([F._input_rows,
                                                   F._param_rows]), [run for run in runs if id(run) not in ids])
        if size + adjoints < 2 * len(arena):
            small = np.zeros(size)
            arenas.move(plans, arena, shared, small)
            _install(F, shared, small, adjoints, fusion.moved(kept, plans, shared, F._in0, back), back)
            F._recorded = _plans.regions(plans)[1]  # (offsets, not a second list of plans: arrays4k's 7,600
            return  # plans were 7,600 GC-tracked objects more, a third of what tape.trace left for full collections)
        _fused(F, kept)
    F._aval, F._adjoints = arena.copy(), len(arena)


def recorded(F: Function) -> tuple[list[driver.Plan], np.ndarray]:
    """F's plans as recorded and an arena for them (its constants and inputs; what a file holds)."""
    offsets: np.ndarray | None = getattr(F, "_recorded", None)
    if offsets is None:
        return F._plans, F._aval
    plans = _plans.relaid(F._plans, offsets)
    arena = np.zeros(plans[-1].offset + plans[-1].size)
    arenas.move(F._plans, F._aval, plans, arena)
    return plans, arena


def full(F: Function) -> None:
    """F on its recorded layout, its values those of its inputs as they are (before the sweeps that read
    every value after the forward: tangents, second order, gradient tapes)."""
    if getattr(F, "_recorded", None) is not None:
        plans, arena = recorded(F)
        F._recorded = None
        _install(F, plans, arena, len(arena))
        steps.forward(F, None)


def _install(F: Function, plans: list[driver.Plan], arena: np.ndarray, adjoints: int,
             runs: list[fused_runs.Run] | None = None, back: np.ndarray | None = None) -> None:
    """F on plans, its value arena and its adjoint arena's length (made at the first sweep that reads it), with its
    fused runs (found, where not given); back: each plan's offset in the adjoint arena, where not its value's."""
    F._plans = plans
    F._back_at = back
    F._views = {}  # see tape.sweeps.driver.view
    F._schedules = {}
    F._steps = {}  # the sweeps' steps, found at the first call (tape/sweeps/steps.py)
    F._encoded = {}  # the plans' rows of the compiled tables, by row (tape/sweeps/compiled.py's encoded)
    F._aval, F._adjoints = arena, adjoints
    F._stamp = np.zeros(len(F._op) if plans else 0, np.uint32)  # the array sweeps' generations
    F._gen = 0
    F._in_pieces = pieces(F, F._input_rows)
    F._param_pieces = pieces(F, F._param_rows)
    F._out_pieces = pieces(F, F._output_rows)
    F._n_in = F._in_pieces[-1][2] if F._in_pieces else 0
    F._n_par = F._param_pieces[-1][2] if F._param_pieces else 0
    F._n_out = F._out_pieces[-1][2] if F._out_pieces else 0
    F._top = int(F._output_rows.max(initial=-1))  # where reverse sweeps start
    if runs is None:
        roots = (F._input_rows, F._param_rows, F._check_rows)
        runs = fusion.find(F, set(F._output_rows.tolist()), roots) if plans else []
    _fused(F, runs)


def _fused(F: Function, runs: list[fused_runs.Run]) -> None:
    """F's fused runs, by first row and by last."""
    F._runs_first = {run.rows[0]: run for run in runs}
    F._runs_last = {run.rows[-1]: run for run in runs}
