"""Handles: what a Var is besides its operators, the checks every handle passes, and Condition.

A handle is (segment of a tape, record index), nothing else: no references to
parent records, so dropping a graph of any size is O(1) and never recursive.
``Var`` (tape/records/_recorders.py, generated) adds the recording operators to ``Handle``.
A handle of a segment that ended (``rewind``, ``clear``) is moved to the live one
if its record survived, else it raises ``StaleHandleError``.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from tape.errors import ForeignHandleError, StaleHandleError, TracingError, TracingWarning
from tape.kernels._array_rules import RULES
from tape.kernels._sweeps import eval_op
from tape.kernels.ops import OPS, SYMBOL
from tape.records.storage import Segment, Storage

if TYPE_CHECKING:
    from tape.tape import Tape

new = object.__new__
H = TypeVar("H", bound="Handle")
UFUNC_HANDLERS: list[Callable[[Any, str, tuple, dict], Any]] = []  # tape/arrays/ufuncs.py puts its handler here
FUNCTION_HANDLERS: dict[Any, Callable[..., Any]] = {}  # NumPy functions taking Vars (tape/api/trace.py: np.where)
ARRAY_OF: list[Callable[[Any], Any]] = []  # tape/arrays/varray.py: a Var as a 0-d VarArray of its record


class Handle:
    """A record of a tape: ``.value``, ``.grad``, ``.index``, ``.tape``, ``.backward()``."""

    __slots__ = ("_seg", "_index")
    _seg: Segment
    _index: int
    shape: tuple[int, ...] = ()  # a 0-d array, for NumPy and array code
    ndim = 0
    size = 1

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy ufuncs with a Var among the operands: the Var as a 0-d array (tape/arrays/ufuncs.py)."""
        return UFUNC_HANDLERS[0](ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """np.where of Vars as tape.where; every other NumPy function as NumPy's own (a VarArray
        among the operands answers instead)."""
        handler = FUNCTION_HANDLERS.get(func)
        if handler is not None:
            return handler(*args, **kwargs)
        implementation = getattr(func, "_implementation", None)
        if implementation is None or any(not issubclass(t, Handle) for t in types):
            return NotImplemented
        return implementation(*args, **kwargs)

    def sum(self: H, axis: None | tuple[()] = None, dtype: None = None, out: None = None,
            keepdims: bool = False) -> H:
        """A 0-d array's sum (also mean, prod, max and min, and np.sum(x), ...): itself."""
        if axis not in (None, ()) or dtype not in (None, float, np.float64) or out is not None:
            raise ValueError(f"a Var is 0-d: axis={axis!r}, dtype={dtype!r}, out={out!r} do not apply")
        return self

    mean = prod = max = min = sum

    # -- the other methods of a 0-d array: a Var is NumPy's 0-d result, and answers them as one would --

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        """As a 0-d array's: reshape(-1), reshape(1, 1) give VarArrays of this record; reshape(()) the Var."""
        return self._zero_d(ARRAY_OF[0](self).reshape(*shape))

    def __getitem__(self, key: Any) -> Any:
        """As a 0-d array's: x[None], x[None, None] give VarArrays of this record; x[()], x[...] the Var."""
        return self._zero_d(ARRAY_OF[0](self)[key])

    def _zero_d(self, out: Any) -> Any:
        return self if out.shape == () else out  # a 0-d VarArray of this record is this Var

    __iter__ = None  # not iterable, as a 0-d array (x[k] would otherwise make iter() stop at once)

    def ravel(self) -> Any:
        """A VarArray of shape (1,) holding this record (also flatten)."""
        return self.reshape(-1)

    flatten = ravel

    def squeeze(self: H, axis: None | tuple[()] = None) -> H:
        """Itself (also transpose() and .T, copy(), astype(float)): a 0-d array has no axes."""
        if axis not in (None, ()):
            raise np.exceptions.AxisError(f"a Var is 0-d: squeeze(axis={axis!r}) has no axis to squeeze")
        return self

    def transpose(self: H, *axes: Any) -> H:
        if axes not in ((), (None,), ((),)):
            raise ValueError(f"axes don't match array: a Var is 0-d, got transpose{axes!r}")
        return self

    T = property(transpose)

    def copy(self: H) -> H:
        return self  # records never change, so a copy is the same record

    def astype(self: H, dtype: Any, copy: bool = True) -> H:
        """Itself for float64 (float, np.float64, 'f8'); other dtypes would drop the derivative."""
        if np.dtype(dtype) != np.float64:
            raise TypeError(f"a Var is a float64 record: astype({dtype!r}) would lose its derivative; "
                            "x.item() reads the number, astype(float) keeps the Var")
        return self

    def tolist(self) -> float:
        """The value as a Python float, as a 0-d array's tolist() (read on purpose, as item())."""
        return self.item()

    def var(self, axis: None | tuple[()] = None, dtype: None = None, out: None = None, ddof: int = 0,
            keepdims: bool = False) -> Any:
        """A 0-d array's variance: (x - x)**2 over 1 - ddof (0; NaN for inf and NaN, as NumPy), NumPy's
        warning and NaN where 1 - ddof <= 0. std is its square root."""
        d = self.sum(axis, dtype, out) - self  # type: ignore[operator]  # Var's operators are generated
        if ddof < 1:
            return d * d * (1.0 / (1 - ddof))
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        return d * d * math.inf

    def std(self, axis: None | tuple[()] = None, dtype: None = None, out: None = None, ddof: int = 0,
            keepdims: bool = False) -> Any:
        return self.var(axis, dtype, out, ddof) ** 0.5

    @classmethod
    def _at(cls: type[H], seg: Segment, index: int) -> H:
        handle = new(cls)
        handle._seg = seg
        handle._index = index
        return handle

    def __pos__(self: H) -> H:
        return self

    @property
    def index(self) -> int:
        """The record's index on its tape (read-only: a handle never moves)."""
        return self._index

    @property
    def tape(self) -> Tape:
        """The tape this handle's record is on."""
        return self._seg.tape  # type: ignore[return-value]  # a Tape: only tape.Tape makes handles

    def _live_tape(self) -> Storage:
        if not self._seg.live:
            revalidate(self)
        return self._seg.tape

    @property
    def value(self) -> float:
        """The record's forward value (inside tape.trace: a number every replay keeps, with a warning)."""
        t = self._live_tape()
        if t._tracing:
            warn_value_in_trace(t)
        return t._val_w[self._index]

    def item(self) -> float:
        """The record's value as a Python float, read on purpose: inside tape.trace, a number every
        replay keeps (for printing, logging, a deliberate constant), without TracingWarning."""
        t = self._live_tape()
        return float(t._val_w[self._index])

    @property
    def grad(self) -> float:
        """d(output of the last backward pass)/d(this record); 0.0 if it was not reached."""
        return float(self._live_tape()._grads(np.array([self._index]))[0])

    def backward(self, accumulate: bool = False) -> None:
        """Reverse sweep from this record; read results with ``.grad`` (see Tape.backward)."""
        self._live_tape()._reverse(self._index, accumulate)

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a tape.Var is not defined; compare it: `if x > 0:`")

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        try:
            return f"Var(#{self._index}, value={self._live_tape()._val_w[self._index]!r})"
        except StaleHandleError:
            return f"Var(#{self._index}, stale)"


def surviving(seg: Segment, highest: int, what: str) -> Segment:
    """The live segment, if records up to ``highest`` survived every rewind since ``seg`` ended;
    else StaleHandleError naming ``what``. Every object holding record indices checks this."""
    if seg.live:
        return seg
    low = seg.tape._low_mark(seg.start)
    if highest < low:
        return seg.tape._segment()
    how = "clear()" if low == 0 else f"rewind({low})"
    raise StaleHandleError(f"{what} discarded by Tape.{how}; this handle is stale")


_WARNED: set[tuple[str, int]] = set()  # the source lines warned about, so each warns once
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # tape's folder


def warn_value_in_trace(t: Storage) -> None:
    """W6 of the adversarial pass: a number read inside tape.trace is frozen into every replay (and
    has no derivative): a TracingWarning once per source line, or TracingError under strict=True."""
    frame, level = sys._getframe(2), 3  # the line that read .value (this, then the value property, then it), or
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):  # where tape's own reads
        frame, level = frame.f_back, level + 1  # (argsort, argmax) were called from
    where = (frame.f_code.co_filename, frame.f_lineno)
    message = ("reading .value inside a traced function gives a number that every replay and derivative keeps "
               "as it is now; compare the Var itself (`if x > 0:` records a checked branch), use tape.where, "
               "or tape.stop_gradient(x) for a value without a derivative that replays; x.item() reads it on "
               "purpose")
    if t._strict:
        raise TracingError(f"{where[0]}:{where[1]}: {message}")
    if where not in _WARNED:
        _WARNED.add(where)
        warnings.warn(message, TracingWarning, stacklevel=level)


def revalidate(handle: Handle) -> Segment:
    """Move a handle from a dead segment to the live one, or raise if it is stale."""
    handle._seg = surviving(handle._seg, handle._index, f"record #{handle._index} was")
    return handle._seg


def shared_segment(x: Handle, y: Handle) -> Segment:
    """The live segment both handles belong to, or a clear error."""
    if x._seg.tape is not y._seg.tape:
        raise ForeignHandleError(f"cannot combine {x!r} and {y!r}: they were recorded on different tapes")
    seg = x._seg if x._seg.live else revalidate(x)
    if not y._seg.live:
        revalidate(y)
    return seg


def as_constant(value: object) -> float | None:
    """``value`` as a float if it is a real number (Python or NumPy: np.bool_ counts, as bool does), else None."""
    if type(value) is float:
        return value
    if isinstance(value, (numbers.Real, np.bool_)) and not isinstance(value, np.ndarray):
        return float(value)
    return None


def plain(x: object) -> bool:
    """Whether x is a NumPy array of real numbers (bools and ints too), which tape.<name> takes as NumPy would."""
    return isinstance(x, np.ndarray) and x.dtype.kind in "biuf"


def on_plain(name: str, *xs: Any) -> np.ndarray:
    """tape.<name> of NumPy arrays and numbers, recording nothing: its array rule's values (kernels/_array_rules.py),
    a VarArray's of the same numbers, broadcast as NumPy does."""
    a = [np.asarray(x, np.float64) for x in xs]
    out = np.empty(np.broadcast_shapes(*(v.shape for v in a)))
    with np.errstate(all="ignore"):
        RULES[name][0](a[0], a[1] if len(a) > 1 else None, out)
    return out


def unary_other(code: int, x: Any) -> Any:
    """A unary function (``tape.exp``, ...) of what is not a Var: an array of records records
    through its own ``_unary`` (VarArray); a number gives the kernel's value, a NumPy array its rule's values
    (on_plain), recording nothing."""
    record = getattr(type(x), "_unary", None)
    if record is not None:
        return record(x, code)
    if plain(x):
        return on_plain(OPS[code].name, x)
    c = as_constant(x)
    if c is None:
        raise TypeError(f"tape.{OPS[code].name} expects a Var, a VarArray or a real number, got {type(x).__name__}")
    return eval_op(code, c, 0.0)


def compare(x: Handle, other: object, pair: int, var_c: int, swap: bool) -> Condition:
    """``x <op> other`` as a Condition: pair(x, other) (swapped: pair(other, x)), or var_c(x, c)."""
    if type(other) is type(x):
        return Condition(pair, other, x) if swap else Condition(pair, x, other)  # type: ignore[arg-type]
    c = as_constant(other)
    return NotImplemented if c is None else Condition(var_c, x, c)


class Condition:
    """The result of comparing Vars: ``if x > 0:`` records a check that every
    replay re-evaluates; ``tape.where(x > 0, a, b)`` records a select instead."""

    __slots__ = ("_code", "_x", "_y", "_outcome")

    def __init__(self, code: int, x: Handle, y: Handle | float):
        self._code, self._x, self._y = code, x, y
        self._outcome: bool | None = None

    def _tape(self) -> Storage:
        if isinstance(self._y, Handle):
            return shared_segment(self._x, self._y).tape
        return self._x._live_tape()

    def _record(self) -> Handle:
        """Record the comparison (1.0 or 0.0) as a new row and return its handle."""
        t = self._tape()
        x, y = self._x, self._y
        a = t._val_w[x._index]
        if isinstance(y, Handle):
            j, b = y._index, t._val_w[y._index]
        else:
            b = y
            j = t._n_consts
            if j == t._consts_capacity:
                t._grow_consts()
            t._consts_w[j] = b
            t._n_consts = j + 1
        row = t._push(self._code, x._index, j, eval_op(self._code, a, b))
        return type(x)._at(t._segment(), row)

    def __bool__(self) -> bool:
        if self._outcome is None:
            row = self._record()
            frame = sys._getframe(1)
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            self._outcome = row._seg.tape._val_w[row._index] != 0.0
            row._seg.tape._checks.append((row._index, self._outcome, where))
        return self._outcome

    def __repr__(self) -> str:
        name = OPS[self._code].name.removesuffix("_c")
        y = f"#{self._y._index}" if isinstance(self._y, Handle) else repr(self._y)
        return f"Condition(#{self._x._index} {SYMBOL[name]} {y})"
