"""Nested derivatives inside Python code: tape.grad(f) (value_and_grad, jvp, vjp) called on Vars.

Called on Vars of a tape (an outer tape.grad, tape.jvp or tape.trace recording g, which calls
tape.grad(f) inside), the transform records f onto that same tape and then its derivative, as
records: the symbolic sweep of tape/symbolic/adjoint.py over f's records only. It returns Vars, so the
outer transform differentiates through the inner derivative (reverse or forward, in any of the
four pairings), and a traced g replays the inner derivative at every point (records, not
constants).

Arguments may be Vars, VarArrays of either form, NumPy arrays and pytrees of them. An array of
array records (or a big one) enters whole, as one array record, and its derivative is array
records (tape/symbolic/array_adjoint.py); a small one enters element by element. The derivatives
come back in the arguments' structure.

No perturbation confusion: each differentiated argument enters f as a record of its own, the
argument times 1.0 (the same bits; its derivative is 1), and the inner sweep runs over f's
records only, collecting adjoints at those records. A Var of the outer tape that f closes over
(``x`` in d/dx [x * d/dy (x + y)]) is a constant to the inner derivative and a variable to the
outer one. Called on numbers while an outer transform records, f runs on a tape of its own, as
always; if it combines a Var of the outer tape (a closure) with its own, it runs again on the outer
tape, its numbers as constant records (``ForeignHandleError`` is how the first run finds out).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from tape.arrays.varray import VarArray, wrap
from tape.kernels.ops import ARRAY_BASE
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.handles import as_constant
from tape.records.storage import Storage
from tape.symbolic.adjoint import Sweep, forward, reverse
from tape.symbolic.array_adjoint import Emit
from tape.symbolic.partial_helpers import constant

_active = threading.local()  # per thread: the tapes that transforms are recording f on, innermost last


def active() -> list[Storage]:
    """This thread's tapes that transforms are recording f on, innermost last: a transform appends
    its tape while f runs and pops it after (what ``innermost`` reads)."""
    try:
        return _active.stack
    except AttributeError:
        _active.stack = []
        return _active.stack


@contextmanager
def recording(t: Storage) -> Iterator[None]:
    """t on the active list for the block's duration."""
    stack = active()
    stack.append(t)
    try:
        yield
    finally:
        stack.pop()


def innermost(other_than: Storage | None = None) -> Storage | None:
    """The innermost tape a transform is recording on in this thread, other than other_than."""
    for t in reversed(active()):
        if t is not other_than:
            return t
    return None


def _block(x: Any) -> bool:
    """An array that enters a nested derivative whole, as one array record: one of array records, or big."""
    return isinstance(x, VarArray) and x._view is not None or (
        isinstance(x, (VarArray, np.ndarray)) and x.size >= array_records.small())


def _leaves(tree: Any) -> Iterator[Any]:
    """The parts of a tree in order: an array of array records (or a big one) whole; a small VarArray's
    elements as Vars, a small array's as numbers; numbers and Vars."""
    if isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _leaves(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _leaves(item)
    elif _block(tree):
        yield tree
    elif isinstance(tree, VarArray):
        yield from tree._vars()
    elif isinstance(tree, np.ndarray):
        yield from tree.reshape(-1).tolist()
    else:
        yield tree


def _rebuild(tree: Any, leaves: Iterator[Any]) -> Any:
    """tree's structure with its parts taken from leaves, in order (a small array's as a VarArray of them)."""
    if isinstance(tree, (list, tuple)):
        items = [_rebuild(item, leaves) for item in tree]
        return items if isinstance(tree, list) else tuple(items)
    if isinstance(tree, dict):
        return {key: _rebuild(item, leaves) for key, item in tree.items()}
    if _block(tree):
        return next(leaves)
    if isinstance(tree, (VarArray, np.ndarray)):
        items = [next(leaves) for _ in range(tree.size)]
        if not items:
            return np.zeros(tree.shape)
        t = next((v._live_tape() for v in items if type(v) is Var), None)
        if t is None:
            return np.array(items, float).reshape(tree.shape)
        rows = [v._index if type(v) is Var else constant(t, float(v))._index for v in items]
        return wrap(t, np.array(rows, np.int64).reshape(tree.shape))
    return next(leaves)


_PLAIN = {float, int}


def tape_of(args: Sequence[Any]) -> Storage | None:
    """The tape of the first Var among the arguments (None: numbers only). On every call of
    tape.grad, so lists of numbers and arrays are passed over at a glance."""
    for arg in args:
        kind = type(arg)
        if kind is Var or kind is VarArray:
            return arg._live_tape()
        if kind in _PLAIN or kind is np.ndarray or (kind is list or kind is tuple) and set(map(type, arg)) <= _PLAIN:
            continue
        if isinstance(arg, (list, tuple, dict)):
            found = tape_of(list(arg.values()) if isinstance(arg, dict) else arg)
            if found is not None:
                return found
    return None


def _fresh(t: Storage, tree: Any, what: str) -> tuple[Any, list[int]]:
    """Each part of tree as a record of its own on t: a Var times 1.0, a number a constant record, an array of
    array records times 1.0 (one array record)."""
    rows: list[int] = []

    def enter(leaf: Any) -> Any:
        if _block(leaf):
            if isinstance(leaf, VarArray) and leaf._live_tape() is not t:
                raise TypeError(f"{what}: Vars of two tapes in one nested derivative")
            fresh = (leaf if isinstance(leaf, VarArray) else Emit(t).handle(array_records.constant(t, leaf))) * 1.0
            rows.append(_row(fresh))
            return fresh
        if type(leaf) is not Var:
            c = as_constant(leaf)
            if c is None:
                raise TypeError(f"a derivative inside a recorded function takes Vars, VarArrays, numbers and "
                                f"arrays of numbers in {what}, got {type(leaf).__name__}")
            leaf = constant(t, c)
        elif leaf._live_tape() is not t:
            raise TypeError(f"{what}: Vars of two tapes in one nested derivative")
        fresh = leaf * 1.0
        rows.append(fresh._index)
        return fresh

    return _rebuild(tree, iter([enter(leaf) for leaf in _leaves(tree)])), rows


def _part(t: Storage, found: dict[int, Any], row: int) -> Any:
    """The derivative found for row as the caller gets it: a Var, or a VarArray for an array record (zeros
    where nothing reached it)."""
    if t._op[row] >= ARRAY_BASE:
        h = Emit(t)
        return h.array(found[row]) if row in found else h.array(h.zeros(t._plan(row).shape))
    return _as_var(t, found.get(row, 0.0))


def _seed(t: Storage, x: Any) -> Any:
    """A tangent or weight given for a part: a handle (an array of numbers as a constant array record)."""
    return Emit(t).handle(array_records.constant(t, x)) if isinstance(x, np.ndarray) else x


def _outputs(t: Storage, out: Any) -> list[Any]:
    """f's output parts; an array part as a record of its own (a view is copied), a Var as itself."""
    return [Emit(t).handle(array_records.copy(t, y._view)) if isinstance(y, VarArray) and y._view is not None
            else y for y in _leaves(out)]


def _as_var(t: Storage, v: Any) -> Var:
    return v if type(v) is Var else constant(t, float(v))


def _shape(x: Any) -> tuple[int, ...]:
    return x.shape if isinstance(x, (VarArray, np.ndarray)) else ()


def _row(y: Any) -> int:
    """The record of a part: a Var's own, or the one array record an array part views whole."""
    return y._operand()[1].record if isinstance(y, VarArray) else y._index


def _split_aux(out: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError("with has_aux=True, f must return a pair (value, aux)")
    return out


def _run(t: Storage, f: Callable[..., Any], given: list[Any]) -> Any:
    """f on the fresh arguments."""
    with recording(t):
        return f(*given)


def value_and_grad(t: Storage, f: Callable[..., Any], args: Sequence[Any], which: tuple[int, ...], single: bool,
                   has_aux: bool) -> tuple[Any, Any]:
    """((value, aux) or value, gradient) of f at args, recorded on t (see tape.value_and_grad)."""
    t._keep_all()  # the symbolic sweep reads f's records by row
    given, rows = list(args), []
    start = len(t)
    for k in which:
        given[k], fresh = _fresh(t, args[k], f"argument {k}")
        rows.append(fresh)
    out, aux = _split_aux(_run(t, f, given), has_aux)
    adj: dict[int, Any] = {}
    if type(out) is Var:
        if out._live_tape() is not t:
            raise TypeError("f returned a Var of another tape than its arguments'")
        adj = reverse(Sweep(t), start, len(t), [(out._index, 1.0)], [r for fresh in rows for r in fresh])
    elif as_constant(out) is None:
        raise TypeError(f"f must return a Var or a real number, got {type(out).__name__}")
    grads = tuple(_rebuild(args[k], iter([_part(t, adj, r) for r in fresh]))
                  for k, fresh in zip(which, rows, strict=True))
    return ((out, aux) if has_aux else out), (grads[0] if single else grads)


def jvp(t: Storage, f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool) -> tuple:
    """(f(*primals), J tangents[, aux]) recorded on t (see tape.jvp): the tangents as records."""
    t._keep_all()  # the symbolic sweep reads f's records by row
    if len(tangents) != len(primals):
        raise ValueError(f"{len(primals)} primals but {len(tangents)} tangents")
    given, seeds = [], {}
    start = len(t)
    for k, (x, v) in enumerate(zip(primals, tangents, strict=True)):
        fresh, rows = _fresh(t, x, f"primal {k}")
        directions = [_seed(t, d) for d in _leaves(v)]
        if len(directions) != len(rows) or any(_shape(d) != _shape(x) for d, x in zip(directions, _leaves(x),
                                                                                               strict=False)):
            raise ValueError(f"tangent {k} is not shaped as primal {k}")
        given.append(fresh)
        seeds.update({r: d for r, d in zip(rows, directions, strict=True)
                      if isinstance(d, (Var, VarArray)) or d != 0.0})
    out, aux = _split_aux(_run(t, f, given), has_aux)
    outputs = _outputs(t, out)
    recorded = [y for y in outputs if isinstance(y, (Var, VarArray))]
    dot = forward(Sweep(t), start, len(t), seeds, [_row(y) for y in recorded])
    tangent = _rebuild(out, iter([_part(t, dot, _row(y)) if isinstance(y, (Var, VarArray)) else 0.0
                                  for y in outputs]))
    return (out, tangent, aux) if has_aux else (out, tangent)


def vjp(t: Storage, f: Callable[..., Any], primals: Sequence[Any], has_aux: bool) -> tuple:
    """(f(*primals), vjp_fn[, aux]) recorded on t (see tape.vjp): each vjp_fn(w) records a reverse
    sweep over f's records, seeded with w (Vars or numbers in the structure of f's output)."""
    t._keep_all()  # the symbolic sweep reads f's records by row
    given, rows = [], []
    start = len(t)
    for k, x in enumerate(primals):
        fresh, r = _fresh(t, x, f"primal {k}")
        given.append(fresh)
        rows.append(r)
    out, aux = _split_aux(_run(t, f, given), has_aux)
    outputs = _outputs(t, out)
    stop = len(t)
    wanted = [r for fresh in rows for r in fresh]

    def vjp_fn(w: Any) -> tuple:
        weights = [_seed(t, g) for g in _leaves(w)]
        if len(outputs) != len(weights) or any(_shape(g) != _shape(y) for g, y in zip(weights, outputs,
                                                                                          strict=False)):
            raise ValueError("w is not shaped as f's output")
        seeds = [(_row(y), g) for y, g in zip(outputs, weights, strict=True)
                 if isinstance(y, (Var, VarArray)) and (isinstance(g, (Var, VarArray)) or g != 0.0)]
        adj = reverse(Sweep(t), start, stop, seeds, wanted)
        return tuple(_rebuild(x, iter([_part(t, adj, r) for r in fresh]))
                     for x, fresh in zip(primals, rows, strict=True))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)
