"""tape.custom_root: the derivatives of x*(θ), f(x*, θ) = 0, by the implicit function theorem.

    root = tape.custom_root(f, solve)       f(x, θ) -> residual of x's shape; solve(g, x0) -> x with g(x) ≈ 0
    x = root(theta, x0)                      one call record (tape/function/custom.py); plain numbers: solve's

The solver's iterations are never recorded (scipy.optimize.root, a bisection, anything): only f is
differentiated, traced by tape at (x*, θ). With A = ∂f/∂x and B = ∂f/∂θ at the root:

    tangent      ẋ = -A⁻¹ B θ̇
    reverse      θ' += -Bᵀ u,  Aᵀ u = g
    second       d(-Bᵀ u) = -h_θ + Bᵀ A⁻ᵀ (h_x - ġ),  h = ∇²(u·f) (ẋ, θ̇)   (u held fixed in the Hessian)

Every replay solves again from the x0 given at recording. A solve that ends off the root (max |f| above
``tol``) or at a singular A raises: derivatives there would be wrong without a sign.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tape.api.trace import trace
from tape.errors import TapeError
from tape.function import custom
from tape.function.custom import _Custom, _Rules
from tape.function.function import Function


class _RootCall(_Custom):
    """One root(theta, x0) call's callee: x*(θ) solved from x0."""

    kind = "custom_root"

    def __init__(self, owner: custom_root, x0: np.ndarray):
        self.owner, self.x0 = owner, x0
        self.traced: tuple[Function, Function] | None = None  # f of z = (x, θ) flat; u·f with params u
        super().__init__(self.solve)

    def __reduce__(self) -> tuple:
        return type(self), (self.owner, self.x0)

    def solve(self, theta: np.ndarray) -> np.ndarray:
        x = np.asarray(self.owner.solve(lambda x: self.owner.f(x, theta), self.x0), np.float64)
        if x.shape != self.x0.shape:
            raise ValueError(f"tape.custom_root: solve gave shape {x.shape}, x0 has {self.x0.shape}")
        residual = np.max(np.abs(self.owner.f(x, theta)), initial=0.0)
        if not residual <= self.owner.tol:
            raise TapeError(f"tape.custom_root: the solve ended off the root (max |f(x, θ)| = {residual:.3g} > "
                            f"tol={self.owner.tol}): its derivatives would be wrong")
        return x

    def _functions(self, z: np.ndarray, n: int, theta_shape: tuple[int, ...]) -> tuple[Function, Function]:
        if self.traced is None:
            def f(z: Any) -> Any:
                return self.owner.f(z[:n].reshape(self.x0.shape), z[n:].reshape(theta_shape)).reshape(-1)

            self.traced = (trace(f, z, on_branch_change="retrace"),
                           trace(lambda z, u: np.sum(f(z) * u), z, params=np.zeros(n), on_branch_change="retrace"))
        return self.traced

    def _linear(self, x: list[np.ndarray], y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, Function]:
        """(z, A, B, u·f's Function) at the root."""
        n = y.size
        z = np.concatenate([y.reshape(-1), x[0].reshape(-1)])
        F, weighted = self._functions(z, n, x[0].shape)
        J = np.reshape(F.jacobian(z), (n, z.size))
        return z, J[:, :n], J[:, n:], weighted

    @staticmethod
    def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        try:
            return np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            raise np.linalg.LinAlgError("tape.custom_root: ∂f/∂x is singular at the root, x*(θ) has no "
                                        "derivative there") from None

    def tangent(self, rules: _Rules, x: list[np.ndarray], y: np.ndarray, tangents: list[np.ndarray]) -> np.ndarray:
        _, a, b, _ = self._linear(x, y)
        return -self._solve(a, b @ tangents[0].reshape(-1))

    def transpose(self, rules: _Rules, x: list[np.ndarray], y: np.ndarray, g: np.ndarray) -> np.ndarray:
        _, a, b, _ = self._linear(x, y)
        return -b.T @ self._solve(a.T, g.reshape(-1))

    def second(self, rules, x, y, g, gd, tangents):
        z, a, b, weighted = self._linear(x, y)
        u = self._solve(a.T, g.reshape(-1))
        theta_dot = tangents[0].reshape(-1)
        h = weighted.hvp(z, np.concatenate([-self._solve(a, b @ theta_dot), theta_dot]), params=u)
        n = y.size
        return -b.T @ u, -h[n:] + b.T @ self._solve(a.T, h[:n] - gd.reshape(-1))


custom.TRACE.append(trace)  # custom_jvp linearizes its rule by tracing it


class custom_root:  # noqa: N801  a function maker, named as jax.lax.custom_root
    """``root = tape.custom_root(f, solve)``; ``root(theta, x0)`` is x* with f(x*, θ) = 0, found by
    ``solve(g, x0)`` (any solver: its steps are not recorded), differentiated by the implicit function
    theorem in reverse, tangent and second order. θ and x0 are arrays or numbers; f(x, θ) gives x's shape."""

    def __init__(self, f: Callable[[Any, Any], Any], solve: Callable[[Callable[[Any], Any], Any], Any],
                 tol: float = 1e-8):
        self.f, self.solve, self.tol = f, solve, tol

    def __call__(self, theta: Any, x0: Any) -> Any:
        start = np.array(x0, np.float64)
        call = _RootCall(self, start)
        return call(theta) if math.prod(start.shape) else start
