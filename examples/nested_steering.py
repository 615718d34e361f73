"""Nested derivatives: a charged particle steered by an inner gradient, tuned by an outer one; and a
saddle point min_x max_y by nested gradient descent.

The particle moves down the potential U(p; q) of three fixed charges of strengths q (its force is
-grad_p U: an inner ``tape.grad``, called on Vars, so it is recorded as records). After T steps it
should sit on a target; the outer gradient d loss / d q goes through all T inner gradients, and
gradient descent on q steers the particle there. The outer gradient is checked against central
differences of the inner solver run on numbers.

The saddle: y follows K steps of gradient ascent on f(x, y) (inner grad in y), and x descends
f(x, y_K(x)) with the derivative through the whole inner ascent (outer grad of the inner grads).

    python examples/nested_steering.py
"""

import numpy as np

import tape

CHARGES = np.array([[1.0, 0.0], [-0.5, 0.9], [-0.5, -0.9]])  # positions of the three charges
START, TARGET = np.array([0.1, 0.2]), np.array([0.3, 0.0])
STEPS, RATE = 30, 0.1


def potential(p, q):
    """U(p; q): softened Coulomb terms q_k / r_k and a confining well |p|^2 / 2."""
    u = 0.5 * (p[0] * p[0] + p[1] * p[1])
    for (cx, cy), qk in zip(CHARGES, q, strict=True):
        u = u + qk / tape.sqrt((p[0] - cx) ** 2 + (p[1] - cy) ** 2 + 0.1)
    return u


def final_position(q):
    """T steps of p <- p + RATE * force(p), force = -grad_p U (the inner derivative)."""
    p = [float(START[0]), float(START[1])]
    for _ in range(STEPS):
        force = tape.grad(lambda p: potential(p, q))(p)
        p = [p[0] - RATE * force[0], p[1] - RATE * force[1]]
    return p


def loss(q):
    p = final_position(q)
    return (p[0] - TARGET[0]) ** 2 + (p[1] - TARGET[1]) ** 2 + 1e-3 * sum(qk * qk for qk in q)


def steer(outer_steps=60, rate=0.1):
    """Gradient descent on the charges; returns (losses, q, worst relative error of the first
    outer gradient against central differences of the inner solver on numbers)."""
    q = [0.2, -0.1, 0.3]
    value_and_grad = tape.value_and_grad(loss)
    _, g = value_and_grad(q)
    h = 1e-6
    central = [(loss([*q[:k], q[k] + h, *q[k + 1:]]) - loss([*q[:k], q[k] - h, *q[k + 1:]])) / (2 * h)
               for k in range(3)]
    error = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(g, central, strict=True))
    losses = []
    for _ in range(outer_steps):
        value, g = value_and_grad(q)
        losses.append(value)
        q = [qk - rate * gk for qk, gk in zip(q, g, strict=True)]
    return losses, q, error


def saddle_f(x, y):
    return (x - 1.0) ** 2 - (y - 2.0) ** 2 + 0.5 * x * y  # saddle at x = 8/17, y = 2 + 2/17


def best_response(x, inner_steps=40, rate=0.3):
    """y after K steps of gradient ascent on f(x, .) from 0: each step an inner tape.grad."""
    y = 0.0
    for _ in range(inner_steps):
        y = y + rate * tape.grad(lambda y: saddle_f(x, y))(y)
    return y


def saddle(outer_steps=60, rate=0.4):
    """min_x max_y f by nested gradient descent: x descends f(x, y_K(x)), differentiated through
    the inner ascent. Returns (x, y)."""
    x = 3.0
    outer = tape.grad(lambda x: saddle_f(x, best_response(x)))
    for _ in range(outer_steps):
        x = x - rate * outer(x)
    return x, best_response(x)


def main():
    losses, q, error = steer()
    print(f"steering: loss {losses[0]:.3e} -> {losses[-1]:.3e} in {len(losses)} outer steps, charges "
          f"{np.round(q, 3).tolist()}; outer gradient vs central differences: worst relative error {error:.1e}")
    x, y = saddle()
    print(f"saddle: x = {x:.10f} (8/17 = {8 / 17:.10f}), y = {y:.10f} (2 + 2/17 = {2 + 2 / 17:.10f})")
    return losses, error, (x, y)


if __name__ == "__main__":
    main()
