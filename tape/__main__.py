"""python -m tape warmup | cache [--clear]: compile the kernels ahead, or show (clear) their cache."""

from __future__ import annotations

import shutil
import sys
import time

import numpy as np

import tape
from tape.kernels import twins
from tape.kernels.compiling import cache_dir
from tape.sweeps import compiled, fused_runs

USAGE = """usage: python -m tape warmup          compile every Numba kernel now (once per environment)
       python -m tape cache [--clear]  where the compiled kernels are cached (and remove them)"""


def warmup() -> None:
    """Call every kernel once on a small tape, so that later first calls load from the cache."""
    twins.ENABLED = False  # the kernels, not their twins
    t = tape.Tape()
    x, y = t.var(0.5), t.var(-1.5)
    z = tape.where(x > 0, x * y, 1.0) + tape.sin(x) ** 2 + tape.log1p(x) + tape.arctan2(x, y)  # grouped ops
    t.gradient(z, [x, y])
    t.forward([x], [0.7])
    t._gradient_and_clear(z.index, np.array([x.index, y.index]))  # tape.jit's value_and_grad (fresh_reverse)
    F = tape.trace(lambda v: [v[0] * tape.exp(v[1]), v[0] - v[1]], [0.5, 0.25])
    G = tape.trace(lambda v: v[0] * tape.exp(v[1]) + tape.log1p(v[0]), [0.5, 0.25])  # a grouped op: hessian
    point, points = np.array([0.5, 0.25]), np.array([[0.5, 0.25], [0.1, 0.2]])
    F(point), G(point), F.vjp(point, [1.0, 2.0]), F.jvp(point, [1.0, 0.0]), G.jvp(point, [1.0, 0.0])
    F.jacobian(point, mode="forward"), F.jacobian(point, mode="reverse"), G.hessian(point), G.gradient(point)
    F.sparse_jacobian(point), G.sparse_hessian(point)  # patterns, colorings, recovery
    F.map(points), F.map_jvp(points, points), F.map_vjp(points, points), G.map_value_and_grad(points)
    H = tape.trace(lambda v: (tape.sin(v) * v[0] + tape.hypot(v, 1.0) + np.logaddexp(v, 0.5)).sum() * tape.exp(v[1])
                   + v[2] * v[3], np.linspace(0.0, 1.0, 2000))  # arrays, scalar records between them (logaddexp's
    # compiled passes: kernels/array_helpers.py)
    H.value_and_grad(np.ones(2000)), H.hvp(np.ones(2000), np.ones(2000)), H.jvp(np.ones(2000), np.ones(2000))
    fused_runs.untwinned()  # the fused kernels, not their NumPy twins
    fused_runs.SHAPED = False  # the generic ones first: a cached shape's own kernels would serve this run instead
    R = tape.trace(lambda v: ((v[1:] - v[:-1] ** 2) ** 2).sum(), np.ones(5000))  # a fused run
    R.value_and_grad(np.ones(5000))
    fused_runs.SHAPED = True
    R.value_and_grad(np.ones(5000))  # its shape's own kernels
    C = tape.trace(lambda v: np.cumprod(v).sum(), np.ones(2000))  # the scans' compiled rules
    C.value_and_grad(np.ones(2000)), C.hvp(np.ones(2000), np.ones(2000)), C.jvp(np.ones(2000), np.ones(2000))
    compiled.warm()  # the compiled sweeps of array records (a Function uses them once they are cached)
    from tape.compiled import warm  # tape.jit's common ops of Var arrays (tape.jit loads lazily)

    warm.warm()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["warmup"]:
        start = time.perf_counter()
        warmup()
        print(f"tape: every kernel compiled or loaded in {time.perf_counter() - start:.1f} s; cache: {cache_dir()}")
        return 0
    if argv[:1] == ["cache"]:
        print(cache_dir())
        if "--clear" in argv[1:]:
            shutil.rmtree(cache_dir(), ignore_errors=True)
            print("removed")
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
