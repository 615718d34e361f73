"""The functions users call: elementary functions, where, trace, grad and value_and_grad.

The unary functions (``tape.exp``, ...) are the generated recorders of
tape/records/_recorders.py; ``maximum``, ``arctan2``, ... (tape/arrays/binary.py) and ``where`` take
Vars, VarArrays and numbers in any mix; ``trace`` records a Python function once for replay.
"""

from __future__ import annotations

import copy
import math
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, overload

import numpy as np

from tape.arrays.binary import arctan2, fmax, fmin, hypot, logaddexp, maximum, minimum
from tape.arrays.conditions import ArrayCondition
from tape.arrays.operands import as_view, common_tape, operand, operands, shape_of
from tape.arrays.varray import _FUNCTIONS, VarArray, wrap, wrap_view
from tape.base import trees as _trees
from tape.debug import nans
from tape.errors import ForeignHandleError
from tape.function.array_replay import has_nan
from tape.function.function import Function
from tape.kernels.array_ops import ARRAY_OPCODE, RULE
from tape.kernels.array_rule import kept
from tape.kernels.ops import CONSTANT, SELECT
from tape.records import array_records
from tape.records._recorders import (
    Var,
    cos,
    exp,
    log,
    relu,
    sigmoid,
    sin,
    sqrt,
    tan,
    tanh,
)
from tape.records.handles import FUNCTION_HANDLERS, Condition, as_constant, plain
from tape.records.storage import NO_INPUT
from tape.sweeps.driver import View
from tape.symbolic import nest
from tape.tape import Tape

__all__ = ["arctan2", "cos", "exp", "fmax", "fmin", "grad", "hypot", "log", "logaddexp", "logsumexp", "maximum",
           "minimum", "relu", "sigmoid", "sin", "sqrt", "tan", "tanh", "trace", "value_and_grad", "where"]

Scalar = Var | float


@overload
def where(condition: Condition | bool, a: Scalar, b: Scalar) -> Scalar: ...
@overload
def where(condition: ArrayCondition | np.ndarray, a: VarArray | Scalar | np.ndarray, b: VarArray | Scalar | np.ndarray
          ) -> VarArray: ...
def where(condition, a, b):
    """``a`` where the condition holds, else ``b``, as one select record: valid at every replay.

    The condition (``x > 0``, ...) is recorded as data, not as a branch, so
    nothing needs re-checking. Only the chosen input receives the adjoint: the
    other branch is never visited, and its inf/NaN partials cannot leak into
    the gradient (``where(y > 1, x / y, 0.0)`` at y = 0 has finite gradients).
    """
    if isinstance(condition, (bool, np.bool_)):
        return a if condition else b
    if isinstance(condition, np.ndarray) and condition.dtype == np.bool_:
        return _where_mask(condition, a, b)
    if type(condition) is ArrayCondition:
        return _where_arrays(condition, a, b)
    if type(condition) is Condition and (isinstance(a, VarArray) or isinstance(b, VarArray)):
        raise TypeError("tape.where with a scalar condition takes scalar branches")
    if type(condition) is not Condition:
        raise TypeError(f"tape.where needs a comparison of Vars (x > 0) or a bool, got {type(condition).__name__}")
    t = condition._tape()
    assert isinstance(t, Tape)
    branches = []
    for branch in (a, b):
        if type(branch) is Var:
            if branch._seg.tape is not t:
                raise ForeignHandleError(f"{branch!r} was recorded on another tape than the condition")
            t._resolve(branch)
            branches.append(branch)
        else:
            c = as_constant(branch)
            if c is None:
                raise TypeError(f"tape.where branches must be Vars or real numbers, got {type(branch).__name__}")
            branches.append(t._constant(c))
    chosen = condition._record()  # the select reads the record just before it
    x, y = branches
    vals = t._val_w
    value = vals[x._index] if vals[chosen._index] != 0.0 else vals[y._index]
    return Var._at(t._segment(), t._push(SELECT, x._index, y._index, value))


def _numpy_where(condition: Any, *branches: Any) -> Any:
    """np.where(condition, a, b) with Vars or VarArrays: tape.where."""
    if len(branches) != 2:
        raise TypeError("np.where(condition) of recorded values (the places where it holds) is not recorded: "
                        "use np.nonzero on values (np.nonzero(x.value > 0)); np.where(condition, a, b) is tape.where")
    return where(condition, *branches)


_FUNCTIONS[np.where] = FUNCTION_HANDLERS[np.where] = _numpy_where


def _where_mask(mask: np.ndarray, a: Any, b: Any) -> Any:
    """tape.where with a NumPy boolean mask: data, so the choice is made once. Scalar records are
    picked (nothing recorded; numbers become constants), array records get a select record."""
    parts = operands(a, b)
    if parts is None:
        raise TypeError(f"tape.where branches must be Vars, VarArrays, NumPy arrays or real numbers, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    t = common_tape(parts)
    if t is None:  # plain numbers: computed as NumPy does, nothing recorded (as every tape function of numbers)
        return np.where(mask, a, b)
    shape = array_records.broadcast(mask.shape, *(shape_of(p) for _, p in parts))
    if any(isinstance(p, View) for _, p in parts) or math.prod(shape) >= array_records.small():
        views = [as_view(t, rt is not None, p) for rt, p in parts]
        return wrap_view(t, array_records.elementwise(t, "select", array_records.constant(t, mask * 1.0), *views))
    rows = [np.broadcast_to(p if rt is not None else t._append_block(CONSTANT, p.size, values=p.ravel()).reshape(
        p.shape), shape) for rt, p in parts]
    return wrap(t, np.where(np.broadcast_to(mask, shape), rows[0], rows[1]))


def _where_arrays(condition: ArrayCondition, a: Any, b: Any) -> Any:
    """tape.where for arrays: comparison and select records interleaved, element by element."""
    t = condition._live_tape()
    parts = operands(a, b)
    if parts is None:
        raise TypeError("tape.where branches must be Vars, VarArrays, NumPy arrays or numbers")
    other = common_tape(parts)
    if other is not None and other is not t:
        raise ForeignHandleError("the branches of tape.where were recorded on another tape than the condition")
    shape = array_records.broadcast(condition.shape, *(shape_of(p) for _, p in parts))  # condition, then branches
    if condition._blocked(*(p for _, p in parts)) or math.prod(shape) >= array_records.small():
        views = [as_view(t, rt is not None, p) for rt, p in parts]
        return wrap_view(t, array_records.elementwise(t, "select", condition._view(), *views))
    code, in0, in1, consts = condition._rows()
    branches = []
    for is_record, values in ((rt is not None, p) for rt, p in parts):
        values = np.broadcast_to(values, shape).ravel()
        branches.append(values if is_record else t._append_block(CONSTANT, values.size, values=values))
    pick = np.broadcast_to(np.arange(in0.size).reshape(condition.shape), shape).ravel()
    n = len(pick)
    ops = np.empty(2 * n, np.uint8)
    ops[0::2], ops[1::2] = code, SELECT
    first, second = np.empty(2 * n, np.int64), np.full(2 * n, NO_INPUT, np.int64)
    first[0::2], first[1::2] = in0[pick], branches[0]
    if in1 is not None:
        second[0::2] = in1[pick]
    second[1::2] = branches[1]
    if consts is not None:  # constants for the comparison records only
        second[0::2] = t._append_consts(consts[pick])
    rows = t._append_block(ops, 2 * n, in0=first, in1=second)
    return wrap(t, rows[1::2].reshape(shape))


def logsumexp(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """log Σ exp(x) over axes (all for None), as one fused record: shifted by the largest element, so
    it never overflows, and its adjoint is g times the softmax (no exp of a large number anywhere)."""
    t, part = operand(x) or (None, None)
    if t is None and plain(x):
        return _plain_logsumexp(np.asarray(x, np.float64), axis, keepdims)
    if t is None:
        raise TypeError(f"tape.logsumexp expects a VarArray or a NumPy array, got {type(x).__name__}")
    shape = shape_of(part)
    if any(shape[k] == 0 for k in array_records.axes(len(shape), axis)):
        return x.sum(axis, keepdims) - math.inf  # log of an empty sum: -inf, as scipy.special.logsumexp
    return wrap_view(t, array_records.reduce(t, "logsumexp", as_view(t, True, part), axis, keepdims))


def _plain_logsumexp(x: np.ndarray, axis: int | tuple[int, ...] | None, keepdims: bool) -> Any:
    """logsumexp of a NumPy array, recording nothing: the array rule's values (-inf over an empty axis)."""
    over = array_records.axes(x.ndim, axis)
    if any(x.shape[k] == 0 for k in over):
        return x.sum(over, keepdims=keepdims) - math.inf
    out = np.empty(tuple(n for k, n in enumerate(x.shape) if k not in over))
    with np.errstate(all="ignore"):
        RULE[ARRAY_OPCODE["logsumexp"]].forward(SimpleNamespace(axes=over), [x], out)
    return out.reshape(kept(x.shape, over)) if keepdims else out[()]


def argnums_of(argnums: object) -> tuple[int, ...]:
    """argnums (an int or a tuple or list of ints) as a tuple of ints, else a TypeError saying so."""
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return (argnums,)
    if isinstance(argnums, (tuple, list)) and all(isinstance(k, int) and not isinstance(k, bool) for k in argnums):
        return tuple(argnums)
    raise TypeError(f"argnums must be an int or a tuple of ints (the positions of the arguments to "
                    f"differentiate), got {argnums!r}")


def trace(f: Callable[..., Any], x0: Any, params: Any = None, on_branch_change: str = "raise",
          strict: bool = False, capacity: int | None = None, data: tuple = (), prune: bool = True,
          cse: bool = True) -> Function:
    """Record ``f`` once at x0 and return a Function that replays it at any x.

    ``f(xs)`` gets x0 in its own structure: a Var per number, a VarArray of its shape per NumPy
    array, inside any tuples, lists and dicts (a list of numbers gives a list of Vars), at the first
    trace and at every retrace. f returns a Var, a sequence of Vars (numbers allowed) or a
    VarArray. The Function takes x in x0's structure (derivatives come back in it) or as one
    array (x0's shape for an array x0, else the flat vector of every number in order). With
    ``params`` (the same kinds of structure), ``f(xs, ps)`` also gets handles for values that are
    not differentiated and can change at replay (``F(x, params=p)``) without retracing.

    Reading ``.value`` inside f gives a number that every replay keeps: it warns once per source
    line (``strict=True``: raises tape.TracingError); ``x.item()`` or ``X.tolist()`` read on purpose.
    ``capacity``: the records to make room for at once (the tape grows by doubling past it).
    ``data``: more arguments, passed after the Vars as they are (``f(xs, *data)``; constants of the tape).
    ``prune``, ``cse``: fold constants and drop the records that neither the outputs nor a checked comparison
    depend on; merge repeated subexpressions (see Tape.function).
    """
    leaves, spec = _trees.flatten(x0, "tape.trace's x0")
    layout = _trees.Layout(spec, leaves)
    t = Tape(capacity=max(1024, 4 * layout.size) if capacity is None else capacity)
    if t._lines is None and not nans.active():  # (their checks read every value)
        t._recycle(traced=True)  # the Function replays from the constants and inputs (tape/sweeps/arenas.py)
    handles = _leaf_handles(t, leaves)
    args = [_trees.unflatten(spec, handles)]
    p_layout = None
    p_handles: list[Any] = []
    if params is not None:
        p_leaves, p_spec = _trees.flatten(params, "tape.trace's params")
        p_layout = _trees.Layout(p_spec, p_leaves)
        p_handles = _leaf_handles(t, p_leaves)
        args.append(_trees.unflatten(p_spec, p_handles))
    inputs, p_inputs = _as_given(handles), _as_given(p_handles)
    out = _recording(t, f, *args, *data, strict=strict)
    out_layout = None
    if isinstance(out, VarArray):
        outputs: Any = out if out._view is not None else out.ravel()
        scalar = False
    elif isinstance(out, dict) or isinstance(out, (list, tuple)) and any(isinstance(y, (VarArray, list, tuple, dict))
                                                                        for y in out):
        outputs, out_layout = _output_leaves(t, out)  # a pytree: its numbers in order, one flat output
        scalar = False
    else:
        scalar = not isinstance(out, (list, tuple, np.ndarray))
        outputs = [_as_record(t, y) for y in ([out] if scalar else list(out))]

    retrace = _Retrace(f, layout, p_layout, strict, len(t), data, prune, cse)  # room for what f recorded
    F = t._function(_rows_of(inputs, spec), outputs[0] if scalar else outputs,
                    _rows_of(p_inputs, None if p_layout is None else p_layout.spec), on_branch_change, retrace,
                    leaves[0].shape if spec is _trees.ARRAY else None, out.shape if isinstance(out, VarArray) else None,
                    prune, cse)
    F._layout, F._param_layout, F._out_layout = layout, p_layout, out_layout
    return F


def _output_leaves(t: Tape, out: Any) -> tuple[list[Var], _trees.Layout]:
    """A pytree output's numbers as records, in the order tape's pytrees flatten (dicts by sorted key),
    and the layout that gives the flat outputs back in its structure."""
    records: list[Var] = []

    def skeleton(y: Any) -> Any:  # y's structure, each Var a float, each VarArray an array of its shape
        if isinstance(y, dict):
            return {key: skeleton(y[key]) for key in sorted(y)}
        if isinstance(y, (list, tuple)):
            return type(y)(skeleton(item) for item in y)
        if isinstance(y, VarArray):
            records.extend(y._vars())
            return np.zeros(y.shape)
        records.append(_as_record(t, y))
        return 0.0

    leaves, spec = _trees.flatten(skeleton(out), "f's output")
    return records, _trees.Layout(spec, leaves)


@dataclass(frozen=True)
class _Retrace:
    """f recorded again at a point, which f gets in x0's structure: a traced Function's retrace (an object,
    not a closure, so that the Function pickles wherever f does)."""

    f: Callable[..., Any]
    layout: _trees.Layout
    p_layout: _trees.Layout | None
    strict: bool
    capacity: int
    data: tuple
    prune: bool
    cse: bool

    def __call__(self, at: np.ndarray, ps_now: np.ndarray) -> Function:
        ps = None if self.p_layout is None else self.p_layout.tree(ps_now)
        return trace(self.f, self.layout.tree(at), ps, "raise", self.strict, self.capacity, self.data, self.prune,
                     self.cse)


def _leaf_handles(t: Tape, leaves: list[Any]) -> list[Any]:
    """A leaf record per number (a Var) and leaves for each array (a VarArray of its shape)."""
    if all(type(leaf) is float for leaf in leaves):
        return t.vars(leaves)
    return [t.array(leaf) if isinstance(leaf, np.ndarray) else t.var(leaf) for leaf in leaves]


def _as_given(handles: list[Any]) -> list[Any]:
    """The leaf handles as f is given them, held apart from f's assignments into them (``x[0] = ...`` swaps x's
    records): the derivative is that of f at the point given, read at these leaves, not at what f wrote there."""
    return [copy.copy(h) if isinstance(h, VarArray) else h for h in handles]  # (the same records)


def _rows_of(handles: list[Any], spec: Any) -> Any:
    """What Tape._function takes as inputs: the VarArray of an array x0, else the handles."""
    return handles[0] if spec is _trees.ARRAY else handles


def _recording(t: Tape, f: Callable[..., Any], *args: Any, strict: bool = False) -> Any:
    """f(*args) with t marked as recording for differentiation: a gradient of t inside f would be a
    constant in every replay and derivative, so it raises instead (Storage._reverse); reading
    ``.value`` warns (raises TracingError if strict)."""
    t._tracing, t._strict = True, strict
    active = nest.active()
    active.append(t)
    try:
        return f(*args)
    finally:
        active.pop()
        t._tracing = t._strict = False


def _distinct(argnums: Any, which: tuple[int, ...], n: int | None = None) -> None:
    """Refuse argnums that name an argument twice (as JAX does: a copy's derivative would be a
    share of the whole); with n, -1 and n - 1 are the same argument."""
    named = [k % n for k in which] if n else list(which)
    if len(set(named)) != len(named):
        twice = sorted({k for k in named if named.count(k) > 1})
        raise ValueError(f"argnums {argnums!r} name argument {twice[0]} more than once: "
                         "expected distinct argument numbers")


def _as_record(t: Tape, y: object) -> Var:
    if type(y) is Var:
        return y
    c = as_constant(y)
    if c is None:
        raise TypeError(f"f must return Vars or numbers, got {type(y).__name__}")
    return t._constant(c)


VarFunction = Callable[..., Any]


def value_and_grad(f: VarFunction, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   strict: bool = False) -> Callable[..., tuple[Any, Any]]:
    """``value_and_grad(f)(*args)``: f's value and its gradient in ``args[argnums]``, recorded afresh.

    f gets its arguments in the structure they are passed in: in the differentiated ones, each
    number becomes a Var and each NumPy array a VarArray of its shape, inside any tuples, lists
    and dicts (the others are passed as they are). f returns a Var or a number (with
    ``has_aux``: a pair (value, aux), aux returned with the numbers its Vars hold). The gradient
    comes back in the structure of ``args[argnums]``: a float per number, an array per array (a
    tuple of those for a tuple of argnums). As jax.value_and_grad; Python ``if`` on Vars is
    recorded (and checked by trace), where jax.jit refuses it. ``.value`` read inside f has no
    derivative: it warns once per source line (``strict=True``: raises tape.TracingError).
    With up to 64 numbers in all (floats, or arrays of them), a call records on the tape of this function's
    previous call in the same thread, cleared, so handles made inside f are stale once it returns (a call
    inside f, or in another thread, records on a tape of its own); the wrapper keeps that tape's memory (29
    bytes a record) for its next call, so a big program (tape.jit) records without growing. An array program whose
    arenas hold under 8 MB records on its last call's tape too, where nothing made inside f holds it.

    Nested: called on Vars (inside an outer grad, jvp or trace, or with Vars f closes over), f and
    its gradient are recorded onto their tape, the gradient as records (tape/symbolic/nest.py), and the
    value, gradient and aux come back as Vars: the outer transform differentiates through them.
    """
    which = argnums_of(argnums)
    idle = threading.local()  # per thread: this wrapper's tape from its last call, cleared for the next
    low, high = (min(which), max(which)) if which else (0, -1)  # argnums_of: ints
    _distinct(argnums, which)

    jitted = getattr(f, "_value_and_grad", None) if which == (0,) and not has_aux else None  # tape.jit's own

    def evaluate_with_gradient(*args: Any) -> tuple[Any, Any]:
        if jitted is not None:
            done = jitted(idle, args)
            if done is not None:
                return done
        if not (0 <= low and high < len(args)):  # (distinct at wrapping, so nothing repeats)
            for k in which:
                if not -len(args) <= k < len(args):
                    raise ValueError(f"argnums {argnums!r} do not name arguments of the {len(args)} given")
            _distinct(argnums, which, len(args))
        try:
            trees = [_trees.flatten(args[k], f"argument {k}") for k in which]
        except TypeError:  # Vars among them, maybe (inside an outer transform): recorded there (tape/symbolic/nest.py)
            outer = nest.tape_of(args)
            if outer is None:
                raise
            return nest.value_and_grad(outer, f, args, which, isinstance(argnums, int), has_aux)
        leaves = trees[0][0] if len(trees) == 1 else [leaf for tree_leaves, _ in trees for leaf in tree_leaves]
        numbers = isinstance(trees[0][1], _trees.Flat) if len(trees) == 1 else all(type(x) is float for x in leaves)
        size = len(leaves) if numbers else sum(leaf.size if isinstance(leaf, np.ndarray) else 1 for leaf in leaves)
        t = getattr(idle, "tape", None)  # a cleared one for up to 64 numbers (arrays of scalar records), a renewed one
        if t is not None and (size <= 64 or t._recycling) and not nans.active():  # for any (array records)
            idle.tape = None  # taken: a call of this wrapper inside f (or a failing f) gets a tape of its own
            handles = t._leaves(leaves) if numbers else _leaf_handles(t, leaves)
        else:
            t = Tape._afresh(size, getattr(idle, "arena", 0))
            handles = t._leaves(leaves) if numbers else _leaf_handles(t, leaves)
        given, start = list(args), 0
        for k, (tree_leaves, spec) in zip(which, trees, strict=True):
            given[k] = _trees.unflatten(spec, handles[start:start + len(tree_leaves)])
            start += len(tree_leaves)
        inputs = handles if numbers else _as_given(handles)
        t._tracing, t._strict = True, strict  # as _recording does
        active = nest.active()
        active.append(t)
        try:
            out = f(*given)
        except ForeignHandleError:  # f reaches a Var of an outer transform's tape (a closure): record there
            outer = nest.tape_of(args) or nest.innermost(t)
            if outer is None:
                raise
            return nest.value_and_grad(outer, f, args, which, isinstance(argnums, int), has_aux)
        finally:
            active.pop()
            t._tracing = t._strict = False
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("with has_aux=True, f must return a pair (value, aux)")
            out, aux = out[0], _numbers_of(out[1])
        grads = _gradients(t, out, inputs, numbers)
        if t._plans:
            idle.arena = t._n_arena  # (its arena grew while recording, copying what it held)
        value = out.value if type(out) is Var else as_constant(out)
        if size <= 64 and not t._plans and t._lines is None:
            t.clear()  # the next call records here: handles made inside f are stale from now on
            idle.tape = t
        elif t._plans and t._renewable():
            del out, handles, given, inputs  # (handles hold their segment, which holds t)
            if sys.getrefcount(t) == 2:  # no handle left, nor the tape itself (t, and getrefcount's argument)
                t._renew()
                idle.tape = t
        if len(trees) == 1:
            grad = _trees.unflatten(trees[0][1], grads)
            grad = grad if isinstance(argnums, int) else (grad,)
        else:
            trees_out, start = [], 0
            for tree_leaves, spec in trees:
                trees_out.append(_trees.unflatten(spec, grads[start:start + len(tree_leaves)]))
                start += len(tree_leaves)
            grad = tuple(trees_out)
        return ((value, aux), grad) if has_aux else (value, grad)

    return evaluate_with_gradient


def _gradients(t: Tape, y: Any, handles: list[Any], scalars_only: bool, check: bool = False) -> list[Any]:
    """d y / d each handle: a float per Var, an array per VarArray (zeros if y is a number). The array products
    go unchecked for 0 * inf, as a Function's (tape/function/array_replay.py): a gradient with a NaN is swept
    again, checked."""
    if type(y) is not Var:
        if as_constant(y) is None:
            raise TypeError(f"f must return a Var or a real number, got {type(y).__name__}")
        return [np.zeros(h.shape) if isinstance(h, VarArray) else 0.0 for h in handles]
    unchecked = t._reverse(t._resolve(y), False, True, check)  # (fused: the handles, t's leaves, are read only)
    if scalars_only:  # accumulate=False: a record's adjoint counts where its stamp is this generation
        adj, stamp, gen = memoryview(t._adj.data), memoryview(t._stamp.data), t._gen
        grads = [adj[i] if stamp[i] == gen else 0.0 for i in (h._index for h in handles)]
    else:
        scalars = [k for k, h in enumerate(handles) if type(h) is Var]
        found: Any = t._grads(np.array([handles[k]._index for k in scalars], np.int64)) if scalars else []
        grads = [h.grad if isinstance(h, VarArray) else 0.0 for h in handles]
        for k, g in zip(scalars, found, strict=True):
            grads[k] = float(g)
    if unchecked and not check and any(has_nan(g) if isinstance(g, np.ndarray) else g != g for g in grads):
        return _gradients(t, y, handles, scalars_only, check=True)
    return grads


def _numbers_of(tree: Any) -> Any:
    """aux with each Var a float and each VarArray an array of its values."""
    if isinstance(tree, (list, tuple)):
        return type(tree)(_numbers_of(v) for v in tree)
    if isinstance(tree, dict):
        return {k: _numbers_of(v) for k, v in tree.items()}
    if type(tree) is Var or isinstance(tree, VarArray):
        return tree.value
    return tree


def grad(f: VarFunction, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         strict: bool = False) -> Callable[..., Any]:
    """``grad(f)(*args)``: the gradient of ``f`` (with has_aux, the pair (gradient, aux)); see value_and_grad."""
    vg = value_and_grad(f, argnums, has_aux, strict)

    def gradient(*args: Any) -> Any:
        (value, grads) = vg(*args)
        return (grads, value[1]) if has_aux else grads

    return gradient
