"""Array programs for tests/test_jit_array_records.py, as source run three ways: by tape.jit (array records written
from Numba), by the Python recorder (VarArrays) and by jax.numpy (tests/jit_array_references.py's stored
references). ``np`` and ``tape`` in a source are NumPy and tape, or jax.numpy and JAX's namesakes. Each input has
1,024 elements or more (array_records.SMALL), so both recorders write array records."""

from __future__ import annotations

import numpy as np

MLP = '''
def f(W, X, b, w2, y):               # a tanh layer, its squared error
    h = np.tanh(X @ W + b)
    r = h @ w2 - y
    return (r * r).mean()
'''

CHAIN = '''
def f(A, row, col):                  # elementwise ops broadcast with numbers, a row and a column
    u = (A * 2.0 - row) / (col + 3.0)
    v = np.exp(-abs(u)) + np.maximum(u, 0.0) * tape.sigmoid(u) - 1.5 / (2 + A * A)
    w = np.minimum(v, row) + np.sqrt(A * A + 1.0) + np.log1p(A * A) + np.expm1(-A * A) + tape.relu(u)
    return (v * w).sum() + (1.0 - col * A).sum() / 7
'''

SUMS = '''
def f(A, w):                         # sums over each axis, all of them, means
    s0 = A.sum(axis=0)
    s1 = np.sum(A * A, axis=1)
    s2 = np.tanh(A).sum(axis=-1)
    m = (A * w).mean(axis=0)
    return (s0 * s0).sum() + np.sum(s1 * s2) + A.mean() + (m * m).sum() * 0.5
'''

MATMUL = '''
def f(A, L, R, v):                   # matmul with data on either side, of two records, with vectors
    B = L @ A
    C = A @ R
    D = np.tanh(A) @ A
    e = A @ v
    g = v @ A
    return (B * B).sum() + (C * 0.1).sum() + np.sum(D) + (e * g).sum() + np.dot(A, np.tanh(A) * 0.5).sum()
'''

MIXED = '''
def f(x, c):                         # scalar Vars meeting arrays: a sum read as a Var, a Var times an array
    s = x.sum()
    y = x * s + s * 0.5
    z = tape.exp(s * 0.001)
    q = (y * c).sum() * z - s * s
    return q + (x * z).mean() + (s - x).sum()
'''

LOOP = '''
def f(u, steps, dt):                 # an elementwise loop: logistic growth with a cubic loss
    for _ in range(steps):
        u = u + dt * (1.0 - u) * u - dt * 0.1 * u * u * u
    return (u * u).sum()
'''

THETA = '''
def f(th, X, y):                     # an MLP of one parameter vector: slices, a reshape, matmuls of views
    W, b, w2 = th[:1024].reshape(32, 32), th[1024:1056], th[1056:]
    r = np.tanh(X @ W + b) @ w2 - y
    return (r * r).mean()
'''

FILTER = '''
def f(u, passes):                    # a 3-tap filter by slicing; negative steps, ints, rows, columns, a transpose
    for _ in range(passes):
        u = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
    A = u[:1024].reshape(32, 32)
    B = A.T[1:4, ::2] * A[2:5, 1::2] + A[-1, 3]
    C = A[::2][:1].reshape(32) * A[5]  # (a row of stride 64 is C order: its length 1)
    return 0.5 * (u * u).sum() + (u[::-3] * u[-1]).sum() + (A[3] * A[:, 5]).sum() + B.sum() + C.sum() + u[7] * A[1, 1]
'''

POWERS = '''
def f(x, w):                         # powers and ops the driver has no row for (NumPy's values, called back)
    a = x ** 2.0 + abs(x) ** 0.5 + 1.5 ** x + x ** 3 - (x * x) ** x
    b = np.sin(x) * np.cos(x[::-1]) + np.arctan2(x, 1.5) + np.hypot(x, w)
    A = x[:1024].reshape(32, 32)
    return (a * w).sum() + b.sum() + (A @ A).sum() * 0.01 + np.exp(x[::2]).sum() + A.T.sum(axis=1).sum()
'''

JOINS = '''
def f(u, steps, c):                  # a periodic heat equation by np.concatenate; joins of 2-d views on either axis
    for _ in range(steps):
        u = u + c * (np.concatenate([u[1:], u[:1]]) + np.concatenate([u[-1:], u[:-1]]) - 2.0 * u)
    A = u[:1024].reshape(32, 32)
    B = np.concatenate((A, A[:3], A[5:9], A[::-1][:2]), axis=0)
    C = np.concatenate([A[:, :4], np.tanh(A[:, 4:])], axis=-1)
    D = np.concatenate([u[:10], u[5:20], u[::-2], u[3:4], u])
    return 0.5 * (u * u).sum() + (B * B).sum() * 0.1 + (C * A).sum() + (D * D).sum() * 0.01
'''

ROLLS = '''
def f(u, w):                         # np.roll (1-d, 2-d along an axis or flattened), np.stack, dots of two vectors
    A = u[:1024].reshape(32, 32)
    r = np.roll(u, 3) + np.roll(u, -5) + np.roll(u, 1500) + np.roll(u[::-1], 7, 0) * np.roll(u, -1, -1)
    B = np.roll(A, 2, axis=1) * np.roll(A, -1, 0) + np.roll(A, 33) - np.roll(A.T, 5, 1)
    S = np.stack((u[:100], u[100:200] * 2.0, u[-100:], u[::-15][:100])) @ w[:100]
    T = np.stack([u[:300:3], np.tanh(u[1:301:3])], axis=1) @ w[:2]
    return np.dot(r, w) + u @ np.tanh(u) + (B * B).sum() + S @ S + T @ u[:100] + u[::2] @ u[1::2] * 0.5
'''

PADS = '''
def f(u, steps, c):                  # np.pad: a periodic heat equation by 'wrap'; every mode, 1-d and 2-d
    for _ in range(steps):
        w = np.pad(u, 1, mode="wrap")
        u = u + c * (w[2:] + w[:-2] - 2.0 * u)
    A = u[:1024].reshape(32, 32)
    p = np.pad(u, (2, 0), "edge")[:1500] + np.pad(u[::-1], (3, 1), "reflect")[4:] + np.pad(u[::2], 375, "symmetric")
    q = np.pad(u, 2) + np.pad(u, (1, 3), constant_values=2.5)[:1504] + np.pad(u, (0, 4), "constant",
                                                                             constant_values=-1.0)
    B = np.pad(A, ((1, 2), (0, 3)), "wrap") * np.pad(A, ((1, 2), (0, 3)), constant_values=((1.0, 2.0), (3.0, 4.0)))
    C = np.pad(A, 2, "edge") + np.pad(A, (2, 2), "reflect") * np.pad(A, ((2, 2),), "symmetric").T + np.pad(A, 2)
    return 0.5 * (u * u).sum() + (p * p).sum() + (q * np.tanh(q)).sum() + (B * B).sum() + (C * C).sum() * 0.1
'''

WHERES = '''
def f(x, w):                         # comparisons and np.where/tape.where; max and min of all elements and along axes
    A, s = x[:1024].reshape(32, 32), x.sum() * 0.001
    r = np.where(x > 0.0, x, 0.1 * x) + np.where(0.5 < x, x * x, w) + tape.where(x <= w, 1.0, x)
    r = r + np.where(np.greater_equal(w, x), np.tanh(x), s) + np.where(s < x, s, x) + np.where(x != x[::-1], x, -x)
    M = np.where(A.T > A, A, A.T) + np.where(A >= w[:32], A, w[:32]) + np.where(w[:1024].reshape(32, 32) > 0, A, 1.0)
    m = np.max(A, axis=0) @ w[:32] + np.min(A, axis=1) @ w[32:64] + A.max(axis=-1).sum() + np.amin(A.T, 0).sum()
    return (r * w).sum() + (M * M).sum() + m + A.max() + x.min() + np.amax(x[::3]) + np.min(x)
'''

COMPOSED = '''
def f(x, w):                         # functions made of other ops: clip, softplus, softmax, square, outer, trace, ...
    A = x[:1024].reshape(32, 32)
    a = np.clip(x, -0.5, 0.8) * w + tape.clip(x * 2.0, -1.0, 1.0) + tape.softplus(x * 3.0) + np.square(x - w)
    a = a + np.reciprocal(x * x + 1.0)
    S = tape.softmax(A, axis=1) * A + tape.log_softmax(A.T, axis=0) * 0.1 + tape.softmax(A) - tape.log_softmax(A, -1)
    O = np.outer(x[:20], w[:30]) + np.outer(np.tanh(x[5:25]), x[:30])
    d = (np.diff(x) * w[1:]).sum() + np.diff(x, 2)[::3].sum() + np.diff(A).sum() * 0.5 + np.diff(A, axis=1)[3].sum()
    t = np.trace(A) + np.trace(A[:7]) * np.linalg.norm(x) + np.trace(A[2:9].reshape(28, 8))
    return (a * a).sum() + (S * S).sum() + (O * O).sum() + d + t + np.linalg.norm(A * w[:32])
'''

SCANS = '''
def f(x, w):                         # cumsum and cumprod along each axis and flattened, sort along each axis, flat
    A = x[:1024].reshape(32, 32)
    c = np.cumsum(x) * w + np.cumprod(1.0 + 0.01 * x) + x.cumsum() * 0.5
    C = np.cumsum(A, axis=0) * A + A.cumsum(1) + np.cumprod(np.tanh(A) * 0.5 + 1.0, axis=-1) + A.cumprod(axis=0) * 0.01
    s = np.sort(x[:60]) * w[:60] + np.sort(np.maximum(x[60:120], 0.0))  # (pieces: central differences of a sort
    S = np.sort(A, axis=0) * A + np.sort(A.T) + np.sort(np.cumsum(A[:6, :8], 1), axis=None).reshape(8, 6)[3, 2]
    return (c * c).sum() * 1e-3 + (C * C).sum() * 1e-3 + (s * w[:60]).sum() + (S * S).sum()  # of 1,500 cross ties)
'''

LINALG = '''
def f(x, B):                         # np.linalg: solve (a vector, matrices, data on either side), inv, det, slogdet,
    A = x[:1024].reshape(32, 32) * 0.1 + np.eye(32) * 2.0   # cholesky; a batched det
    v = np.linalg.solve(A, x[1024:1056]) + np.linalg.solve(B, x[:32] * x[40:72])
    X = np.linalg.solve(A, B) + np.linalg.inv(A.T) * 0.5
    L = np.linalg.cholesky(A @ A.T + np.eye(32))
    sign, logdet = np.linalg.slogdet(A)
    D = np.linalg.det(x[:1024].reshape(4, 16, 16) * 0.2 + np.eye(16))
    return (v * v).sum() + (X * X).sum() * 0.1 + (L * L).sum() + logdet * sign + np.linalg.det(A * 0.5) + (D * D).sum()
'''

HEADS = '''
def f(x, W):                         # multi-head attention (views: transposes of any axes, reshapes that copy or not)
    X = x[:2048].reshape(64, 32)     # 64 tokens, 4 heads of 8
    qkv = X @ W
    q = qkv[:, :32].reshape(64, 4, 8).transpose(1, 0, 2)
    k = np.swapaxes(qkv[:, 32:64].reshape(64, 4, 8), 0, 1)
    v = np.moveaxis(qkv[:, 64:].reshape(64, 4, 8), 1, 0)
    a = tape.softmax(q @ k.transpose((0, 2, 1)) * 0.35, axis=-1)
    o = np.transpose(a @ v, (1, 0, 2)).reshape(64, 32)
    Y = x[:2400].reshape(4, 6, 100)
    z = np.moveaxis(Y, 0, -1).reshape(600, 4)[::6]
    z = z + Y.swapaxes(0, 2).reshape(100, 24)[:, :4] * Y.transpose(2, 1, 0)[:, 0]
    w = Y[:, :, ::2].reshape(24, 50) * Y.reshape(4, 600)[:, :300].reshape(4, 3, 100)[1, :, :50].sum(axis=0)
    t = x[:1024].reshape(32, 32).T.reshape(-1) * x[:1024]
    B = x[:1200].reshape(30, 40).T   # (rolls and pads of a view not in C order: of its copy)
    r = (np.roll(B, 7) * B).sum() + (np.pad(B, 2, "wrap") ** 2).sum() * 0.01 + np.roll(B, 1200).sum()
    return (o * o).sum() + (z * z).sum() * 0.1 + (w * w).sum() + t.sum() + r
'''

AXES = '''
def f(x, w):                         # sums, means, max, min and logsumexp over tuples of axes, keepdims or not
    Y = x[:2400].reshape(4, 6, 100)
    a = (Y.sum(axis=(0, 2)) * w[:6]).sum() + np.sum(Y * Y, axis=(2, 0), keepdims=True).sum()
    a = a + Y.mean(axis=(1, -1)).sum()
    b = np.max(Y, axis=(0, 1)) * w[:100] + tape.logsumexp(Y, axis=(0, 2), keepdims=True).reshape(6)[2]
    c = np.mean(Y[:, ::2], (0, 1), keepdims=True) * Y + Y.min(axis=(1,)).sum() + Y.sum(axis=(0, 1, 2))
    return a + (b * b).sum() + (c * c).sum() + np.sum(Y, -1).sum() + Y.max(axis=(2, 1, 0))
'''

EINSUM = '''
def f(x, M):                         # np.einsum: contractions, batched, outer, sums, transposes, 3 operands, diagonals
    A = x[:1024].reshape(32, 32)
    Q = x[:2048].reshape(2, 4, 32, 8)
    s = np.einsum("bhqd,bhkd->bhqk", Q, Q * 0.5) * 0.1
    t = np.einsum("ij,jk,kl->il", A, A.T, A) * 0.01 + np.einsum("ij,jk", A, M) + np.einsum("ji->ij", A)
    u = np.einsum("i,i->", x, x) + np.einsum("ijk->kj", Q[0]).sum() + np.einsum("i,j->ij", x[:30], x[30:70]).sum()
    d = np.einsum("ii->", A) + (np.einsum("ii->i", A) * x[:32]).sum() + np.einsum("ii,ij->", A, A * 0.1)
    d = d + (np.einsum("iij->ij", x[:2000].reshape(10, 10, 20)) ** 2).sum()
    return (s * s).sum() + (t * t).sum() + u + (np.einsum("ji,jk->ik", M, A[:, :16]) ** 2).sum() + d
'''

NEWAXES = '''
def f(x, w):                         # np.newaxis in indices, np.expand_dims, np.flip, np.hstack and np.vstack (1-d
    A = x[:1200].reshape(30, 40)     # pieces as rows, NumPy arrays among them), np.linalg.norm along an axis
    p = (A[:, None, :] * A[None, :5, :]).sum(axis=2) + A[None].sum() + A[:, 3, None] * A[None, 2, ::-8]
    q = np.expand_dims(A, 1) * np.expand_dims(A[:, 0], -1)[:, None] + np.expand_dims(A[::2], 0).sum()
    r = np.flip(A, 0) * np.flip(A) + np.flip(A[:, ::2], axis=-1).sum()
    h = np.hstack((A, A[:, :3] * 2.0)) + np.hstack((x[:10], w[:5], x[20:30])).sum()
    v = np.vstack((A, np.tanh(A[:2]), w[:80].reshape(2, 40)))
    s = np.vstack((x[:40], x[40:80] * x[80:120], w[:40]))
    n = np.linalg.norm(A, axis=1) @ x[:30] + (np.linalg.norm(A[:, ::3], axis=0, keepdims=True) * A[:, ::3]).sum()
    return (p * p).sum() + (q * q).mean() + (r * r).sum() + (h * h).sum() * 0.1 + (v * v).sum() + (s * s).sum() + n
'''


ARRANGED = '''
def f(x, w):                         # np.tile, np.broadcast_to, np.repeat (views out of C order too), np.diagonal,
    A = x[:1200].reshape(30, 40)     # np.diag both ways, np.trace, np.triu, np.tril (offsets either side) and
    B = w[:1200].reshape(40, 30)     # np.tensordot (an int, pairs of ints or tuples; NumPy arrays either side)
    t = np.tile(A[:, :5], (2, 3)) * np.tile(x[:7], 4).sum() + np.tile(A.T[::3, 1], (2, 1)).sum()
    b = np.broadcast_to(A[0], (6, 40)) * np.broadcast_to(A[:, 2:3], (30, 40))[:6] + np.broadcast_to(A[1], (40,))
    r = np.repeat(A[::2, ::3], 3, axis=0)[::3] * np.repeat(A.T[:2, :7], 2).sum() + np.repeat(A[:15, :7], 2, axis=-1)
    d = np.diagonal(A, 3) * np.diagonal(A.T, -2) + np.diag(B, 1) @ np.diag(A.T[:29, :29])
    D = np.diag(x[:20] * 2.0) + np.diag(x[30:49], 1) + np.diag(x[50:68], -2)
    tr = np.trace(A, 2) + np.trace(A.T, -1) * np.trace(A[::2])
    u = np.triu(A, 1) + np.tril(A, -2) * 0.5 + np.triu(A.T[:30, ::2], -3).sum()
    k = np.tensordot(A, B, 1) + np.tensordot(A, A, axes=((1,), (1,))) * np.tensordot(A, B.T, axes=((0, 1), (0, 1)))
    m = np.tensordot(B[:30], A, axes=(0, 0))
    z = np.zeros_like(A) + np.sin(A) * np.ones_like(A[0]) + np.full_like(A, 0.5)  # (NumPy arrays: constants)
    return ((z * z).sum() + (t * t).sum() + (b * b).sum() + (r * r).sum() + (d * d).sum() + ((D @ A[:20]) ** 2).sum()
            + tr * tr + (u * u).sum() + (k * k).sum() * 1e-3 + (m * m).sum() * 1e-2)
'''


FACTORS = '''
def f(x):                            # np.linalg.eigh (UPLO either, batched), eigvalsh, qr (reduced and 'r'), svd
    A = x[:1024].reshape(32, 32)     # (reduced, values only, a square's full) and svdvals, of symmetric matrices
    S = A + A.T                      # (eigh), in losses no factor's sign changes
    w, V = np.linalg.eigh(S)
    u, U = np.linalg.eigh(S * 0.5, "U")
    W = np.linalg.eigh(x[:1008].reshape(7, 12, 12) + x[:1008].reshape(7, 12, 12).transpose(0, 2, 1))[0]
    Q, R = np.linalg.qr(x[:1200].reshape(40, 30))
    R2 = np.linalg.qr(A[:, :20], "r")
    U1, s, Vh = np.linalg.svd(x[:1200].reshape(40, 30), full_matrices=False)
    s2 = np.linalg.svd(A.T[:20], compute_uv=False)
    U3, s3, V3 = np.linalg.svd(A[:8, :8] + np.eye(8) * 3.0)
    return ((w * w).sum() + (V[:, :4] ** 4).sum() + (u ** 3).sum() + (U[:3] ** 4).sum() + (W * W).sum() * 0.1
            + np.linalg.eigvalsh(S).sum() + (Q[:, :3] ** 4).sum() + (R * R).sum() + (R2 ** 4).sum() * 0.01
            + (s ** 3).sum() + (U1[:, :2] ** 4).sum() + (Vh[:2] ** 4).sum() + s2.sum() + (s3 ** 2).sum()
            + (V3[0] ** 4).sum() + np.linalg.svdvals(A[:6]).sum())
'''


def cases() -> dict:
    """name -> (source, x0, data, which side is xs: its shape)."""
    rng = np.random.default_rng(26)
    return {
        "mlp": (MLP, rng.normal(scale=0.1, size=(64, 64)),
                (rng.normal(size=(32, 64)), rng.normal(size=64), rng.normal(size=64), rng.normal(size=32))),
        "chain": (CHAIN, rng.normal(size=(40, 32)), (rng.normal(size=32), rng.normal(size=(40, 1)))),
        "sums": (SUMS, rng.normal(size=(40, 32)), (rng.normal(size=32),)),
        "matmul": (MATMUL, rng.normal(scale=0.3, size=(36, 36)),
                   (rng.normal(size=(20, 36)), rng.normal(size=(36, 12)), rng.normal(size=36))),
        "mixed": (MIXED, rng.normal(size=2000), (rng.normal(size=2000),)),
        "loop": (LOOP, rng.uniform(0.1, 0.9, size=1500), (20, 0.05)),
        "theta": (THETA, rng.normal(scale=0.2, size=1088), (rng.normal(size=(16, 32)), rng.normal(size=16))),
        "filter": (FILTER, rng.normal(size=1500), (3,)),
        "powers": (POWERS, rng.uniform(0.2, 1.5, size=1200), (rng.normal(size=1200),)),
        "joins": (JOINS, rng.normal(size=1500), (5, 0.2)),
        "rolls": (ROLLS, rng.normal(size=1500), (rng.normal(size=1500),)),
        "pads": (PADS, rng.normal(size=1500), (5, 0.2)),
        "wheres": (WHERES, rng.normal(size=1500), (rng.normal(size=1500),)),
        "composed": (COMPOSED, rng.normal(size=1500), (rng.normal(size=1500),)),
        "scans": (SCANS, rng.normal(size=1500), (rng.normal(size=1500),)),
        "axes": (AXES, rng.normal(size=2500), (rng.normal(size=2500),)),
        "einsum": (EINSUM, rng.normal(size=2400), (rng.normal(size=(32, 32)),)),
        "heads": (HEADS, rng.normal(size=2400), (rng.normal(scale=0.2, size=(32, 96)),)),
        "linalg": (LINALG, rng.normal(size=1100), (rng.normal(scale=0.1, size=(32, 32)) + 2.0 * np.eye(32),)),
        "newaxes": (NEWAXES, rng.normal(size=1500), (rng.normal(size=1500),)),
        "arranged": (ARRANGED, rng.normal(size=1500), (rng.normal(size=1500),)),
        "factors": (FACTORS, rng.normal(size=1500), ()),
    }


def directions(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Three random directions of the input's shape, flat (3, size)."""
    return np.random.default_rng(sum(map(ord, name))).normal(size=(3, int(np.prod(shape))))
