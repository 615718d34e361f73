"""Random array programs for tests/test_array_matrix.py, written once for any NumPy-like namespace: NumPy (values,
central differences), tape's handles (through NumPy's dispatch) and jax.numpy (tests/array_references.py's stored
references). A program is data (``program(seed)``: a list of steps), run by ``run``; it imports only NumPy.

A program reads one flat vector: a block X (M, K), a line r (K,), a column c (M, 1), a number s. Each of STEPS loop
steps applies the same instructions to a pool of values: elementwise ufuncs, binary ops broadcast either side
(block with block, line, column, number or a constant), shifted views (slices, roll, concatenate, pad), reductions
along an axis broadcast back, a matmul, blocks of a column and a line (outer), where on a comparison, a logsumexp
along lines; a step's block carries on to the next and values of earlier steps are read again later (their regions
must stay alive). The output is a number (a weighted sum of some values' squares and products), or, for ``vector``
programs, a line of K sums.
"""

from __future__ import annotations

import numpy as np

STEPS = 3
UNARY = ("sin", "cos", "tanh", "arctan", "abs", "negative", "square", "exp_tanh", "log1p_sq", "sqrt_sq")
BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "hypot", "arctan2", "logaddexp", "fmax",
          "fmin")
EXACT = ("add", "subtract", "multiply", "divide", "maximum", "minimum")
SIDES = ("block", "line", "column", "number", "constant")
KINDS = ("unary", "binary", "binary", "shift", "reduce", "matmul", "where", "lse", "scale", "outer", "outer")


def sizes(large: bool) -> tuple[int, int]:
    """(M, K): a block of 40 x 30 (1,200 elements: array records at tape's default size), or 6 x 5."""
    return (40, 30) if large else (6, 5)


def length(large: bool) -> int:
    m, k = sizes(large)
    return m * k + k + m + 1


def program(seed: int, n_ops: int = 7) -> list[tuple]:
    """The instructions of program ``seed``: (kind, operand choices, op, side, flags), the same for every step;
    program 0 has every op (each unary, each binary with a side in turn (hypot a number), each way of shift and
    reduce, outer with each exact op)."""
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(n_ops):
        kind = str(rng.choice(KINDS))
        a, b = (int(i) for i in rng.integers(0, 10 ** 6, 2))
        steps.append((kind, a, b, str(rng.choice(UNARY)), str(rng.choice(BINARY)), str(rng.choice(SIDES)),
                      int(rng.integers(1, 4)), bool(rng.integers(2)), int(rng.integers(2))))
    if seed:
        return steps
    every = [("unary", name, BINARY[0], 0) for name in UNARY] + [
        ("binary", UNARY[0], name, k + 2) for k, name in enumerate(BINARY)] + [
        (kind, UNARY[0], BINARY[0], way) for kind in ("shift", "reduce") for way in range(4)] + [
        ("outer", UNARY[0], name, k) for k, name in enumerate(EXACT)] + [
        (kind, UNARY[0], BINARY[0], k) for k, kind in enumerate(("matmul", "where", "lse", "scale"))]
    return [(kind, a, b, un, bi, SIDES[way % len(SIDES)], 1 + way % 3, way >= 2 if kind in ("shift", "reduce") else
             bool(way % 2), way % 2) for (_, a, b, *_), (kind, un, bi, way) in zip(steps * 8, every, strict=False)]


def _unary(xp, name, a):
    if name == "exp_tanh":
        return xp.exp(xp.tanh(a))
    if name == "log1p_sq":
        return xp.log1p(a * a)
    if name == "sqrt_sq":
        return xp.sqrt(a * a + 0.5)
    if name == "square":
        return a * a
    return getattr(xp, name)(a)


def _binary(xp, name, a, b, swap):
    a, b = (b, a) if swap else (a, b)
    if name == "divide":
        return a / (1.0 + xp.abs(b))
    return getattr(xp, name)(a, b)


def _shift(xp, a, shift, how):
    """a (M, K) shifted by ``shift`` along its lines or columns, one of four ways."""
    if how == 0:
        return xp.roll(a, shift, axis=1)
    if how == 1:
        return xp.concatenate([a[shift:], a[:shift]], axis=0)
    if how == 2:
        return xp.pad(a, ((0, 0), (shift, shift)), mode="wrap")[:, 2 * shift:]
    return xp.pad(a[:, shift:], ((0, 0), (0, shift)), mode="edge")


def _reduce(xp, a, how, lse):
    """A reduction of a along an axis, broadcast back against a: sum, mean, max, logsumexp."""
    if how == 0:
        return a - a.sum(axis=0) * 0.05
    if how == 1:
        return a * a.mean(axis=1, keepdims=True)
    if how == 2:
        return a - a.max(axis=1, keepdims=True)
    return a - lse(a, 1, True) * 0.5


def constants(large: bool) -> np.ndarray:
    """The block of constants a program reads (as params: ``run``'s consts)."""
    m, k = sizes(large)
    return np.cos(np.arange(m * k) * 0.7).reshape(m, k)


def run(prog: list[tuple], u, xp, lse, vector: bool = False, large: bool = True, consts=None):
    """Program ``prog`` on the flat vector u with namespace xp (np for NumPy and tape's handles, jax.numpy), lse(a,
    axis, keepdims) a logsumexp; consts: constants(large), or params in its shape."""
    m, k = sizes(large)
    X, r = u[:m * k].reshape(m, k), u[m * k:m * k + k]
    c, s = u[m * k + k:m * k + k + m].reshape(m, 1), u[m * k + k + m]
    consts = constants(large) if consts is None else consts
    cc = np.cos(np.arange(m) * 1.1).reshape(m, 1) * 2.0
    W = np.sin(np.arange(k * k) * 0.3).reshape(k, k) * (0.3 / np.sqrt(k))
    pool, kept, every = [X], [], None
    for step in range(STEPS):
        for kind, i, j, un, bi, side, shift, swap, how in prog:
            a, b = pool[i % len(pool)], pool[j % len(pool)]
            if kind == "unary":
                y = _unary(xp, un, a)
            elif kind == "binary":
                other = {"block": b, "line": r, "column": c, "number": s, "constant": consts}[side]
                y = _binary(xp, bi, a, other, swap)
            elif kind == "shift":
                y = _shift(xp, a, shift, how + 2 * swap)
            elif kind == "reduce":
                y = _reduce(xp, a, how + 2 * swap, lse)
            elif kind == "matmul":
                y = (a @ W if swap else (a @ W.T) * 0.5) + b * 0.5
            elif kind == "where":
                y = xp.where(a > b, a * 0.5, b - a * (0.25 if swap else 0.0))
            elif kind == "outer":  # a block of a column (a constant's: it wants no adjoint) and a line: a value a
                # back stretch may compute again
                z = _binary(xp, bi if bi in EXACT else "subtract", cc if how else c, r * s if swap else r, swap)
                y = a * z + z * z * 0.5 - (z * 0.25) * b
            elif kind == "lse":
                y = a - lse(a * 2.0, 1, True) * 0.25
            else:
                y = (a * 0.5 + b * 0.25) * (0.75 + 0.25 * step)
            pool.append(xp.tanh(y) * 2.0 if step == STEPS - 1 and kind in ("binary", "scale") else y)
            every = xp.sin(pool[-1]) if every is None else every + xp.sin(pool[-1])  # (no value is dead)
        kept.append(pool[-1])
        pool = [pool[-1], *pool[1:len(prog) // 2 + 1], X]  # the step's last value carries on; early ones are read again
    out = pool[0] * pool[0] * 0.5 + kept[0] * r + pool[len(pool) // 2] * 0.25 + every * 0.01
    if vector:
        return out.sum(axis=0)
    return (out * consts).sum() + (kept[1] * c).sum() * 0.5


def point(seed: int, k: int, large: bool) -> np.ndarray:
    """Point k of program seed's (0: where it is traced; others: new points)."""
    return np.random.default_rng((seed, k)).normal(size=length(large)) * (1.0 if k < 3 else 0.3)


def directions(seed: int, large: bool, count: int = 4) -> np.ndarray:
    """Seeded directions (count, n): the stored references are the derivatives projected on them."""
    return np.random.default_rng((seed, 99)).normal(size=(count, length(large)))


SEEDS = 4  # (40 passed too; 8 cost the suite 36 CPU-s more, past its 4 minutes; array_references.py writes any number)
CASES = [(seed, vector, large) for seed in range(SEEDS) for vector in (False, True) for large in (True, False)]
