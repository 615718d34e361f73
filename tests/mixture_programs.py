"""Programs of the mixture's kind (bench/array_programs.py's mixture: a column less a row, squared and scaled, a
logsumexp over each line, summed) for tests/test_reduced_stretches.py, written once for NumPy (recording on VarArrays)
and for JAX (tests/mixture_references.py writes JAX float64's numbers: the tests cannot import JAX). Each is
f(u, xp, lse) of one flat vector u of params (SIZES), its points constants (X, X2) as the bench's."""

import numpy as np

K = 9  # components (odd: a line of 9 is no multiple of NumPy's pairwise blocks of 8)
LINES = 501  # points: lines of the logsumexp (two blocks of a reduced stretch, 455 lines and 46: fours and a rest)
X, X2 = (np.random.default_rng(seed).normal(size=(LINES, 1)) * 2.0 for seed in (8, 9))  # (the points)
WEIGHTS = np.where(np.arange(LINES) % 5, np.random.default_rng(10).uniform(0.0, 2.0, LINES), 0.0)  # (some 0)


def mixture(u, xp, lse):
    """The bench's mixture: 1-d points, the logsumexp's operand read by nothing else (its back stretch takes it in)."""
    mu, logs, logits = u[:K], u[K:2 * K], u[2 * K:]
    logw = logits - lse(logits)
    z = (X - mu) * xp.exp(-logs)
    return lse(logw - 0.5 * z * z - logs, axis=1).sum()


def mixture2d(u, xp, lse):
    """2-d points, weighted (some 0: a line's adjoint 0), a diagonal Gaussian per component: the operand computed 7
    members deep (past the back's DEPTH: stored forward, read back)."""
    m1, m2, l1, l2 = (u[j * K:(j + 1) * K] for j in range(4))
    logw = u[4 * K:] - lse(u[4 * K:])
    z1, z2 = (X - m1) * xp.exp(-l1), (X2 - m2) * xp.exp(-l2)
    return (lse(logw - 0.5 * (z1 * z1 + z2 * z2) - (l1 + l2), axis=1) * WEIGHTS).sum()


ONEHOT = np.eye(K)[np.arange(LINES) % K]  # (a constant: the classes)


def crossentropy(u, xp, lse):
    """Softmax cross-entropy of radial-basis logits: the logits read by the logsumexp and by the picked class's
    product (held: the back stretch stays the rows')."""
    c, s, b = (u[j * K:(j + 1) * K] for j in range(3))
    d = (X - c) * xp.exp(-s)
    logits = b - 0.5 * d * d
    return (lse(logits, axis=1) - (logits * ONEHOT).sum(1)).sum()


def squares(u, xp, lse):
    """No broadcast: a stretch of elementwise rows over a block of params, its lines' logsumexps (the lines from the
    logsumexp's row), weighted."""
    A = u.reshape(LINES, K)
    return (lse(0.5 * A * A - A * 0.25 + 1.0, axis=1) * WEIGHTS).sum()


PROGRAMS = {"mixture": mixture, "mixture2d": mixture2d, "crossentropy": crossentropy, "squares": squares}
SIZES = {"mixture": 3 * K, "mixture2d": 5 * K, "crossentropy": 3 * K, "squares": LINES * K}


def point(name: str, seed: int) -> np.ndarray:
    """A point of name's params, of scale 1."""
    return np.random.default_rng(seed).normal(size=SIZES[name])
