"""Random array programs of eight ops over an (R, C) state (R <= C), written as a user writes them (straight-line
source of np.* calls), for tests/test_array_fuzz.py and tests/array_fuzz_references.py (JAX float64's numbers: the
tests cannot import JAX). Each op maps earlier values (a, c, d) to a new (R, C) value: elementwise ops, reductions
broadcast back, matmul, einsum, joins, scans, sorts, pads, and the arranging functions and factorizations (tile,
broadcast_to, repeat, triu/tril, diag both ways, trace, tensordot, eigvalsh, qr, svd)."""

import re

import numpy as np

FORMS = {
    "sin": "xp.sin(a)", "cos": "xp.cos(a)", "tanh": "xp.tanh(a)", "exp_t": "xp.exp(xp.tanh(a))",
    "log_sq": "xp.log(a * a + 1.0)", "sqrt_sq": "xp.sqrt(a * a + 0.5)", "abs": "xp.abs(a)", "square": "a * a",
    "sigmoid": "sigmoid(a)", "softplus": "softplus(a)", "clip": "xp.clip(a, -0.7, 0.9)", "neg": "-a",
    "cumsum": "xp.cumsum(a, axis=1) * 0.3", "sort0": "xp.sort(a, axis=0)", "roll": "xp.roll(a, 2, axis=1)",
    "concat": "xp.concatenate((a[:, 1:], a[:, :1]), axis=1)", "pad": "xp.pad(a, ((0, 0), (1, 1)), mode='wrap')[:, 2:]",
    "flip": "a[::-1, ::-1]", "reshape_t": "a.T.reshape(R, C)", "add": "a + c", "sub": "a - c", "mul": "a * c",
    "div": "a / (c * c + 1.0)", "maximum": "xp.maximum(a, c)", "minimum": "xp.minimum(a, c)",
    "arctan2": "xp.arctan2(a, c * c + 0.5)", "hypot": "xp.hypot(a, c + 2.0)", "where": "xp.where(a > c, a * c, a - c)",
    "matmul": "(a @ c.T) @ d * 0.2", "einsum": "xp.einsum('ij,kj,kl->il', a, c, d) * 0.2",
    "bsum0": "a + c.sum(axis=0, keepdims=True) * 0.2", "bmax1": "a * c.max(axis=1, keepdims=True)",
    "blse1": "a - lse(c, axis=1, keepdims=True)", "bmean": "a * c.mean() + d[1:3].mean(axis=0)",
    "power": "(a * a + 0.5) ** (xp.tanh(c) + 1.0)", "stack_sum": "xp.stack((a, c, d)).sum(axis=0) * 0.5",
    "tile": "xp.tile(a[:1], (R, 1)) * 0.5 + a", "bcast": "xp.broadcast_to(a[1], (R, C)) * c",
    "repeat": "xp.repeat(a[:, :1], C, axis=1) + c * 0.5", "tri": "xp.triu(a, 1) + xp.tril(c, -1) * 0.5",
    "diag": "a * xp.diag(c[:, :R])[:, None]", "diagvec": "a + xp.diag(c[:, 0], C - R)[:R]",
    "tensordot": "xp.tensordot(a, c, axes=((1,), (1,))) @ d * 0.2",
    "eigvalsh": "a * xp.linalg.eigvalsh(c[:, :R] @ c[:, :R].T + xp.eye(R))[:, None] * 0.1",
    "qr": "a + (xp.linalg.qr(c.T)[1] ** 2) @ d * 0.1", "svdvals": "a * xp.linalg.svd(c, compute_uv=False).sum() * 0.1",
    "trace": "a * xp.trace(c[:, :R], 1) * 0.2",
}
KINDS = sorted(FORMS)
SHAPES = [(4, 5)] * 20 + [(32, 40)] * 4  # (R, C) of each program: scalar records (packed) and array records


def program(seed: int) -> list[tuple[str, int, int, int]]:
    """Eight ops, each of a kind and three earlier values (indices taken modulo their count)."""
    rng = np.random.default_rng(seed)
    return [(str(rng.choice(KINDS)), *map(int, rng.integers(10**6, size=3))) for _ in range(8)]


def source(seed: int) -> str:
    """Program ``seed`` as source: vec(x) its last value, flat; f(x) = vec(x) . W + 0.1 |x|^2."""
    lines = ["def vec(x):", "    v0 = x.reshape(R, C)", "    v1 = (x * x).reshape(C, R).T * 0.5"]
    for t, (name, *picks) in enumerate(program(seed), start=2):
        names = dict(zip("acd", (f"v{n % t}" for n in picks), strict=True))
        lines.append(f"    v{t} = " + re.sub(r"\b([acd])\b", lambda m, names=names: names[m.group(1)], FORMS[name]))
    lines += ["    return v9.reshape(-1)", "def f(x):", "    return (vec(x) * W).sum() + 0.1 * (x * x).sum()"]
    return "\n".join(lines)


def points(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two points and a direction of program ``seed``'s R * C inputs."""
    R, C = SHAPES[seed]
    rng = np.random.default_rng(1000 + seed)
    return rng.uniform(-1.5, 1.5, R * C), rng.uniform(-1.5, 1.5, R * C), rng.normal(size=R * C)


def directions(seed: int) -> np.ndarray:
    """Three directions the gradients and Hessian-vector products are compared along (3, R * C)."""
    R, C = SHAPES[seed]
    return np.random.default_rng(2000 + seed).normal(size=(3, R * C))
