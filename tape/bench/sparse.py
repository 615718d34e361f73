"""tape-bench's sparse rows: dense vs sparse Jacobian (and Hessian) time, against one gradient's,
and the colors used; n = 10^4 in the default run, any n with `tape-bench sparse --size N` (--sizes).

- banded: the tridiagonal residual r_i = x_{i-1} - 2 x_i + x_{i+1} + 0.1 exp(x_i). Its dense
  Jacobian (800 MB at n = 10^4) is not made: its time is that of 128 of its columns (F.jacobian(x,
  seeds=...), the same forward sweeps, 16 directions each) times n / 128, marked estimated.
- bundle adjustment: residuals of max(20, n / 500) cameras (12 numbers) and n / 20 points (3), 4
  views per point, each 2-row block reading 15 inputs (4000 x 1740 at n = 10^4); the dense Jacobian
  is run up to 2048 inputs, past that 128 of its columns times inputs / 128 likewise.
- banded Hessian: f = sum (x_{i+1} - x_i^2)^2; the dense Hessian is 128 of its Hessian-vector
  products times n / 128, estimated likewise.
Pattern and coloring are made before the timings (they are kept by the Function); their time is
reported apart. The first uses in the process (compile, or load from the cache) of tape.trace's passes, the
sparse Jacobian and the sparse Hessian are paid and timed before the rows, one kind at a time (first_use), so the
rows time them warm, as the other tables do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tape
from tape.bench.timing import timings
from tape.function import arguments, derivatives
from tape.kernels import twins

COLUMNS = 128  # the dense derivative's columns timed, where the whole would not fit
SIZE = 10**4  # n of the default rows; `tape-bench sparse --size N` (or --sizes) sets it
SPARSE_WORKLOADS = {"sparse": (SIZE, "n", 4000)}  # as tape-bench's other tables: default size, unit, bytes per unit


def tridiagonal(x):
    n = len(x)
    return [(x[i - 1] if i else 0.0) - 2.0 * x[i] + (x[i + 1] if i < n - 1 else 0.0) + 0.1 * tape.exp(x[i])
            for i in range(n)]


def banded(x):
    return sum((x[i + 1] - x[i] * x[i]) ** 2 for i in range(len(x) - 1))


def bundle_residuals(cameras: int, observations: list[tuple[int, int]]) -> Callable[[Any], list]:
    """Residuals of a bundle-adjustment shape: each (camera, point) observation gives a 2-row block
    reading the camera's 12 numbers and the point's 3 (inputs: the cameras' numbers, then the points')."""
    def f(x):
        out = []
        for c, p in observations:
            cam = [x[12 * c + q] for q in range(12)]
            X = [x[12 * cameras + 3 * p + q] for q in range(3)]
            Y = [cam[3 * r] * X[0] + cam[3 * r + 1] * X[1] + cam[3 * r + 2] * X[2] for r in range(3)]
            depth = Y[2] + cam[11] * cam[11] + 5.0
            u, v = Y[0] / depth, Y[1] / depth
            radial = cam[9] * (1.0 + cam[10] * (u * u + v * v))  # focal length and distortion
            out += [radial * u, radial * v]
        return out
    return f


def bundle_adjustment(cameras: int, points: int, views: int) -> tuple[tape.Function, np.ndarray]:
    """bundle_residuals traced, each point seen by ``views`` random cameras; and a point to run it at."""
    rng = np.random.default_rng(1)
    obs = [(int(c), p) for p in range(points) for c in rng.choice(cameras, views, replace=False)]
    n = 12 * cameras + 3 * points
    return tape.trace(bundle_residuals(cameras, obs), [0.5] * n), rng.uniform(0.2, 1.0, n)


def _row(F: tape.Function, structure: Callable[[], np.ndarray], sparse: Callable[[], object],
         gradient: Callable[[], object], dense: Callable[[], object], scale: float, repeat: int,
         progress: Callable[[str], None], label: str) -> dict:
    """structure: the Function's colors (pattern and coloring made at its first call, timed here);
    gradient: one reverse sweep (vjp) or value and gradient, the yardstick of the sparse derivative."""
    start = time.perf_counter()
    colors = int(structure().max()) + 1
    made = time.perf_counter() - start
    seconds = {what: float(np.median(timings(fn, repeat, progress, f"sparse: {label}, {what}")))
               for what, fn in (("sparse", sparse), ("gradient", gradient), ("dense", dense))}
    return {"records": len(F), "shape": [F.n_outputs, F.n_inputs], "colors": colors, "pattern_and_coloring_s": made,
            "sparse_s": seconds["sparse"], "gradient_s": seconds["gradient"], "dense_s": seconds["dense"] * scale,
            "dense_estimated": scale != 1.0}


def first_use() -> dict[str, float]:
    """Seconds of each first use in this process (compile, or load from the cache), one kind at a time: tape.trace's
    passes, then a small tape's sparse Jacobian (pattern, coloring, forward sweeps), then its sparse Hessian (pattern,
    star coloring, Hessian-vector products), run by the kernels rather than their twins (a small tape's stand-ins:
    without this, a fresh machine's first banded row timed a 1-2 s compile, not its 2-3 ms)."""
    times = [time.perf_counter()]
    enabled, twins.ENABLED = twins.ENABLED, False
    try:
        small, h = tape.trace(tridiagonal, [0.0] * 4), tape.trace(banded, [0.0] * 4)
        times.append(time.perf_counter())
        small.sparse_jacobian(np.ones(4))
        times.append(time.perf_counter())
        h.sparse_hessian(np.ones(4))
        times.append(time.perf_counter())
    finally:
        twins.ENABLED = enabled
    kinds = ("tape.trace's passes", "sparse Jacobian", "sparse Hessian")
    return dict(zip(kinds, np.diff(times).tolist(), strict=True))


def bench_sparse(repeat: int, progress: Callable[[str], None], n: int = SIZE) -> dict:
    """{row label: figures} for the three workloads above at n (the bundle's points and cameras grow with it);
    first_use first."""
    rows = {}
    x = np.random.default_rng(0).uniform(-1, 1, n)
    columns = min(n, COLUMNS)
    eye = np.eye(n, columns)
    F = tape.trace(tridiagonal, [0.0] * n)
    w = np.ones(n)
    rows[f"banded residual, n = {n:,}, Jacobian"] = _row(
        F, F.jacobian_colors, lambda: F.sparse_jacobian(x), lambda: F.vjp(x, w), lambda: F.jacobian(x, seeds=eye),
        n / columns, repeat, progress, "banded")
    B, y = bundle_adjustment(max(20, n // 500), n // 20, 4)
    wide = B.n_inputs if B.n_inputs <= 16 * COLUMNS else COLUMNS  # the whole dense Jacobian where it is small
    seeds = np.eye(B.n_inputs, wide)
    u = np.ones(B.n_outputs)
    rows[f"bundle adjustment, {B.n_outputs:,} x {B.n_inputs:,}, Jacobian"] = _row(
        B, B.jacobian_colors, lambda: B.sparse_jacobian(y), lambda: B.vjp(y, u), lambda: B.jacobian(y, seeds=seeds),
        B.n_inputs / wide, repeat, progress, "bundle adjustment")
    H = tape.trace(banded, [0.0] * n)
    # the dense columns' second partials (sparse_hessian keeps x's)
    derivatives.at(H, arguments.prepare(H, x, None), second=True)
    rows[f"banded sum of squares, n = {n:,}, Hessian"] = _row(
        H, H.hessian_colors, lambda: H.sparse_hessian(x), lambda: H.value_and_grad(x),
        lambda: derivatives.hessian_columns(H, eye),
        n / columns, repeat, progress, "banded Hessian")
    return rows


def report_sparse(rows: dict, first: dict[str, float]) -> str:
    """The table; ``first``: first_use's seconds."""
    lines = ["\nSparse vs dense derivatives (pattern and coloring made once, kept; median ms; gradient: one vjp,"
             " or value_and_grad for the Hessian):",
             f"  {'':<48}{'records':>10}{'colors':>7}{'structure':>10}{'ns/rec':>9}{'sparse':>9}{'gradient':>9}"
             f"{'/grad':>6}{'dense':>13}{'/sparse':>9}"]
    for label, r in rows.items():
        dense = f"{1e3 * r['dense_s']:.1f}{'*' if r['dense_estimated'] else ''}"
        lines.append(f"  {label:<48}{r['records']:>10,}{r['colors']:>7}{1e3 * r['pattern_and_coloring_s']:>10.1f}"
                     f"{1e9 * r['pattern_and_coloring_s'] / r['records']:>9.1f}{1e3 * r['sparse_s']:>9.2f}"
                     f"{1e3 * r['gradient_s']:>9.2f}{r['sparse_s'] / r['gradient_s']:>5.1f}x{dense:>13}"
                     f"{r['dense_s'] / r['sparse_s']:>8.0f}x")
    lines.append(f"  * estimated: {COLUMNS} of the dense derivative's columns, times n / {COLUMNS}")
    lines.append("  first uses in this process (compile, or load from the cache), before the rows: "
                 + ", ".join(f"{what} {sec:.2f} s" for what, sec in first.items()))
    return "\n".join(lines)
