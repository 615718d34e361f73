"""Pytrees: what a user passes (numbers, NumPy arrays, and tuples, lists and dicts of them), as leaves.

``tape.grad`` and ``tape.value_and_grad`` give f its arguments in the structure
they came in, with each number a Var and each array a VarArray of its shape,
and return gradients in that structure: a float per number, an array per array.
Dicts keep their keys (flattened in sorted order, as JAX does).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

from tape._numbers import real_array

Spec = Any  # the tree with a Leaf in place of each leaf


class Leaf:
    """A leaf's place in a spec: a number or an array."""

    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind


NUMBER, ARRAY = Leaf("number"), Leaf("array")


class Flat:
    """The spec of a list or tuple of numbers only (the common point): leaves in, the same kind out."""

    __slots__ = ("kind",)

    def __init__(self, kind: type):
        self.kind = kind


def flatten(tree: Any, where: str = "the argument") -> tuple[list[Any], Spec]:
    """(leaves, spec): the leaves are floats and float64 arrays, in order."""
    kind = type(tree)
    if kind is np.ndarray:
        return [real_array(tree, where)], ARRAY
    if (kind is list or kind is tuple) and all(type(v) is float or type(v) is int for v in tree):
        return [float(v) for v in tree], Flat(kind)
    leaves: list[Any] = []
    return leaves, _walk(tree, (where,), leaves)


def _walk(node: Any, path: tuple, leaves: list[Any]) -> Spec:
    # module-level, not a closure: a recursive closure is a reference cycle, and one holding
    # handles would keep their tape (and its arenas) alive until the garbage collector runs
    kind = type(node)
    if kind is float or kind is int:
        leaves.append(float(node))
        return NUMBER
    if isinstance(node, (list, tuple)):
        return type(node)(_walk(v, (*path, k), leaves) for k, v in enumerate(node))
    if isinstance(node, dict):
        return {key: _walk(node[key], (*path, key), leaves) for key in sorted(node)}
    where = path[0] + "".join(f"[{k!r}]" for k in path[1:])
    if isinstance(node, np.ndarray):
        leaves.append(real_array(node, where))
        return ARRAY
    if isinstance(node, numbers.Real) and not isinstance(node, bool):
        leaves.append(float(node))
        return NUMBER
    raise TypeError(f"{where} must be real numbers, NumPy arrays of them, or tuples, lists and dicts of those; "
                    f"got {kind.__name__}")


def unflatten(spec: Spec, leaves: list[Any]) -> Any:
    """The tree of spec with its leaves, in order, from leaves."""
    if isinstance(spec, Flat):
        return spec.kind(leaves)
    if spec is ARRAY:
        return leaves[0]
    return _build(spec, iter(leaves))


def _build(node: Spec, leaves: Iterator[Any]) -> Any:
    if isinstance(node, Leaf):
        return next(leaves)
    if isinstance(node, (list, tuple)):
        return type(node)(_build(v, leaves) for v in node)
    if isinstance(node, dict):
        return {key: _build(v, leaves) for key, v in node.items()}
    raise AssertionError(f"not a spec: {node!r}")
