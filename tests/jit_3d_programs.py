"""Array programs of three and four axes for tests/test_jit_3d.py, run as tests/jit_array_programs.py's are: by tape.jit
(array records written from Numba), by the Python recorder and by jax.numpy (tests/jit_3d_references.py's stored
references). Each input has 1,024 elements or more (array_records.SMALL), so both recorders write array records."""

from __future__ import annotations

import numpy as np

CONV = '''
def f(P, x, v, t):                   # a 1-d convolution by slicing 3-d data, ReLU, max pooling, a readout
    W, b = P[:, :8], P[:, 8:]
    m = x.shape[2] - 8
    y = b + W[:, :1] * x[:, :, :m]
    for j in range(1, 8):
        y = y + W[:, j:j + 1] * x[:, :, j:j + m]
    h = np.maximum(y, 0.0)
    p = np.maximum(h[:, :, 0::2], h[:, :, 1::2])
    r = p.mean(axis=2) @ v - t
    return 0.5 * (r * r).mean()
'''

CUBE = '''
def f(A, row, col, plane, sheet):    # a 3-d record broadcast against each side, sums over each axis and keepdims
    u = (A * row - col) / (plane + 3.0) + sheet * A
    w = np.tanh(u) + np.exp(-A * A) - np.maximum(u, 0.5) * tape.sigmoid(A)
    s0, s1, s2 = w.sum(axis=0), np.sum(u * u, axis=1), w.sum(axis=-1, keepdims=True)
    k1 = (A * w).mean(axis=1, keepdims=True)
    m = np.max(u, axis=2) + np.min(w, axis=0).sum() + tape.logsumexp(A, axis=1).sum()
    return (s0 * s0).sum() + (s1 * 0.5).sum() + (s2 * w).sum() + (k1 * u).sum() + m.sum() + w.mean() + A.std()
'''

VIEWS = '''
def f(A, c):                         # views of a 3-d record: slices, ints, a transpose, reshapes, reversed sums
    a = A[1:, ::2, 3:-1] * A[:-1, 1::2, 4:]
    b = A[:, 2] * A[:, 5] + A[-1].sum(axis=0) + A[1, :, 5].sum()
    d = A.T * c + A.transpose()
    e = A.reshape(4, 320) * 0.5 + A.ravel()[::4].sum()
    g = A.reshape(2, -1, 16, 20)[1, 1] - A[0] * A[2, 3, 4]
    q = np.where(A > 0.2, A * A, 0.1 * A)
    h = e.reshape(2, 2, 32, 10)
    r = A[::-1, 1:].sum() + np.tanh(A[:, ::-1]).sum(axis=0).sum() + A[::-1].sum(axis=2).sum()
    return (a * a).sum() + b.sum() + (d * d).mean() + (e * e).sum() + g.sum() + q.sum() + (h[:, 1] * h[1, 0]).sum() + r
'''

NORM = '''
def f(X, gamma, beta):               # a per-channel normalisation of (batch, channels, length), then a loss
    mu = X.mean(axis=2, keepdims=True).mean(axis=0, keepdims=True)
    d = X - mu
    var = (d * d).mean(axis=2, keepdims=True).mean(axis=0, keepdims=True)
    y = d / np.sqrt(var + 1e-5) * gamma + beta
    return (np.tanh(y) ** 2).mean()
'''

FOUR = '''
def f(W, x, v):                      # a 2-d record meeting 4-d data: a product summed over the data's axes
    y = W * x + W[:1] * 0.5
    z = np.tanh(y).sum(axis=1).sum(axis=0)
    return (z @ v).sum() + (y * y).mean(axis=3).sum()
'''

BATCHED = '''
def f(A, B, C, D, v, w):             # batched matmul: with data of 2 and 3 axes, 1-d on either side, 4-d batches
    y = np.tanh(A @ B) + A[:, :, :12] @ A[:, :12, :] @ C
    z = (A @ v) * (w @ A).sum(axis=1, keepdims=True)
    u = A.reshape(2, 4, 12, 16) @ D
    return (y * y).sum() + z.sum() + (u * u).mean() + (A[0] @ A[1].T).sum()
'''

JOINS = '''
def f(A, w):                         # np.stack of 1-, 2- and 3-d records along each axis; np.concatenate of 3-d and 4-d
    M = A[1]                         # ones along each axis, of views in and out of C order, of records and data;
    #                                  np.roll and np.pad's 'constant' of 3-d records
    s = np.stack((M, np.tanh(M), M[::-1] * 2.0))
    t = np.stack([M.T, M.T * M.T], axis=1) + np.stack((M[0], M[3], M[::-1][5]), axis=-1).sum()
    u = np.stack((M, w, A[2, :, ::-1], M * w), axis=-1) + np.concatenate((w, M), axis=1).sum()
    c = np.concatenate((w.reshape(1, 16, 20), A, s, A[1:3] ** 2), axis=0) + np.stack((w, M)).sum(axis=0)
    d = np.concatenate((A[:, :3], np.sin(A[:, 5:9]), A[:, ::-5]), axis=1)
    e = np.concatenate([A, A[:, :, ::-1], A[:, :, :3], A.transpose(0, 2, 1).transpose(0, 2, 1)], axis=-1)
    q = np.stack((A, np.cos(A)), axis=2)
    r = np.concatenate((q, q[:, :, :1] * 0.5, q[::-1]), axis=2)
    r = r + np.stack((A, A * A, A), axis=3).sum(axis=3).reshape(4, 16, 1, 20)
    o = np.roll(A, 3, 2) * np.roll(A[:, ::-1], -1, axis=1) + np.roll(A.transpose(2, 0, 1), 7).transpose(1, 2, 0)
    p = np.pad(A, ((0, 0), (1, 2), (2, 1)), constant_values=0.5) + np.pad(A[::-1], 1)[1:-1, ::2, 1::2].sum()
    return (s * s).sum() + (t * t).sum() + (u * u).mean() + (c * c[::-1]).sum() + (d * d).sum() + (e * e).mean() + \
        (r * r).sum() * 0.1 + (np.stack((s, s[::-1])) * 0.5).sum() + (o * o).sum() + (p * p[::-1]).sum()
'''


ARRANGED = '''
def f(A, w):                         # np.broadcast_to, np.repeat, np.tile, np.triu and np.tensordot of 3-d records
    b = np.broadcast_to(A[1], (3, 16, 20)) * np.broadcast_to(A[:, :1, ::-1], (4, 16, 20))[1:]
    r = np.repeat(A, 2, axis=0)[::2] + np.repeat(A[:, ::-1], 2, axis=1)[:, ::2] + np.repeat(A[:, 2:5], 3).sum()
    c = np.repeat(A.transpose(1, 0, 2), 2, axis=-1)[:, :, ::4]
    t = np.tile(A[0, :3], 2) + np.tile(A[:, 0], (2, 1)).sum()
    u = np.triu(A, 1)[:, :, :16] - np.tril(A.transpose(0, 2, 1)[:, :16], -1).transpose(0, 2, 1)
    k = np.tensordot(A, A, axes=((0, 2), (0, 2))) + np.tensordot(A, w, axes=((1, 2), (0, 1))).sum()
    m = np.tensordot(w, A, axes=((0,), (1,)))
    return (b * b).sum() + (r * r).sum() + (c * c).mean() + (t * t).sum() + (u * u).sum() + (k * k).sum() * 1e-3 + \
        (m * m).sum() * 1e-2
'''


def cases() -> dict:
    """name -> (source, x0, data)."""
    rng = np.random.default_rng(27)
    return {
        "conv": (CONV, rng.normal(scale=0.3, size=(128, 9)),
                 (rng.normal(size=(4, 1, 40)), rng.normal(size=128), rng.normal(size=4))),
        "cube": (CUBE, rng.normal(size=(4, 16, 20)),
                 (rng.normal(size=20), rng.normal(size=(16, 1)), rng.uniform(0.5, 1.5, size=(4, 1, 1)),
                  rng.normal(size=(16, 20)))),
        "views": (VIEWS, rng.normal(size=(4, 16, 20)), (rng.normal(size=4),)),
        "norm": (NORM, rng.normal(size=(8, 16, 12)), (rng.normal(size=(1, 16, 1)), rng.normal(size=(1, 16, 1)))),
        "batched": (BATCHED, rng.normal(scale=0.5, size=(8, 12, 16)),
                    (rng.normal(size=(16, 5)), rng.normal(size=(8, 16, 5)), rng.normal(size=(1, 4, 16, 3)),
                     rng.normal(size=16), rng.normal(size=12))),
        "four": (FOUR, rng.normal(size=(32, 40)), (rng.normal(size=(3, 2, 32, 40)), rng.normal(size=40))),
        "joins": (JOINS, rng.normal(size=(4, 16, 20)), (rng.normal(size=(16, 20)),)),
        "arranged": (ARRANGED, rng.normal(size=(4, 16, 20)), (rng.normal(size=(16, 20)),)),
    }


def directions(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Three random directions of the input's shape, flat (3, size)."""
    return np.random.default_rng(sum(map(ord, name))).normal(size=(3, int(np.prod(shape))))
