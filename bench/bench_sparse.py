"""Sparse Jacobians: colors, time against one gradient and the dense Jacobian, pattern cost per record.

1. Tridiagonal residual r_i = x_{i-1} - 2 x_i + x_{i+1} + 0.1 exp(x_i), n = 10^5 (7 records per
   row): colors used; F.sparse_jacobian(x) (pattern and coloring kept from the first call) against
   one gradient: F.vjp(x, w) of the same Function (values, partials, one reverse sweep) and
   G.value_and_grad(x) of 0.5 |r|^2 traced as one scalar.
2. The same at n = 2,000: F.sparse_jacobian against the dense F.jacobian (forward, 16 directions per sweep).
3. Bundle-adjustment shape (each 2-row block reads 15 inputs): colors, sparse vs dense Jacobian.
4. Pattern (index sets) and coloring of the tridiagonal residual at n = 10^4, 10^5, 10^6: ns per record.

Interleaved medians: each round times every variant once, in turn, so drift hits all alike.

    python bench/bench_sparse.py [rounds]
"""

import sys

import numpy as np

import tape
from tape.bench.sparse import bundle_adjustment, tridiagonal
from tape.bench.timing import medians as interleaved
from tape.bench.timing import per_record
from tape.function.sparse_jacobian import coloring, pattern_arrays


def half_square(x):
    r = tridiagonal(x)
    return 0.5 * sum(v * v for v in r)


def show(medians):
    for name, seconds in medians.items():
        print(f"  {name:58s} {seconds * 1e3:10.3f} ms")


def against_gradient(rounds):
    n = 10**5
    x = np.random.default_rng(0).uniform(-1, 1, n)
    F, G = tape.trace(tridiagonal, [0.0] * n), tape.trace(half_square, [0.0] * n)
    w = np.ones(n)
    F.sparse_jacobian(x), F.vjp(x, w), G.value_and_grad(x)
    medians = interleaved({"F.sparse_jacobian(x)": lambda: F.sparse_jacobian(x),
                           "F.vjp(x, w), one reverse sweep of the same Function": lambda: F.vjp(x, w),
                           "G.value_and_grad(x), G = 0.5 |r|^2": lambda: G.value_and_grad(x)}, rounds)
    print(f"tridiagonal, n = {n}: {len(F)} records, {F.jacobian_colors().max() + 1} colors, "
          f"{F.jacobian_sparsity().nnz} nonzeros")
    show(medians)
    sparse, vjp, vg = medians.values()
    print(f"  sparse Jacobian / vjp: {sparse / vjp:.2f}x; / value_and_grad of 0.5 |r|^2 ({len(G)} records): "
          f"{sparse / vg:.2f}x")


def against_dense(name, F, x, rounds):
    J = F.jacobian(x, mode="forward")
    assert np.array_equal(F.sparse_jacobian(x).toarray(), J)
    medians = interleaved({"F.sparse_jacobian(x)": lambda: F.sparse_jacobian(x),
                           "F.jacobian(x), dense, forward": lambda: F.jacobian(x, mode="forward")}, rounds)
    print(f"{name}: {F.n_outputs} x {F.n_inputs}, {len(F)} records, {F.jacobian_colors().max() + 1} colors")
    show(medians)
    print(f"  dense / sparse: {medians['F.jacobian(x), dense, forward'] / medians['F.sparse_jacobian(x)']:.0f}x")




def structure(rounds):
    print("pattern and coloring of the tridiagonal residual (medians; ns per record)")
    cases = {}
    for n in (10**4, 10**5, 10**6):
        F = tape.trace(tridiagonal, [0.0] * n)
        args = (F._op, F._in0, F._in1, F._input_rows, F._output_rows)
        cases[len(F)] = (args, n, *pattern_arrays(*args))
    per_record(cases, {"pattern": lambda c: pattern_arrays(*c[0]), "color": lambda c: coloring(*c[1:])}, rounds)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    against_gradient(rounds)
    n = 2000
    against_dense(f"tridiagonal, n = {n}", tape.trace(tridiagonal, [0.0] * n),
                  np.random.default_rng(2).uniform(-1, 1, n), max(3, rounds // 3))
    against_dense("bundle adjustment, 20 cameras, 500 points, 4 views each", *bundle_adjustment(20, 500, 4),
                  max(3, rounds // 3))
    structure(max(3, rounds // 3))


if __name__ == "__main__":
    main()
