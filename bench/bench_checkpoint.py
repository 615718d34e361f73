"""Checkpointing a long loop: one RK4 step recorded once as a Function and called N times on Vars
(one call record and two elem records per step), or 100 steps recorded as one Function called N/100
times, against the same loop recorded inline (42 records per step). Each run is a fresh process (its
memory growth is its own); the modes alternate, and the value and gradient of every run must be equal
bit for bit.

    python bench/bench_checkpoint.py [N] [repeats]        # defaults: 10^6 steps, 1 run per mode

Per mode: records, t.nbytes (record arrays and arenas, allocated), the process's resident memory
growth while recording (the tape plus every Python object it keeps: a call record's plan is about
400 bytes of Python objects), and the seconds to record, to sweep the gradient (t.gradient) and to
replay forward (t.forward) on the live tape.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

RUN = r'''
import json, os, sys, time
import numpy as np
import tape

def f(y):  # van der Pol, mu = 1
    return [y[1], (1.0 - y[0] * y[0]) * y[1] - y[0]]

def rk4(y, h=0.001):
    k1 = f(y)
    k2 = f([y[i] + 0.5 * h * k1[i] for i in range(2)])
    k3 = f([y[i] + 0.5 * h * k2[i] for i in range(2)])
    k4 = f([y[i] + h * k3[i] for i in range(2)])
    return [y[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) for i in range(2)]

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def steps(y, k):
    for _ in range(k):
        y = rk4(y)
    return y

k, n = int(sys.argv[1]), int(sys.argv[2])  # k steps per call (0: inline)
F = tape.trace(lambda y: steps(y, k), np.array([2.0, 0.0])) if k else None
step = F if k else rk4
n = n // k if k else n
warm = tape.Tape(); w = warm.vars([2.0, 0.0]); u = step(step(w))  # compiled kernels loaded
warm.gradient(u[0] * u[1], w); warm.forward(w, [2.0, 0.0])
del warm, w, u
t = tape.Tape()
x = t.vars([2.0, 0.0])
before = rss()
t0 = time.perf_counter()
y = x
for _ in range(n):
    y = step(y)
L = y[0] * y[1]
t1 = time.perf_counter()
grown = rss() - before
g = t.gradient(L, x)
t2 = time.perf_counter()
t.forward(x, [2.0, 0.0])
t3 = time.perf_counter()
print(json.dumps({"records": len(t), "nbytes": t.nbytes, "rss": grown, "step_F_nbytes": F.nbytes if k else 0,
                  "record_s": t1 - t0, "gradient_s": t2 - t1, "forward_s": t3 - t2,
                  "value": L.value.hex(), "grad": [v.hex() for v in g.tolist()]}))
'''


MODES = {"inline": 0, "every step": 1, "every 100": 100}  # steps per call record


def run(mode: str, n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", RUN, str(MODES[mode]), str(n)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**6
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for _ in range(repeats):  # interleaved
        for mode in runs:
            runs[mode].append(run(mode, n))
    results = [r for rs in runs.values() for r in rs]
    same = all((r["value"], r["grad"]) == (results[0]["value"], results[0]["grad"]) for r in results)
    print(f"{n} RK4 steps of van der Pol (2 states); medians of {repeats} run(s) per mode, interleaved")
    print(f"value and gradient equal bit for bit in every run: {same}")
    print(f"{'mode':14}{'records':>12}{'t.nbytes MB':>13}{'RSS growth MB':>15}{'record s':>10}{'gradient s':>12}"
          f"{'forward s':>11}")
    for mode, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("records", "nbytes", "rss", "record_s",
                                                               "gradient_s", "forward_s")}
        print(f"{mode:14}{med['records']:>12,.0f}{med['nbytes'] / 1e6:>13.1f}{med['rss'] / 1e6:>15.1f}"
              f"{med['record_s']:>10.2f}{med['gradient_s']:>12.2f}{med['forward_s']:>11.2f}")
    print(f"the called Functions: {runs['every step'][0]['step_F_nbytes']} bytes (one step), "
          f"{runs['every 100'][0]['step_F_nbytes']} bytes (100 steps)")
    if not same:
        raise SystemExit("the checkpointed loop differs from the inline one")


if __name__ == "__main__":
    main()
