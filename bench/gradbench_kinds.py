"""GradBench's array evals as users write them (bench/user_programs.py's ode, lse and kmeans), timed as GradBench
asks: ode and lse their gradient, kmeans its gradient and its Hessian times ones (the eval's Newton step). Engines:
tape recorded afresh, replayed (``tape.trace`` once) and by tape.jit; HIPS autograd and JAX jit (each from a Python
that has it: ``--python``); NumPy's value alone, the floor. Each engine runs in its own process, alternated over
rounds; every engine's gradient is checked against the hand-derived one first. Medians, ms::

    OPENBLAS_NUM_THREADS=1 python bench/gradbench_kinds.py --python PYTHON   # PYTHON: one with JAX and autograd
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import user_programs  # noqa: E402

CASES = {"ode n=10^4 s=10": ("ode", {"steps": 10}), "ode n=10^4 s=100": ("ode", {}),
         "lse n=1.28e6": ("lse", {}), "kmeans k=10 n=1000 d=8": ("kmeans", {"k": 10, "n": 1000, "d": 8}),
         "kmeans k=100 n=10^4 d=16": ("kmeans", {}), "kmeans k=1000 n=10^4 d=16": ("kmeans", {"k": 1000})}
TAPE = ("tape afresh", "tape replayed", "tape.jit")
OTHERS = ("autograd", "jax", "numpy value")
WARM = 3.0  # seconds of calls before timing (tape compiles a replay's tables after 1 s of NumPy's stand-ins)


def _loop(n: int, body: Any, carry: Any) -> Any:
    for t in range(n):
        carry = body(t, carry)
    return carry


def call(engine: str, name: str, sizes: dict[str, int]) -> tuple[Any, Any]:
    """(a call of the engine's derivative, what its gradient is checked against)."""
    hv = name == "kmeans"
    if engine == "jax":
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        ns = SimpleNamespace(xp=jnp, nn=SimpleNamespace(loop=lambda n, body, c: jax.lax.fori_loop(0, n, body, c)))
    elif engine == "autograd":
        import autograd
        import autograd.numpy as anp
        ns = SimpleNamespace(xp=anp, nn=SimpleNamespace(loop=_loop))
    else:
        import tape
        ns = SimpleNamespace(xp=np, nn=SimpleNamespace(loop=_loop))
    x, f, hand, _ = getattr(user_programs, name)(ns, **sizes)
    v = np.ones_like(x)
    if engine == "numpy value":
        return (lambda: f(x)), None
    if engine == "jax":
        g = jax.jit(jax.grad(f))
        h = jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])
        xj, vj = jnp.asarray(x), jnp.asarray(v)
        return (lambda: (g(xj).block_until_ready(), h(xj, vj).block_until_ready()) if hv
                else g(xj).block_until_ready()), hand(x)[1]
    if engine == "autograd":
        g, h = autograd.grad(f), autograd.hessian_vector_product(f)
        return (lambda: (g(x), h(x, v)) if hv else g(x)), hand(x)[1]
    if engine == "tape replayed":
        F = tape.trace(f, x)
        return (lambda: F.value_grad_hvp(x, v)[1:] if hv else F.value_and_grad(x)[1]), hand(x)[1]
    g = tape.grad(tape.jit(f) if engine == "tape.jit" else f)
    if hv:  # a fresh recording's Hessian product: trace it
        return (lambda: (g(x), tape.trace(f, x).hvp(x, v))), hand(x)[1]
    return (lambda: g(x)), hand(x)[1]


def side(engine: str, label: str) -> dict[str, float]:
    """This process's engine on one case: its first call and the median of later ones (ms)."""
    name, sizes = CASES[label]
    t0 = time.perf_counter()
    run, want = call(engine, name, sizes)
    got = run()
    first = time.perf_counter() - t0
    if want is not None:
        grad = np.asarray(got[0] if name == "kmeans" else got)
        assert np.max(np.abs(grad - want)) <= 1e-8 * max(1.0, float(np.max(np.abs(want)))), (engine, label)
    start = time.perf_counter()
    while time.perf_counter() - start < WARM:
        run()
    seconds = []
    for _ in range(7):
        t0 = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - t0)
    return {"ms": 1e3 * float(np.median(seconds)), "first": 1e3 * first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", help="a Python with JAX and autograd (else those columns are left out)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=list(CASES))
    parser.add_argument("--jax-one-core", action="store_true", help="JAX's process on one CPU (XLA takes two here)")
    parser.add_argument("--side", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        if args.jax_one_core and args.side[0] == "jax":  # (before JAX is imported: its threads start on these CPUs)
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        print(json.dumps(side(*args.side)))
        return
    engines = [(sys.executable, e) for e in (*TAPE, "numpy value")] + \
        ([(args.python, e) for e in OTHERS[:2]] if args.python else [])
    print("ms, medians over rounds (first call, ms); kmeans: gradient and Hessian times ones")
    for label in args.only:
        got: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for exe, engine in engines:
                out = subprocess.run([exe, __file__, "--side", engine, label, *["--jax-one-core"] * args.jax_one_core],
                                     stdout=subprocess.PIPE, text=True, check=True).stdout
                for key, ms in json.loads(out.splitlines()[-1]).items():
                    got.setdefault(f"{engine} {key}", []).append(ms)
        print(f"{label:26s}", "  ".join(f"{engine} {np.median(got[engine + ' ms']):.2f} "
                                         f"({np.median(got[engine + ' first']):.0f})" for _, engine in engines))


if __name__ == "__main__":
    main()
