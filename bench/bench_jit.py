"""tape.jit recording vs the Python recorder: ns per record on RK4, a Monte Carlo pricer and a branchy
while loop (interleaved medians); record + one reverse sweep (tape.value_and_grad of the jitted f)
against a replayed F.value_and_grad of the same tape, interleaved; first-call compile time, its
growth with the size of a straight-line function, and a cached load in a fresh process. ``arrays``:
the same for array programs as Numba users write them (RK4 with an array state, an n-body step, a
heat equation), beside the same source as numba.njit on floats (JAX's jit(value_and_grad) of the same
programs: bench/jax_array_programs.py, run by a Python with JAX).

    python bench/bench_jit.py            # everything
    python bench/bench_jit.py arrays     # the array programs only
"""

import functools
import statistics
import subprocess
import sys
import time

import numpy as np

import tape
from tape.bench.jit_arrays import bench_jit_arrays, load, report_jit_arrays
from tape.bench.programs import JIT_PRICER as PRICER
from tape.bench.programs import JIT_RK4 as RK4

WHILE = '''
def f(xs, n):
    x, k = xs[0], xs[1]
    total = 0.0
    for i in range(n):
        y = x + 0.001 * i
        steps = 0
        while y < 2.0 and steps < 50:
            if y * k > 1.0:
                y = y + tape.sin(y) * 0.1
            else:
                y = y * 1.5 + 0.01
            steps += 1
        total = total + y
    return total
'''
PROGRAMS = {"rk4": (RK4, [1.1, 0.4], (20000, 1e-4)),
            "pricer": (PRICER, [100.0, 0.2, 0.05], (np.random.default_rng(1).standard_normal(100000), 100.0)),
            "while": (WHILE, [0.05, 3.0], (20000,))}


def straight_line(statements: int) -> str:
    """f(xs) of that many assignments (one to three ops each), no loop."""
    kinds = ["a = a * b + 0.5", "b = tape.sin(a) - b", "a = a / (b * b + 1.0)", "b = math.exp(-a) + b"]
    body = "".join(f"    {kinds[k % 4]}\n" for k in range(statements))
    return f"def f(xs):\n    a, b = xs[0], xs[1]\n{body}    return a + b\n"


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def record(g, x0, data):
    t = tape.Tape(capacity=1 << 21)
    start = time.perf_counter()
    g(t.vars(x0), *data)
    return time.perf_counter() - start, len(t)


def versus_replay(jf, x0, data, n: int, width: int) -> None:
    """Print record + one reverse sweep (tape.value_and_grad) against a replayed F.value_and_grad, interleaved."""
    vg, F = tape.value_and_grad(jf), tape.trace(jf, x0, data=data)
    vg(x0, *data)
    recorded, replayed = [], []
    for _ in range(7):
        recorded.append(seconds(functools.partial(vg, x0, *data)))
        replayed.append(seconds(functools.partial(F.value_and_grad, x0)))
    r, f = statistics.median(recorded), statistics.median(replayed)
    print(f"{'':{width}s} record + gradient {r / n * 1e9:5.1f} ns/rec, replayed F.value_and_grad "
          f"{f / n * 1e9:5.1f} ns/rec: {r / f:4.2f}x")


def cached_runs(code: str, path: str) -> list[float]:
    """The seconds the script ``code`` prints, in three fresh processes (the first fills the cache)."""
    with open(path, "w") as file:
        file.write(code)
    return [float(subprocess.run([sys.executable, path], capture_output=True, text=True, check=True).stdout)
            for _ in range(3)]


def arrays() -> None:
    """The array programs (tape-bench jit-arrays' rows, at 10^6 records each), and a cache=True reload."""
    print(report_jit_arrays(bench_jit_arrays(10**6, 5, lambda text: None)))
    code = ("import time, numpy as np, tape; t0 = time.perf_counter()\n"
            "@tape.jit(cache=True)\ndef f(xs, steps, r):\n    u = xs.copy()\n    un = np.empty_like(u)\n"
            "    un[0], un[-1] = u[0], u[-1]\n    for _ in range(steps):\n        for i in range(1, len(u) - 1):\n"
            "            un[i] = u[i] + r * (u[i + 1] - 2.0 * u[i] + u[i - 1])\n        u, un = un, u\n"
            "    return u.sum()\n"
            "t = tape.Tape(); f(t.array(np.ones(50)), 10, 0.25); print(time.perf_counter() - t0)")
    runs = cached_runs(code, "/tmp/tape_jit_cached_arrays.py")
    print(f"cache=True (heat, np.empty_like): first process {runs[0]:.2f} s, later processes {min(runs[1:]):.2f} s")


def main() -> None:
    if sys.argv[1:] == ["arrays"]:
        arrays()
        return
    for name, (source, x0, data) in PROGRAMS.items():
        f = load(source)
        jf = tape.jit(f)
        start = time.perf_counter()
        record(jf, x0, data)
        compile_s = time.perf_counter() - start
        py, jt = [], []
        for _ in range(5):
            s, n = record(f, x0, data)
            py.append(s)
            s, n = record(jf, x0, data)
            jt.append(s)
        p, j = statistics.median(py) / n * 1e9, statistics.median(jt) / n * 1e9
        print(f"{name:7s} {n:8d} records  Python {p:7.1f} ns/rec  tape.jit {j:6.1f} ns/rec  "
              f"({p / j:5.1f}x)  first call {compile_s:5.2f} s")
        versus_replay(jf, x0, data, n, 7)
    print("first-call compile of a straight-line f (fresh functions, one process):")
    for statements in (10, 100, 300, 1000):
        jf = tape.jit(load(straight_line(statements)))
        t = tape.Tape()
        s = seconds(lambda jf=jf, t=t: jf(t.vars([0.3, 0.7])))
        print(f"  {statements:5d} statements {len(t):6d} records  {s:6.2f} s  ({s / len(t) * 1e3:5.1f} ms/record)")
    code = ("import time, tape; t0 = time.perf_counter()\n"
            "@tape.jit(cache=True)\ndef f(xs, n):\n    s = 0.0\n    for i in range(n):\n"
            "        s = s + tape.exp(xs[0] * i) * xs[1]\n    return s\n"
            "t = tape.Tape(); f(t.vars([0.001, 2.0]), 10); print(time.perf_counter() - t0)")
    runs = cached_runs(code, "/tmp/tape_jit_cached.py")
    print(f"cache=True: first process {runs[0]:.2f} s, later processes {min(runs[1:]):.2f} s (import excluded)")
    arrays()


if __name__ == "__main__":
    main()
