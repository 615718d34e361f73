"""Common-subexpression elimination: records kept and replay time of merged Functions (the default)
against the same Functions made with cse=False, and the pass's own time per record.

1. Programs as users write them, traced:
   - decay: a model a * exp(-k * t) summed over 10^4 points, written as a loop (-k at every point);
   - leapfrog: 10^4 steps of a pendulum, each step's first half-kick recomputing the sin(q) of the
     step before (the loop body written once, as one writes it);
   - decay fit: the least-squares loss of a * exp(-k * t) on 10^6-point arrays, the model written
     again in a penalty (array records: the exp and products merge);
   - gradient tape: F.grad_function() of Rosenbrock's function, n = 2,000 (records of the partials).
   F.value_and_grad(x) (the gradient tape: its call) of merged and unmerged, interleaved.
2. The pass alone (tape.analyses.cse.cse) and the three passes as a Function is made (tape.analyses.prune.run: fold,
   merge, prune) on the leapfrog chain's arrays at 10^4 ... 10^6 records: ns per record.

Interleaved medians: each round times every variant once (20 calls in a row for replays), in turn.

    python bench/bench_cse.py [rounds]
"""

import sys

import numpy as np

import tape
from tape.analyses import cse as _cse
from tape.analyses import prune as _prune
from tape.bench.timing import medians as interleaved
from tape.bench.timing import per_record
from tape.function import format as file_format


def decay(points):
    t = np.linspace(0.0, 3.0, points).tolist()

    def f(x):
        a, k = x[0], x[1]
        return sum(a * tape.exp(-k * ti) for ti in t)

    return f, [2.0, 0.7]


def decay_fit(points):
    t = np.linspace(0.0, 3.0, points)
    y = 2.0 * np.exp(-0.7 * t) + 0.01 * np.sin(40.0 * t)

    def f(x):  # the model written again in a penalty, as users do: array records
        a, k = x[0], x[1]
        loss = ((a * np.exp(-k * t) - y) ** 2).sum()
        return loss + 0.1 * (a * np.exp(-k * t)).mean()

    return f, [1.5, 0.5]


def leapfrog(steps):
    def f(x):
        q, p, s = x[0], x[1], x[2]
        for _ in range(steps):
            p = p - 0.05 * tape.sin(q) * s
            q = q + 0.1 * p
            p = p - 0.05 * tape.sin(q) * s
        return q * p

    return f, [0.3, -0.2, 1.1]


def rosenbrock(x):
    return sum(100.0 * (x[i + 1] - x[i] * x[i]) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))


def programs(rounds):
    print("1. records kept and F.value_and_grad(x), merged (default) against cse=False")
    for name, (f, x0) in (("decay, 10^4 points", decay(10**4)), ("leapfrog, 10^4 steps", leapfrog(10**4)),
                          ("decay fit, 10^6-point arrays", decay_fit(10**6))):
        merged, unmerged, x = tape.trace(f, x0), tape.trace(f, x0, cse=False), np.array(x0) * 1.01
        assert merged(x) == unmerged(x)
        times = interleaved({"merged": lambda F=merged, x=x: F.value_and_grad(x),
                             "unmerged": lambda F=unmerged, x=x: F.value_and_grad(x)}, rounds, 20)
        print(f"  {name:28s} records {len(unmerged):>7d} -> {len(merged):>7d} "
              f"({merged.stats()['records_merged']} merged); value_and_grad {times['unmerged'] * 1e3:7.3f} -> "
              f"{times['merged'] * 1e3:7.3f} ms ({times['unmerged'] / times['merged']:.2f}x)")
    F = tape.trace(rosenbrock, np.linspace(-1.0, 1.0, 2000).tolist())  # a list: a scalar record per number
    G = F.grad_function()  # (a gradient tape is merged as it is made)
    print(f"  Rosenbrock n=2000: F {len(F)} records; its grad_function {G.stats()['records_recorded']} -> {len(G)} "
          f"records ({G.stats()['records_merged']} merged, {G.stats()['records_folded']} folded)")


def pass_time(rounds):
    print("2. the pass alone (cse) and fold + cse + prune (run) on the leapfrog chain's arrays")
    arrays = {}
    for records in (10**4, 10**5, 10**6):
        f, x0 = leapfrog(records // 10)
        F = tape.trace(f, x0, prune=False)
        arrays[len(F)] = file_format.arrays(F)
    per_record(arrays, {"cse": lambda a: _cse.cse(a, []), "run": lambda a: _prune.run(a, None, True, [], [])}, rounds)


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    programs(rounds)
    pass_time(rounds)
