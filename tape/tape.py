"""tape.Tape: the storage (tape/records/storage.py) with the handles users record with.

The storage knows records by index only; this layer, above the handles, arrays
and Functions, turns Vars and VarArrays into indices (checking that each belongs
to this tape and is not stale) and results back into handles and arrays.
"""

from __future__ import annotations

from array import array as doubles
from collections.abc import Iterable, Sequence
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from tape.arrays import small as _small
from tape.arrays import ufuncs  # noqa: F401  # Vars in NumPy ufuncs
from tape.arrays.varray import VarArray
from tape.base import gc_pacing
from tape.base.numbers import real_array
from tape.debug import nans, show
from tape.debug.nans import caller
from tape.errors import ForeignHandleError
from tape.function import array_replay
from tape.function.function import Function
from tape.function.replay import Retrace
from tape.kernels.array_ops import INPUT
from tape.kernels.ops import CONSTANT, LEAF
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.array_records import copy
from tape.records.handles import as_constant, new, revalidate
from tape.records.storage import NO_INPUT, Storage
from tape.sweeps.driver import whole

Handles = Var | Sequence[Var] | VarArray
_FEW = 64  # Tape._leaves writes up to this many leaves through memoryviews
RENEWED = 2**23  # bytes of arenas below which value_and_grad keeps its tape for the next call (a tape that dies gives
# arenas of 1 MB or more to arenas.recycle's pool, whose spares fit in 4 times what is asked)
_LEAVES = memoryview(np.full(_FEW, LEAF, np.uint8).data)
_NO_INPUTS = memoryview(np.full(_FEW, NO_INPUT, np.uint32).data)


class Tape(Storage):
    """A Wengert list: records appended by operator overloading on ``Var``."""

    _derivatives: tuple[tuple, Function] | None = None  # the Function of _at_once, while the tape stands
    # tape.jit's checked branches, as arrays (objects with .tuples() and .below(mark)), not yet read
    _jit_checks: list | tuple = ()

    @property  # type: ignore[override]
    def _checks(self) -> list[tuple[int, bool, str]]:
        """(row, outcome, file:line) of the branches taken; tape.jit's arrive as arrays and become
        tuples here, when first read (rows only grow, so the order is the order they were taken)."""
        checks = self.__dict__["_checks"]
        if self._jit_checks:
            pending, self._jit_checks = self._jit_checks, ()
            for chunk in pending:
                checks.extend(chunk.tuples())
        return checks

    @_checks.setter
    def _checks(self, value: list[tuple[int, bool, str]]) -> None:
        self.__dict__["_checks"] = value

    def _drop_checks(self, mark: int) -> None:
        """Forget the checked branches of records ``mark`` and later; tape.jit's stay arrays (unread)."""
        if self._jit_checks:
            kept = (chunk.below(mark) for chunk in self._jit_checks)
            self._jit_checks = [chunk for chunk in kept if chunk is not None]
        listed = self.__dict__["_checks"]
        if listed:
            self.__dict__["_checks"] = [check for check in listed if check[0] < mark]

    # -- handles ------------------------------------------------------------------

    def var(self, value: float) -> Var:
        """A new leaf record holding ``value`` (a real number)."""
        v = as_constant(value)
        if v is None:
            raise TypeError(f"Tape.var expects a real number, got {type(value).__name__}: {value!r}")
        return Var._at(self._segment(), self._push(LEAF, NO_INPUT, NO_INPUT, v))

    def vars(self, values: Iterable[float]) -> list[Var]:
        """Leaf records for every element of a 1-D sequence of real numbers."""
        array = real_array(values, "Tape.vars")
        if array.ndim != 1:
            raise TypeError(f"Tape.vars expects a 1-D sequence of real numbers, got shape {array.shape}")
        seg, rows = self._segment(), self._append_block(LEAF, len(array), values=array)
        return [Var._at(seg, i) for i in rows.tolist()]

    @classmethod
    def _afresh(cls, size: int, last: int) -> Tape:
        """A tape for one tape.value_and_grad call of ``size`` numbers: for an array program, room for a dozen arrays
        like x or what its last call used (``last`` arena elements); big constants (data) read in place, its records
        living for this call only; regions recycled, its one reverse sweep reading only what back_reads say
        (tape/sweeps/arenas.py), unless checked (debug_nans, lines)."""
        t = cls(capacity=max(1024, 4 * size) if size < array_records.SMALL else 1024)
        if room := max(16 * size if size >= array_records.SMALL else 0, last):
            t._reserve(room)
        t._borrowing = True
        if t._lines is None and not nans.active():
            t._recycle()
        return t

    def _renewable(self) -> bool:
        """Whether a tape.value_and_grad call's tape of array records is renewed for its next call: not checked, not
        grown past gc_pacing.GROWN records, arenas under RENEWED bytes (where nothing made inside f holds it)."""
        return self._lines is None and self._capacity < gc_pacing.GROWN and self._arena_bytes() < RENEWED

    def _leaves(self, values: list[float]) -> list[Var]:
        """Leaf records for Python floats, the records Tape.vars writes: up to _FEW by four slice writes."""
        if len(values) > _FEW:
            return self.vars(values)
        n, seg = self._leaf_records(values), self._segment()
        handles = []
        for i in range(n, self._n):
            handle = Var()
            handle._seg, handle._index = seg, i
            handles.append(handle)
        return handles

    def _leaf_records(self, values: list[float]) -> int:
        """Append leaf records for up to _FEW Python numbers (no handles); the first one's index."""
        n, k = self._n, len(values)
        if n + k > self._capacity:
            self._grow(n + k)
        stop = n + k
        self._op_w[n:stop], self._val_w[n:stop] = _LEAVES[:k], memoryview(doubles("d", values))
        self._in0_w[n:stop] = self._in1_w[n:stop] = _NO_INPUTS[:k]
        if self._lines is not None:
            self._lines.update(dict.fromkeys(range(n, stop), caller()))
        self._n = stop
        return n

    def array(self, values: ArrayLike) -> VarArray:
        """Leaves for an array of any shape, as a VarArray: one array record (``array_records.SMALL``
        elements or more), else one leaf record per element."""
        array = real_array(values, "Tape.array")
        if array.size >= array_records.small():
            return VarArray(self._segment(), None, array_records.leaf(self, array))
        if array.ndim and array.size <= _FEW:  # (the leaves of tape.grad's tiny programs: 4.3 -> 2.4 µs for 6)
            return _small.fresh(VarArray, self._segment(), range(self._leaf_records(array.ravel().tolist()), self._n),
                                array.shape)
        rows = self._append_block(LEAF, array.size, values=array.ravel())
        return VarArray(self._segment(), rows.reshape(array.shape))

    def _constant(self, value: float) -> Var:
        """A record holding a number that is not an input (a branch of tape.where)."""
        return Var._at(self._segment(), self._push(CONSTANT, NO_INPUT, NO_INPUT, value))

    def __getitem__(self, index: int) -> Var:
        """A handle for record ``index`` (negative counts from the end)."""
        n = self._n
        if type(index) is int and -n <= index < n:  # the common case, inlined: programs call t[i] per record
            var = new(Var)
            seg = self._segment_ref()
            var._seg = seg if seg is not None else self._segment()
            var._index = index + n if index < 0 else index
            return var
        return Var._at(self._segment(), self._row(index))  # converts or raises

    def _resolve(self, var: Var) -> int:
        """Check that ``var`` belongs to this tape and is not stale; return its index."""
        if type(var) is not Var:
            raise TypeError(f"expected a tape.Var, got {type(var).__name__}")
        seg = var._seg
        if seg.tape is not self:
            raise ForeignHandleError(f"{var!r} was recorded on another tape")
        if not seg.live:
            revalidate(var)
        return var._index

    def _rows(self, handles: Iterable[Var] | VarArray) -> np.ndarray:
        """Indices of many handles (or of a VarArray), each checked as by _resolve."""
        if isinstance(handles, VarArray):
            if handles._live_tape() is not self:
                raise ForeignHandleError("the VarArray was recorded on another tape")
            if handles._view is not None:  # an array record stands for all its elements
                return np.array([copy(self, handles._view).record], np.int64)
            return handles._idx.ravel().astype(np.int64)  # type: ignore[union-attr]
        if not isinstance(handles, Iterable):
            raise TypeError(f"expected a Var, a sequence of Vars or a VarArray, got {type(handles).__name__}")
        handles = list(handles)
        seg = self._segment_ref()
        if seg is not None and all(type(h) is Var and h._seg is seg for h in handles):
            return np.array([h._index for h in handles], np.int64)
        return np.array([self._resolve(h) for h in handles], np.int64)

    def _leaf_rows(self, handles: Sequence[Var | VarArray] | VarArray, what: str) -> np.ndarray:
        if type(handles) is Var:
            raise TypeError(f"{what} must be a sequence of Vars")
        if not isinstance(handles, VarArray) and any(isinstance(h, VarArray) for h in handles):
            rows = np.concatenate([self._leaf_rows(h if isinstance(h, VarArray) else [h], what) for h in handles])
            if len(set(rows.tolist())) != len(rows):
                raise ValueError(f"{what} contain the same record twice")
            return rows
        if isinstance(handles, VarArray) and handles._view is not None and (
                handles._view != whole(handles._view.record, self._plan(handles._view.record))):
            raise ValueError(f"{what} must be whole arrays made by Tape.array, not views of them")
        rows = self._rows(cast("Sequence[Var] | VarArray", handles))
        if len(rows) and np.any(~np.isin(self._op[rows], (LEAF, INPUT))):
            raise ValueError(f"{what} must be leaf records made by Tape.var/Tape.vars/Tape.array")
        if len(set(rows.tolist())) != len(rows):
            raise ValueError(f"{what} contain the same record twice")
        return rows

    # -- sweeps -------------------------------------------------------------------

    def forward(self, inputs: Sequence[Var] | VarArray = (), values: ArrayLike = ()) -> None:
        """Replay: set leaf ``inputs`` (Vars, or a VarArray made by Tape.array) to ``values`` and
        recompute every record after them."""
        if isinstance(inputs, VarArray) and inputs._view is not None:
            view = inputs._view
            if self._op[view.record] != INPUT or view != whole(view.record, self._plan(view.record)):
                raise ValueError("forward() can only set whole arrays made by Tape.array")
            numbers = real_array(values, "Tape.forward")
            if numbers.size != inputs.size:
                raise ValueError(f"{inputs.size} inputs but {numbers.size} values")
            self._aval[self._plan(view.record).offset:][:inputs.size] = numbers.reshape(-1)
            self._forward(np.zeros(0, np.int64), (), start=view.record)
            return
        self._forward(self._rows(inputs), values)

    def backward(self, output: Var, accumulate: bool = False) -> None:
        """Reverse sweep from ``output`` (seed 1) in a new generation.

        Adjoints of earlier passes read as zero without being touched, so
        calling backward twice gives the same gradients. With
        ``accumulate=True`` leaf gradients add up across passes (gradient
        accumulation) until the next ``accumulate=False`` pass.
        """
        self._reverse(self._resolve(output), accumulate)

    def gradient(self, output: Var, wrt: Handles, accumulate: bool = False) -> float | np.ndarray:
        """d output / d wrt by one reverse sweep: a float for one Var, an array shaped like a
        VarArray, else an array with one entry per handle."""
        single = type(wrt) is Var
        if isinstance(wrt, VarArray) and wrt._view is not None:
            self.backward(output, accumulate=accumulate)
            return wrt.grad
        idx = self._rows([wrt] if single else wrt)  # type: ignore[list-item, arg-type]
        self.backward(output, accumulate=accumulate)
        grads = self._grads(idx)
        if isinstance(wrt, VarArray):
            return grads.reshape(wrt.shape)
        return float(grads[0]) if single else grads

    def function(self, inputs: Sequence[Var] | VarArray, outputs: Handles, params: Sequence[Var] | VarArray = (),
                 on_branch_change: str = "raise", prune: bool = True, cse: bool = True) -> Function:
        """A Function replaying this tape: ``inputs`` (leaves) -> ``outputs``.

        ``params`` are leaves that change at replay but are not differentiated;
        any other leaf keeps its recorded value. The Function copies the records,
        so this tape can go on recording. ``prune``: keep only the records the
        outputs and the checked comparisons depend on, records of no input folded
        to constants; ``cse`` (with prune): a repeated subexpression computed once.
        The merged Function is the program written with each subexpression once:
        values and tangents keep their bits (to rounding where a merge changes
        the fused array runs), and merged records add their adjoints before
        multiplying, so gradients may differ in the last bits (``cse=False``).
        """
        return self._function(inputs, outputs, params, on_branch_change, None, prune=prune, cse=cse)

    def _function(self, inputs: Sequence[Var | VarArray] | VarArray, outputs: Handles,
                  params: Sequence[Var | VarArray] | VarArray,
                  on_branch_change: str, source: Retrace | None, input_shape: tuple[int, ...] | None = None,
                  output_shape: tuple[int, ...] | None = None, prune: bool = True, cse: bool = True) -> Function:
        if self._gc_paced:
            gc_pacing.release(self)
        input_rows = self._leaf_rows(inputs, "inputs")
        param_rows = self._leaf_rows(params, "params")
        if set(input_rows.tolist()) & set(param_rows.tolist()):
            raise ValueError("a record cannot be both an input and a parameter")
        scalar = type(outputs) is Var
        output_rows = self._rows([outputs] if scalar else outputs)  # type: ignore[list-item, arg-type]
        if not len(output_rows):
            raise ValueError("a Function needs at least one output")
        return Function._from_storage(self, input_rows, param_rows, output_rows, scalar, on_branch_change, source,
                                      input_shape, output_shape, prune=prune, cse=cse)

    # -- derivatives beyond the gradient, at the recorded point ----------------------

    def jvp(self, outputs: Handles, inputs: Sequence[Var] | VarArray, v: ArrayLike) -> float | np.ndarray:
        """J v at the inputs' values (v: one entry per input number): a float for one Var output."""
        F = self._at_once(inputs, outputs)
        return F.jvp(F._at_point, v)

    def jacobian(self, outputs: Handles, inputs: Sequence[Var] | VarArray) -> np.ndarray:
        """d outputs / d inputs at their values: (m, n), or (n,) for one Var output."""
        F = self._at_once(inputs, outputs)
        return np.asarray(F.jacobian(F._at_point))

    def hvp(self, output: Var, inputs: Sequence[Var] | VarArray, v: ArrayLike) -> np.ndarray:
        """H v of a Var output in the inputs, at their values (forward-over-reverse)."""
        F = self._at_once(inputs, output)
        return np.asarray(F.hvp(F._at_point, v))

    def hessian(self, output: Var, inputs: Sequence[Var] | VarArray) -> np.ndarray:
        """The (n, n) Hessian of a Var output in the inputs, at their values."""
        F = self._at_once(inputs, output)
        return np.asarray(F.hessian(F._at_point))

    def value_grad_hvp(self, output: Var, inputs: Sequence[Var] | VarArray, v: ArrayLike
                       ) -> tuple[float, np.ndarray, np.ndarray]:
        """(value, gradient, H v) of a Var output in the inputs, in one pass (see Function.value_grad_hvp)."""
        F = self._at_once(inputs, output)
        value, grad, hv = F.value_grad_hvp(F._at_point, v)
        return value, np.asarray(grad), np.asarray(hv)

    def _at_once(self, inputs: Sequence[Var] | VarArray, outputs: Handles) -> Function:
        """A Function over these records for derivatives where the tape stands, its point set to the
        inputs' values. A tape of scalar records lends it its own arrays (no copy; working memory
        kept while the tape is unchanged); with array records it is a copy, as Tape.function."""
        rows = self._leaf_rows(inputs, "inputs")
        scalar = type(outputs) is Var
        out_rows = self._rows([outputs] if scalar else outputs)  # type: ignore[list-item, arg-type]
        key = (self._n, self._n_rewinds, self._n_consts, scalar, rows.tobytes(), out_rows.tobytes())
        if self._derivatives is not None and self._derivatives[0] == key:
            F = self._derivatives[1]
        else:  # (no handles kept: they would hold the tape in a reference cycle)
            F = Function._from_storage(self, rows, np.zeros(0, np.int64), out_rows, scalar, share=True)
            self._derivatives = (key, F)
        array_replay.full(F)  # its plans are the tape's
        F._at_point = (array_replay.collect(F, F._in_pieces, self._val, self._aval) if F._plans
                       else self._val[F._input_rows])
        return F

    # -- pictures -----------------------------------------------------------------

    def to_dot(self, output: Var, limit: int = 300) -> str:
        """Graphviz DOT of the records ``output`` depends on, with values and adjoints."""
        return show.to_dot(self._records(), [self._resolve(output)], limit)

    def render(self, output: Var, path: str, limit: int = 300) -> None:
        """Draw ``to_dot(output)`` to an .svg or .png file (needs Graphviz's ``dot``)."""
        show.render(self.to_dot(output, limit), path)
