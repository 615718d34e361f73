"""Function.grad_function, vjp_function and jvp_function: derivatives of a Function as Functions.

Each copies the Function's records into a new storage first (the same rows, constants and
checked branches: the new Function raises BranchChanged, or retraces, where the original
would), appends a symbolic sweep (tape/symbolic/adjoint.py) over them, and makes a Function of the
result. That Function is an ordinary one: it replays, saves and loads, maps, and can be
differentiated again, by its own sweeps (F.grad_function().jacobian(x) is the Hessian) or by
building a derivative tape of it (third and higher derivatives). A Function made by tape.trace
with on_branch_change="retrace" gives derivative Functions that retrace too: f is traced again
at the new point and the derivative tape rebuilt from it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tape.arrays.varray import VarArray
from tape.base import trees
from tape.kernels.array_ops import RULE
from tape.kernels.ops import ARRAY_BASE, LEAF
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.storage import MAX_RECORDS, Storage
from tape.sweeps.driver import region, whole
from tape.symbolic.adjoint import Sweep, forward, reverse
from tape.symbolic.partial_helpers import Value, constant


def copy_records(F: Any) -> Storage:
    """A storage holding F's records, constants, array records (plans and values), called Functions and
    checked branches, row for row."""
    F._full()  # its recorded layout and values (not the shared regions of its first-order sweeps)
    n = len(F._op)
    t = Storage(capacity=min(MAX_RECORDS, 3 * n + 1024))  # a gradient tape is about 2 to 3 times F (grows past it)
    t._reserve(3 * len(F._aval) + 1024)  # and of its arena: not copied at every doubling
    if len(F._consts):
        t._append_consts(F._consts)
    t._callees, t._callee_places = list(F._callees), [np.array([k], np.int64) for k in range(len(F._callees))]
    lo = 0
    for p in [*F._plans, None]:
        hi = n if p is None else p.row
        if lo < hi:
            t._append_block(F._op[lo:hi], hi - lo, in0=F._in0[lo:hi], in1=F._in1[lo:hi], values=F._val[lo:hi])
        if p is not None:
            places = t._callee_places[int(p.places[0])] if RULE[p.code].reads == "callee" else p.places
            t._push_array(p.code, p.shape, p.inputs, p.axes, places, p.wide, values=region(F._aval, p))
        lo = hi + 1
    t._checks = [(int(r), bool(e), str(w)) for r, e, w in zip(F._check_rows, F._check_expected, F._check_where,
                                                               strict=True)]
    return t


def _leaves(t: Storage, like: list[int], source: Any) -> list[int]:
    """New inputs, one per row of like: a scalar leaf for a scalar record, an array input of its shape for
    an array record of source."""
    rows = []
    for r in like:
        if source._op[r] >= ARRAY_BASE:
            rows.append(array_records.leaf(t, np.ones(source._plans[source._in0[r]].shape)).record)
        else:
            rows.append(int(t._append_block(LEAF, 1, values=np.ones(1))[0]))
    return rows


def _rows(sweep: Sweep, values: list[Value]) -> np.ndarray:
    """A record per value: a Var's own, an array record's (a view copied into a record of its own), a
    constant record for a number."""
    t = sweep.t
    return np.array([v._index if type(v) is Var else array_records.copy(t, sweep.arrays.view(v)).record
                     if isinstance(v, VarArray) else constant(t, v)._index for v in values], np.int64)


def _zeros_like(sweep: Sweep, F: Any, rows: list[int], found: dict[int, Value]) -> list[Value]:
    """found[r] for each row, zero where none reached it (an array of zeros for an array record)."""
    return [found[r] if r in found else sweep.arrays.array(sweep.arrays.zeros(F._plans[F._in0[r]].shape))
            if F._op[r] >= ARRAY_BASE else 0.0 for r in rows]


def _count(t: Storage, rows: Any) -> int:
    """The numbers the rows hold (an array record's elements)."""
    return sum(t._plan(r).size if t._op[r] >= ARRAY_BASE else 1 for r in np.asarray(rows).tolist())


def _make(F: Any, t: Storage, inputs: list[int], outputs: np.ndarray, scalar: bool, output_shape: tuple[int, ...],
          rebuild: Callable[[Any], Any], input_shape: tuple[int, ...] | None = None) -> Any:
    source = None if F._source is None else _Rebuild(F._source, F.n_inputs, rebuild)
    G = type(F)._from_storage(t, np.array(inputs, np.int64), F._param_rows.copy(), outputs, scalar,
                              F.on_branch_change, source, input_shape or (_count(t, inputs),), output_shape)
    G._param_layout = F._param_layout
    G.check_finite = F.check_finite
    return G


@dataclass(frozen=True)
class _Rebuild:
    """A derived Function's retrace: F's f recorded again at the first n numbers of the point, then the
    derivative taken again (an object, not a closure, so that it pickles wherever f does)."""

    source: Callable[[np.ndarray, np.ndarray], Any]
    n: int
    rebuild: Callable[[Any], Any]

    def __call__(self, point: np.ndarray, ps: np.ndarray) -> Any:
        return self.rebuild(self.source(point[:self.n], ps))


def _x0(F: Any) -> Any:
    """A point in the structure F's calls take: x0's (tape.trace of a tree), else an array."""
    structured = F._layout is not None and F._layout.structured
    return F._layout.tree(np.zeros(F.n_inputs)) if structured else np.zeros(F.input_shape)


class _Pair(trees.Layout):
    """Calls as a pair (x, second): x as F takes it (an array, a list of numbers, or F's traced
    structure), second as an array or list of its numbers; or one flat sequence of all numbers."""

    __slots__ = ("parts",)

    def __init__(self, F: Any, second: Any):
        leaves, spec = trees.flatten((_x0(F), second), "the point")
        super().__init__(spec, leaves)
        structured = F._layout is not None and F._layout.structured
        self.parts = ((F._layout if structured else None, F.n_inputs), (None, int(np.size(second))))

    def flat(self, tree: Any, what: str) -> np.ndarray:
        if not (isinstance(tree, (tuple, list)) and len(tree) == 2 and self.size != 2):
            numbers = np.asarray(tree, np.float64).reshape(-1)
            if numbers.size != self.size:
                raise ValueError(f"{what}: expected the pair (x, {'w' if self.parts[1][1] else 'v'}) or "
                                 f"{self.size} numbers, got {numbers.size}")
            return numbers
        pieces = []
        for (layout, size), part in zip(self.parts, tree, strict=True):
            piece = layout.flat(part, what) if layout is not None and not isinstance(part, np.ndarray) else (
                np.asarray(part, np.float64).reshape(-1))
            if piece.size != size:
                raise ValueError(f"{what}: a part of the pair has {piece.size} numbers, expected {size}")
            pieces.append(piece)
        return np.concatenate(pieces)


def _layout(F: Any, second: Any) -> trees.Layout:
    """Calls as (x, second), x in F's input shape (F's structure if traced with one)."""
    return _Pair(F, second)


def _handle(sweep: Sweep, row: int) -> Value:
    """A Var for a scalar record, a VarArray for an array record."""
    return sweep.arrays.handle(whole(row, sweep.t._plan(row))) if sweep.t._op[row] >= ARRAY_BASE else sweep.var(row)


def grad_function(F: Any, value: bool = False) -> Any:
    """x -> the gradient of a scalar-output Function (value=True: x -> [f(x), gradient...], flat)."""
    if F.n_outputs != 1:
        raise ValueError(f"grad_function needs one output, this Function has {F.n_outputs}: use vjp_function")
    t = copy_records(F)
    sweep = Sweep(t)
    out, inputs = int(F._output_rows[0]), [int(r) for r in F._input_rows]
    seed = 1.0 if F._op[out] < ARRAY_BASE else sweep.arrays.full(1.0, F._plans[F._in0[out]].shape)
    adj = reverse(sweep, 0, len(F._op), [(out, seed)], inputs)
    grads = _zeros_like(sweep, F, inputs, adj)
    rows = _rows(sweep, [sweep.var(out)] + grads if value else grads)
    G = _make(F, t, inputs, rows, False, (_count(t, rows),) if value else F.input_shape,
              functools.partial(grad_function, value=value), F.input_shape)
    G._layout = None if value else F._layout
    return G


def vjp_function(F: Any) -> Any:
    """(x, w) -> w^T J, shaped like x: w has F's output shape (a number for a scalar output)."""
    t = copy_records(F)
    sweep = Sweep(t)
    n, outputs = len(F._op), [int(r) for r in F._output_rows]
    w = _leaves(t, outputs, F)
    inputs = [int(r) for r in F._input_rows]
    adj = reverse(sweep, 0, n, [(r, _handle(sweep, k)) for r, k in zip(outputs, w, strict=True)], inputs)
    rows = _rows(sweep, _zeros_like(sweep, F, inputs, adj))
    G = _make(F, t, inputs + w, rows, False, F.input_shape, vjp_function)
    G._layout = _layout(F, 0.0 if F._scalar else np.zeros(F._output_shape))
    return G


def jvp_function(F: Any, value: bool = False) -> Any:
    """(x, v) -> J v, shaped like F's outputs (value=True: [outputs..., J v...], flat); v like x."""
    t = copy_records(F)
    sweep = Sweep(t)
    n, inputs = len(F._op), [int(r) for r in F._input_rows]
    v = _leaves(t, inputs, F)
    outputs = [int(r) for r in F._output_rows]
    dot = forward(sweep, 0, n, {r: _handle(sweep, k) for r, k in zip(inputs, v, strict=True)}, outputs)
    tangents = _zeros_like(sweep, F, outputs, dot)
    rows = _rows(sweep, [sweep.var(r) for r in outputs] + tangents if value else tangents)
    scalar = F._scalar and not value
    G = _make(F, t, inputs + v, rows, scalar, (_count(t, rows),) if value else F._output_shape,
              functools.partial(jvp_function, value=value))
    G._layout = _layout(F, _x0(F))
    return G
