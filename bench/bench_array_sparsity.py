"""Sparse Jacobians and Hessians of programs written with NumPy arrays (array records).

1. The residual r = u[i+1] - 2 u[i] + u[i-1] + 0.1 exp(u) - 1/n, with concatenate and slices, at
   n = 10^4, 10^5, 10^6: colors; pattern + coloring (made afresh); F.sparse_jacobian(u) (pattern
   kept: one vector-mode sweep) against one value_and_grad of 0.5 |r|^2 traced from the same
   program, against the tridiagonal Jacobian written by hand in NumPy (scipy.sparse.diags), and
   against the compressed columns as one array tangent sweep per color (the way before vector mode).
2. The chained Rosenbrock function with slices at the same sizes: colors, pattern + coloring,
   F.sparse_hessian(x) against one value_and_grad, and against one forward-over-reverse sweep per
   color (before).
3. scipy.optimize.least_squares on the BVP u'' = u^3 + u - 1 (h = ε, zero ends) at n = 10^5, with
   jac=F.sparse_jacobian and with the hand Jacobian: iterations and seconds.

Interleaved medians: each round times every variant once, in turn.

    python bench/bench_array_sparsity.py [rounds]
"""

import sys
import time

import numpy as np
import scipy.optimize
import scipy.sparse

import tape
from tape.bench.timing import medians as interleaved
from tape.function import derivatives, sparse_hessian, sparse_jacobian


def residual(u):
    up, lo = np.concatenate([u[1:], [0.0]]), np.concatenate([[0.0], u[:-1]])
    return up - 2.0 * u + lo + 0.1 * np.exp(u) - 1.0 / u.size


def hand_jacobian(u):
    n = u.size
    return scipy.sparse.diags([np.ones(n - 1), -2.0 + 0.1 * np.exp(u), np.ones(n - 1)], [-1, 0, 1], format="csr")


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def bvp(u):
    up, lo = np.concatenate([u[1:], [0.0]]), np.concatenate([[0.0], u[:-1]])
    return up - 2.0 * u + lo - u ** 3 - u + 1.0


def bvp_jacobian(u):
    n = u.size
    return scipy.sparse.diags([np.ones(n - 1), -3.0 - 3.0 * u * u, np.ones(n - 1)], [-1, 0, 1], format="csr")


def fresh(F, structure, key):
    """The pattern and coloring made afresh; the kept ones put back (what F's next call finds)."""
    kept = F.__dict__.pop(key, None)
    made = structure(F)
    F.__dict__[key] = kept
    return made


def report(label, colors, found, sparse, gradient):
    print(f"{label}: {colors} colors; " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in found.items())
          + f"; sparse / value_and_grad {found[sparse] / found[gradient]:.2f}")


def per_color(F, x, colors, product, second=False):
    """The compressed columns, one array sweep per color: what vector mode replaces."""
    derivatives.at(F, x, second)
    return [product(F, (colors == q).astype(np.float64)) for q in range(colors.max() + 1)]


def jacobian_row(n, rounds):
    u = np.random.default_rng(0).uniform(0.0, 1.0, n)
    F = tape.trace(residual, u)
    G = tape.trace(lambda u: 0.5 * np.sum(residual(u) ** 2), u)
    colors = F.jacobian_colors()
    found = interleaved({
        "pattern + coloring": lambda: fresh(F, sparse_jacobian.structure, "_sparsity"),
        "F.sparse_jacobian(u)": lambda: F.sparse_jacobian(u),
        "G.value_and_grad(u)": lambda: G.value_and_grad(u),
        "hand Jacobian (NumPy)": lambda: hand_jacobian(u),
        "a sweep per color": lambda: per_color(F, u, colors, derivatives.array_jvp)}, rounds)
    report(f"residual n = {n:>8d}", int(F.jacobian_colors().max()) + 1, found, "F.sparse_jacobian(u)",
           "G.value_and_grad(u)")


def hessian_row(n, rounds):
    x = np.random.default_rng(1).uniform(-1.0, 1.0, n)
    F = tape.trace(rosenbrock, x)
    colors = F.hessian_colors()
    found = interleaved({
        "pattern + coloring": lambda: fresh(F, sparse_hessian.hessian_structure, "_hessian_sparsity"),
        "F.sparse_hessian(x)": lambda: F.sparse_hessian(x),
        "F.value_and_grad(x)": lambda: F.value_and_grad(x),
        "an hvp per color": lambda: per_color(F, x, colors, derivatives.array_hvp, second=True)}, rounds)
    report(f"rosenbrock n = {n:>8d}", int(F.hessian_colors().max()) + 1, found, "F.sparse_hessian(x)",
           "F.value_and_grad(x)")


def least_squares():
    n = 10**5
    u0 = np.zeros(n)
    F = tape.trace(bvp, u0)
    for name, jac in (("F.sparse_jacobian", F.sparse_jacobian), ("hand Jacobian", bvp_jacobian)):
        start = time.perf_counter()
        fit = scipy.optimize.least_squares(F, u0, jac=jac, method="trf", tr_solver="lsmr")
        print(f"least_squares BVP n = {n}: jac={name}: {fit.nfev} evaluations, {fit.njev} Jacobians, "
              f"cost {fit.cost:.2e}, {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for n in (10**4, 10**5, 10**6):
        jacobian_row(n, rounds)
    for n in (10**4, 10**5, 10**6):
        hessian_row(n, rounds)
    least_squares()
