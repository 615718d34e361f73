"""numpy.einsum on VarArrays, made of other operations: gathers, sums, transposes, reshapes and matmul.

Each operand's repeated labels ('ii->i', 'ii->') become one gather of its diagonal; labels
that only it has and the output lacks are summed away; two operands are then contracted
as a batched matrix product (batch labels, each side's own labels, the contracted ones),
or a broadcast product when nothing is contracted; more operands are contracted left to
right. Explicit ('ij,jk->ik') and implicit ('ij,jk': the labels seen once, sorted) modes as
NumPy; the ellipsis ('...ij') and the interleaved operand form are refused by name.
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


def _distinct(a: Any, term: str) -> tuple[Any, str]:
    """a with each repeated label taken once (its diagonal), by one gather."""
    labels = "".join(dict.fromkeys(term))
    if labels == term:
        return a, term
    places = np.einsum(f"{term}->{labels}", np.arange(math.prod(a.shape)).reshape(a.shape)).copy()
    return (a.reshape(-1)[places] if hasattr(a, "_operand") else np.einsum(f"{term}->{labels}", a)), labels


def _reduced(a: Any, term: str, keep: set[str]) -> tuple[Any, str]:
    """a summed over the labels not in keep."""
    drop = tuple(k for k, c in enumerate(term) if c not in keep)
    if not drop:
        return a, term
    return a.sum(axis=drop), "".join(c for c in term if c in keep)


def _arranged(a: Any, term: str, order: str) -> Any:
    return a if term == order else a.transpose(tuple(term.index(c) for c in order))


def _pair(a: Any, ta: str, b: Any, tb: str, keep: str, sizes: dict[str, int]) -> tuple[Any, str]:
    """Contract a and b (distinct labels each) to the labels of keep they have."""
    a, ta = _reduced(a, ta, set(tb) | set(keep))
    b, tb = _reduced(b, tb, set(ta) | set(keep))
    batch = "".join(c for c in ta if c in tb and c in keep)
    left = "".join(c for c in ta if c not in tb)
    right = "".join(c for c in tb if c not in ta)
    inner = "".join(c for c in ta if c in tb and c not in keep)
    n = {part: math.prod(sizes[c] for c in part) for part in (batch, left, right, inner)}
    A = _arranged(a, ta, batch + left + inner).reshape(n[batch], n[left], n[inner])
    B = _arranged(b, tb, batch + inner + right).reshape(n[batch], n[inner], n[right])
    C = A * B.reshape(n[batch], 1, n[right]) if not inner else A @ B
    return C.reshape(tuple(sizes[c] for c in batch + left + right)), batch + left + right


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
    result, labels = pieces[0]
    for k, (b, tb) in enumerate(pieces[1:], start=1):
        later = set(target).union(*(t for _, t in pieces[k + 1:]))
        result, labels = _pair(result, labels, b, tb, "".join(c for c in sizes if c in later), sizes)
    result, labels = _reduced(result, labels, set(target))
    result = _arranged(result, labels, target)
    return result.reshape(1)[0] if not target and hasattr(result, "reshape") else result  # 0-d: a Var


FUNCTIONS: dict[Any, Callable[..., Any]] = {np.einsum: einsum}
