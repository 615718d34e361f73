"""A Function's stretches of array records as tables for the compiled sweeps (kernels/_array_driver.py).

tape/sweeps/steps.py keeps a Function's sweeps as lists of calls; where consecutive array records
are of kinds the driver runs (a Rule's ``compiled``: the elementwise ops of ops.EXACT, RULED, LOOPED and PAIRED, sums,
matmuls by NumPy's own BLAS, joins and gathers, whose numbers it gives bit for bit) and their views
fit its rows (at most 4 axes; a sum's input in C order, as NumPy's iterator then adds; a matmul's
operands 2-d blocks in C or Fortran order; a gather's places in runs of one step), they become one
table and one Numba call per sweep, with no Python per record (tape/sweeps/encoding.py writes every plan's rows at
once, by NumPy); any other record (and a fused run,
or a stretch of scalar records with work to do) ends the stretch and runs as before. The kernel is
used once it is compiled in this process, or once NumPy's sweeps have run ``LOAD`` seconds in the process where it is
cached on disk (``python -m tape warmup`` compiles it), or a Function with stretches for it (a tape's reverse: the
process) ``PAYBACK`` where not: its compile never lands on a first gradient with a cold cache, and a program pays it
only when it has run about as long as the compile takes (then at most doubling its time, once per machine). A table
compiles (or loads) the kernels its rows call when it is made (kernels/array_kernels.py): a program pays for its own
ops and row kinds, not the whole op table.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from tape.kernels import _array_driver as kernels
from tape.kernels import array_kernels, compiling
from tape.kernels._array_driver import LINED, LOGSUMEXP, MATMUL, SELECT, VIEW, VIEWS, WIDTH
from tape.kernels.array_ops import RULE
from tape.kernels.compiling import LOAD, Clock, Gate
from tape.kernels.ops import LOOPED, LOOPED_BACK, OPCODE, PAIRED
from tape.sweeps import driver, encoding, layout, stretches
from tape.sweeps.driver import State
from tape.sweeps.fusion import TAPE_RUNS
from tape.sweeps.pieces import Pieces, cut
from tape.sweeps.plans import at_least, encode, lengths, same_plans

TABLE = 3  # what grouped() gives for a stretch of records in one table, beside driver's SCALARS, RUN, RECORD
PAYBACK = 8.0  # seconds of NumPy's sweeps (a Function's own; a tape's reverse: the process's, CLOCK) before they
# compile the driver and the kernels their tables call: cold, heat-concatenate's 7.8 CPU-s, GRU's 10.8, the MLP's 14.5
# (load 3.5; s20's notes), every op's and kind's in one driver 48-65 (was 25.0)
LINES = 4096  # elements of a logsumexp's or LINED row's lines in scratch at a time, at least one line (a block stays
# in cache)
CLOCK = Clock()  # seconds of sweeps by NumPy's steps in this process: every Function's (tape/sweeps/steps.py), every
# tape's reverse (tape_reverse)
_gate = Gate((kernels.forward, kernels.reverse), (LOAD, PAYBACK), CLOCK)  # compiled in this process, or cached and
# NumPy's steps have run LOAD seconds (a small Function's first calls skip Numba's first load), or not and they have
# run PAYBACK (a tape recorded afresh then takes the tables too; a Function, once its own kernels are there)


def ready(s: State, runs: dict[int, Any]) -> bool:
    """Whether s's sweeps use the compiled kernels now: the drivers are compiled in this process, or this process's
    sweeps by NumPy's steps have run LOAD seconds where they are cached (PAYBACK where not), and the kernels s's tables
    call are made or cached (or compiling.EAGER: then they compile); or s's own sweeps have run PAYBACK seconds and s
    has stretches they would run (then they compile)."""
    if _gate.ready():
        wanted = getattr(s, "_wanted", None)  # the kernels s's tables call not made nor cached (asked once: a program
        if wanted is None:  # whose kernels no run has compiled pays for them as for the drivers, PAYBACK, not LOAD)
            tables = [what[0] for kind, what in grouped(s, driver.forward_walk(s, 0, len(s._op), runs)) if
                      kind == TABLE]
            wanted = s._wanted = array_kernels.wanted({slot for t in tables for back in (False, True)
                                                       for slot in array_kernels.needed(t, back)})
        if not wanted or compiling.EAGER or array_kernels.made(wanted):
            return True
    driven = getattr(s, "_driven", None)
    if driven is None and getattr(s, "_swept", 0.0) >= PAYBACK:  # asked once
        driven = s._driven = any(kind == TABLE for kind, _ in grouped(s, driver.forward_walk(s, 0, len(s._op), runs)))
    return bool(driven)


def warm() -> None:
    """Compile (or load) the driver and every kernel it calls: ``python -m tape warmup`` calls it."""
    array_kernels.make(array_kernels.every())
    table, scratch = np.zeros((0, WIDTH), np.int64), np.zeros((4, 1))
    kernels.forward(table, np.zeros(1), scratch)
    kernels.reverse(table, np.zeros(1), np.zeros(1), np.zeros(1, np.uint32), 1, 1, scratch, True)


def all_rows(s: State, back: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """encoding.table(s): every plan's rows (plan k's rows[starts[k]:starts[k + 1]]), for the reverse sweeps (back)
    encoding.back's, kept by a Function (``_encoded``)."""
    cache = getattr(s, "_encoded", None)
    if cache is None:
        rows, starts = encoding.table(s)
        return (encoding.back(s, rows) if back else rows), starts
    if "table" not in cache:
        cache["table"] = encoding.table(s)
    if back and "back" not in cache:
        rows, starts = cache["table"]
        cache["back"] = encoding.back(s, rows), starts
    return cache["back" if back else "table"]


DISSOLVE = 2 ** 16  # elements up to which a fused run without a sum whose views lag (fusion's _lags) runs as rows
# (tables / fused: 5 members 0.77 at 2^10, 0.85-0.91 at 2^16; the 3-tap filter's, 10^5, 1.2-1.3: sent after the pass)


def kept(s: State, runs: dict[int, Any]) -> dict[int, Any]:
    """The fused runs a Function keeps (at tape.trace: array_replay) and a tape's sweep by the tables: a sum's (its
    blocks add in another order than NumPy's), those whose adds into an input are out of NumPy's order or lag past
    DISSOLVE elements (fusion's _lags), or with a member the tables do not run; the others' members are rows (the same
    IEEE operations) run by stretches with the rows around them. Replayed value_and_grad, kept -> rows: heat-pad 2.4x,
    GRU 1.2x faster; 11 members, 10^5 1.48-1.52 -> 0.81-0.85 ms, 10^6 18.8-21 -> 8.3-8.7; denoise 1.69-1.94 -> 0.97."""
    _, starts = all_rows(s)
    driven = starts[1:] > starts[:-1]
    return {at: run for at, run in runs.items() if run.total >= 0 or not run.ordered or
            math.prod(run.rows_cols) > DISSOLVE and run.program[6][:, 3].any() or not driven[s._in0[run.members]].all()}


def _idle(s: State, kind: int, what: Any) -> bool:
    """Whether a walk's item does nothing: a stretch of a few leaves with no elem record, an input's or a
    constant's forward."""
    if kind == driver.SCALARS:
        return not len(what[0]) and driver._leaves(s, what[-2], what[-1])
    return kind == driver.RECORD and not s._plans[s._in0[what]].inputs and RULE[s._op[what]].reads in ("views",
                                                                                                       "none")


def grouped(s: State, walk: Iterable[tuple[int, Any]], sweep: str = "", back: bool = False) -> Iterator[tuple[int,
                                                                                                              Any]]:
    """A walk of tape/sweeps/driver.py with each stretch of records the driver runs as (TABLE, (table,
    scratch)), or for a sweep ("forward", "reverse") (TABLE, (table, scratch, its stretches' pending kernels:
    stretches.py)); idle items inside a stretch dropped. An item between a table's rows whose regions meet none of
    theirs (a pack of scalar records, a stretch of scalar records) does not end the table: forward it runs before
    the table (the rows before it read nothing it writes), back (``back``) after it (the rows after it read and
    write nothing it does). So a program whose small vectors are made between its rows (the mixture's means and
    scales) runs one table a sweep, and its stretches cross those places (the mixture: 4 tables a sweep -> 1,
    replayed value_and_grad 2.6-3.4 -> 2.0-2.5 CPU-ms; s13's notes)."""
    encoded, starts = all_rows(s, back)
    items = _walked(s, walk, back, encoded, starts)
    if not sweep:
        yield from (_tables([(encoded[what], None, (0, 0))], True if back else None)[0] if kind == TABLE else
                    (kind, what) for kind, what in items)
        return
    walked = list(items)
    made = iter(_tables(stretches.stretched_all(s, [list(encoded[what]) for kind, what in walked if kind == TABLE],
                                                sweep == "reverse"), sweep == "reverse"))
    yield from (next(made) if kind == TABLE else (kind, what) for kind, what in walked)


def _walked(s: State, walk: Iterable[tuple[int, Any]], back: bool, encoded: np.ndarray, starts: np.ndarray
            ) -> Iterator[tuple[int, Any]]:
    """grouped's walk with each table as (TABLE, its rows' indices in encoded, all_rows(s)'s), by Python ints: whether
    an item's regions meet a table's is asked of the pieces they share (pieces.cut, made when an item first asks:
    heat-pad's walks never do), each piece marked with the last table whose rows (back: whose items run after it) cover
    it. (Each item's regions as NumPy's arrays took arrays4k's walks 84 CPU-ms a first value_and_grad, with 2,800 items
    between its 5,200 rows; the loop is kept in tests/test_trace_passes.py.)"""
    rows: list[int] = []
    idle: list[tuple[int, Any]] = []
    moved: list[tuple[int, Any]] = []  # back: items run after the table, marked as its
    unmarked: list[int] = []  # forward: the table's plans whose pieces are not marked yet
    first, in0 = starts.tolist(), s._in0
    pieces: Pieces | None = None
    marks, table = [0], 1  # the table that marked each piece (0: none)
    for kind, what in walk:
        k = int(in0[what]) if kind == driver.RECORD else 0
        if kind == driver.RECORD and first[k + 1] > first[k]:
            if moved and pieces and any(marks[j] == table for j in pieces.rows(k)):
                yield from ((TABLE, rows), *idle, *moved)
                rows, idle, moved, table = [], [], [], table + 1
            if not back:
                unmarked.append(k)
            rows += range(first[k], first[k + 1])
            idle = []
            continue
        if rows and _idle(s, kind, what):
            idle.append((kind, what))
            continue
        if rows:
            plans = _touched(s, kind, what)
            if plans is not None:
                if pieces is None:
                    pieces = cut(s, encoded, starts, back)
                    marks = [0] * pieces.n
                for j in itertools.chain.from_iterable(map(pieces.rows, unmarked)):
                    marks[j] = table
                unmarked = []
                touched = [j for m in plans for j in range(pieces.first[m], pieces.past[m])]
                if back:
                    moved.append((kind, what))
                    for j in touched:
                        marks[j] = table
                    continue
                if not any(marks[j] == table for j in touched):
                    yield kind, what
                    continue
            yield from ((TABLE, rows), *idle, *moved)
            rows, idle, moved, unmarked, table = [], [], [], [], table + 1
        yield kind, what
    if rows:
        yield from ((TABLE, rows), *idle, *moved)


def _touched(s: State, kind: int, what: Any) -> list[int] | None:
    """The plans whose regions a walk's item reads or writes (its record's and its views' records', a stretch's elem
    records' records); None for an item never moved (a fused run, a call)."""
    if kind == driver.RECORD and RULE[s._op[what]].reads != "callee":
        records = [what, *(v.record for v in s._plans[s._in0[what]].inputs)]
    elif kind == driver.SCALARS:
        records = s._in0[what[0]].tolist()
    else:
        return None
    return s._in0[records].tolist()


# ops.LOOPED ops that make a value in scratch first: sigmoid's exp(-|a|) forward, sin's cos(a) back (ops.LOOPED_BACK),
# and ops.PAIRED's partials (2 n elements in a fifth row, E)
PRIMED = np.array(sorted(OPCODE[k] for k, (x, _, _) in LOOPED.items() if x != "a" or k in LOOPED_BACK), np.int64)
PAIRS = np.array(sorted(OPCODE[k] for k in PAIRED), np.int64)


def _strides(t: np.ndarray, q: int) -> np.ndarray:
    f = VIEWS + VIEW * q + kernels.STRIDES
    return t[:, f:f + 4]


def _scratched(t: np.ndarray) -> np.ndarray:
    """Whether each elementwise row uses scratch: it gathers a view or sums one back (a view not laid out as the
    output, unless it is a constant's one number, which the kernels load once: their ``_number``, view 1 first),
    or its NumPy loop reads a value made there (PRIMED)."""
    out, two = t[:, 10:14], t[:, 5] == 2
    flat = [~_strides(t, q).any(1) for q in range(2)]
    number = np.where(~two | (t[:, 4] == 1), -1, np.where(flat[1], 1, np.where(flat[0], 0, -1)))
    moved = [(_strides(t, q) != out).any(1) & ~((number == q) & (t[:, VIEWS + VIEW * q + kernels.WANT] == 0))
             for q in range(2)]
    return np.isin(t[:, 1], PRIMED) | moved[0] | (two & moved[1])


def _lines_back(t: np.ndarray) -> np.ndarray:
    """Each LINED row's scratch: a block of its lines, and each view's sum back (the space's elements along the view's
    strided axes)."""
    shape = t[:, 6:10]
    return np.max([shape[:, 3] * np.maximum(1, LINES // shape[:, 3]), *(np.where(_strides(t, q) != 0, shape, 1).prod(1)
                                                                        for q in range(2))], 0, initial=1)


def _tables(stretched: Sequence[tuple[Any, dict | None, tuple[int, int]]], back: bool | None
            ) -> list[tuple[int, Any]]:
    """Each table (its rows, its stretches' pending kernels or None, the scratch they need back: stretched_all's) as
    (TABLE, (table, scratch)), with the pending kernels where given, the driver's kernels its rows call forward or
    back made (array_kernels.ready; back None: not, the tables only asked about): the scratch a row needs, by NumPy
    over every table's rows at once, its most by table (min CPU-ms, GC off, s16's notes: arrays4k's
    1,600 tables 149 table by table -> 11, small's 1,000 85 -> 3; a table of 4,494 rows, heat-pad's, 1.1 either way)."""
    tables = list(map(np.asarray, map(itemgetter(0), stretched)))
    t = np.concatenate(tables) if tables else np.zeros((0, WIDTH), np.int64)
    if back is not None:
        array_kernels.ready(t, back)
    need = np.ones(len(t), np.int64)  # scratch elements by row: operands (a matmul's product back; a logsumexp's
    # block, sums and tops), the contributions and their sum back
    kind = t[:, 0]
    elementwise, lined, products, lines = (kind == kernels.ELEMENTWISE, kind == LINED, kind == MATMUL,
                                           kind == LOGSUMEXP)
    need[elementwise] = np.where(_scratched(t[elementwise]), t[elementwise, 4], 1)
    picks = kind == SELECT  # (a branch not laid out as the output: its sends, then their sum back)
    need[picks] = np.where((_strides(t[picks], 1) != t[picks, 10:14]).any(1), t[picks, 4], 1)
    paired = elementwise & np.isin(t[:, 1], PAIRS)  # (x ** y's partials: 2 n elements in E)
    need[paired] = 2 * t[paired, 4]
    need[lined] = _lines_back(t[lined])
    need[products] = t[products, 7] * np.maximum(t[products, 6], t[products, 8])
    m, n = t[lines, 8:10].T  # a logsumexp's lines and their length
    need[lines] = np.maximum(m, np.minimum(m * n, np.maximum(n, LINES)))
    counts = lengths(tables)
    size = np.maximum.reduceat(need, np.cumsum(counts) - counts) if len(t) else np.zeros(0, np.int64)
    kept, wide = np.array([*map(itemgetter(2), stretched), (0, 0)], np.int64)[:-1].T
    fifth = np.add.reduceat(paired, np.cumsum(counts) - counts) > 0 if len(t) else np.zeros(0, bool)  # (E)
    scratch = map(np.empty, zip(np.maximum(4 + fifth, kept).tolist(), np.maximum(np.maximum(size, 1), wide).tolist(),
                                    strict=True))
    # (a stretch's members' adjoints kept back: its rows, elements)
    pending = list(map(itemgetter(1), stretched))
    made = zip(tables, scratch, strict=True) if None in pending else zip(tables, scratch, pending, strict=True)
    return list(zip(itertools.repeat(TABLE), made))


def forward(s: State, table: np.ndarray, scratch: np.ndarray, pending: dict | None = None) -> None:
    """The table's forward sweep (timed while its stretches' kernels are pending)."""
    start = time.perf_counter() if pending else 0.0
    _gate.call(kernels.forward, table, s._aval, scratch)
    if pending:
        stretches.fill(table, pending, time.perf_counter() - start, s)


FEW = 100  # array records of a tape, fewer than which its reverse sweep makes no tables for itself (it may take its
# structure's: MAKE): the tables' rows cost ~1.5 ms to write (encoding.table), NumPy's steps 20-30 µs a record.
# Reverse, tables / steps, CPU (s12's notes, chains of tanh records): 2*10^4 elements 1.40 at 43
# records, 0.96 at 83, 0.82 at 203, 0.64 at 1,203; 2,000 elements 1.53 at 83, 0.75 at 123. No bound on a record's size:
# s13 E (s13's notes) measured 0.52-0.69 for tanh chains from 2*10^4 to 10^6 elements (not s12's
# 1.10-1.26 at 2*10^5); losses only where fused runs held the records (stencil runs dissolved at 2^15-2^16 elements
# 2.1-2.2, kept 1.2-1.5), and rules for those (runs kept, FEW outside them) lost elsewhere (tanhs and runs of mul,
# scale, add: value_and_grad 23 -> 56 ms at 4*10^4)


def tape_reverse(s: State, top: int, gen: int, keep: int, check: bool, runs: dict[int, Any] | None) -> int:
    """driver.reverse for a tape (tape/records/storage.py: a gradient recorded afresh), its stretches of array records
    the driver runs as tables once its kernels are ready (_gate: the process's NumPy steps have run PAYBACK seconds
    where they are not cached; then they compile): made for this sweep where the tape has FEW array records
    (``_encoded`` while it runs: the tape records on), or the last ones of a tape of the same structure (``Made``),
    which a smaller tape without fused runs takes once its structure's sweeps by NumPy's steps have run MAKE seconds;
    NumPy's steps otherwise, their seconds on CLOCK. ``runs`` (fused runs, given where the caller reads only the
    inputs' gradients: Storage._reverse's fused) are kept in the tables' walk as ``kept`` says; the tables of a tape
    of FEW array records or more, or of one of TAPE_RUNS elements or more, then have back stretches (Made.of; a small
    tape's stretch kernel, paid for only after 20,000 of the MLP's calls, would cost each of its 0.14 ms gradients 4-5%
    until then)."""
    ready, few = _gate.ready(), len(s._plans) < FEW and not at_least(s._plans, TAPE_RUNS)  # (a tape of big records:
    # its tables at once, with back stretches where fused, as a Function's: tape.jit's mixture 3.3 -> 2.3 ms a
    # gradient; stencil5's and filter's, s24: 0.96-0.97x a gradient by NumPy's steps and fused runs, the tables' scratch
    # +14-18% of its peak memory)
    key = (s._n, len(s._plans), top)
    made = _fitting(key, s) if ready else None
    if not ready or few and (made is None or made.items is None and made.spent < MAKE):
        start = time.perf_counter()
        try:
            return driver.reverse(s, top, gen, keep, check, runs)
        finally:
            spent = time.perf_counter() - start
            CLOCK.add(spent)
            if ready and few:
                _keep(key, Made.seen(s, spent + (made.spent if made is not None else 0.0)), made)
    s._encoded = {} if made is None or made.items is None else {"table": made.encoded}
    try:
        fused, runs = runs is not None and not few, kept(s, runs) if runs else None
        marks = [(at, run.rows) for at, run in runs.items()] if runs else []
        if made is None or made.items is None or made.marks != marks or made.fused != fused:
            made, old = Made.of(s, top, runs, marks, fused), made
            _keep(key, made, old)
        return driver.reverse(s, top, gen, keep, check, runs, lambda _: made.walk(s, runs))
    finally:
        s._encoded = None


MADE = 8  # tapes' structures whose tables and walk (or a small tape's seconds of NumPy's steps) are kept (a loop
# calling value_and_grad of a few functions)
MAKE = 1e-3  # seconds of NumPy's steps back after which a small tape's structure has its tables made, for its next
# tapes: a ski rental, as making them costs about that (bench/array_programs.py's MLP, batch 32: 1.1 ms, its reverse
# then 46 CPU-µs, by NumPy's steps 150; the mixture's 3.2 -> 1.7 ms), so a one-off tape never makes them


SHARING = 4  # structures kept under one key, at most: tapes of one size and another structure (the Python recorder's
# and tape.jit's tapes of one f, their regions laid out otherwise) called in turn made their tables again each call
# (the LSTM's tape.jit 2.5 -> 8.6 ms a call between the Python recorder's calls)


def _fitting(key: tuple[int, int, int], s: State) -> Made | None:
    """The structure kept under key that tape s has (Made.fits), else None."""
    kept = _made.get(key, ())
    same = _same(s) if kept else ()
    return next((made for made in reversed(kept) if made.fits(s, same)), None)


def _keep(key: tuple[int, int, int], made: Made, old: Made | None = None) -> None:
    """made kept under key, last, in place of old (of its structure); the oldest dropped past SHARING under a key and
    past MADE keys (list and pop each one C call: threads may do this at once)."""
    others = [m for m in _made.pop(key, ()) if m is not old]
    _made[key] = [*others[max(0, len(others) + 1 - SHARING):], made]
    for gone in list(_made)[:-MADE]:
        _made.pop(gone, None)


def _settings() -> tuple:
    """What the tables are made by besides a tape: the limits of encoding.py and LINES, kernels' loops and BLAS."""
    return (encoding.LARGE, encoding.BROADCAST, encoding.SPAN, encoding.RUN, encoding.PRODUCTS, LINES,
            kernels.LOOPS, kernels.BLAS)


def _same(s: State) -> tuple:
    """What fits compares besides the plans: the settings, the borrowed records, and the records' op, in0 and in1 as
    bytes (np.array_equal's three 6 µs at 12 records, bytes' 1)."""
    n = s._n
    return (_settings(), tuple(getattr(s, "_borrowed", None) or ()), s._op[:n].tobytes(), s._in0[:n].tobytes(),
            s._in1[:n].tobytes())


class Made(NamedTuple):
    """A tape's reverse sweep as tape_reverse made it: for the next tape of the same structure (a loop calling
    tape.value_and_grad(f) records the same plans each call), which checks it in full (``fits``), never by a hash.
    Made again each call, heat-pad's 3,005 plans took 14 ms (encoding.table) and 6 ms (grouped), GRU's 858 5 ms,
    of 88 and 25 ms a call. A small tape's structure is kept first with no tables (``seen``), its seconds of NumPy's
    steps adding up to MAKE."""

    plans: list[driver.Plan]
    same: tuple  # _same's: settings, borrowed records, the records' op, in0 and in1
    encoded: tuple[np.ndarray, np.ndarray] | None  # encoding.table's
    marks: list[tuple[int, tuple[int, ...]]]  # the runs the walk has: last row, rows
    items: list[tuple[int, Any]] | None  # grouped's walk: a table as (TABLE, (table, scratch's shape, its stretches'
    # pending kernels, what fill notes)), a run by its last row; None: not made yet
    spent: float = 0.0  # seconds of NumPy's steps back of tapes of this structure, while not made
    fused: bool = False  # its tables have back stretches: the adjoints of their inner members are not written

    @classmethod
    def of(cls, s: State, top: int, runs: dict[int, Any] | None, marks: list, fused: bool) -> Made:
        """The tables of tape s's reverse from record top (``runs``: the fused runs its walk keeps); where its caller
        reads only the inputs' gradients (``fused``), with back stretches (_Stretching)."""
        last = {id(run): at for at, run in runs.items()} if runs else {}
        walk = driver.reverse_walk(s, top, runs)
        stretching = _Stretching(s, top) if fused else None
        noted = stretching.noted if stretching else None
        items = [(kind, (what[0], what[1].shape, what[2] if len(what) > 2 else None, noted) if kind == TABLE else
                  last[id(what)] if kind == driver.RUN else what)
                 for kind, what in (grouped(stretching, walk, "reverse", True) if stretching else
                                    grouped(s, walk, back=True))]
        return cls(s._plans.copy(), _same(s), all_rows(s), marks, items, fused=fused)

    @classmethod
    def seen(cls, s: State, spent: float) -> Made:
        """Tape s's structure with no tables, its steps' seconds so far."""
        return cls(s._plans.copy(), _same(s), None, [], None, spent)

    def fits(self, s: State, same: tuple) -> bool:
        """Whether tape s, whose _same is ``same``, has this one's structure: its records' ops and inputs, its plans,
        its borrowed records, and the same settings."""
        return self.same == same and same_plans(self.plans, s._plans)

    def walk(self, s: State, runs: dict[int, Any] | None) -> Iterator[tuple[int, Any]]:
        """The items for driver.reverse on tape s: a table's reverse with its own scratch, the runs of s."""
        for kind, what in self.items or ():
            if kind == TABLE:
                table, shape, pending, noted = what
                yield kind, functools.partial(reverse, s, table, np.empty(shape), pending, noted=noted)
            else:
                yield kind, runs[what] if kind == driver.RUN and runs else what


_made: dict[tuple[int, int, int], list[Made]] = {}  # by (records, plans, top)


class _Stretching:
    """Tape s as grouped and stretches.stretched_all read a Function's state, for Made.of's back stretches: its records
    up to its last (op, in0), its plans listed and as a table, its one seeded record (top: Storage._reverse seeds only
    that) its output, the values a pass may compute again (layout.again's where every value they read is still the
    tape's: no region given away, ``_freed``; a recycling tape keeps only what the rows read back), its borrowed
    constants and its rows (encoding.table's, the tape's ``_encoded``, shared: Made.of reads them after). What fill
    notes goes to ``noted``, which a Made keeps (not the tape)."""

    def __init__(self, s: State, top: int) -> None:
        n = s._n
        self._op, self._in0, self._plans = s._op[:n], s._in0[:n], list(s._plans)
        self._borrowed, self._encoded = s._borrowed, s._encoded
        self._table, self._output_rows = encode(self._plans)[0], np.array([top], np.int64)
        records, given = self._table[:, layout.RECORDS[:2]], np.zeros(n + 1, bool)
        given[list(s._freed)] = True
        kept = ((records < 0) | ~given[records]).all(1)  # (-1, no view: given[n], False)
        self._steps = {"again": layout.again(self, self._table) & kept}
        self.noted = SimpleNamespace(_steps=self._steps)


def reverse(s: State, table: np.ndarray, scratch: np.ndarray, pending: dict | None, gen: int, keep: int,
            check: bool, noted: Any = None) -> bool:
    """The table's reverse sweep (timed while its stretches' kernels are pending, noted in ``noted``'s steps, else
    s's); whether it made a matmul's products back unchecked (as a NumPy step would: tape/function/array_replay.py
    sweeps again, checked, on a NaN)."""
    start = time.perf_counter() if pending else 0.0
    unchecked = bool(_gate.call(kernels.reverse, table, s._aval, s._aadj, s._stamp, gen, keep, scratch, check))
    if pending:
        stretches.fill(table, pending, time.perf_counter() - start, noted or s)
    return unchecked
