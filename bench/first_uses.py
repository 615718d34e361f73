"""Issue 28's later first uses: each derivative kind, trace pass, map, save/load... timed at its first call.

Each cell runs in a fresh process: import tape, build the program, take a first gradient (``tape.grad``), then
time one first use (CPU-s of the process, ``time.process_time``, and wall), then the same use again (its
steady cost: the first use's excess over it is what the first use costs). Cold: an empty ``TAPE_CACHE_DIR``;
warm: a second process on the cache the cold one left. Targets (issue 28): <= 5 s cold, <= 0.3 s warm.
Programs: ``small`` (a 20-variable Rosenbrock written with Python floats: the kernels' CPython twins serve it),
``scalar`` (the same in 600 variables, ~5,400 records: past the twins, so the kernels compile or load) and
``array`` (bench/array_programs.py's MLP, 8 x 8, NumPy on VarArrays). Each program defines f (a number), r (a
vector, for Jacobians), x, v (a direction; vt: the same in x's structure), w (a cotangent) and X, V (8 points and
directions, for the maps).
Run: ``python bench/first_uses.py [--only CELL ...] [--programs NAME ...] [--jobs N] [--python PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor

ROSENBROCK = """
n = {n}
def f(x):
    s = 0.0
    for i in range(n - 1):
        s = s + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s
def r(x):
    return [10.0 * (x[i + 1] - x[i] ** 2) for i in range(n - 1)] + [1.0 - x[i] for i in range(n - 1)]
x = [0.5 + 0.5 * i / n for i in range(n)]
v, w = np.linspace(-1.0, 1.0, n), np.linspace(1.0, 2.0, 2 * n - 2)
X = np.linspace(0.4, 0.6, 8 * n).reshape(8, n)
vt = list(v)
V = np.linspace(-1.0, 1.0, 8 * n).reshape(8, n)
def custom(x):
    return f([softer(a) for a in x])
"""
MLP = """
rng = np.random.default_rng(0)
B, W = 8, 8
A, y = rng.normal(size=(B, W)), rng.normal(size=B)
cuts = (W * W, W * W + W)
def r(th):
    W1, b1, w2 = th[:cuts[0]].reshape(W, W), th[cuts[0]:cuts[1]], th[cuts[1]:]
    return np.tanh(A @ W1 + b1) @ w2 - y
def f(th):
    e = r(th)
    return (e * e).mean()
x = rng.normal(scale=0.1, size=cuts[1] + W)
n = x.size
v, w = np.linspace(-1.0, 1.0, n), np.linspace(1.0, 2.0, B)
X = x + np.linspace(0.0, 0.1, 8)[:, None]
vt = v
V = np.linspace(-1.0, 1.0, 8 * n).reshape(8, n)
def custom(th):
    return f(softer(th))
"""
PROGRAMS = {"small": ROSENBROCK.format(n=20), "scalar": ROSENBROCK.format(n=600), "array": MLP}
COMMON = """
import numpy as np
import tape
@tape.custom_vjp
def softer(a):
    return a * 0.5
softer.defvjp(lambda a: (a * 0.5, None), lambda res, g: (g * 0.5,))
"""
# name: (what runs before, untimed, after the first gradient; the first use, timed). "grad" is the first gradient.
USES: dict[str, tuple[str, str]] = {
    "grad": ("", ""),
    "value_and_grad": ("", "tape.value_and_grad(f)(x)"),
    "jvp": ("", "tape.jvp(f, (x,), (vt,))"),
    "vjp": ("", "tape.vjp(r, x)[1](w)"),
    "hessian": ("", "tape.hessian(f)(x)"),
    "jacobian": ("", "tape.jacobian(r)(x)"),
    "grad of grad": ("", "tape.grad(lambda z: tape.grad(f)(z)[1])(x)"),
    "custom_vjp": ("", "tape.grad(custom)(x)"),
    "trace": ("", "tape.trace(f, x)"),
    "trace cse off": ("", "tape.trace(f, x, cse=False)"),
    "trace prune off": ("", "tape.trace(f, x, prune=False)"),
    "trace both off": ("", "tape.trace(f, x, cse=False, prune=False)"),
    "F.value_and_grad": ("F = tape.trace(f, x)", "F.value_and_grad(x)"),
    "F.jvp": ("F = tape.trace(f, x)", "F.jvp(x, v)"),
    "F.vjp": ("R = tape.trace(r, x)", "R.vjp(x, w)"),
    "F.hvp": ("F = tape.trace(f, x)", "F.hvp(x, v)"),
    "F.hessian": ("F = tape.trace(f, x)", "F.hessian(x)"),
    "F.jacobian fwd": ("R = tape.trace(r, x)", "R.jacobian(x, mode='forward')"),
    "F.jacobian rev": ("R = tape.trace(r, x)", "R.jacobian(x, mode='reverse')"),
    "jacobian_sparsity": ("R = tape.trace(r, x)", "R.jacobian_sparsity()"),
    "sparse_jacobian": ("R = tape.trace(r, x)", "R.sparse_jacobian(x)"),
    "hessian_sparsity": ("F = tape.trace(f, x)", "F.hessian_sparsity()"),
    "sparse_hessian": ("F = tape.trace(f, x)", "F.sparse_hessian(x)"),
    "F.map": ("F = tape.trace(f, x)", "F.map(X)"),
    "map_value_and_grad": ("F = tape.trace(f, x)", "F.map_value_and_grad(X)"),
    "map_jvp": ("F = tape.trace(f, x)", "F.map_jvp(X, V)"),
    "map_hvp": ("F = tape.trace(f, x)", "F.map_hvp(X, V)"),
    "save+load": ("F = tape.trace(f, x); F.value_and_grad(x); import io; b = io.BytesIO()",
                  "F.save(b); b.seek(0); tape.load(b).value_and_grad(x)"),
    "pickle": ("F = tape.trace(f, x); F.value_and_grad(x); import pickle",
               "pickle.loads(pickle.dumps(F)).value_and_grad(x)"),
    "grad_function": ("F = tape.trace(f, x)", "F.grad_function()(x)"),
    "grad_function.jacobian": ("F = tape.trace(f, x)", "F.grad_function().jacobian(x)"),
    "jvp_function": ("F = tape.trace(f, x)", "F.jvp_function()(np.concatenate([x, v]))"),
    "linalg solve": ("M = np.eye(n) * 4.0 + np.ones((n, n)) * 0.1",
                     "tape.grad(lambda z: np.linalg.solve(M + np.eye(n) * z, z).sum())(np.asarray(x))"),
    "linalg cho_solve": ("M = np.eye(n) * 4.0 + np.ones((n, n)) * 0.1",
                         "tape.grad(lambda z: tape.linalg.cho_solve(tape.linalg.cho_factor(M + np.eye(n) * z), z)"
                         ".sum())(np.asarray(x))"),
}
CHILD = """
import json, time
s0 = time.process_time()
{common}
{program}
c0, w0 = time.process_time(), time.perf_counter()
{first}
c1, w1 = time.process_time(), time.perf_counter()
{pre}
c2, w2 = time.process_time(), time.perf_counter()
{use}
c3, w3 = time.process_time(), time.perf_counter()
{use}
c4 = time.process_time()
print("RESULT", json.dumps({{"import": c0 - s0, "first_cpu": c1 - c0, "first_wall": w1 - w0,
                             "use_cpu": c3 - c2, "use_wall": w3 - w2, "again_cpu": c4 - c3, "process": c3 - s0}}))
"""


def child(program: str, use: str) -> str:
    """The source of one cell's process."""
    pre, timed = USES[use]
    first = "tape.grad(f)(x)"
    if use == "grad":
        first, timed = "", first
    return CHILD.format(common=COMMON, program=textwrap.dedent(PROGRAMS[program]), first=first, pre=pre, use=timed)


def run(python: str, source: str, cache: str) -> dict[str, float] | str:
    """One fresh process on cache: its figures, or the tail of its error."""
    out = subprocess.run([python, "-c", source], capture_output=True, text=True,
                         env={**os.environ, "TAPE_CACHE_DIR": cache}, cwd=tempfile.gettempdir())
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode or not lines:
        return "FAILED " + (out.stderr.strip().splitlines() or ["?"])[-1][:100]
    return json.loads(lines[-1][7:])


def cell(python: str, program: str, use: str) -> tuple[str, str, dict[str, float] | str, dict[str, float] | str]:
    """A cell cold (empty cache) then warm (the same cache, a second process)."""
    source = child(program, use)
    with tempfile.TemporaryDirectory() as cache:
        cold = run(python, source, cache)
        warm = run(python, source, cache)
    return program, use, cold, warm


def shown(result: dict[str, float] | str, budget: float) -> str:
    if isinstance(result, str):
        return f"{result:>24s}"
    flag = "*" if result["use_cpu"] - result["again_cpu"] > budget else " "
    return (f"{result['use_cpu']:6.2f}{flag}{result['use_wall']:6.2f} {result['again_cpu']:5.2f} "
            f"{result['first_cpu']:5.2f} {result['process']:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", default=list(USES), help="cells (uses) to run")
    parser.add_argument("--programs", nargs="*", default=list(PROGRAMS), choices=list(PROGRAMS))
    parser.add_argument("--jobs", type=int, default=1, help="cells at once (each still cold, then warm)")
    parser.add_argument("--python", default=sys.executable, help="the Python whose tape is measured")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    unknown = set(args.only) - set(USES)
    if unknown:
        parser.error(f"unknown cells {sorted(unknown)}; cells: {list(USES)}")
    print(f"load {os.getloadavg()[0]:.1f}; per cell, cold | warm: use CPU-s (* its excess over"
          " a second call's is over 5 s cold, 0.3 s warm), use wall s, second call CPU-s, first gradient CPU-s,"
          " process CPU-s to the use's end", flush=True)
    rows = []
    with ThreadPoolExecutor(args.jobs) as pool:
        jobs = [pool.submit(cell, args.python, p, u) for p in args.programs for u in args.only
                if not (p != "array" and u.startswith("linalg"))]
        for job in jobs:
            program, use, cold, warm = job.result()
            rows.append({"program": program, "use": use, "cold": cold, "warm": warm})
            print(f"{program:6s} {use:23s} {shown(cold, 5.0)} | {shown(warm, 0.3)}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
