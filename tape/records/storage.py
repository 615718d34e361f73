"""Storage: the flat record arrays of a tape, which know nothing of what records into them.

One record per leaf and per primitive op, appended in creation order, so
every input index is smaller than its record's index and a reverse sweep by
index is already a reverse topological order: no DFS, no recursion.

Storage is a struct of arrays, 29 bytes per record:

    op     uint8    opcode (position in kernels.ops.OPS)
    in0    uint32   first input record
    in1    uint32   second input record, or the constant's slot in the pool
                    for const ops; NO_INPUT (0xFFFFFFFF) when unused
    val    float64  forward value
    adj    float64  adjoint, meaningful only where stamp says so
    stamp  uint32   generation of the backward pass that last wrote adj

Constants (``x * 2.0``) go to a separate float64 pool, 8 bytes each, so they
are not records and get no adjoint. Indices are uint32: Numba elides the
negative-index wraparound for unsigned indices (bench/bench_kernels.py),
and 2**32 - 1 records (~125 GB) is past any tape this library targets;
``TapeFullError`` is raised before that limit.

Array records (opcodes 96 and up, kernels/array_ops.py) are rows too: their
``in0`` is their plan's place in the side table, their elements live in the
arenas of tape/sweeps/arenas.py. A segment is the stretch of the tape's life between
two rewinds; handles (tape/records/handles.py) point at one and are revalidated when
it has ended. Numbers from outside pass ``real_array`` (tape/base/numbers.py).
"""

from __future__ import annotations

import bisect
import numbers
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from tape.base import gc_pacing
from tape.base.numbers import real_array
from tape.debug import nans, show
from tape.debug.nans import branch_changed, caller
from tape.errors import TapeError, TapeFullError
from tape.kernels import _sweeps
from tape.kernels._sweeps import reverse_range
from tape.kernels.array_ops import INPUT, NAME
from tape.kernels.ops import CONSTANT, IS_LEAF, LEAF, TWO_RECORDS, USES_POOL
from tape.kernels.twins import Twin
from tape.sweeps import arenas, compiled, driver, fusion
from tape.sweeps.arenas import Arenas

NO_INPUT = 0xFFFFFFFF
MAX_RECORDS = NO_INPUT  # indices 0 .. 2**32 - 2; the top value is the sentinel
BYTES_PER_RECORD = 1 + 4 + 4 + 8 + 8 + 4
_GEN_LIMIT = 2**32 - 1  # stamps are uint32
_ONE = np.ones(1)
_USES_POOL = USES_POOL.tolist()
reverse_sweep = Twin(_sweeps.reverse_sweep, globals())  # a small tape's first gradient: its twin (kernels/twins.py)
fresh_reverse = Twin(_sweeps.fresh_reverse, globals())  # tape.jit's first gradient of a small tape likewise
fresh_reverse_from = Twin(_sweeps.fresh_reverse_from, globals())


class Record(NamedTuple):
    """One row of the tape, for reading (``Tape.record``)."""

    index: int  # type: ignore[assignment]  # the field shadows tuple.index, as users expect
    op: str
    value: float
    inputs: tuple[int, ...]  # input records; empty for leaves
    constant: float | None  # the constant operand of a const op
    adjoint: float  # as of the last backward pass (0.0 where it did not reach)


class Segment:
    """The stretch of a tape's life between two rewinds; handles point here.

    While ``live``, every index handed out in it is valid. After a rewind, a
    handle is still valid if its index lies below every rewind mark since.
    """

    __slots__ = ("tape", "start", "live", "__weakref__")

    def __init__(self, tape: Storage, start: int):
        self.tape = tape
        self.start = start  # number of rewinds before this segment began
        self.live = True


class Storage(Arenas):
    """The record arrays of a tape, the constant pool, generations and rewinds, by index.

    ``tape.Tape`` (tape/tape.py) adds the handles on top.
    """

    _op: np.ndarray
    _in0: np.ndarray
    _in1: np.ndarray
    _val: np.ndarray
    _adj: np.ndarray
    _stamp: np.ndarray
    _consts: np.ndarray
    _capacity: int
    _consts_capacity: int
    # memoryviews of _op, _in0, _in1, _val and _consts: ~2x cheaper than NumPy's __setitem__ for
    # one element (typeshed types a memoryview's items as int, so Any here)
    _op_w: Any
    _in0_w: Any
    _in1_w: Any
    _val_w: Any
    _consts_w: Any

    def __init__(self, capacity: int = 1024):
        if not isinstance(capacity, numbers.Integral) or not 1 <= capacity <= MAX_RECORDS:
            raise ValueError(f"capacity must be an integer from 1 to {MAX_RECORDS} (32-bit indices), got {capacity!r}")
        self._n: int = 0
        self._n_consts: int = 0
        self._gen: int = 0  # generation of the last backward pass; stamps start at 0 = never
        self._epoch: int = 1  # first generation whose leaf adjoints still count (accumulate=True)
        # rewinds so far, and of those the (count, mark) pairs that _low_mark needs: each rewind drops
        # the pairs whose mark is not below its own, so a loop rewinding to one mark keeps one pair
        self._n_rewinds: int = 0
        self._rewind_counts: list[int] = []
        self._rewind_marks: list[int] = []  # increasing
        self._checks: list[tuple[int, bool, str]] = []  # (row, outcome, file:line) of branches taken
        # file:line of every record, kept only inside tape.debug_nans() (one dict entry per record)
        self._lines: dict[int, str] | None = {} if nans.active() else None
        self._segment_ref: Callable[[], Segment | None] = lambda: None
        self._tracing: bool = False  # tape.trace is recording f on this tape: no gradient of it (see _reverse)
        self._strict: bool = False  # while tracing: reading .value raises TracingError instead of warning
        self._gc_paced: bool = False  # a raised full-collection threshold while it records (base/gc_pacing.py)
        self._allocate(int(capacity))
        self._grow_consts(max(16, capacity // 8))
        self._init_arenas()

    # -- storage --------------------------------------------------------------

    def _allocate(self, capacity: int, records: tuple[np.ndarray, ...] = ()) -> None:
        """(Re)allocate the record arrays, keeping len(self) records; or take tape.jit's grown ``records``."""
        n, taken = self._n, records
        # every record writes op, in0, val (in1 NO_INPUT: unary recorders leave it); adj read where stamp says
        records = records or (np.empty(capacity, np.uint8), np.empty(capacity, np.uint32),
                              np.full(capacity, NO_INPUT, np.uint32), np.empty(capacity, np.float64))
        for name, new in zip(("_op", "_in0", "_in1", "_val", "_adj", "_stamp"),
                             (*records, np.empty(capacity, np.float64), np.zeros(capacity, np.uint32)), strict=True):
            if hasattr(self, name) and not (taken and name in ("_op", "_in0", "_in1", "_val")):
                new[:n] = getattr(self, name)[:n]
            setattr(self, name, new)
        self._capacity = capacity
        self._op_w, self._in0_w = memoryview(self._op.data), memoryview(self._in0.data)
        self._in1_w, self._val_w = memoryview(self._in1.data), memoryview(self._val.data)
        if capacity >= gc_pacing.GROWN:  # a big tape: full collections paced while it records
            gc_pacing.pace(self, capacity)

    def _grow(self, need: int) -> None:
        if need > MAX_RECORDS:
            raise TapeFullError(
                f"a tape holds at most {MAX_RECORDS} records (32-bit indices); "
                f"this one has {self._n}. Record in pieces, or rewind() between them."
            )
        self._allocate(max(need, min(2 * self._capacity, MAX_RECORDS)))

    def _grow_consts(self, capacity: int | None = None) -> None:
        """(Re)allocate the constant pool, doubling it by default."""
        consts = np.empty(capacity or 2 * self._consts_capacity, np.float64)
        if hasattr(self, "_consts"):
            consts[: self._n_consts] = self._consts[: self._n_consts]
        self._consts, self._consts_w, self._consts_capacity = consts, memoryview(consts.data), len(consts)

    def __len__(self) -> int:
        return self._n

    @property
    def capacity(self) -> int:
        """Records the arrays can hold before the next doubling."""
        return self._capacity

    @property
    def nbytes(self) -> int:
        """Bytes held by the record arrays and the constant pool (allocated capacity)."""
        arrays = (self._op, self._in0, self._in1, self._val, self._adj, self._stamp, self._consts)
        return sum(a.nbytes for a in arrays) + self._arena_bytes()

    @property
    def n_consts(self) -> int:
        """Constants in the pool (one per const-op record)."""
        return self._n_consts

    # -- handles --------------------------------------------------------------

    def _segment(self) -> Segment:
        """The live segment; a weak reference, so tape and handles form no cycle."""
        seg = self._segment_ref()
        if seg is None:
            seg = Segment(self, self._n_rewinds)
            self._segment_ref = weakref.ref(seg)
        return seg

    def _append_block(self, op, count: int, in0=NO_INPUT, in1=NO_INPUT, consts=None, values=None) -> np.ndarray:
        """Append count records at once (op and inputs scalars or arrays); return their indices.

        ``consts`` go to the pool and become in1 of their records; ``values`` are
        stored as given (leaves, constants); otherwise the Numba forward sweep
        computes the new records, exactly as a replay would.
        """
        start, stop = self._n, self._n + count
        if stop > self._capacity:
            self._grow(stop)
        self._op[start:stop] = op
        self._in0[start:stop] = in0
        self._in1[start:stop] = in1 if consts is None else self._append_consts(consts)
        self._n = stop
        if self._lines is not None:
            where = caller()
            self._lines.update(dict.fromkeys(range(start, stop), where))
        if values is not None:
            self._val[start:stop] = values
        else:
            driver.forward_scalars(self._op, self._in0, self._in1, self._val, self._consts, start, stop)
        return np.arange(start, stop)

    def _append_consts(self, values: np.ndarray) -> np.ndarray:
        """Append constants to the pool; return their slots."""
        k, count = self._n_consts, len(values)
        if k + count > self._consts_capacity:
            self._grow_consts(max(2 * self._consts_capacity, k + count))
        self._consts[k:k + count] = values
        self._n_consts = k + count
        return np.arange(k, k + count)

    def _push(self, code: int, i: int, j: int, value: float) -> int:
        """Append one record; return its index."""
        n = self._n
        if n == self._capacity:
            self._grow(n + 1)
        self._op_w[n] = code
        self._in0_w[n] = i
        self._in1_w[n] = j
        self._val_w[n] = value
        self._n = n + 1
        if self._lines is not None:
            self._lines[n] = caller()
        return n

    # -- lifetime -------------------------------------------------------------

    def rewind(self, mark: int) -> None:
        """Discard records ``mark`` and later; their handles become stale.

        ``mark = len(t)`` taken earlier: record parameters once, then per step
        record, differentiate and rewind to the mark. Leaf gradients of the kept
        records survive (for ``accumulate=True``).
        """
        if not (type(mark) is int or isinstance(mark, numbers.Integral)) or not 0 <= mark <= self._n:
            raise IndexError(f"rewind mark {mark!r} out of range 0..{self._n}")
        n, mark = self._n, int(mark)
        if self._gc_paced:
            gc_pacing.release(self)
        seg = self._segment_ref()
        if seg is not None:
            seg.live = False
        self._segment_ref = lambda: None
        while self._rewind_marks and self._rewind_marks[-1] >= mark:
            self._rewind_counts.pop()
            self._rewind_marks.pop()
        self._rewind_counts.append(self._n_rewinds)
        self._rewind_marks.append(mark)
        self._n_rewinds += 1
        self._in0[mark:n] = NO_INPUT
        self._in1[mark:n] = NO_INPUT
        self._stamp[mark:n] = 0
        self._n = mark
        self._n_consts = 0 if not mark or not self._n_consts else sum(map(_USES_POOL.__getitem__, self._op[
            :mark].tolist())) if mark <= 64 else int(np.count_nonzero(USES_POOL[self._op[:mark]]))  # (a list's for a
        # few: tape.value_and_grad's renewal keeping x, 5 -> 1 µs)
        self._drop_checks(mark)
        self._rewind_arenas(mark)

    def _drop_checks(self, mark: int) -> None:
        """Forget the checked branches of records ``mark`` and later."""
        self._checks = [check for check in self._checks if check[0] < mark]

    def _low_mark(self, start: int) -> int:
        """The lowest mark of the rewinds numbered ``start`` and later: the records below it
        survived all of them (``start`` < the number of rewinds)."""
        return self._rewind_marks[bisect.bisect_left(self._rewind_counts, start)]

    def clear(self) -> None:
        """Discard every record (keeps the allocated capacity)."""
        self.rewind(0)

    def _renew(self, keep: bool = False) -> None:
        """Cleared for tape.value_and_grad's next call, recycling from an empty arena as a new tape would: a new
        tape's set-up, its arenas' allocation and its freeing cost an afresh MLP (batch 32) about 40 of its
        500 µs. ``keep``: its first record, an array input, kept as if pushed again (the direct path of a jitted f
        writes x's values into its region: the MLP's Tape.array, 8 µs a call)."""
        fixed = self._plans[0].size if keep else 0
        self.rewind(int(keep))
        self._freed, self._n_arena = {}, self._plans[0].offset + fixed if keep else 0  # (a recycled tape's rewind
        self._recycle()  # keeps its arena's top)
        self._fixed = self._recorded = fixed  # (as _push_array counts an input)

    # -- sweeps ---------------------------------------------------------------

    def _forward(self, idx: np.ndarray, values: ArrayLike, start: int | None = None) -> None:
        """Set leaf records idx to values, recompute the records after them (or after ``start``); check branches."""
        if self._gc_paced:
            gc_pacing.release(self)
        vals = real_array(values, "Tape.forward").reshape(-1)
        if len(idx) != len(vals):
            raise ValueError(f"{len(idx)} inputs but {len(vals)} values")
        if len(idx) and np.any(self._op[idx] != LEAF):
            raise ValueError("forward() can only set leaf records (made by Tape.var)")
        self._val[idx] = vals
        if start is None:
            start = int(idx.min()) if len(idx) else 0
        self._recompute(start)
        if nans.active():
            nans.check(self._records(), self._lines, self._n, adjoints=False)
        if self._checks:
            rows, expected, where = zip(*self._checks, strict=True)
            flipped = np.flatnonzero((self._val[list(rows)] != 0.0) != np.array(expected))
            if len(flipped):
                k = int(flipped[0])
                raise branch_changed(self._op, self._in0, self._in1, self._consts, rows[k], expected[k], where[k])

    def _recompute(self, start: int) -> None:
        """Recompute records start and later from their inputs (array records by tape/sweeps/driver.py)."""
        if self._plans:
            driver.forward(self, start, self._n)
        else:
            driver.forward_scalars(self._op, self._in0, self._in1, self._val, self._consts, start, self._n)

    def _reverse(self, out: int, accumulate: bool, fused: bool = False, check: bool = True) -> int:
        """Reverse sweep from record ``out`` (seed 1) in a new generation (see Tape.backward).

        fused: runs of arithmetic array records in one pass each (tape/sweeps/fusion.py), leaving the
        adjoints of their inner records unwritten: for callers that read only the inputs' gradients.
        check=False: array products unchecked for 0 * inf (driver.reverse; its count of NumPy steps is
        returned), for a caller that sweeps again checked where what it reads holds a NaN."""
        if not 0 <= out < self._n:
            raise IndexError(f"record {out} is not on this tape of {self._n} records")
        if self._gc_paced:
            gc_pacing.release(self)
        if self._tracing:
            raise TapeError("a gradient of the tape that tape.trace is recording would be replayed as a constant "
                            "(its value at x0, not at the replayed point): inside a traced function, call "
                            "tape.grad (or jvp, vjp) on the Vars instead, which records the derivative as records.")
        if self._gen + 1 >= _GEN_LIMIT:
            self._restart_generations()
        gen = self._gen + 1
        if not accumulate:
            self._epoch = gen
        if self._plans:
            self._adjoint_arena()
            driver.seed(self, out, 1.0, gen, self._epoch)
            runs = {run.rows[-1]: run for run in fusion.find(self, {out})} if fused and not nans.active() else None
            unchecked = compiled.tape_reverse(self, out, gen, self._epoch, check or nans.active(), runs)
        else:
            unchecked = 0
            at = reverse_sweep(self._op, self._in0, self._in1, self._val, self._adj, self._stamp,
                               self._consts, np.array([out], np.int64), _ONE, gen, self._epoch)
            if at >= 0:  # a grouped op: reverse_range has their rules (a first gradient without compiles none)
                reverse_range(self._op, self._in0, self._in1, self._val, self._adj, self._stamp, self._consts,
                              0, at + 1, gen, self._epoch)
        self._gen = gen
        if nans.active():
            nans.check(self._records(), self._lines, self._n, adjoints=True)
        return unchecked

    def _gradient_and_clear(self, out: int, rows: np.ndarray) -> np.ndarray:
        """The adjoints of records ``rows`` (an array of their shape) from a reverse sweep from record ``out``,
        then clear: for a tape recorded for one gradient (tape.jit's value_and_grad). The sweep writes no stamps
        (adjoints zeroed first): the bits of _reverse's, with less to read and write. Scalar records only."""
        adj = self._adj
        adj[: self._n] = 0.0
        adj[out] = 1.0
        swept = self._op[: out + 1]  # the records the sweep reads (a Twin's size: kernels/twins.py)
        at = fresh_reverse(swept, self._in0, self._in1, self._val, adj, self._consts, out)
        if at >= 0:  # a grouped op: fresh_reverse_from has their rules (as reverse_range for reverse_sweep)
            fresh_reverse_from(swept, self._in0, self._in1, self._val, adj, self._consts, at)
        grads = adj[rows]
        self.clear()
        return grads

    def _restart_generations(self) -> None:
        """Renumber stamps once every 2**32 passes, keeping accumulated leaf gradients."""
        stamp = self._stamp[: self._n]
        keep = (stamp >= self._epoch) & np.isin(self._op[: self._n], (LEAF, INPUT))
        stamp[:] = np.where(keep, 1, 0)
        self._gen, self._epoch = 1, 1

    def _grads(self, idx: np.ndarray | slice) -> np.ndarray:
        """Adjoints of records idx as of the last backward pass; zero where it did not reach."""
        stamp = self._stamp[idx]
        live = stamp == self._gen
        if self._epoch < self._gen:  # within an accumulate=True run: older leaf adjoints count too
            live |= (stamp >= self._epoch) & (self._op[idx] == LEAF)
        return np.where(live, self._adj[idx], 0.0) if self._gen else np.zeros(stamp.shape)  # (idx a slice too: a copy)

    # -- inspection -----------------------------------------------------------

    def record(self, index: int) -> Record:
        """Record ``index`` as (index, op, value, inputs, constant, adjoint)."""
        i = self._row(index)
        k = self._op[i]
        inputs: tuple[int, ...] = () if IS_LEAF[k] else (int(self._in0[i]),)
        if TWO_RECORDS[k]:
            inputs += (int(self._in1[i]),)
        constant = float(self._consts[self._in1[i]]) if USES_POOL[k] else None
        adjoint = float(self._grads(np.array([i]))[0])
        return Record(i, NAME[k], float(self._val[i]), inputs, constant, adjoint)

    def _row(self, index: int) -> int:
        """``index`` (negative counts from the end) checked against the records."""
        if type(index) is not int:
            if not isinstance(index, numbers.Integral) or isinstance(index, bool):
                raise TypeError(f"tape indices are integers, got {type(index).__name__}")
            index = int(index)
        i = index + self._n if index < 0 else index
        if not 0 <= i < self._n:
            raise IndexError(f"record {index} out of range for a tape of {self._n} records")
        return i

    def _records(self) -> show.Records:
        n = self._n
        notes = {int(i): "constant" for i in np.flatnonzero(self._op[:n] == CONSTANT)}
        notes.update({row: f"checked branch (was {outcome})" for row, outcome, _ in self._checks})
        return show.Records(self._op[:n], self._in0[:n], self._in1[:n], self._val[:n],
                             self._consts[: self._n_consts], self._grads, notes, *arenas.described(self, n))

    def table(self, rows: slice | range | None = None, head: int = 20, tail: int = 20) -> str:
        """The articles' node table: id, op, value, inputs, adjoint (of the last backward), note.

        ``rows`` picks a slice of records; past ``head + tail`` rows the middle is elided.
        """
        return show.table(self._records(), rows, head, tail)

    def __repr__(self) -> str:
        return f"<tape.Tape {self._n} records, {self.nbytes} bytes>"
