"""Fusion: runs of elementwise array records become one pass each (kernels' fused_*).

NumPy runs one op at a time over whole arrays, so a chain of k elementwise
records reads and writes memory k times. A Function finds its runs once, when
it is made (``value_and_grad(f)`` before its one reverse sweep): consecutive
elementwise records of one shape (1-d or 2-d), whose ops are cheap in Numba
(transcendentals stay with NumPy's SIMD loops, 8-40x faster than the C
library's), each reading earlier members whole, views of other records of
exactly that shape, or 0-d constants; a full sum right after the last member
joins the run. Only members read outside the run are written. Runs are found
among the records the Function's roots depend on (tape/sweeps/live.py): a dead record
neither joins nor breaks one (the forward computes it where it is), so the
runs, and the numbers, are the same with or without the dead records.
Measured (Rosenbrock, replayed value_and_grad): 2.5x faster than a NumPy call per record at
256 elements, where the per-record Python overhead dominates, 1.2x at 65,536, 1.5x at 10^6
(memory traffic); so every run of two or more records is fused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from tape.kernels import shaped as _shaped
from tape.kernels._sweeps import fused_forward, fused_reverse
from tape.kernels.array_ops import ACONSTANT, ARRAY_KIND
from tape.kernels.compiling import LOAD, Gate
from tape.kernels.ops import ARRAY_BASE, FUSIBLE, OPCODE, READS, SQUARE_READS
from tape.sweeps import driver, fused_numpy
from tape.sweeps import live as _live
from tape.sweeps.driver import Plan, View, whole

# a Tape's one reverse sweep fuses runs of arrays from this size: finding a run costs about 50 µs, which 10^4 elements
# do not win back (value_and_grad ms fused vs not: heat 10^4 x 500, 226 vs 183; stencil 10^5, 4.4 vs 5.5)
TAPE_RUNS = 2**15


class Tiered:
    """A fused kernel, or its NumPy twin (tape/sweeps/fused_numpy.py: the same bits, 10-30x slower) until the kernel
    is compiled in this process, or the twin has run ``payback`` seconds in this process, about the kernel's compile
    (a cold first gradient of Rosenbrock at 10^6 took 7.6 s, 4.4 s of it compiling the two), or LOAD seconds where
    the kernel is cached (a first load in a process, 0.4 s, costs more than a first twin run: 0.13 s at 10^6)."""

    def __init__(self, kernel: Any, twin: Callable[..., Any], payback: float):
        self.kernel, self.twin, self.gate = kernel, twin, Gate((kernel,), (LOAD, payback))

    def __call__(self, twinned: bool, *args: Any) -> Any:
        if not twinned or self.gate.ready():
            return self.gate.call(self.kernel, *args)
        return self.gate.timed(self.twin, *args)


FORWARD = Tiered(fused_forward, fused_numpy.forward, 1.0)  # compiled in 1.1 CPU-s (cold, quiet 2-core machine)
REVERSE = Tiered(fused_reverse, fused_numpy.reverse, 3.0)  # 3.3 CPU-s
SHAPED = True  # whether ordered runs get their shape's own kernels (kernels/shaped.py) once these pay back


class Shaped:
    """A run shape's own kernels (kernels/shaped.py: one pass per element), called once its Gate opens: FORWARD and
    REVERSE (stand-ins with the same bits) until they have run ``PAYBACK`` seconds for this shape, about its kernels'
    compile, or LOAD where those are cached. The kernels' source is made at the shape's first call, not its trace."""

    PAYBACK = 1.0
    made: dict[tuple, Shaped] = {}
    eager = False  # open at once (untwinned)

    def __init__(self, shape: tuple):
        self.shape = shape
        self._gate: Gate | None = None
        self.kernels: Any = None

    @property
    def gate(self) -> Gate:
        if self._gate is None:
            self.kernels = _shaped.kernels(self.shape)
            self._gate = Gate((self.kernels.forward, self.kernels.reverse), (LOAD, self.PAYBACK))
            self._gate.open = self.eager
        return self._gate

    def __reduce__(self) -> tuple:
        """Pickled as its shape: a Function loaded elsewhere gets that process's kernels of the shape."""
        return Shaped.of, (self.shape,)

    @classmethod
    def of(cls, shape: tuple) -> Shaped:
        """The kernels of a run shape (one object a shape in a process)."""
        if shape not in cls.made:
            cls.made[shape] = cls(shape)
        return cls.made[shape]


def untwinned() -> None:
    """The fused kernels from now on, not their NumPy twins (``python -m tape warmup``, tape-bench's compile probe)."""
    FORWARD.gate.open = REVERSE.gate.open = Shaped.eager = True
    for shaped in Shaped.made.values():
        if shaped._gate is not None:
            shaped._gate.open = True


class Run(NamedTuple):
    """One fused run; tape/sweeps/driver.py calls forward at its first row and reverse at its last."""

    rows: tuple[int, ...]  # the members' records, then the sum's if one joined
    program: tuple[np.ndarray, ...]  # code, ka, ia, kb, ib, imm, ext
    need: np.ndarray  # members whose values the reverse recomputes (some partial reads them)
    live: np.ndarray  # region offset of members read outside the run, else -1
    inputs: tuple[int, ...]  # records the run reads (views of), whose adjoints it adds to
    rows_cols: tuple[int, int]  # n0 rows of n1 elements
    total: int  # the sum record's row, or -1
    total_at: int  # its place in the arenas
    members: np.ndarray  # the members' rows
    dead: frozenset[int]  # the array records between its first row and its last that no root depends on
    twinned: bool  # whether NumPy can run it with the kernels' bits (fused_numpy.py)
    watched: bool  # whether a member is read outside the run (live has one >= 0)
    ordered: bool  # whether its inputs get their adds in the NumPy steps' order (_lags)
    shaped: Shaped | None  # its shape's own kernels (_shape), where ordered
    reads: np.ndarray  # the record of each view in the program's ext (where in the arenas it reads)

    def forward(self, s: Any) -> None:
        """Compute the run: its live members' regions and its sum record."""
        shaped = self.shaped if SHAPED else None
        if shaped is not None and shaped.gate.ready():  # (the generic kernels' arguments made only where they run:
            # 0.3 µs of the 1.4 µs a small run's call took)
            value = shaped.gate.call(shaped.kernels.forward, self.program[5], self.program[6], self.live,
                                     *self.rows_cols, s._aval)
        else:
            args = (*self.program, self.live, self.total >= 0, *self.rows_cols, s._aval)
            value = FORWARD(self.twinned, *args) if shaped is None else shaped.gate.timed(FORWARD, self.twinned, *args)
        if self.total >= 0:
            s._aval[self.total_at] = value

    def reverse(self, s: Any, gen: int, keep: int) -> None:
        """Send the run's adjoints to its inputs, if this pass reached it."""
        reached = self.reached(s, gen)
        if reached is not None:
            for j in self.inputs:
                driver._prepared(s, j, gen, keep)
            self.back(s, *reached)

    def reached(self, s: Any, gen: int) -> tuple[np.ndarray, float] | None:
        """(where each member's adjoint sent from outside the run is, else -1; the sum's adjoint), or None where
        this pass sent the run nothing."""
        adj_in = np.where(s._stamp[self.members] == gen, self.live, -1) if self.watched else self.live  # (all -1)
        seed = float(s._aadj[self.total_at]) if self.total >= 0 and s._stamp[self.total] == gen else 0.0
        if seed == 0.0 and (not self.watched or adj_in.max() < 0):
            return None
        return adj_in, seed

    def back(self, s: Any, adj_in: np.ndarray, seed: float) -> None:
        """The run's reverse pass, its inputs' adjoint regions prepared."""
        full = (seed != 0.0) == (self.total >= 0) and (adj_in is self.live or adj_in.tolist() == self.live.tolist())
        shaped = self.shaped if SHAPED and full else None  # (its kernels hold adjoints where every member may: a
        # list compare, 0.7 µs, where np.array_equal took 14 µs a call)
        if shaped is not None and shaped.gate.ready():  # (the generic kernels' arguments made only where they run)
            shaped.gate.call(shaped.kernels.reverse, self.program[5], self.program[6], adj_in, seed, *self.rows_cols,
                             s._aval, s._aadj)
            return
        args = (*self.program, self.need, adj_in, seed, *self.rows_cols, s._aval, s._aadj)
        REVERSE(self.twinned, *args) if shaped is None else shaped.gate.timed(REVERSE, self.twinned, *args)


class Readers(NamedTuple):
    """Who reads each record (array plans, elem records, packs' scalar rows), by the record read: built
    by NumPy from live.reads' table, not a Python loop over the records (GradBench's ode, 10^4 elements:
    a dict of sets filled per elem record took 2.7 s of a 3.0-3.6 s value_and_grad)."""

    starts: np.ndarray  # the readers of record j are readers[starts[j]:starts[j + 1]]
    readers: np.ndarray

    def outside(self, j: int, rows: set[int]) -> bool:
        """Whether a record not in rows reads record j."""
        readers = self.readers[self.starts[j]:self.starts[j + 1]]  # all elements' elem records, perhaps
        if len(readers) <= 64:  # (np.isin costs about 10 µs a call: a stencil's 2,500 members took 25 ms)
            return not rows.issuperset(readers.tolist())
        return bool(np.isin(readers, np.fromiter(rows, np.int64), invert=True).any())


def _readers(starts: np.ndarray, reads: np.ndarray) -> Readers:
    """Readers from live.reads' (starts, reads) table, which lists the records read by reader."""
    reader = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    order = np.argsort(reads, kind="stable")
    by = np.zeros(len(starts), np.int64)
    np.cumsum(np.bincount(reads, minlength=len(starts) - 1), out=by[1:])
    return Readers(by, reader[order])


def _as_rows(v: View, shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(row stride, element stride) of a view of the run's shape, if its elements are rows."""
    if v.shape != shape:
        return None
    if len(shape) == 1:
        return (0, v.strides[0])
    return (v.strides[0], v.strides[1])


def find(s: Any, outputs: set[int], roots: tuple[np.ndarray, ...] | None = None) -> list[Run]:
    """The runs of a Function's (or, without roots, a Tape's for one reverse sweep) array records worth
    fusing; with roots (a Function's inputs, params, checks), among the records that they and the
    outputs depend on."""
    n = getattr(s, "_n", len(s._op))  # a Tape's record arrays run past its records
    if roots is None:  # a Tape's one reverse sweep: among all its records, of big arrays only (0-d ones end runs)
        arrays = [p for p in s._plans if p.size >= TAPE_RUNS or not p.shape]
        if len(arrays) - sum(not p.shape for p in arrays) < 2:
            return []
    table = _live.reads(s._op[:n], s._in0[:n], s._plans)
    readers = _readers(*table) if s._plans else Readers(np.zeros(n + 1, np.int64), np.zeros(0, np.int64))
    runs: list[Run] = []
    members: list[Plan] = []
    if roots is None:
        live = np.ones(len(s._op), np.bool_)
    else:
        live = _live.reaching(s._op, s._in0, s._in1, s._plans, [np.array(sorted(outputs), np.int64), *roots],
                              table)[0]
        arrays = [p for p in s._plans if live[p.row]]  # in record order
    k = 0
    while k < len(arrays):
        p = arrays[k]
        if _fits(p, members) and _next_to(s, members, p, live):
            members.append(p)
            k += 1
            continue
        if ARRAY_KIND[p.code] == "constant" and not p.shape and members:
            k += 1  # a 0-d constant between members: an immediate, read where it is used
            continue
        if members:
            total = p if _sums(p, members[-1]) and _next_to(s, members, p, live) else None
            runs += _run(s, members, total, readers, outputs, live)
            members = []
            if total is not None:
                k += 1
                continue
        if not _fits(p, []):
            k += 1
    if members:
        runs += _run(s, members, None, readers, outputs, live)
    return runs


def _fits(p: Plan, members: list[Plan]) -> bool:
    """Whether p can join (or start) the run of members."""
    if ARRAY_KIND[p.code] not in ("unary", "binary") or p.name not in FUSIBLE:
        return False
    if len(p.shape) not in (1, 2):
        return False
    if members and p.shape != members[0].shape:
        return False
    return True


def _next_to(s: Any, members: list[Plan], p: Plan, live: np.ndarray) -> bool:
    """Whether only 0-d constants and dead records lie between the run's last record and p (no live
    scalar record between members: its adjoints would reach a member after the run's reverse)."""
    if not members:
        return True
    between = range(members[-1].row + 1, p.row)
    return all(not live[r] or (s._op[r] == ACONSTANT and not s._plans[s._in0[r]].shape) for r in between)


def _sums(p: Plan, last: Plan) -> bool:
    return ARRAY_KIND[p.code] == "sum" and p.inputs[0] == whole(last.row, last) and not p.shape


def _run(s: Any, members: list[Plan], total: Plan | None, readers: Readers, outputs: set[int],
         live: np.ndarray) -> list[Run]:
    if len(members) < 2:
        return []
    shape = members[0].shape
    slot = {p.row: k for k, p in enumerate(members)}
    rows = set(slot) | ({total.row} if total else set())
    code, ka, ia, kb, ib = (np.zeros(len(members), np.int64) for _ in range(5))
    kb[:] = 2  # a unary member's b: no operand, read as the number imm[0]
    imm: list[float] = []
    ext: list[tuple[int, int, int]] = []
    ext_rows: list[int] = []
    inputs: list[int] = []
    for k, p in enumerate(members):
        code[k] = OPCODE[p.name]
        for j, v in enumerate(p.inputs):
            kinds, index = (ka, ia) if j == 0 else (kb, ib)
            if v.record in slot and v == whole(v.record, members[slot[v.record]]):
                kinds[k], index[k] = 0, slot[v.record]
            elif s._op[v.record] == ACONSTANT and not v.shape:
                kinds[k], index[k] = 2, len(imm)
                imm.append(float(s._aval[s._plans[s._in0[v.record]].offset + v.offset]))
            else:
                strides = _as_rows(v, shape)
                if strides is None or v.record in slot or v.record in getattr(s, "_borrowed", {}):
                    return []  # broadcasting or a view of a member: not a run this kernel takes
                kinds[k], index[k] = 1, len(ext)
                ext.append((s._plans[s._in0[v.record]].offset + v.offset, *strides))
                ext_rows.append(v.record)
                if s._op[v.record] != ACONSTANT:
                    inputs.append(v.record)
    need = _needed(code, ka, ia, kb, ib, imm)
    if _recycled(s, ext_rows, need, ka, ia, kb, ib, total.row if total else members[-1].row):
        return []
    written = np.array([p.offset if readers.outside(p.row, rows) or p.row in outputs else -1
                        for p in members], np.int64)
    n0, n1 = (1, shape[0]) if len(shape) == 1 else shape
    if all(row == n1 * step for _, row, step in ext):  # rows one after another: one row, in blocks of 512 (a
        n0, n1 = 1, n0 * n1  # kernel call per row of 10 took 37 ms for 1,000 records of 200 x 10, 1-d 8 ms)
    lags, ordered = _lags(ext, ext_rows, set(inputs), n0, n1)
    program = (code, ka, ia, kb, ib, np.array(imm + [0.0]),
               np.array([(*view, lag) for view, lag in zip(ext, lags, strict=True)] or [(0, 0, 0, 0)], np.int64))
    order = tuple(p.row for p in members) + ((total.row,) if total else ())
    dead = frozenset(r for r in range(order[0], order[-1]) if not live[r] and s._op[r] >= ARRAY_BASE)
    return [Run(order, program, need, written, tuple(dict.fromkeys(inputs)), (n0, n1), total.row if total else -1,
                total.offset if total else -1, np.array([p.row for p in members], np.int64), dead,
                fused_numpy.twinned(code, kb, ib, program[5], ext), bool((written >= 0).any()), ordered,
                Shaped.of(_shape(program, need, written, total is not None)) if ordered else None,
                np.array(ext_rows, np.int64))]


def moved(runs: list[Run], before: list[Plan], after: list[Plan], in0: np.ndarray) -> list[Run]:
    """The runs find gave for plans ``before``, on their regions ``after`` (tape/sweeps/layout.py's compact): a layout
    moves regions, not what a run reads or computes (of find's choices only _lags reads offsets, and only
    differences within one record's region), so only where a run reads and writes in the arenas changes."""
    old = np.fromiter((p.offset for p in before), np.int64, len(before))
    new = np.fromiter((p.offset for p in after), np.int64, len(after))
    plan = in0.astype(np.int64)  # an array record's plan
    out = []
    for run in runs:
        ext = run.program[6].copy()
        ext[:len(run.reads), 0] += new[plan[run.reads]] - old[plan[run.reads]]
        live = np.where(run.live >= 0, new[plan[run.members]], -1)
        out.append(run._replace(program=(*run.program[:6], ext), live=live,
                                total_at=int(new[plan[run.total]]) if run.total >= 0 else -1))
    return out


def _shape(program: tuple[np.ndarray, ...], need: np.ndarray, live: np.ndarray, summed: bool) -> tuple:
    """What a run's own kernels are generated from (kernels/codegen/shaped.py): each member's (opcode, whether
    x ** 2, ka, ia, kb, ib), which views step by one, the live members, the sum, the members the reverse
    recomputes, the members with adjoints from outside, and whether a sum's adjoint seeds the last."""
    code, ka, ia, kb, ib, imm, ext = program
    members = tuple((int(code[k]), fused_numpy.square(code, kb, ib, imm, k), int(ka[k]), int(ia[k]), int(kb[k]),
                     int(ib[k])) for k in range(len(code)))
    written = tuple(bool(x) for x in live >= 0)
    return members, tuple(bool(x) for x in ext[:, 2] == 1), written, summed, tuple(bool(x) for x in need), written, \
        summed


LAGS = fused_numpy.BLOCK // 2  # elements a view's adds lag at most (a block then recomputes at most half its elements)


def _lags(ext: list[tuple[int, int, int]], records: list[int], inputs: set[int], n0: int,
          n1: int) -> tuple[list[int], bool]:
    """Each view's lag in the fused reverse (kernels/codegen/fused.py), and whether each element of the run's inputs
    then gets its adds in the NumPy steps' order (else compiled.kept keeps the run fused): where views of an input
    that meet are one, or in one row of one stride, each lagging by its shift in elements from the first of its
    residue (u[:-2], u[1:-1], u[2:]: 0, 1, 2), at most LAGS."""
    lags, ordered = [0] * len(ext), True
    for record in inputs:
        for views in _meeting([i for i, r in enumerate(records) if r == record], ext, n0, n1):
            steps = {ext[i][2] for i in views}
            if 0 in steps or (n0 > 1 and any(ext[i][1] == 0 for i in views)):  # an element read again along a row
                ordered = False
            elif len({ext[i] for i in views}) > 1:
                step, residue = min(steps), {i: ext[i][0] % abs(min(steps)) for i in views}
                shift = {i: (ext[i][0] - ext[views[0]][0]) // step for i in views}  # exact within a residue
                lag = {i: shift[i] - min(shift[j] for j in views if residue[j] == residue[i]) for i in views}
                if len(steps) > 1 or n0 > 1 or max(lag.values()) > LAGS:
                    ordered = False
                    continue
                for i in views:
                    lags[i] = lag[i]
    return lags, ordered


def _meeting(views: list[int], ext: list[tuple[int, int, int]], n0: int, n1: int) -> list[list[int]]:
    """views (indices into ext) in groups whose spans of elements meet (X[:48] and X[48:] apart)."""
    spans = []
    for i in views:
        base, row, step = ext[i]
        reach = ((n0 - 1) * row, (n1 - 1) * step)
        spans.append((base + sum(min(0, d) for d in reach), base + sum(max(0, d) for d in reach), i))
    groups: list[list[int]] = []
    end = -1
    for lo, hi, i in sorted(spans):
        if not groups or lo > end:
            groups.append([])
        groups[-1].append(i)
        end = max(end, hi)
    return groups


def _recycled(s: Any, ext_rows: list[int], need: np.ndarray, ka: np.ndarray, ia: np.ndarray, kb: np.ndarray,
              ib: np.ndarray, last: int) -> bool:
    """Whether a recycling tape (tape/sweeps/arenas.py) freed a record the run reads whose value the recompute
    needs, or gave its region to a record up to the run's end (whose adjoint the run's reverse would meet)."""
    freed = getattr(s, "_freed", None)
    if not freed:
        return False
    read = {ext_rows[i] for k in np.flatnonzero(need) for kind, i in ((ka[k], ia[k]), (kb[k], ib[k])) if kind == 1}
    return any(r in freed and (r in read or 0 <= freed[r] <= last) for r in ext_rows)


def _needed(code: np.ndarray, ka: np.ndarray, ia: np.ndarray, kb: np.ndarray, ib: np.ndarray,
            imm: list[float]) -> np.ndarray:
    """The members whose values the reverse needs: those a partial reads (for an operand that is
    not a number: kind 2), and the members those are computed from."""
    need = np.zeros(len(code), np.bool_)
    for k in range(len(code)):
        operand = {"a": (ka[k], ia[k]), "b": (kb[k], ib[k])}
        square = code[k] == OPCODE["pow"] and kb[k] == 2 and imm[ib[k]] == 2.0
        for side, names in zip("ab", SQUARE_READS if square else READS[int(code[k])], strict=True):
            if operand[side][0] == 2:
                continue
            for name in names:
                if name == "y":
                    need[k] = True
                elif operand[name][0] == 0:
                    need[operand[name][1]] = True
    for k in range(len(code) - 1, -1, -1):  # a needed member needs the members it is computed from
        if need[k]:
            need[[j for kind, j in ((ka[k], ia[k]), (kb[k], ib[k])) if kind == 0]] = True
    return need
