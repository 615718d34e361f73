"""Every Numba kernel tape compiles: its cold compile (CPU-s) and its cached load, and the totals by first use.

Each first use (USES) runs in a fresh process on an empty ``TAPE_CACHE_DIR`` (cold), then in a second process on
the cache the first left (warm). A listener of Numba's compile events times each kernel's compile (a wrapper each C
function's: the array driver's kernels, stretch kernels), with what it compiles into itself (the op table's helpers,
NumPy's overloads: Numba compiles each once per process, into the first kernel that calls it); a wrapper of Numba's
cache load times each kernel's load. A process's first compile also pays Numba's set-up (its typing and target
registries, 0.3-0.4 CPU-s), its first load the runtime's.
``warmup`` (``python -m tape warmup``: every kernel of the package, one process) gives the per-kernel table; the
other uses give each first use's total: the use's CPU-s and wall, and the kernels it compiled or loaded.
Run: ``python bench/compile_times.py [--uses NAME ...] [--python PATH] [--json FILE]`` (about 3 min on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

LISTEN = """
import json, time
from numba.core import caching, event
from numba.core.ccallback import CFunc

compiles, loads, stack, phase = [], [], [], ["setup"]


def clock():
    return time.process_time(), time.perf_counter()


class Compiles(event.Listener):
    def on_start(self, ev):
        stack.append((ev.data["dispatcher"].py_func, clock()))

    def on_end(self, ev):
        f, (c, w) = stack.pop()
        c1, w1 = clock()
        if not stack:  # what it compiled into itself is counted in it
            compiles.append((f"{f.__module__}.{f.__qualname__}", c1 - c, w1 - w, phase[0]))


event.register("numba:compile", Compiles())
c0, w0 = clock()
import numpy as np
import tape

_load = caching.Cache.load_overload  # tape's own load (kernels/compiling.py), timed


def load_overload(self, sig, target_context):
    c, w = clock()
    loaded = _load(self, sig, target_context)
    c1, w1 = clock()
    if loaded is not None:  # (a miss: a compile follows)
        loads.append((f"{self._py_func.__module__}.{self._py_func.__qualname__}", c1 - c, w1 - w, phase[0]))
    return loaded


caching.Cache.load_overload = load_overload
_cfunc = CFunc.compile  # a C function's (the array driver's kernels, stretch kernels): compiled or loaded, timed


def cfunc_compile(self):
    n, (c, w) = len(loads), clock()
    stack.append((self._pyfunc, (c, w)))  # (the kernels it compiles into itself are counted in it)
    try:
        return _cfunc(self)
    finally:
        stack.pop()
        c1, w1 = clock()
        if len(loads) == n and not stack:
            compiles.append((f"{self._pyfunc.__module__}.{self._pyfunc.__qualname__}", c1 - c, w1 - w, phase[0]))


CFunc.compile = cfunc_compile
c1, w1 = clock()
"""
USE = """
c2, w2 = clock()
phase[0] = "use"
"""
DONE = """
c3, w3 = clock()
print("RESULT", json.dumps({"import_cpu": c1 - c0, "setup_cpu": c2 - c1, "use_cpu": c3 - c2, "use_wall": w3 - w2,
                            "compiles": compiles, "loads": loads}))
"""
SCALAR = """
n = 600
def f(x):
    s = 0.0
    for i in range(n - 1):
        s = s + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s
x = [0.5 + 0.5 * i / n for i in range(n)]
"""
TRACED = SCALAR + "F = tape.trace(f, x)\n"
USES = {  # name: (what runs first, untimed: the program; the first use, timed), as a user writes them
    "README first gradient": ("", """
t = tape.Tape()
w, x = t.var(0.5), t.var(1.2)
L = (tape.sigmoid(w * x + 0.1) - 1.0) ** 2
t.gradient(L, [w, x])
"""),
    "array program 10^6": ("", """
F = tape.trace(lambda X: (100 * (X[1:] - X[:-1] ** 2) ** 2 + (1 - X[:-1]) ** 2).sum(), np.zeros(10**6))
F.value_and_grad(np.linspace(-1.0, 1.0, 10**6))
"""),
    "tape.trace's passes, 5,400 records": (SCALAR, "F = tape.trace(f, x)\n"),
    "value_and_grad, 5,400 records": (TRACED, "F.value_and_grad(x)\n"),
    "hvp, 5,400 records": (TRACED, "F.hvp(x, np.linspace(-1.0, 1.0, n))\n"),
    "maps, 5,400 records x 8 points": (TRACED, "F.map_value_and_grad(np.linspace(0.4, 0.6, 8 * n).reshape(8, n))\n"),
    "sparse Jacobian, n = 10^4": ("from tape.bench.sparse import tridiagonal as r\nF = tape.trace(r, [0.0] * 10**4)\n",
                                  "F.sparse_jacobian(np.linspace(-1.0, 1.0, 10**4))\n"),
    "sparse Hessian, n = 10^4": ("from tape.bench.sparse import banded\nF = tape.trace(banded, [0.0] * 10**4)\n",
                                 "F.sparse_hessian(np.linspace(-1.0, 1.0, 10**4))\n"),
    "tape-bench sparse warm-up": ("from tape.bench.sparse import first_use\n", "first_use()\n"),
    "tape.jit n-body, 2 steps": ("from tape.bench.jit_arrays import JIT_ARRAYS, load\n"
                                 "source, x0, data = JIT_ARRAYS['nbody']\n",
                                 "tape.value_and_grad(tape.jit(load(source)))(x0, *data(2))\n"),
    "warmup": ("from tape.__main__ import warmup\n", "warmup()\n"),
}


def run(python: str, use: str, cache: str) -> dict:
    """One fresh process on ``cache``: its figures (or a SystemExit with its error)."""
    source = LISTEN + USES[use][0] + USE + USES[use][1] + DONE
    out = subprocess.run([python, "-c", source], capture_output=True, text=True,
                         env={**os.environ, "TAPE_CACHE_DIR": cache}, cwd=tempfile.gettempdir())
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode or not lines:
        raise SystemExit(f"{use}: {out.stderr[-2000:]}")
    return json.loads(lines[-1][7:])


def by_kernel(rows: list, phase: str | None = None) -> dict[str, list[float]]:
    """{kernel: [CPU-s, wall s, count]} of the rows of ``phase`` (else all; closures and generated kernels share a
    name: summed)."""
    total: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for name, cpu, wall, at in rows:
        if phase in (None, at):
            t = total[name]
            t[0], t[1], t[2] = t[0] + cpu, t[1] + wall, t[2] + 1
    return dict(total)


def short(name: str) -> str:
    return name.removeprefix("tape.").removeprefix("kernels.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uses", nargs="*", default=list(USES), choices=list(USES), metavar="USE",
                        help=f"of {list(USES)}")
    parser.add_argument("--python", default=sys.executable, help="the Python whose tape is measured")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}; each use in a fresh process after its program (untimed), cold (an empty "
          "cache): CPU-s, wall s, kernels compiled and their CPU-s; warm (the cache it left): CPU-s, wall s, kernels "
          "loaded and their CPU-s", flush=True)
    figures = {}
    for use in args.uses:
        with tempfile.TemporaryDirectory() as cache:
            figures[use] = cold, warm = run(args.python, use, cache), run(args.python, use, cache)
        compiled, loaded = by_kernel(cold["compiles"], "use"), by_kernel(warm["loads"], "use")
        print(f"{use:36s} cold {cold['use_cpu']:6.3f} {cold['use_wall']:6.2f} s {len(compiled):3d} "
              f"{sum(v[0] for v in compiled.values()):6.2f} | warm {warm['use_cpu']:5.3f} {warm['use_wall']:5.2f} s "
              f"{len(loaded):3d} {sum(v[0] for v in loaded.values()):5.2f} | "
              + ", ".join(f"{short(k)} {v[0]:.2f}" for k, v in sorted(compiled.items(), key=lambda kv: -kv[1][0])),
              flush=True)
    if "warmup" in figures:
        cold, warm = figures["warmup"]
        compiled, loaded = by_kernel(cold["compiles"]), by_kernel(warm["loads"])
        print("\nwarmup's kernels, by cold compile (CPU-s with what each compiles into itself, wall s) | cached load "
              "(CPU-s)")
        for name, (cpu, wall, count) in sorted(compiled.items(), key=lambda kv: -kv[1][0]):
            load = loaded.get(name, [0.0, 0.0, 0])
            print(f"  {short(name):60s}{f' x{count}' if count > 1 else '':>5} {cpu:6.2f} {wall:6.2f} | {load[0]:.3f}")
        print(f"  {len(compiled)} kernels: {sum(v[0] for v in compiled.values()):.1f} CPU-s to compile, "
              f"{sum(v[0] for v in loaded.values()):.2f} CPU-s to load; warmup cold {cold['use_cpu']:.1f} CPU-s "
              f"{cold['use_wall']:.1f} s, warm {warm['use_cpu']:.2f} CPU-s {warm['use_wall']:.2f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(figures, fh, indent=1)


if __name__ == "__main__":
    main()
