"""A Function called on Vars: one call record on their tape (CppAD's checkpoint functions, ADOL-C's external ones).

``F(xs)`` with Vars or VarArrays records one array record of kind ``call``
(kernels/array_ops.py) reading one flat view of F's inputs, and returns F's
outputs as elem records reading it (an array record's view for 1024 outputs or
more). The inputs' view is the call record of the step before when xs are
exactly its outputs (a loop ``x = F(x)`` records one call and its elem records
per step), a single array record's view, or else a pack of scalar records.
F's params are a constant array record beside it. The tape keeps F itself (its
``_callees``; the record's one place is F's slot there), and every sweep of the
tape's records asks F for its part, by the duck-typed methods below:

    forward     y = F(x)                       F's replay (its branch policy applies)
    reverse     x' += F.vjp(x, g)              a replay and a reverse sweep of F
    tangent     ẏ = F.jvp(x, ẋ)
    second      x' += Jᵀ g,  ẋ' += H(g·F) ẋ + Jᵀ ġ   F's forward-over-reverse seeded with (g, ġ)

So nothing of F's inside is kept on the tape: a step recorded once and called N
times costs one step's records plus N calls (checkpointing). F's sweeps run at the
call's inputs each time (the reverse recomputes F's forward, as checkpointing does).
"""

from __future__ import annotations

import contextlib
import numbers
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from tape.arrays.varray import VarArray, wrap, wrap_view
from tape.debug.nans import NonFiniteError
from tape.errors import BranchChanged, ForeignHandleError, TapeError
from tape.kernels._sweeps import reverse_second_range
from tape.kernels.array_ops import ACONSTANT, ARRAY_OPCODE
from tape.kernels.ops import ARRAY_BASE, CONSTANT, ELEM
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.storage import Storage
from tape.sweeps import driver, tangents
from tape.sweeps.driver import Plan, View

CALL = ARRAY_OPCODE["call"]
HANDLES = (Var, VarArray)  # what F(x) takes as a call on Vars without trying x as numbers first


def _leaves(node: Any, found: list[Any]) -> None:
    """The leaves of x in the order a Function flattens x0 (tape/base/trees.py: dicts by sorted key)."""
    if isinstance(node, (list, tuple)):
        for item in node:
            _leaves(item, found)
    elif isinstance(node, dict):
        for key in sorted(node):
            _leaves(node[key], found)
    else:
        found.append(node)


def holds_handles(x: Any) -> bool:
    """Whether x (any structure of x0's kinds) holds a Var or a VarArray."""
    found: list[Any] = []
    _leaves(x, found)
    return any(type(leaf) is Var or isinstance(leaf, VarArray) for leaf in found)


def _tape_of(leaves: list[Any]) -> Storage:
    tapes = {id(t): t for t in (leaf._live_tape() for leaf in leaves
                                if type(leaf) is Var or isinstance(leaf, VarArray))}
    if len(tapes) > 1:
        raise ForeignHandleError("a Function called on Vars of different tapes: all its inputs must be on one tape")
    return next(iter(tapes.values()))


def _rows(t: Storage, leaf: Any) -> np.ndarray:
    """A leaf's numbers as scalar records: its own, elem records of an array record, constant records."""
    if type(leaf) is Var:
        leaf._live_tape()
        return np.array([leaf._index])
    if isinstance(leaf, VarArray):
        return leaf._scalars()._idx.reshape(-1)
    if isinstance(leaf, (numbers.Real, np.ndarray)) and not isinstance(leaf, (bool, np.bool_)):
        values = np.asarray(leaf, np.float64).reshape(-1)
        return t._append_block(CONSTANT, values.size, values=values)
    raise TypeError(f"a Function called on Vars takes Vars, VarArrays and real numbers as x, got {type(leaf).__name__}")


def _input_view(t: Storage, leaves: list[Any], n: int) -> View:
    """One flat view of the n input numbers (see the module docstring)."""
    if len(leaves) == 1 and isinstance(leaves[0], VarArray) and leaves[0]._view is not None:
        return array_records.reshape(t, leaves[0]._view, (n,))
    rows = np.concatenate([_rows(t, leaf) for leaf in leaves]) if leaves else np.zeros(0, np.int64)
    if len(rows) != n:
        raise ValueError(f"this Function takes {n} inputs, the call passes {len(rows)} numbers")
    if n and t._op_w[int(rows[0])] == ELEM and _outputs_of(t, rows, int(t._in0_w[int(rows[0])])):
        return driver.whole(int(t._in0_w[int(rows[0])]), t._plan(int(t._in0_w[int(rows[0])])))
    return array_records.pack(t, rows)


def _outputs_of(t: Storage, rows: np.ndarray, source: int) -> bool:
    """Whether rows are elem records reading every element of call record source, in order."""
    if t._op_w[source] != CALL or t._plan(source).size != len(rows):
        return False
    if len(rows) <= 16:  # a few numbers: Python's loop is cheaper than NumPy's calls
        return all(t._op_w[r] == ELEM and t._in0_w[r] == source and t._in1_w[r] == k
                   for k, r in enumerate(rows.tolist()))
    return bool(np.all(t._op[rows] == ELEM) and np.all(t._in0[rows] == source) and
                np.array_equal(t._in1[rows], np.arange(len(rows))))


def _reaches(F: Any) -> list[Any]:
    """F and every Function its call records call, however deep."""
    seen: dict[int, Any] = {}
    todo = [F]
    while todo:
        G = todo.pop()
        if id(G) not in seen:
            seen[id(G)] = G
            todo.extend(G._callees)
    return list(seen.values())


def record(F: Any, x: Any, params: Any) -> Any:
    """F(x) for x holding Vars: a call record on their tape; F's outputs as Vars (in F's output shape)."""
    leaves: list[Any] = []
    _leaves(x, leaves)
    t = _tape_of(leaves)
    layout = F._layout
    if layout is not None and layout.structured and [np.shape(leaf) for leaf in leaves] != layout.shapes:
        raise ValueError(f"a call of this Function takes x in the structure of the x0 traced: leaves of shapes "
                         f"{layout.shapes}, got {[np.shape(leaf) for leaf in leaves]}")
    if (layout is None or not layout.structured) and len(leaves) == 1 and isinstance(leaves[0], VarArray) and \
            leaves[0].shape not in (F._input_shape, (F.n_inputs,)):
        raise ValueError(f"expected inputs of shape {F._input_shape}, got a VarArray of shape {leaves[0].shape}")
    if F._home is not None and F._home() is t:
        raise TapeError(f"{F!r} was made from this tape: a Function called on Vars of its own tape would read its "
                        "own records (record the call on another tape)")
    busy = [G for G in _reaches(F) if G._recording_now]
    if busy:
        raise TapeError(f"{F!r} calls {busy[0]!r} while that Function is recording itself again (a retrace): a "
                        "recursion, which a tape cannot hold")
    if params is not None and holds_handles(params):
        raise TypeError("a call's params are numbers (a Function does not differentiate its params); pass Vars as x")
    with F._lock:
        values = F._param_values() if params is None else F._flat_params(params)
        x_view = _input_view(t, leaves, F.n_inputs)
        inputs = (x_view,) + ((array_records.constant(t, values),) if F.n_params else ())
        with _inside(F, None):
            y = F._flat_call(driver.view(t, t._aval, x_view), values if F.n_params else None)
        slot = next((k for k, G in enumerate(t._callees) if G is F), None)
        if slot is None:
            slot = len(t._callees)
            t._callees.append(F)
            t._callee_places.append(np.array([slot], np.int64))
        row = t._push_array(CALL, (F.n_outputs,), inputs, places=t._callee_places[slot], values=y)
    m, shape = F.n_outputs, F._output_shape
    if m >= array_records.SMALL:
        return wrap_view(t, View(row, 0, shape, driver.contiguous(shape)))
    rows = t._append_block(ELEM, m, in0=row, in1=np.arange(m), values=y)
    return wrap(t, rows.reshape(shape))


def sizes(callees: list[Any]) -> tuple[tuple[int, int, int], ...]:
    """(inputs, params, outputs) of each Function called: what tape/sweeps/plans.py checks call records against."""
    return tuple((G.n_inputs, G.n_params, G.n_outputs) for G in callees)


class _inside:  # noqa: N801  a context manager, named as one is used
    """F's BranchChanged and NonFiniteError, naming the call record they happened in (F's row and line kept)."""

    __slots__ = ("F", "p")

    def __init__(self, F: Any, p: Plan | None):
        self.F, self.p = F, p

    def __enter__(self) -> None:
        pass

    def __exit__(self, kind: Any, exc: Any, trace: Any) -> None:
        if not isinstance(exc, (BranchChanged, NonFiniteError)):
            return
        where = f"inside the call of {self.F!r}" + (f" at record #{self.p.row}" if self.p is not None
                                                     else " being recorded")
        if isinstance(exc, BranchChanged):
            raise BranchChanged(f"{exc} ({where})", exc.row, exc.where) from None
        raise NonFiniteError(f"{exc} ({where})", exc.row) from None


class Callee:
    """What a Function does as a call record of another tape (mixed into tape.function.replay.Replay)."""

    _callees: list[Any]
    _input_shape: tuple[int, ...]
    _output_shape: tuple[int, ...]
    _home: weakref.ReferenceType | None = None  # the tape it was made from: calls on its Vars are refused
    _recording_now = False  # while its Python function records it again (retrace): calls of it are refused

    if TYPE_CHECKING:  # Replay's and Derivatives'
        def __call__(self, x: Any, params: Any = None) -> Any: ...
        def _reverse(self, point: np.ndarray, weights: np.ndarray) -> Any: ...
        def _prepare(self, x: Any, params: Any) -> np.ndarray: ...
        def jvp(self, x: Any, v: Any, params: Any = None) -> Any: ...
        _lock: Any

    @contextlib.contextmanager
    def _recording(self) -> Iterator[None]:
        self._recording_now = True
        try:
            yield
        finally:
            self._recording_now = False

    def _flat_call(self, x: np.ndarray, params: np.ndarray | None) -> np.ndarray:
        return np.reshape(self(x, params), -1)

    @staticmethod
    def _reads(s: Any, p: Plan) -> tuple[np.ndarray, np.ndarray | None]:
        """(x, params) of call record p, from the value arena."""
        return driver.view(s, s._aval, p.inputs[0]), (driver.view(s, s._aval, p.inputs[1]) if len(p.inputs) > 1
                                                       else None)

    def _call_forward(self, s: Any, p: Plan) -> None:
        with _inside(self, p):
            driver.own(s, s._aval, p).reshape(-1)[...] = self._flat_call(*self._reads(s, p))

    def _call_reverse(self, s: Any, p: Plan, gen: int, keep: int) -> None:
        g = driver.own(s, s._aadj, p).reshape(-1)
        v = p.inputs[0]
        if not g.any() or s._op[v.record] == ACONSTANT:
            return  # a zero adjoint sends nothing (the structural-zero rule)
        x, params = self._reads(s, p)
        with _inside(self, p):
            with self._lock:  # F.vjp without its checks of w (a region of the right size)
                grad = np.reshape(self._reverse(self._prepare(x, params), g), -1)
        driver.accumulate(s, v, grad.reshape(v.shape), gen, keep)

    def _call_tangent(self, s: Any, p: Plan, adot: np.ndarray) -> None:
        out = driver.region(adot, p).reshape(-1)
        x, params = self._reads(s, p)
        x_dot = driver.view(s, adot, p.inputs[0])
        if not x_dot.any():
            out[...] = 0.0
            return
        with _inside(self, p):
            out[...] = np.reshape(self.jvp(x, x_dot, params), -1)

    def _call_second(self, s: Any, p: Plan, arenas: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        adot, aadj, aadj_dot = arenas
        g, gd = driver.region(aadj, p).reshape(-1), driver.region(aadj_dot, p).reshape(-1)
        v = p.inputs[0]
        if (not g.any() and not gd.any()) or s._op[v.record] == ACONSTANT:
            return
        x, params = self._reads(s, p)
        with _inside(self, p):
            c, cd = self._weighted_second(x, params, g, driver.view(s, adot, v), gd)
        for arena, numbers_ in ((aadj, c), (aadj_dot, cd)):
            target = driver.view(s, arena, v)
            target += numbers_.reshape(v.shape)

    def _weighted_second(self, x: np.ndarray, params: np.ndarray | None, w: np.ndarray, v: np.ndarray,
                         w_dot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Jᵀ w, H(w·F) v + Jᵀ ẇ) at x: d/dt of Jᵀ w along (v, ẇ), by one forward-over-reverse sweep."""
        F: Any = self
        with F._lock:
            point = F._prepare(np.ascontiguousarray(x), params)
            direction = F._direction(np.ascontiguousarray(v), "tangent entries")
            F._at(point, second=True)
            if F._plans:
                dot, adot = F._array_tangents(direction)
                adj_dot = F._second[1]
                weights = [(row, w[a:b] if F._op[row] >= ARRAY_BASE else w[a], w_dot[a:b] if F._op[row] >= ARRAY_BASE
                            else w_dot[a]) for row, a, b in F._out_pieces]
                tangents.reverse_second(F, max(row for row, _, _ in weights), dot, adot, adj_dot, weights)
                return (F._collect(F._in_pieces, F._adj, F._aadj), F._collect(F._in_pieces, adj_dot, F._aadj_dot))
            dot = F._tangents(direction[:, None])
            adj, adj_dot = F._adj, F._second[1]
            adj[:] = 0.0
            adj_dot[:] = 0.0
            np.add.at(adj, F._output_rows, w)
            np.add.at(adj_dot, F._output_rows, w_dot)
            (h, _), p, r = F._second, F._partials, F._targets
            reverse_second_range(adj, adj_dot, dot, p[0], p[1], h[0], h[1], h[2], r[0], r[1], 0,
                                 int(F._output_rows.max()) + 1)
            return adj[F._input_rows].copy(), adj_dot[F._input_rows].copy()
