"""tape.gradcheck: a tape's derivatives against central differences, as a report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tape.api.trace import trace
from tape.base.numbers import positive_step, real_array
from tape.function.function import Function


class GradcheckReport(float):
    """The worst relative error of the tape's derivatives against central differences (this
    float), with the details: ``analytic`` and ``numeric`` Jacobians (m, n), ``relative_error``
    per input, ``worst_input``, and ``dot_products``: (w.J u, its difference quotient, relative
    error) for random directions u and output weights w."""

    analytic: np.ndarray
    numeric: np.ndarray
    relative_error: np.ndarray
    worst_input: int
    dot_products: list[tuple[float, float, float]]

    def __str__(self) -> str:
        lines = [f"{'input':>6} {'tape':>16} {'differences':>16} {'rel. error':>11}"]
        for i in range(self.analytic.shape[1]):
            lines.append(f"{i:>6} {self.analytic[0, i]:>16.9g} {self.numeric[0, i]:>16.9g} "
                         f"{self.relative_error[i]:>11.2e}" + ("  <- worst" if i == self.worst_input else ""))
        lines += [f"dot-product test: w.J u = {a:.9g}, differences {n:.9g}, rel. error {e:.2e}"
                  for a, n, e in self.dot_products]
        lines.append(f"worst relative error {float(self):.2e} (input {self.worst_input})")
        return "\n".join(lines)


def gradcheck(f: Function | Callable[..., Any], x: Any, step: float | None = None, floor: float = 1e-8,
              directions: int = 3, seed: int = 0) -> GradcheckReport:
    """Check a Function's (or a function of Vars') derivatives against central differences.

    Each input i moves by h_i = step * max(1, |x_i|) (step defaults to eps**(1/3) ~ 6e-6);
    the error of input i is max over outputs of |tape - fd| / max(|tape|, |fd|, floor).
    ``directions`` random dot-product tests compare w.J u with a difference quotient along u.
    Returns the worst error, as a float that also carries the whole report (``print`` it).
    """
    # f gets what the caller passed, in its structure (as trace gives it); F takes the numbers flat
    F = f if isinstance(f, Function) else trace(f, x, on_branch_change="retrace")
    layout = F._layout
    point = (layout.flat(x, "the point") if layout is not None and layout.structured and not isinstance(x, np.ndarray)
             else real_array(x, "the point").reshape(-1))
    step = np.finfo(float).eps ** (1 / 3) if step is None else positive_step(step, "gradcheck: step")

    def values(p: np.ndarray) -> np.ndarray:
        return np.asarray(F(p), dtype=np.float64).reshape(-1)

    analytic = np.asarray(F.jacobian(point)).reshape(F.n_outputs, F.n_inputs)
    numeric = np.empty_like(analytic)
    for i in range(len(point)):
        h = step * max(1.0, abs(point[i]))
        up, down = point.copy(), point.copy()
        up[i] += h
        down[i] -= h
        numeric[:, i] = (values(up) - values(down)) / (up[i] - down[i])
    relative = _relative_error(analytic, numeric, floor).max(axis=0, initial=0.0)
    rng = np.random.default_rng(seed)
    dots = []
    for _ in range(directions):
        u, w = rng.normal(size=len(point)), rng.normal(size=analytic.shape[0])
        h = step * max(1.0, float(np.abs(point).max(initial=0.0)))
        exact = float(w @ (analytic @ u))
        quotient = float(w @ (values(point + h * u) - values(point - h * u)) / (2 * h))
        dots.append((exact, quotient, float(_relative_error(np.array(exact), np.array(quotient), floor))))
    report = GradcheckReport(float(relative.max(initial=0.0)))
    report.analytic, report.numeric, report.relative_error = analytic, numeric, relative
    report.worst_input = int(np.argmax(relative)) if len(relative) else -1
    report.dot_products = dots
    return report


def _relative_error(analytic: np.ndarray, numeric: np.ndarray, floor: float) -> np.ndarray:
    """|a - n| / max(|a|, |n|, floor): 0 where both are the same number (infinities too), inf where
    either is NaN, so a NaN derivative never passes."""
    with np.errstate(invalid="ignore"):
        error = np.abs(analytic - numeric) / np.maximum(np.maximum(np.abs(analytic), np.abs(numeric)), floor)
    return np.where(analytic == numeric, 0.0, np.where(np.isnan(error), np.inf, error))
