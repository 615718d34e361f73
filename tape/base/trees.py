"""Pytrees: what a user passes (numbers, NumPy arrays, and tuples, lists and dicts of them), as leaves.

``tape.grad`` and ``tape.value_and_grad`` give f its arguments in the structure
they came in, with each number a Var and each array a VarArray of its shape,
and return gradients in that structure: a float per number, an array per array.
Dicts keep their keys (flattened in sorted order, as JAX does).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

from tape.base.numbers import real_array

Spec = Any  # the tree with a Leaf in place of each leaf


class Leaf:
    """A leaf's place in a spec: a number or an array (two objects, compared by identity)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind

    def __reduce__(self) -> str:
        return self.kind.upper()  # pickled as the name of the one object: NUMBER or ARRAY


NUMBER, ARRAY = Leaf("number"), Leaf("array")


class Flat:
    """The spec of a list or tuple of numbers only (the common point): leaves in, the same kind out."""

    __slots__ = ("kind",)

    def __init__(self, kind: type):
        self.kind = kind

    def __reduce__(self) -> tuple[Any, tuple[type]]:
        return flat_spec, (self.kind,)  # unpickled as the one object of its kind, compared by identity


FLAT: dict[type, Flat] = {list: Flat(list), tuple: Flat(tuple)}


def flat_spec(kind: type) -> Flat:
    return FLAT[kind]


_FLOAT, _NUMBER = {float}, {float, int}


def flatten(tree: Any, where: str = "the argument") -> tuple[list[Any], Spec]:
    """(leaves, spec): the leaves are floats and float64 arrays, in order."""
    kind = type(tree)
    if kind is np.ndarray:
        return [real_array(tree, where)], ARRAY
    if kind is list or kind is tuple:
        types = set(map(type, tree))
        if types <= _FLOAT:  # already floats: the copy a list makes, without a conversion per number
            return list(tree), FLAT[kind]
        if types <= _NUMBER:
            return [float(v) for v in tree], FLAT[kind]
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
        return _same_kind(node, [_walk(v, (*path, k), leaves) for k, v in enumerate(node)])
    if isinstance(node, dict):
        try:
            keys = sorted(node)
        except TypeError:
            where = path[0] + "".join(f"[{k!r}]" for k in path[1:])
            raise TypeError(f"{where}: a dict's keys must be sortable (tape, as JAX, takes its leaves in sorted "
                            f"key order), got keys of types {sorted({type(k).__name__ for k in node})}") from None
        return {key: _walk(node[key], (*path, key), leaves) for key in keys}
    where = path[0] + "".join(f"[{k!r}]" for k in path[1:])
    if isinstance(node, np.ndarray):
        leaves.append(real_array(node, where))
        return ARRAY
    if isinstance(node, numbers.Real) and not isinstance(node, bool):
        leaves.append(float(node))
        return NUMBER
    raise TypeError(f"{where} must be real numbers, NumPy arrays of them, or tuples, lists and dicts of those; "
                    f"got {kind.__name__}")


def _same_kind(node: list | tuple, values: list[Any]) -> Any:
    """values as a container of node's type (a namedtuple takes them as arguments)."""
    return type(node)(*values) if hasattr(node, "_fields") else type(node)(values)


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
        return _same_kind(node, [_build(v, leaves) for v in node])
    if isinstance(node, dict):
        return {key: _build(v, leaves) for key, v in node.items()}
    raise AssertionError(f"not a spec: {node!r}")


class Layout:
    """Where each leaf of a traced x0 sits in a Function's flat vector of numbers, to take calls in
    x0's structure and give derivatives back in it (``tape.trace``, ``F.gradient``, retrace)."""

    __slots__ = ("spec", "shapes", "size", "structured", "places", "numbers")

    def __init__(self, spec: Spec, leaves: list[Any]):
        self._place(spec, [() if type(leaf) is float else leaf.shape for leaf in leaves])

    @classmethod
    def of_shapes(cls, spec: Spec, shapes: list[tuple[int, ...]]) -> Layout:
        """The layout of a spec whose leaves have these shapes (() for a number): a loaded file's."""
        layout = cls.__new__(cls)
        layout._place(spec, shapes)
        return layout

    def _place(self, spec: Spec, shapes: list[tuple[int, ...]]) -> None:
        self.spec = spec
        # an array or a flat list of numbers is a vector to a Function (array-like, as NumPy reads it)
        self.structured = not (spec is ARRAY or isinstance(spec, Flat))
        self.shapes = shapes
        self.size = sum(math.prod(shape) for shape in self.shapes)
        self.numbers = all(shape == () for shape in self.shapes)  # no array among the leaves
        self.places, start = [], 0  # (start, stop, shape) of each leaf in the flat vector
        for shape in self.shapes:
            self.places.append((start, start + math.prod(shape), shape))
            start += math.prod(shape)

    def flat(self, tree: Any, what: str) -> np.ndarray:
        """The numbers of a tree in x0's structure, as one flat vector."""
        leaves, spec = flatten(tree, what)
        # == compares specs in C (leaves are singletons); _same also takes lists for tuples
        if spec != self.spec and not _same(self.spec, spec, len(leaves) == len(self.shapes)):
            raise ValueError(f"{what} must have the structure of the x0 traced: {self.difference(spec, leaves, what)}")
        if self.numbers:
            return np.array(leaves, np.float64)
        for leaf, shape in zip(leaves, self.shapes, strict=True):
            if (() if type(leaf) is float else leaf.shape) != shape:
                raise ValueError(f"{what} must have the structure of the x0 traced: "
                                 f"{self.difference(spec, leaves, what)}")
        return np.concatenate([np.ravel(leaf) for leaf in leaves]) if leaves else np.zeros(0)

    def difference(self, spec: Spec, leaves: list[Any], what: str = "x") -> str:
        """The first place where a tree (its spec and leaves) differs from x0's, in words: the path
        (x['w'][1], params[0]), what the x0 traced had there and what came (kind, keys, length, shape)."""
        root = "params" if "param" in what else "x"
        found = _difference(_expanded(self.spec, len(self.shapes)), _expanded(spec, len(leaves)), root,
                            iter(self.shapes), iter(leaves))
        return found or f"x0 was {describe(self.spec)}, got {describe(spec)}"

    def tree(self, vector: np.ndarray, lead: tuple[int, ...] = ()) -> Any:
        """x0's structure from the last axis of vector: a float (or an array of shape lead) per
        number, an array of shape lead + its shape per array."""
        if self.numbers and not lead and vector.ndim == 1:
            return unflatten(self.spec, vector.tolist())
        return unflatten(self.spec, [_number(vector[..., start:stop].reshape(lead + shape))
                                     for start, stop, shape in self.places])

    def nested(self, matrix: np.ndarray) -> Any:
        """A (n, n) matrix as x0's structure of x0's structures (a Hessian, as JAX gives one)."""
        places = self.places
        return unflatten(self.spec, [unflatten(self.spec, [_number(matrix[a0:a1, b0:b1].reshape(sa + sb))
                                                           for b0, b1, sb in places]) for a0, a1, sa in places])


def _expanded(spec: Spec, count: int) -> Spec:
    return spec.kind([NUMBER] * count) if isinstance(spec, Flat) else spec  # a flat spec's length is its leaves'


def _difference(a: Spec, b: Spec, path: str, shapes: Iterator[Any], leaves: Iterator[Any]) -> str | None:
    """Where spec b (with its leaves) first differs from spec a (with its leaves' shapes), or None."""
    if isinstance(a, Leaf) and isinstance(b, Leaf):
        shape, leaf = next(shapes), next(leaves)
        got = () if type(leaf) is float else leaf.shape
        if a is b and shape == got:
            return None
        return f"at {path} the x0 traced had {_leaf(a, shape)}, got {_leaf(b, got)}"
    if isinstance(a, Leaf) or isinstance(b, Leaf) or isinstance(a, dict) != isinstance(b, dict):
        return f"at {path} the x0 traced had {_said(a, shapes)}, got {_said(b, leaves)}"
    if isinstance(a, dict):
        if list(a) != list(b):
            missing, extra = [k for k in a if k not in b], [k for k in b if k not in a]
            return (f"at {path} the x0 traced had {describe(a)}, got {describe(b)}"
                    + (f" (missing {', '.join(map(repr, missing))})" if missing else "")
                    + (f" (not in x0: {', '.join(map(repr, extra))})" if extra else ""))
        pairs = [(f"{path}[{key!r}]", a[key], b[key]) for key in a]
    elif len(a) != len(b):
        return f"at {path} the x0 traced had {describe(a)}, got {describe(b)}"
    else:
        pairs = [(f"{path}[{k}]", x, y) for k, (x, y) in enumerate(zip(a, b, strict=True))]
    for where, x, y in pairs:
        found = _difference(x, y, where, shapes, leaves)
        if found:
            return found
    return None


def _leaf(kind: Leaf, shape: tuple[int, ...]) -> str:
    return "a number" if kind is NUMBER else f"an array of shape {shape}"


def _said(spec: Spec, leaves: Iterator[Any]) -> str:
    """A leaf (with its shape, read from leaves) or a container, in words."""
    if not isinstance(spec, Leaf):
        return describe(spec)
    leaf = next(leaves, None)
    return _leaf(spec, leaf if isinstance(leaf, tuple) else () if leaf is None or type(leaf) is float else leaf.shape)


def _number(part: np.ndarray) -> Any:
    return float(part) if part.ndim == 0 else part


def _same(a: Spec, b: Spec, counts_match: bool) -> bool:
    """Whether two specs have one structure (lists and tuples alike)."""
    if isinstance(a, Flat) or isinstance(b, Flat):
        flat_a = a if isinstance(a, Flat) else _as_flat(a)
        flat_b = b if isinstance(b, Flat) else _as_flat(b)
        return flat_a is not None and flat_b is not None and counts_match
    if isinstance(a, Leaf) or isinstance(b, Leaf):
        return a is b
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b)
                and all(_same(a[key], b[key], True) for key in a))
    return len(a) == len(b) and all(_same(x, y, True) for x, y in zip(a, b, strict=True))


def _as_flat(spec: Spec) -> Flat | None:
    """A list or tuple of NUMBER leaves as the Flat spec it equals, else None."""
    if isinstance(spec, (list, tuple)) and all(s is NUMBER for s in spec):
        return Flat(type(spec))
    return None


def describe(spec: Spec) -> str:
    """A spec in a few words, for errors: ``list of 3 numbers``, ``dict {'a', 'b'}``, ``array``."""
    if isinstance(spec, Flat):
        return f"a {spec.kind.__name__} of numbers"
    if isinstance(spec, Leaf):
        return f"a{'n' if spec is ARRAY else ''} {spec.kind}"
    if isinstance(spec, dict):
        return "a dict with keys " + ", ".join(repr(k) for k in spec)
    return f"a {type(spec).__name__} of {len(spec)} element{'s' if len(spec) != 1 else ''}"
