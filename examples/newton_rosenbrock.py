"""Minimize Rosenbrock in 20 variables with a trust-region Newton method.

The function is recorded once; every gradient (F.value_and_grad) and every
Hessian-vector product (F.hvp, forward-over-reverse) is a replay of that tape.

    python examples/newton_rosenbrock.py
"""

import numpy as np
from scipy.optimize import minimize

import tape


def rosenbrock(x):
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))


def main() -> np.ndarray:
    x0 = np.tile([-1.2, 1.0], 10)
    F = tape.trace(rosenbrock, x0)
    result = minimize(F.value_and_grad, x0, jac=True, hessp=F.hvp, method="trust-ncg", options={"gtol": 1e-8})
    print(f"{F}")
    print(f"trust-ncg: {result.message} after {result.nit} iterations, {result.nhev} Hessian-vector products")
    print(f"f = {result.fun:.3e}, max |x - 1| = {np.max(np.abs(result.x - 1.0)):.1e}")
    return result.x


if __name__ == "__main__":
    main()
