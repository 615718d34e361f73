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
from tape.errors import BranchChanged, ForeignHandleError, NonFiniteError, TapeError
from tape.function import arguments, array_replay
from tape.kernels.array_ops import ARRAY_OPCODE
from tape.kernels.ops import CONSTANT, ELEM
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.storage import Storage
from tape.sweeps import driver
from tape.sweeps.driver import Plan, View

if TYPE_CHECKING:
    from tape.function.function import Function

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
        values = array_replay.param_values(F) if params is None else arguments.flat_params(F, params)
        x_view = _input_view(t, leaves, F.n_inputs)
        inputs = (x_view,) + ((array_records.constant(t, values),) if F.n_params else ())
        with inside(F, None):
            y = flat_call(F, driver.view(t, t._aval, x_view), values if F.n_params else None)
        row = _push(F, t, inputs, y)
    m, shape = F.n_outputs, F._output_shape
    if m >= array_records.small():
        return wrap_view(t, View(row, 0, shape, driver.contiguous(shape)))
    rows = t._append_block(ELEM, m, in0=row, in1=np.arange(m), values=y)
    return wrap(t, rows.reshape(shape))


def _push(F: Any, t: Storage, inputs: tuple[View, ...], y: np.ndarray) -> int:
    """A call record of F reading inputs, holding y; F gets a slot in t's callees (once)."""
    slot = next((k for k, G in enumerate(t._callees) if G is F), None)
    if slot is None:
        slot = len(t._callees)
        t._callees.append(F)
        t._callee_places.append(np.array([slot], np.int64))
    return t._push_array(CALL, (F.n_outputs,), inputs, places=t._callee_places[slot], values=y)


_DERIVED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # F -> {"vjp": F.vjp_function(), "jvp": ...}


def call_of_derivative(F: Function, h: Any, p: Plan, second: Any, kind: str) -> Any:
    """Call record p's adjoint (kind "vjp", second its adjoint) or tangent ("jvp", second its input's tangent)
    as records (tape/symbolic/array_adjoint.py): a call of F's vjp_function or jvp_function at (x, second),
    with the call's params; the derivative Function is made once per F."""
    derived = _DERIVED.setdefault(F, {})
    if kind not in derived:
        derived[kind] = F.vjp_function() if kind == "vjp" else F.jvp_function()
    G, t = derived[kind], h.t
    pair = array_records.join(t, [p.inputs[0], h.view(h.array(second).reshape(-1))], 0)
    inputs = (pair, *p.inputs[1:])
    with G._lock, inside(G, None):
        y = flat_call(G, driver.view(t, t._aval, pair), driver.view(t, t._aval, p.inputs[1]) if G.n_params else None)
        row = _push(G, t, inputs, y)
    return h.handle(driver.whole(row, t._plan(row)))


def sizes(callees: list[Any]) -> tuple[tuple[int, int, int], ...]:
    """(inputs, params, outputs) of each Function called: what tape/sweeps/plans.py checks call records against."""
    return tuple((G.n_inputs, G.n_params, G.n_outputs) for G in callees)


class inside:  # noqa: N801  a context manager, named as one is used
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



@contextlib.contextmanager
def recording(F: Function) -> Iterator[None]:
    """While F's Python function records it again (a retrace): calls of F on Vars are refused."""
    F._recording_now = True
    try:
        yield
    finally:
        F._recording_now = False


def flat_call(F: Function, x: np.ndarray, params: np.ndarray | None) -> np.ndarray:
    return np.reshape(F(x, params), -1)


def reads(s: Any, p: Plan) -> tuple[np.ndarray, np.ndarray | None]:
    """(x, params) of call record p, from the value arena."""
    return driver.view(s, s._aval, p.inputs[0]), (driver.view(s, s._aval, p.inputs[1]) if len(p.inputs) > 1
                                                   else None)


def call_forward(F: Function, s: Any, p: Plan) -> None:
    with inside(F, p):
        driver.own(s, s._aval, p).reshape(-1)[...] = flat_call(F, *reads(s, p))


def call_tangent(F: Function, s: Any, p: Plan, adot: np.ndarray) -> None:
    out = driver.region(adot, p).reshape(-1)
    x, params = reads(s, p)
    x_dot = driver.view(s, adot, p.inputs[0])
    if not x_dot.any():
        out[...] = 0.0
        return
    with inside(F, p):
        out[...] = np.reshape(F.jvp(x, x_dot, params), -1)
