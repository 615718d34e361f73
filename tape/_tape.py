"""The tape (flat record arrays) and the Var handle that records into it.

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
"""

from __future__ import annotations

import math
import numbers
import os
import sys
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from kernels import OPS, eval_op, forward_sweep, reverse_sweep
from kernels.ops import HELPERS, KINDS_WITH_CONSTANT, LEAF, MATH_NAMES, OPCODE, TWO_RECORD_KINDS
from tape import _debug, _record, _show
from tape.errors import BranchChanged, ForeignHandleError, StaleHandleError, TapeFullError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from tape._array import VarArray
    from tape._function import Function

NO_INPUT = 0xFFFFFFFF
MAX_RECORDS = NO_INPUT  # indices 0 .. 2**32 - 2; the top value is the sentinel
BYTES_PER_RECORD = 1 + 4 + 4 + 8 + 8 + 4
_GEN_LIMIT = 2**32 - 1  # stamps are uint32
_ONE = np.ones(1)
_USES_POOL = np.array([op.kind in KINDS_WITH_CONSTANT for op in OPS])
_CONSTANT = OPCODE["constant"]


class Record(NamedTuple):
    """One row of the tape, for reading (``Tape.record``)."""

    index: int
    op: str
    value: float
    inputs: tuple[int, ...]  # input records; empty for leaves
    constant: float | None  # the constant operand of a const op
    adjoint: float  # as of the last backward pass (0.0 where it did not reach)


class _Segment:
    """The stretch of a tape's life between two rewinds; handles point here.

    While ``live``, every index handed out in it is valid. After a rewind, a
    handle is still valid if its index lies below every rewind mark since.
    """

    __slots__ = ("tape", "start", "live", "__weakref__")

    def __init__(self, tape: Tape, start: int):
        self.tape = tape
        self.start = start  # number of rewinds before this segment began
        self.live = True


class Tape:
    """A Wengert list: records appended by operator overloading on ``Var``."""

    def __init__(self, capacity: int = 1024):
        if not isinstance(capacity, numbers.Integral) or capacity < 1:
            raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
        self._n = 0
        self._n_consts = 0
        self._gen = 0  # generation of the last backward pass; stamps start at 0 = never
        self._epoch = 1  # first generation whose leaf adjoints still count (accumulate=True)
        self._rewinds: list[int] = []  # mark of every rewind/clear, in order
        self._checks: list[tuple[int, bool, str]] = []  # (row, outcome, file:line) of branches taken
        # file:line of every record, kept only inside tape.debug_nans() (one dict entry per record)
        self._lines: dict[int, str] | None = {} if _debug.active() else None
        self._segment_ref = lambda: None
        self._allocate(int(capacity))
        self._grow_consts(max(16, capacity // 8))

    # -- storage --------------------------------------------------------------

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate the record arrays, keeping the first len(self) records."""
        n = self._n
        arrays = {  # every record writes op, in0, val; adj is read only where stamp says so
            "_op": np.empty(capacity, np.uint8),
            "_in0": np.empty(capacity, np.uint32),
            "_in1": np.full(capacity, NO_INPUT, np.uint32),  # unary recorders leave it as is
            "_val": np.empty(capacity, np.float64),
            "_adj": np.empty(capacity, np.float64),
            "_stamp": np.zeros(capacity, np.uint32),
        }
        for name, new in arrays.items():
            if hasattr(self, name):
                new[:n] = getattr(self, name)[:n]
            setattr(self, name, new)
        self._capacity = capacity
        # memoryviews: ~2x cheaper than NumPy scalar __setitem__ for one element
        self._op_w, self._in0_w = memoryview(self._op), memoryview(self._in0)
        self._in1_w, self._val_w = memoryview(self._in1), memoryview(self._val)

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
        self._consts, self._consts_w, self._consts_capacity = consts, memoryview(consts), len(consts)

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
        return sum(a.nbytes for a in arrays)

    @property
    def n_consts(self) -> int:
        """Constants in the pool (one per const-op record)."""
        return self._n_consts

    # -- handles --------------------------------------------------------------

    def _segment(self) -> _Segment:
        """The live segment; a weak reference, so tape and handles form no cycle."""
        seg = self._segment_ref()
        if seg is None:
            seg = _Segment(self, len(self._rewinds))
            self._segment_ref = weakref.ref(seg)
        return seg

    def _resolve(self, var: Var) -> int:
        """Check that ``var`` belongs to this tape and is not stale; return its index."""
        if type(var) is not Var:
            raise TypeError(f"expected a tape.Var, got {type(var).__name__}")
        seg = var._seg
        if seg.tape is not self:
            raise ForeignHandleError(f"{var!r} was recorded on another tape")
        if not seg.live:
            _revalidate(var)
        return var.index

    def _rows(self, handles: Iterable[Var]) -> np.ndarray:
        """Indices of many handles, each checked as by _resolve (fast when all are live here)."""
        handles = list(handles)
        seg = self._segment_ref()
        if seg is not None and all(type(h) is Var and h._seg is seg for h in handles):
            return np.array([h.index for h in handles], np.int64)
        return np.array([self._resolve(h) for h in handles], np.int64)

    def var(self, value: float) -> Var:
        """A new leaf record holding ``value`` (a real number)."""
        v = _as_constant(value)
        if v is None:
            raise TypeError(f"Tape.var expects a real number, got {type(value).__name__}: {value!r}")
        return self._push(self._segment(), LEAF, NO_INPUT, NO_INPUT, v)

    def vars(self, values: Iterable[float]) -> list[Var]:
        """Leaf records for every element of a 1-D sequence of real numbers."""
        array = _real_array(values, "Tape.vars")
        if array.ndim != 1:
            raise TypeError(f"Tape.vars expects a 1-D sequence of real numbers, got shape {array.shape}")
        seg, rows = self._segment(), self._append_block(LEAF, len(array), values=array)
        return [_new_var(seg, i) for i in rows.tolist()]

    def array(self, values: ArrayLike) -> VarArray:
        """Leaf records for every element of an array of any shape, as a VarArray."""
        from tape._array import VarArray

        array = _real_array(values, "Tape.array")
        rows = self._append_block(LEAF, array.size, values=array.ravel())
        return VarArray(self._segment(), rows.reshape(array.shape))

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
            where = _caller()
            self._lines.update(dict.fromkeys(range(start, stop), where))
        if values is not None:
            self._val[start:stop] = values
        else:
            forward_sweep(self._op, self._in0, self._in1, self._val, self._consts, start, stop)
        return np.arange(start, stop)

    def _append_consts(self, values: np.ndarray) -> np.ndarray:
        """Append constants to the pool; return their slots."""
        k, count = self._n_consts, len(values)
        if k + count > self._consts_capacity:
            self._grow_consts(max(2 * self._consts_capacity, k + count))
        self._consts[k:k + count] = values
        self._n_consts = k + count
        return np.arange(k, k + count)

    def _constant(self, value: float) -> Var:
        """A record holding a number that is not an input (a branch of tape.where)."""
        return self._push(self._segment(), _CONSTANT, NO_INPUT, NO_INPUT, value)

    def __getitem__(self, index: int) -> Var:
        """A handle for record ``index`` (negative counts from the end)."""
        if type(index) is not int:
            if not isinstance(index, numbers.Integral) or isinstance(index, bool):
                raise TypeError(f"tape indices are integers, got {type(index).__name__}")
            index = int(index)
        i = index + self._n if index < 0 else index
        if not 0 <= i < self._n:
            raise IndexError(f"record {index} out of range for a tape of {self._n} records")
        seg = self._segment_ref()
        var = _new(Var)
        var._seg = seg if seg is not None else self._segment()
        var.index = i
        return var

    def _push(self, seg: _Segment, code: int, i: int, j: int, value: float) -> Var:
        n = self._n
        if n == self._capacity:
            self._grow(n + 1)
        self._op_w[n] = code
        self._in0_w[n] = i
        self._in1_w[n] = j
        self._val_w[n] = value
        self._n = n + 1
        if self._lines is not None:
            self._lines[n] = _caller()
        var = _new(Var)
        var._seg = seg
        var.index = n
        return var

    def function(self, inputs: Sequence[Var], outputs: Var | Sequence[Var], params: Sequence[Var] = (),
                 on_branch_change: str = "raise") -> Function:
        """A Function replaying this tape: ``inputs`` (leaves) -> ``outputs``.

        ``params`` are leaves that change at replay but are not differentiated;
        any other leaf keeps its recorded value. The Function copies the records,
        so this tape can go on recording.
        """
        from tape._function import Function

        return Function.from_tape(self, inputs, outputs, params, on_branch_change)

    # -- lifetime -------------------------------------------------------------

    def rewind(self, mark: int) -> None:
        """Discard records ``mark`` and later; their handles become stale.

        ``mark = len(t)`` taken earlier: record parameters once, then per step
        record, differentiate and rewind to the mark. Leaf gradients of the kept
        records survive (for ``accumulate=True``).
        """
        if not isinstance(mark, numbers.Integral) or not 0 <= mark <= self._n:
            raise IndexError(f"rewind mark {mark!r} out of range 0..{self._n}")
        n, mark = self._n, int(mark)
        seg = self._segment_ref()
        if seg is not None:
            seg.live = False
        self._segment_ref = lambda: None
        self._rewinds.append(mark)
        self._in0[mark:n] = NO_INPUT
        self._in1[mark:n] = NO_INPUT
        self._stamp[mark:n] = 0
        self._n = mark
        self._n_consts = int(np.count_nonzero(_USES_POOL[self._op[:mark]]))
        self._checks = [check for check in self._checks if check[0] < mark]

    def clear(self) -> None:
        """Discard every record (keeps the allocated capacity)."""
        self.rewind(0)

    # -- sweeps ---------------------------------------------------------------

    def forward(self, inputs: Sequence[Var] = (), values: Iterable[float] = ()) -> None:
        """Replay: set leaf ``inputs`` to ``values`` and recompute every record after them."""
        idx = self._rows(inputs)
        vals = np.asarray(values, dtype=np.float64).reshape(-1)
        if len(idx) != len(vals):
            raise ValueError(f"{len(idx)} inputs but {len(vals)} values")
        if len(idx) and np.any(self._op[idx] != LEAF):
            raise ValueError("forward() can only set leaf records (made by Tape.var)")
        self._val[idx] = vals
        start = int(idx.min()) if len(idx) else 0
        forward_sweep(self._op, self._in0, self._in1, self._val, self._consts, start, self._n)
        if _debug.active():
            _debug.check(self._records(), self._lines, self._n, adjoints=False)
        if self._checks:
            rows, expected, where = zip(*self._checks, strict=True)
            flipped = np.flatnonzero((self._val[list(rows)] != 0.0) != np.array(expected))
            if len(flipped):
                k = int(flipped[0])
                raise branch_changed(self._op, self._in0, self._in1, self._consts, rows[k], expected[k], where[k])

    def backward(self, output: Var, accumulate: bool = False) -> None:
        """Reverse sweep from ``output`` (seed 1) in a new generation.

        Adjoints of earlier passes read as zero without being touched, so
        calling backward twice gives the same gradients. With
        ``accumulate=True`` leaf gradients add up across passes (gradient
        accumulation) until the next ``accumulate=False`` pass.
        """
        out = self._resolve(output)
        if self._gen + 1 >= _GEN_LIMIT:
            self._restart_generations()
        gen = self._gen + 1
        if not accumulate:
            self._epoch = gen
        reverse_sweep(self._op, self._in0, self._in1, self._val, self._adj, self._stamp,
                      self._consts, np.array([out], np.int64), _ONE, gen, self._epoch)
        self._gen = gen
        if _debug.active():
            _debug.check(self._records(), self._lines, self._n, adjoints=True)

    def _restart_generations(self) -> None:
        """Renumber stamps once every 2**32 passes, keeping accumulated leaf gradients."""
        stamp = self._stamp[: self._n]
        keep = (stamp >= self._epoch) & (self._op[: self._n] == LEAF)
        stamp[:] = np.where(keep, 1, 0)
        self._gen, self._epoch = 1, 1

    def _grads(self, idx: np.ndarray) -> np.ndarray:
        """Adjoints of records idx as of the last backward pass; zero where it did not reach."""
        stamp = self._stamp[idx]
        live = stamp == self._gen
        if self._epoch < self._gen:  # within an accumulate=True run: older leaf adjoints count too
            live |= (stamp >= self._epoch) & (self._op[idx] == LEAF)
        grads = self._adj[idx]
        grads[~live | (self._gen == 0)] = 0.0
        return grads

    def gradient(self, output: Var, wrt: Var | Sequence[Var] | VarArray,
                 accumulate: bool = False) -> float | np.ndarray:
        """d output / d wrt by one reverse sweep: a float for one Var, an array shaped like a
        VarArray, else an array with one entry per handle."""
        from tape._array import VarArray

        if isinstance(wrt, VarArray):
            if wrt._live_tape() is not self:
                raise ForeignHandleError("the VarArray was recorded on another tape")
            self.backward(output, accumulate=accumulate)
            return self._grads(wrt._idx.ravel()).reshape(wrt.shape)
        single = type(wrt) is Var
        idx = self._rows([wrt] if single else wrt)
        self.backward(output, accumulate=accumulate)
        grads = self._grads(idx)
        return float(grads[0]) if single else grads

    # -- inspection -----------------------------------------------------------

    def record(self, index: int) -> Record:
        """Record ``index`` as (index, op, value, inputs, constant, adjoint)."""
        i = self[index].index
        op = OPS[self._op[i]]
        inputs = () if op.kind == "leaf" else (int(self._in0[i]),)
        if op.kind in TWO_RECORD_KINDS:
            inputs += (int(self._in1[i]),)
        constant = float(self._consts[self._in1[i]]) if op.kind in KINDS_WITH_CONSTANT else None
        adjoint = float(self._grads(np.array([i]))[0])
        return Record(i, op.name, float(self._val[i]), inputs, constant, adjoint)

    def _records(self) -> _show.Records:
        n = self._n
        notes = {int(i): "constant" for i in np.flatnonzero(self._op[:n] == _CONSTANT)}
        notes.update({row: f"checked branch (was {outcome})" for row, outcome, _ in self._checks})
        return _show.Records(self._op[:n], self._in0[:n], self._in1[:n], self._val[:n],
                             self._consts[: self._n_consts], self._grads, notes)

    def table(self, rows: slice | range | None = None, head: int = 20, tail: int = 20) -> str:
        """The articles' node table: id, op, value, inputs, adjoint (of the last backward), note.

        ``rows`` picks a slice of records; past ``head + tail`` rows the middle is elided.
        """
        return _show.table(self._records(), rows, head, tail)

    def to_dot(self, output: Var, limit: int = 300) -> str:
        """Graphviz DOT of the records ``output`` depends on, with values and adjoints."""
        return _show.to_dot(self._records(), [self._resolve(output)], limit)

    def render(self, output: Var, path: str, limit: int = 300) -> None:
        """Draw ``to_dot(output)`` to an .svg or .png file (needs Graphviz's ``dot``)."""
        _show.render(self.to_dot(output, limit), path)

    def __repr__(self) -> str:
        return f"<tape.Tape {self._n} records, {self.nbytes} bytes>"


_new = object.__new__


def _new_var(seg: _Segment, index: int) -> Var:
    var = _new(Var)
    var._seg = seg
    var.index = index
    return var


def _revalidate(var: Var) -> _Segment:
    """Move a handle from a dead segment to the live one, or raise if it is stale."""
    seg = var._seg
    tape = seg.tape
    marks = tape._rewinds[seg.start:]
    if var.index < min(marks):
        var._seg = tape._segment()
        return var._seg
    what = "clear()" if min(marks) == 0 else f"rewind({min(marks)})"
    raise StaleHandleError(f"record #{var.index} was discarded by Tape.{what}; this handle is stale")


def _shared_segment(x: Var, y: Var) -> _Segment:
    """The live segment both handles belong to, or a clear error."""
    if x._seg.tape is not y._seg.tape:
        raise ForeignHandleError(f"cannot combine {x!r} and {y!r}: they were recorded on different tapes")
    seg = x._seg if x._seg.live else _revalidate(x)
    if not y._seg.live:
        _revalidate(y)
    return seg


def _caller() -> str:
    """file:line of the user code that is recording (the first frame outside this package)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _real_array(values, what: str) -> np.ndarray:
    """values as a float64 array, or a TypeError naming what expected real numbers."""
    array = np.asarray(values)
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)
            or array.dtype == np.bool_):
        raise TypeError(f"{what} expects real numbers, got {array.dtype} from {type(values).__name__}")
    return array.astype(np.float64)


def _as_constant(value) -> float | None:
    """``value`` as a float if it is a real number (Python or NumPy), else None."""
    if type(value) is float:
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, np.ndarray):
        return float(value)
    return None


class Var:
    """Handle to one record of a tape: (segment of the tape, index), nothing else.

    No references to parent records, so dropping a huge graph is O(1) and
    never recursive. Arithmetic with other Vars and with real numbers records
    new rows; ``.value`` and ``.grad`` read the tape.
    """

    __slots__ = ("_seg", "index")
    __array_ufunc__ = None  # NumPy defers to our reflected operators (np.float64(2) * x)

    def __pos__(self) -> Var:
        return self

    @property
    def tape(self) -> Tape:
        return self._seg.tape

    def _live_tape(self) -> Tape:
        if not self._seg.live:
            _revalidate(self)
        return self._seg.tape

    @property
    def value(self) -> float:
        """The record's forward value."""
        return self._live_tape()._val_w[self.index]

    @property
    def grad(self) -> float:
        """d(output of the last backward pass)/d(this record); 0.0 if it was not reached."""
        t = self._live_tape()
        return float(t._grads(np.array([self.index]))[0])

    def backward(self, accumulate: bool = False) -> None:
        """Reverse sweep from this record; read results with ``.grad``."""
        self._live_tape().backward(self, accumulate=accumulate)

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a tape.Var is not defined; compare it: `if x > 0:`")

    # Comparisons make a Condition: a bool when a branch needs one (recorded and
    # re-checked at replay), or data for tape.where. x > y is lt(y, x).
    def __lt__(self, other) -> Condition:
        return _compare(self, other, "lt", "lt_c", swap=False)

    def __le__(self, other) -> Condition:
        return _compare(self, other, "le", "le_c", swap=False)

    def __gt__(self, other) -> Condition:
        return _compare(self, other, "lt", "gt_c", swap=True)

    def __ge__(self, other) -> Condition:
        return _compare(self, other, "le", "ge_c", swap=True)

    def __eq__(self, other) -> Condition:  # type: ignore[override]
        return _compare(self, other, "eq", "eq_c", swap=False)

    def __ne__(self, other) -> Condition:  # type: ignore[override]
        return _compare(self, other, "ne", "ne_c", swap=False)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        seg = self._seg
        if not seg.live:
            try:
                _revalidate(self)
            except StaleHandleError:
                return f"Var(#{self.index}, stale)"
        return f"Var(#{self.index}, value={self._seg.tape._val_w[self.index]!r})"


def _compare(x: Var, other, name: str, name_c: str, swap: bool):
    if type(other) is Var:
        return Condition(OPCODE[name], other, x) if swap else Condition(OPCODE[name], x, other)
    c = _as_constant(other)
    return NotImplemented if c is None else Condition(OPCODE[name_c], x, c)


_SYMBOL = {"lt": "<", "le": "<=", "eq": "==", "ne": "!=", "gt": ">", "ge": ">="}


def branch_changed(op, in0, in1, consts, row: int, expected: bool, where: str, extra: str = "") -> BranchChanged:
    """The error for a checked comparison (record ``row``) that now comes out differently."""
    kind = OPS[op[row]]
    rhs = f"{float(consts[in1[row]])!r}" if kind.kind == "compare_c" else f"#{in1[row]}"
    described = f"#{in0[row]} {_SYMBOL[kind.name.removesuffix('_c')]} {rhs}"
    return BranchChanged(
        f"comparison {described} at record #{row}, recorded at {where}, was {expected} when traced and is "
        f"{not expected} at this input: the tape holds the other branch. Use tape.where() for a branch-free "
        f"select, or on_branch_change='retrace'.{extra}", int(row), where)


class Condition:
    """The result of comparing Vars: ``if x > 0:`` records a check that every
    replay re-evaluates; ``tape.where(x > 0, a, b)`` records a select instead."""

    __slots__ = ("_code", "_x", "_y", "_outcome")

    def __init__(self, code: int, x: Var, y: Var | float):
        self._code, self._x, self._y = code, x, y
        self._outcome: bool | None = None

    def _tape(self) -> Tape:
        if type(self._y) is Var:
            return _shared_segment(self._x, self._y).tape
        return self._x._live_tape()

    def _record(self) -> Var:
        """Record the comparison (1.0 or 0.0) as a new row and return it."""
        t = self._tape()
        x, y = self._x, self._y
        a = t._val_w[x.index]
        if type(y) is Var:
            j, b = y.index, t._val_w[y.index]
        else:
            b = y
            j = t._n_consts
            if j == t._consts_capacity:
                t._grow_consts()
            t._consts_w[j] = b
            t._n_consts = j + 1
        return t._push(t._segment(), self._code, x.index, j, eval_op(self._code, a, b))

    def __bool__(self) -> bool:
        if self._outcome is None:
            row = self._record()
            caller = sys._getframe(1)
            where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
            self._outcome = row.value != 0.0
            row.tape._checks.append((row.index, self._outcome, where))
        return self._outcome

    def __repr__(self) -> str:
        name = OPS[self._code].name.removesuffix("_c")
        y = f"#{self._y.index}" if type(self._y) is Var else repr(self._y)
        return f"Condition(#{self._x.index} {_SYMBOL[name]} {y})"


def _unary_on_number(code: int, name: str, x) -> float:
    """tape.<name>(x) for a VarArray (one record per element), or for a plain number (the
    kernel's value, nothing recorded)."""
    from tape._array import VarArray, unary

    if type(x) is VarArray:
        return unary(code, x)
    c = _as_constant(x)
    if c is None:
        raise TypeError(f"tape.{name} expects a Var or a real number, got {type(x).__name__}")
    return eval_op(code, c, 0.0)


def _recorder_namespace() -> dict:
    namespace = {name: getattr(math, name) for name in MATH_NAMES}
    namespace.update({fn.__name__: fn for fn in HELPERS})
    namespace.update(Var=Var, _new=_new, eval_op=eval_op, _as_constant=_as_constant, _caller=_caller,
                     _revalidate=_revalidate, _shared_segment=_shared_segment,
                     _unary_on_number=_unary_on_number)
    return namespace


RECORDERS = _record.build(_recorder_namespace())
for _dunder, _name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"), ("pow", "pow")):
    setattr(Var, f"__{_dunder}__", RECORDERS[f"record_{_name}"])
    setattr(Var, f"__r{_dunder}__", RECORDERS[f"record_r{_name}"])
Var.__neg__ = RECORDERS["record_neg"]
Var.__abs__ = RECORDERS["record_abs"]
