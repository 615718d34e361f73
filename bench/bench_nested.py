"""Nested derivatives: time per nested solve, and H v by the dedicated sweep vs the gradient tape.

1. The steering problem of examples/nested_steering.py (30 steps, each an inner gradient): the
   inner solver on numbers (each inner tape.grad numeric), the outer value and gradient with the
   inner gradients recorded as records (record + one reverse sweep), and the same outer gradient
   by replaying the traced nested program (tape.trace of the loss: F.value_and_grad).
   The saddle point's outer step likewise (40 inner gradient-ascent steps).
2. H v of one program: F.hvp (the dedicated forward-over-reverse sweep over stored partials) vs
   the gradient-tape route, F.grad_function().jvp_function() replayed (an ordinary replay of a
   tape holding the forward, the reverse sweep and its tangents as records); ns per record of F.

Interleaved medians: each round times every variant once, in turn, so drift hits all alike.

    python bench/bench_nested.py [rounds]
"""

import runpy
import sys
import time
from pathlib import Path

import numpy as np

import tape
from tape.bench.timing import medians as interleaved

ROOT = Path(__file__).resolve().parent.parent



def steering(rounds):
    example = runpy.run_path(str(ROOT / "examples" / "nested_steering.py"))
    loss, q = example["loss"], [0.2, -0.1, 0.3]
    value_and_grad = tape.value_and_grad(loss)
    F = tape.trace(loss, q)
    np.testing.assert_allclose(F.value_and_grad(q)[1], value_and_grad(q)[1], rtol=1e-12)
    medians = interleaved({
        "inner solver on numbers (30 numeric inner gradients)": lambda: loss(q),
        "outer value_and_grad, inner gradients recorded": lambda: value_and_grad(q),
        "traced nested program, F.value_and_grad (replay)": lambda: F.value_and_grad(q),
    }, rounds, 3)
    print(f"steering, {example['STEPS']} inner steps; traced tape: {len(F)} records")
    for name, seconds in medians.items():
        print(f"  {name:55s} {seconds * 1e3:9.3f} ms")
    print(f"  replay: {medians['traced nested program, F.value_and_grad (replay)'] / len(F) * 1e9:.1f} ns/record")


def saddle(rounds):
    example = runpy.run_path(str(ROOT / "examples" / "nested_steering.py"))
    f, best_response = example["saddle_f"], example["best_response"]
    outer = tape.grad(lambda x: f(x, best_response(x)))
    F = tape.trace(lambda x: f(x[0], best_response(x[0])), [3.0])
    medians = interleaved({
        "best response on numbers (40 numeric inner gradients)": lambda: best_response(3.0),
        "outer gradient through the 40 inner gradients": lambda: outer(3.0),
        "traced, F.value_and_grad (replay)": lambda: F.value_and_grad([3.0]),
    }, rounds, 3)
    print(f"saddle, one outer step; traced tape: {len(F)} records")
    for name, seconds in medians.items():
        print(f"  {name:55s} {seconds * 1e3:9.3f} ms")


def rosenbrock(x):
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))


def hvp(rounds, n=2000):
    rng = np.random.default_rng(0)
    x, v = rng.normal(size=n), rng.normal(size=n)
    F = tape.trace(rosenbrock, x.tolist())
    start = time.perf_counter()
    J = F.grad_function().jvp_function()
    built = time.perf_counter() - start
    np.testing.assert_allclose(J((x, v)), F.hvp(x, v), rtol=1e-12)
    point = np.concatenate([x, v])
    medians = interleaved({"F.hvp": lambda: F.hvp(x, v), "jvp of grad_function": lambda: J(point)}, rounds, 20)
    print(f"H v of rosenbrock, n = {n}: F {len(F)} records, the gradient tape's jvp {len(J)} records "
          f"(built once in {built * 1e3:.0f} ms)")
    for name, seconds in medians.items():
        print(f"  {name:25s} {seconds * 1e6:9.1f} us  {seconds / len(F) * 1e9:6.1f} ns per record of F")
    print(f"  jvp of grad_function per record of its own tape: {medians['jvp of grad_function'] / len(J) * 1e9:.1f} ns")


def main(rounds=7):
    tape.Tape().var(1.0)  # kernels loaded before timing
    steering(rounds)
    saddle(rounds)
    hvp(rounds)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
