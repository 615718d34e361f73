"""Dead-record elimination: replay of a pruned Function against the program written without its dead
work, and the pass's own time per record.

1. A chain whose outputs need 5% of its records: per step, 2 live records (acc = sin(acc) + x_k)
   and 38 dead ones (a tanh chain from acc that nothing reads); 5,000 steps (200,000 records).
   F(x) and F.value_and_grad(x) of: the pruned Function (the default), the same program traced
   without the dead work ("clean"), and the unpruned one (prune=False).
2. Array records: 20 blocks of array work (a 64 x 64 matmul, tanh, a row sum broadcast back: 6 array
   records each), of which the output reads one (5%, the other 19 are dead, as the vertices of a
   skinned mesh that no output reads); the pruned Function against the program written with that
   block only, and the unpruned one. F(x) and F.value_and_grad(x); the arena before and after its
   compaction, and the passes' time as the Function is made.
3. The passes alone on a Function's arrays at 10^4, 10^5, 10^6 records of the same program: dead-record
   elimination (tape.analyses.prune.prune) and the passes as a Function is made (tape.analyses.prune.run: constant
   folding's marking pass, nothing to fold here, common subexpressions (bench_cse.py), then prune):
   ns per record.

Interleaved medians: each round times every variant once (20 calls in a row for replays, so the one
before does not leave the caches cold), in turn, so drift hits all alike.

    python bench/bench_prune.py [rounds]
"""

import sys

import numpy as np

import tape
from tape.analyses import prune as _prune
from tape.bench.timing import medians as interleaved
from tape.bench.timing import per_record
from tape.function import format as file_format

INPUTS, DEAD = 50, 38
BLOCKS = 20



def chain(steps, dead):
    def f(x):
        acc = x[0]
        for i in range(steps):
            acc = tape.sin(acc) + x[i % INPUTS]
            if dead:
                d = acc
                for _ in range(DEAD):
                    d = tape.tanh(d)
        return acc

    return f


def show(medians):
    for name, seconds in medians.items():
        print(f"  {name:40s} {seconds * 1e3:10.3f} ms")


def against(pruned, clean, whole, x, rounds):
    """F(x) and F.value_and_grad(x) of the pruned Function, interleaved with the clean and unpruned ones."""
    for what, call in (("F(x)", lambda F: F(x)), ("F.value_and_grad(x)", lambda F: F.value_and_grad(x))):
        medians = interleaved({f"{what} {name}": (lambda F=F, call=call: call(F))
                               for name, F in (("pruned", pruned), ("clean", clean), ("unpruned", whole))}, rounds, 20)
        show(medians)
        pruned_s, clean_s = medians[f"{what} pruned"], medians[f"{what} clean"]
        print(f"  pruned / clean: {pruned_s / clean_s:.2f}x (target <= 1.3x); "
              f"unpruned / pruned: {medians[f'{what} unpruned'] / pruned_s:.1f}x")


def replay(rounds):
    steps = 5000
    x0 = [0.1] * INPUTS
    pruned = tape.trace(chain(steps, True), x0)
    clean = tape.trace(chain(steps, False), x0)
    whole = tape.trace(chain(steps, True), x0, prune=False)
    stats = pruned.stats()
    print(f"1. records: recorded {stats['records_recorded']}, kept {stats['records']} "
          f"({stats['records'] / stats['records_recorded']:.1%}); clean program {len(clean)}")
    x = np.random.default_rng(0).uniform(-1, 1, INPUTS)
    for F in (pruned, clean, whole):
        F.value_and_grad(x)
    assert pruned(x) == clean(x) == whole(x)
    against(pruned, clean, whole, x, rounds)


def blocks(count):
    rng = np.random.default_rng(1)
    weights = [rng.normal(size=(64, 64)) / 8.0 for _ in range(BLOCKS)]

    def f(X):
        outputs = []
        for k in range(count):
            Y = np.tanh(X @ weights[k]) * 0.5 + X
            outputs.append((Y * Y.sum(axis=1, keepdims=True)).sum())
        return outputs[0]

    return f


def arrays(rounds):
    x0 = np.random.default_rng(2).uniform(-1, 1, (64, 64))
    pruned = tape.trace(blocks(BLOCKS), x0)
    clean = tape.trace(blocks(1), x0)
    whole = tape.trace(blocks(BLOCKS), x0, prune=False)
    stats = pruned.stats()
    print(f"2. array records: recorded {stats['records_recorded']} records ({len(whole._plans)} array records), kept "
          f"{stats['records']} ({len(pruned._plans)} array records); clean program {len(clean)}")
    a, plans = file_format.arrays(whole), whole._plans
    made = interleaved({"run": lambda: _prune.run(a, None, True, plans, whole._callees),
                        "trace": lambda: tape.trace(blocks(BLOCKS), x0),
                        "trace, prune=False": lambda: tape.trace(blocks(BLOCKS), x0, prune=False)}, rounds)
    print(f"  arena {len(whole._aval)} numbers, compacted to {len(pruned._aval)}; nbytes {whole.nbytes} -> "
          f"{pruned.nbytes}; the passes (tape.analyses.prune.run) {made['run'] * 1e3:.3f} ms; tape.trace "
          f"{made['trace'] * 1e3:.1f} ms ({made['trace, prune=False'] * 1e3:.1f} ms with prune=False)")
    x = np.random.default_rng(3).uniform(-1, 1, x0.shape)
    for F in (pruned, clean, whole):
        F.value_and_grad(x)
    assert pruned(x) == clean(x) == whole(x)
    against(pruned, clean, whole, x, rounds)


def pass_time(rounds):
    print("3. the passes alone: prune (dead records), run (fold + cse + prune)")
    arrays = {}
    for records in (10**4, 10**5, 10**6):
        F = tape.trace(chain(records // (DEAD + 2), True), [0.1] * INPUTS, prune=False)
        arrays[len(F)] = file_format.arrays(F)
    _prune.prune(arrays[min(arrays)], None, [], [])
    per_record(arrays, {"prune": lambda a: _prune.prune(a, None, [], []),
                        "run": lambda a: _prune.run(a, None, True, [], [])}, rounds)


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    replay(rounds)
    arrays(rounds)
    pass_time(rounds)
