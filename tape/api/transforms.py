"""JAX's function transforms: ``tape.jvp``, ``tape.vjp``, ``tape.jacobian`` and ``tape.hessian``; and
``tape.sparse_jacobian`` and ``tape.sparse_hessian``, which keep their trace (and its sparsity) between calls.

Each records f afresh at the point it is given (``tape.trace``) and sweeps that
tape once per derivative. Arguments keep their structure (tape/base/trees.py): f
gets Vars and VarArrays where the caller passed numbers and arrays, and the
derivatives come back in the arguments' structure and shapes, as JAX gives them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tape.api.trace import _distinct, _numbers_of, argnums_of, trace
from tape.errors import ForeignHandleError
from tape.function import arguments, array_replay
from tape.function.function import Function
from tape.symbolic import nest


def _traced(f: Callable[..., Any], args: Sequence[Any], argnums: int | Sequence[int], has_aux: bool
            ) -> tuple[Function, np.ndarray, Any]:
    """(F of the arguments argnums, the flat point, aux): f traced with the other arguments fixed."""
    args = tuple(args)
    which = argnums_of(argnums)
    for k in which:
        if not (isinstance(k, int) and -len(args) <= k < len(args)):
            raise ValueError(f"argnums {argnums!r} do not name arguments of the {len(args)} given")
    _distinct(argnums, which, len(args))
    chosen = args[which[0]] if isinstance(argnums, int) else tuple(args[k] for k in which)
    aux: list[Any] = []

    def of_chosen(xs: Any) -> Any:
        given = list(args)
        for k, x in ([(which[0], xs)] if isinstance(argnums, int) else zip(which, xs, strict=True)):
            given[k] = x
        out = f(*given)
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("with has_aux=True, f must return a pair (value, aux)")
            out, extra = out
            aux.append(extra)  # read after recording (a read while recording is a frozen number)
        return out

    F = trace(of_chosen, chosen)
    assert F._layout is not None
    return F, F._layout.flat(chosen, "the point"), _numbers_of(aux[0]) if aux else None


def _not_nested(args: Sequence[Any], name: str) -> None:
    if nest.tape_of(args) is not None:
        raise TypeError(f"{name} of Vars (inside another transform) is not recorded as records: use tape.grad, "
                        "tape.jvp or tape.vjp there (per direction), or tape.jacobian of the traced Function outside")


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False) -> tuple:
    """``(f(*primals), J @ tangents)`` by one forward tangent sweep, as ``jax.jvp``: tangents has the
    structure of primals (a tuple with a tangent per argument); with has_aux, ``(out, J t, aux)``.
    Called on Vars (inside an outer transform), recorded onto their tape as records (tape/symbolic/nest.py)."""
    outer = nest.tape_of(tuple(primals) + tuple(tangents))
    if outer is not None:  # called on Vars (inside an outer transform): recorded there (tape/symbolic/nest.py)
        return nest.jvp(outer, f, primals, tangents, has_aux)
    try:
        F, point, aux = _traced(f, primals, tuple(range(len(primals))), has_aux)
    except ForeignHandleError:  # f closes over a Var of an outer transform's tape: record there
        if (outer := nest.innermost()) is None:
            raise
        return nest.jvp(outer, f, primals, tangents, has_aux)
    assert F._layout is not None
    direction = F._layout.flat(tuple(tangents), "the tangents")
    if _swept_values(F):  # the values of J v's own replay
        tangent = F.jvp(point, direction)
        value = arguments.output(F, F._val[F._output_rows])
    else:
        value, tangent = F(point), F.jvp(point, direction)
    if F._out_layout is not None:  # f returned a pytree: both in its structure
        value, tangent = F._out_layout.tree(np.asarray(value)), F._out_layout.tree(np.asarray(tangent))
    return (value, tangent, aux) if has_aux else (value, tangent)


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple:
    """``(f(*primals), vjp_fn)`` as ``jax.vjp``: ``vjp_fn(w)`` gives w^T J as a tuple with a cotangent
    per argument, each in that argument's structure (a reverse sweep per call); with has_aux,
    ``(out, vjp_fn, aux)``. Called on Vars (inside an outer transform), recorded onto their tape:
    out is Vars, and each vjp_fn(w) records a reverse sweep over f's records (tape/symbolic/nest.py)."""
    outer = nest.tape_of(primals)
    if outer is not None:  # called on Vars (inside an outer transform): recorded there (tape/symbolic/nest.py)
        return nest.vjp(outer, f, primals, has_aux)
    try:
        F, point, aux = _traced(f, primals, tuple(range(len(primals))), has_aux)
    except ForeignHandleError:  # f closes over a Var of an outer transform's tape: record there
        if (outer := nest.innermost()) is None:
            raise
        return nest.vjp(outer, f, primals, has_aux)
    layout = F._layout
    assert layout is not None

    def vjp_fn(w: Any) -> tuple:
        if F._out_layout is not None:  # f returned a pytree: w in its structure
            w = F._out_layout.flat(w, "the cotangent")
        return layout.tree(np.reshape(F.vjp(point, w), -1))

    if _swept_values(F):  # the values of a reverse sweep's replay that sends nothing (zero weights)
        F.vjp(point, np.zeros(F.n_outputs))
        value = arguments.output(F, F._val[F._output_rows])
    else:
        value = F(point)
    value = value if F._out_layout is None else F._out_layout.tree(np.asarray(value))
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def _swept_values(F: Function) -> bool:
    """Whether f's values at the point come from the derivative's own sweep rather than a replay (F(point)): a
    Function of scalar records outside the finite checks. Its replay kernel is then not compiled for the value
    (tape.vjp's first use cold 3.3-4.9 -> 2.3-3.1 CPU-s, a 600-variable scalar Rosenbrock): the sweeps' kernels compute
    the replay's numbers (tests/test_transforms.py compares the bits)."""
    return not F._plans and not array_replay.checking(F)


def jacobian(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``jacobian(f)(*args)``: as ``jax.jacobian``, for each number or array leaf of ``args[argnums]``
    an array of f's output shape + the leaf's shape, in the arguments' structure (``(jac, aux)``
    with has_aux). The fewer of forward and reverse sweeps."""

    def jac(*args: Any) -> Any:
        _not_nested(args, "tape.jacobian")
        F, point, aux = _traced(f, args, argnums, has_aux)
        assert F._layout is not None
        lead = F._output_shape
        J = F._layout.tree(np.reshape(F.jacobian(point), lead + (F.n_inputs,)), lead)
        return (J, aux) if has_aux else J

    return jac


def hessian(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``hessian(f)(*args)`` of a scalar f: as ``jax.hessian``, the arguments' structure of that
    structure (an array of shape leaf_i + leaf_j per pair of leaves); forward-over-reverse."""

    def hess(*args: Any) -> Any:
        _not_nested(args, "tape.hessian")
        F, point, aux = _traced(f, args, argnums, has_aux)
        assert F._layout is not None
        H = F._layout.nested(np.reshape(F.hessian(point), (F.n_inputs, F.n_inputs)))
        return (H, aux) if has_aux else H

    return hess


def _kept(f: Callable[[Any], Any], name: str) -> Callable[[Any], tuple[Function, np.ndarray]]:
    """(F, the flat point) for x: f traced at the first x (on_branch_change="retrace"), then kept for every
    x of that structure, so F keeps its sparsity pattern and coloring while its recorded branches hold."""
    kept: list[Function] = []

    def at(x: Any) -> tuple[Function, np.ndarray]:
        _not_nested((x,), name)
        if kept:
            assert kept[0]._layout is not None
            try:
                point = kept[0]._layout.flat(x, "the point")
                if len(point) == kept[0].n_inputs:
                    return kept[0], point
            except ValueError:  # another structure or shape: f traced again
                pass
        kept[:] = [trace(f, x, on_branch_change="retrace")]
        assert kept[0]._layout is not None
        return kept[0], kept[0]._layout.flat(x, "the point")

    return at


def sparse_jacobian(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``sparse_jacobian(f)(x)``: f's Jacobian at x as a scipy.sparse CSR matrix (rows: f's output numbers
    in C order; columns: x's numbers, flat), from one forward sweep per color (Function.sparse_jacobian).
    f is traced once and kept: its pattern and coloring serve every later x while its branches hold
    (a branch change records f again, and they are made again)."""
    at = _kept(f, "tape.sparse_jacobian")

    def jac(x: Any) -> Any:
        F, point = at(x)
        return F.sparse_jacobian(point)

    return jac


def sparse_hessian(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``sparse_hessian(f)(x)`` of a scalar f: its Hessian at x as a symmetric scipy.sparse CSR matrix (x's
    numbers, flat), a Hessian-vector product per color (Function.sparse_hessian); traced once and kept,
    as sparse_jacobian."""
    at = _kept(f, "tape.sparse_hessian")

    def hess(x: Any) -> Any:
        F, point = at(x)
        return F.sparse_hessian(point)

    return hess
