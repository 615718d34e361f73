"""numpy.einsum on VarArrays, made of other operations: views, gathers, sums, transposes, reshapes and matmul.

Each operand's repeated labels ('ii->i', 'ii->') become its diagonal (a view of an array record); labels that only it
has and the output lacks are summed away; two operands are then contracted as a batched matrix product (batch labels,
each side's own labels, the contracted ones), or a broadcast product when nothing is contracted; more operands are
contracted left to right. Those steps are one ``script`` of labels, which tape.jit runs too (the same records).
Explicit ('ij,jk->ik') and implicit ('ij,jk': the labels seen once, sorted) modes as NumPy; the ellipsis ('...ij') and
the interleaved operand form are refused by name.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable
from typing import Any

import numpy as np


def _parse(subscripts: Any, count: int) -> tuple[list[str], str]:
    if not isinstance(subscripts, str):
        raise TypeError("np.einsum on VarArrays takes a subscripts string ('ij,jk->ik'), not the interleaved form")
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise ValueError(f"np.einsum on VarArrays: the ellipsis in {subscripts!r} is not supported; write the axes")
    inputs, arrow, out = spec.partition("->")
    terms = inputs.split(",")
    letters = set(string.ascii_letters)
    if len(terms) != count or any(set(t) - letters for t in terms) or set(out) - letters:
        raise ValueError(f"np.einsum subscripts {subscripts!r} do not fit {count} operand(s)")
    if not arrow:  # implicit mode: the labels seen once, in alphabetical order
        seen = "".join(terms)
        out = "".join(sorted(c for c in set(seen) if seen.count(c) == 1))
    if len(set(out)) != len(out) or set(out) - set("".join(terms)):
        raise ValueError(f"np.einsum subscripts {subscripts!r}: output labels repeated or not among the inputs")
    return terms, out


def diagonal(term: str) -> tuple[str, tuple[int, ...]]:
    """term's labels each once, and where each of term's axes goes among them (its repeats summed: a diagonal)."""
    labels = "".join(dict.fromkeys(term))
    return labels, tuple(labels.index(c) for c in term)


def _distinct(a: Any, term: str) -> tuple[Any, str]:
    """a with each repeated label taken once (its diagonal): a view of an array record (each label's strides added,
    as tape.jit's), else the elements picked (scalar records, NumPy's numbers)."""
    labels, where = diagonal(term)
    if labels == term:
        return a, term
    view = getattr(a, "_view", None)
    if view is not None:
        shape = tuple(view.shape[where.index(k)] for k in range(len(labels)))
        strides = tuple(sum(s for s, w in zip(view.strides, where, strict=True) if w == k) for k in range(len(labels)))
        return type(a)(a._live_tape()._segment(), None, view._replace(shape=shape, strides=strides)), labels
    places = np.einsum(f"{term}->{labels}", np.arange(math.prod(a.shape)).reshape(a.shape)).copy()
    return (a.reshape(-1)[places] if hasattr(a, "_operand") else np.einsum(f"{term}->{labels}", a)), labels


def _summed(term: str, keep: set[str]) -> tuple[tuple[int, ...], str]:
    """The axes of term's labels not in keep (summed away), and the labels left."""
    return tuple(k for k, c in enumerate(term) if c not in keep), "".join(c for c in term if c in keep)


def _order(term: str, order: str) -> tuple[int, ...] | None:
    """The transpose taking term's labels to ``order`` (None: the same)."""
    return None if term == order else tuple(term.index(c) for c in order)


def script(terms: list[str], target: str) -> list[tuple]:
    """The einsum of operands of ``terms`` (distinct labels each) as steps on two values, a (0) and b (1), each a step's
    name and arguments: ("load", slot, operand), ("sum", slot, axes), ("arrange", slot, transpose or None, groups of
    labels: reshaped to each group's size), ("product", groups: a @ b, or a * b reshaped to (batch, 1, right) where
    nothing is contracted), ("shape", labels: a reshaped to each label's size), ("transpose", order), ("scalar",).
    The Python recorder (``run``) and tape.jit (tape/compiled/array_einsum.py) run it: the same records."""
    steps: list[tuple] = [("load", 0, 0)]
    labels = terms[0]
    for k, tb in enumerate(terms[1:], start=1):
        keep = set(target).union(*terms[k + 1:])
        steps.append(("load", 1, k))
        axes, labels = _summed(labels, set(tb) | keep)
        steps += [("sum", 0, axes)] if axes else []
        axes, tb = _summed(tb, set(labels) | keep)
        steps += [("sum", 1, axes)] if axes else []
        batch = "".join(c for c in labels if c in tb and c in keep)
        left = "".join(c for c in labels if c not in tb)
        right = "".join(c for c in tb if c not in labels)
        inner = "".join(c for c in labels if c in tb and c not in keep)
        steps += [("arrange", 0, _order(labels, batch + left + inner), (batch, left, inner)),
                  ("arrange", 1, _order(tb, batch + inner + right), (batch, inner, right)),
                  ("product", (batch, left, inner, right))]
        labels = batch + left + right
        steps += [("shape", labels)] if labels else []
    axes, labels = _summed(labels, set(target))
    steps += [("sum", 0, axes)] if axes else []
    order = _order(labels, target)
    steps += [("transpose", order)] if order else []
    return steps + ([] if target else [("scalar",)])


def run(steps: list[tuple], operands: list[Any], sizes: dict[str, int]) -> Any:
    """The steps of ``script`` on operands (VarArrays and NumPy arrays) of label sizes ``sizes``."""
    values: list[Any] = [None, None]
    for name, *args in steps:
        if name == "load":
            values[args[0]] = operands[args[1]]
        elif name == "sum":
            values[args[0]] = values[args[0]].sum(axis=args[1])
        elif name == "arrange":
            x = values[args[0]] if args[1] is None else values[args[0]].transpose(args[1])
            values[args[0]] = x.reshape(tuple(math.prod(sizes[c] for c in group) for group in args[2]))
        elif name == "product":
            batch, _, inner, right = (math.prod(sizes[c] for c in group) for group in args[0])
            a, b = values
            values[0] = a @ b if args[0][2] else a * b.reshape(batch, 1, right)
        elif name == "shape":
            values[0] = values[0].reshape(tuple(sizes[c] for c in args[0]))
        elif name == "transpose":
            values[0] = values[0].transpose(args[0])
        else:  # scalar: a Var (a number of NumPy arrays)
            values[0] = values[0].reshape(1)[0] if hasattr(values[0], "reshape") else values[0]
    return values[0]


def einsum(subscripts: Any, *operands: Any, out: None = None, optimize: Any = False, **kwargs: Any) -> Any:
    """numpy.einsum of VarArrays (and NumPy arrays): see the module docstring."""
    if out is not None or kwargs:
        raise ValueError(f"np.einsum on VarArrays: {'out' if out is not None else sorted(kwargs)} does not apply")
    terms, target = _parse(subscripts, len(operands))
    sizes: dict[str, int] = {}
    for a, term in zip(operands, terms, strict=True):
        if np.ndim(a) != len(term):
            raise ValueError(f"np.einsum: operand {term!r} has {np.ndim(a)} dimensions, not {len(term)}")
        for c, n in zip(term, np.shape(a), strict=True):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"np.einsum: label {c!r} has sizes {sizes[c]} and {n}")
    pieces = [_distinct(a, term) for a, term in zip(operands, terms, strict=True)]
    return run(script([t for _, t in pieces], target), [a for a, _ in pieces], sizes)


FUNCTIONS: dict[Any, Callable[..., Any]] = {np.einsum: einsum}
