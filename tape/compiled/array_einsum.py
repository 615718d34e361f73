"""np.einsum inside tape.jit: its subscripts a constant string, its operands array records and NumPy arrays, run as the
Python recorder runs it (tape/arrays/einsum.py's ``script``: sums, transposes, reshapes that copy where NumPy copies,
a batched matmul or product per pair of operands), so the same records. Each step is a jitted function of the state
(a, b, the labels' sizes, the operands), composed two by two (a tree, so its cache key stays shallow). Typing fails
(scalar records, then a JitError naming it) for a diagonal (a label repeated in one operand) of a NumPy array, a value
of more than DIMS axes, a sum over a NumPy array's axes or a product of two of them (NumPy's rounding, not recorded),
an operand summed to one number before its pair (a Var here, a 0-d VarArray there). A diagonal of an array record is a
view, as the Python recorder's."""

from __future__ import annotations

import numpy as np
from numba.np.unsafe.ndarray import to_fixed_tuple

from tape.arrays import einsum
from tape.compiled.array_overloads import is_data, is_record, view
from tape.compiled.array_rows import DIMS
from tape.compiled.array_views import PERMUTED, RESHAPED
from tape.compiled.numba_internals import types
from tape.compiled.overload_cache import overload
from tape.compiled.recording import jit


def _measure(k: int, labels: tuple[int, ...]):
    """Operand k's lengths as its labels' sizes (NumPy's ValueError where a label has two)."""
    @jit
    def step(s):
        x, n = s[3][k], s[2]
        for d in range(len(labels)):
            if n[labels[d]] < 0:
                n[labels[d]] = x.shape[d]
            elif n[labels[d]] != x.shape[d]:
                raise ValueError("np.einsum: a label has two sizes (tape.jit: an array record's)")
        return s
    return step


@jit
def _sizes(n, groups):
    """Each group's size (a group: a bit mask of labels): the product of its labels' sizes."""
    out = np.empty(len(groups), np.int64)
    for g in range(len(groups)):
        size, bits, c = 1, groups[g], 0
        while bits:
            size, bits, c = size * n[c] if bits & 1 else size, bits >> 1, c + 1
        out[g] = size
    return out


@jit
def _diagonal(x, where, ndim):
    """The lengths and strides of x's view with its axes at places ``where`` (a repeated place: a diagonal, strides
    added), as tape/arrays/einsum.py's _distinct."""
    n, strides = np.empty(ndim, np.int64), np.zeros(ndim, np.int64)
    for d in range(len(where)):
        n[where[d]], strides[where[d]] = x.shape[d], strides[where[d]] + x.strides[d]
    return n, strides


@jit
def _identity(x):
    return x


def _diagonal_of(where):
    ndim = max(where) + 1

    @jit
    def take(x):
        n, strides = _diagonal(x, where, ndim)
        return view(x, 0, to_fixed_tuple(n, ndim), to_fixed_tuple(strides, ndim))
    return take


def _load(slot: int, k: int, where):
    """Slot's value the operand k (its diagonal where ``where`` repeats a place)."""
    take = _identity if where is None else _diagonal_of(where)
    if slot == 0:
        return jit(lambda s: (take(s[3][k]), s[1], s[2], s[3]))
    return jit(lambda s: (s[0], take(s[3][k]), s[2], s[3]))


def _sum(axes: tuple[int, ...]):
    return jit(lambda x, n: np.sum(x, axes))


def _reshape(groups: tuple[int, ...]):
    reshaped = RESHAPED[len(groups) - 1]
    return jit(lambda x, n: reshaped(x, _sizes(n, groups)))


def _transpose(order: tuple[int, ...]):
    permuted = PERMUTED[len(order) - 1]
    return jit(lambda x, n: permuted(x, order))


def _with(slot: int, value):
    """The state with ``value(x, n)`` of slot's value x in its place."""
    if slot == 0:
        return jit(lambda s: (value(s[0], s[2]), s[1], s[2], s[3]))
    return jit(lambda s: (s[0], value(s[1], s[2]), s[2], s[3]))


def _arranged(record, order, groups):
    """x transposed by ``order`` (None: as it is) and reshaped to the groups' sizes (three)."""
    if record:
        reshaped = RESHAPED[len(groups) - 1]
        if order is None:
            return jit(lambda x, n: reshaped(x, _sizes(n, groups)))
        permuted = PERMUTED[len(order) - 1]
        return jit(lambda x, n: reshaped(permuted(x, order), _sizes(n, groups)))
    if order is None:
        return jit(lambda x, n: np.ascontiguousarray(x).reshape(to_fixed_tuple(_sizes(n, groups), 3)))
    return jit(lambda x, n: np.ascontiguousarray(x.transpose(order)).reshape(to_fixed_tuple(_sizes(n, groups), 3)))


def _product(contracted, record_b, groups):
    """a @ b, or a * b reshaped to (batch, 1, right) where nothing is contracted."""
    if contracted:
        return jit(lambda s: (s[0] @ s[1], s[1], s[2], s[3]))
    column = (groups[0], 0, groups[3])
    if record_b:
        reshaped = RESHAPED[2]
        return jit(lambda s: (s[0] * reshaped(s[1], _sizes(s[2], column)), s[1], s[2], s[3]))
    return jit(lambda s: (s[0] * s[1].reshape(to_fixed_tuple(_sizes(s[2], column), 3)), s[1], s[2], s[3]))


def scalar(x):
    """A record's one element (a Var, the elem record reading it); a Var (a sum of all elements) as it is."""


overload(scalar)(lambda x: (lambda x: x.reshape(1)[0]) if is_record(x) else (lambda x: x))
@jit
def _scalar(x, n):
    return scalar(x)


def _then(f, g):
    return jit(lambda s: g(f(s)))


def _composed(steps: list):
    """The steps as one function, composed two by two."""
    if len(steps) == 1:
        return steps[0]
    half = len(steps) // 2
    return _then(_composed(steps[:half]), _composed(steps[half:]))


def _steps(terms: list[str], target: str, records: list[bool]) -> list | None:
    """The jitted steps of the einsum of operands of ``terms`` (``records``: which are array records), None where
    tape.jit does not run it (see the module docstring)."""
    if any(len(set(t)) != len(t) and not r for t, r in zip(terms, records, strict=True)):
        return None  # (a diagonal of a NumPy operand: NumPy's einsum, which Numba lacks)
    index = {c: i for i, c in enumerate(dict.fromkeys("".join(terms)))}
    wheres = [None if len(set(t)) == len(t) else einsum.diagonal(t)[1] for t in terms]
    masks = lambda groups: tuple(sum(1 << index[c] for c in g) for g in groups)  # noqa: E731
    out, held = [_measure(k, tuple(index[c] for c in t)) for k, t in enumerate(terms)], [records[0], records[0]]
    distinct = [einsum.diagonal(t)[0] for t in terms]
    steps, ndim = einsum.script(distinct, target), [0, 0]
    for at, (name, *args) in enumerate(steps):
        if name == "load":
            held[args[0]], ndim[args[0]] = records[args[1]], len(distinct[args[1]])
            out.append(_load(args[0], args[1], wheres[args[1]]))
        elif name == "sum" and held[args[0]] and (ndim[args[0]] > len(args[1]) or steps[at + 1:] == [("scalar",)]):
            ndim[args[0]] -= len(args[1])  # (a sum of all elements is a Var here, a 0-d VarArray there: last only)
            out.append(_with(args[0], _sum(args[1])))
        elif name == "arrange":
            ndim[args[0]] = 3
            out.append(_with(args[0], _arranged(held[args[0]], args[1], masks(args[2]))))
        elif name == "product" and (held[0] or held[1]):
            out.append(_product(bool(args[0][2]), held[1], masks(args[0])))
            held[0], ndim[0] = True, 3
        elif name == "shape" and len(args[0]) <= DIMS:
            ndim[0] = len(args[0])
            out.append(_with(0, _reshape(masks(args[0]))))
        elif name == "transpose" and held[0]:
            out.append(_with(0, _transpose(args[0])))
        elif name == "scalar" and held[0]:
            out.append(_with(0, _scalar))
        else:
            return None
    return out


def einsum_typer(subscripts, *operands):
    if len(operands) == 1 and isinstance(operands[0], types.BaseTuple):  # (Numba types the impl's as one tuple)
        operands = tuple(operands[0].types)
    if not isinstance(subscripts, types.StringLiteral) or not any(is_record(o) for o in operands) or not all(
            is_record(o) or is_data(o) for o in operands):
        return None
    try:
        terms, target = einsum._parse(subscripts.literal_value, len(operands))
    except (TypeError, ValueError):
        return None
    if any(len(t) != o.ndim for t, o in zip(terms, operands, strict=True)):
        return None
    steps = _steps(terms, target, [is_record(o) for o in operands])
    if steps is None:
        return None
    run, count = _composed(steps), len(set("".join(terms)))

    def impl(subscripts, *operands):
        return run((operands[0], operands[0], np.full(count, -1, np.int64), operands))[0]
    return impl


overload(np.einsum, prefer_literal=True)(einsum_typer)
