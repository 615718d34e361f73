"""Ordinary user code, from the examples of README.md and docs/guide.md: tests/test_typing.py runs mypy on it."""

import numpy as np
from scipy.optimize import minimize

import tape

t = tape.Tape()
w1, x1 = t.var(0.5), t.var(1.2)
L = (tape.sigmoid(w1 * x1 + 0.1) - 1.0) ** 2
g = t.gradient(L, [w1, x1])
L.backward()
slope: float = w1.grad + x1.value
print(t.table(), t.record(0).op, len(t), t.nbytes)

v = t.var(3.0)
y = tape.exp(v) + 2.0
z = 2.0 * v ** 2 - 1 / v + abs(-v) + tape.maximum(v, 0.0) + tape.minimum(1.0, v) + tape.arctan2(v, 2.0)
plain: float = tape.exp(1.0) + tape.sqrt(4.0)
if v > 0:
    z = z * tape.tanh(v)
branchless = tape.where(v > 0, v, 0.1 * v)
print(y.value, z.value, branchless, plain)

X = t.array(np.linspace(-1.0, 1.0, 5))
Y = X[1:] - X[:-1] ** 2
f = (100 * Y**2 + (1 - X[:-1]) ** 2).sum()
rows = np.sin(X) + tape.sigmoid(X) + tape.where(X > 0, X, 0.1 * X)
print(t.gradient(f, X), X.grad, X.value, rows.shape)


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


x0 = np.array([-1.2, 1.0, 0.5])
F = tape.trace(rosenbrock, x0)
value: float = F.value_and_grad(x0)[0]
grad = tape.grad(rosenbrock)(x0)
best = minimize(F.value_and_grad, x0, jac=True, hessp=F.hvp, method="trust-ncg")
J = F.jacobian(x0)
H = F.hessian(x0)
many = F.map_value_and_grad(np.tile(x0, (4, 1)))
print(F(x0), F.gradient(x0), F.jvp(x0, x0), F.vjp(x0, [1.0]), F.hvp(x0, x0), J, H, many, best.x, value, grad)
report = tape.gradcheck(rosenbrock, x0)
print(float(report), report.worst_input, F.n_inputs, F.stats()["records"])
