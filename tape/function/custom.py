"""Derivative rules a user gives: tape.custom_vjp and tape.custom_jvp, as JAX's (same shapes).

    f = tape.custom_vjp(f); f.defvjp(fwd, bwd)      fwd(*args) -> (y, res); bwd(res, g) -> a cotangent per arg
    f = tape.custom_jvp(f); f.defjvp(jvp)           jvp(primals, tangents) -> (y, ẏ)

Called on numbers, f is the plain function. Called with a Var or VarArray among its arguments (each
argument one array: a Var, VarArray, number or NumPy array; f's result an array or a number) it is one
call record (kernels/array_ops.py's ``call``, as a Function called on Vars, tape/function/call_records.py):
the record reads a flat view of all the arguments and holds the rules below as its callee, so replay,
maps, reverse and tangent sweeps run the user's functions.

    forward      y = f(*args)
    reverse      custom_vjp: bwd(fwd(*args)[1], g)      custom_jvp: Jᵀ g, the jvp rule linearized (below)
    tangent      custom_jvp: jvp(args, tangents)[1]     custom_vjp: refused, as JAX (define a custom_jvp)
    second order custom_jvp: the linearized rule's Hessian  custom_vjp: refused (bwd has no derivative here)
    save         refused: Python functions are not in a .npz (keep the Function, or pickle it)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tape.errors import TapeError
from tape.function import call_records
from tape.kernels.array_ops import ACONSTANT
from tape.sweeps import driver
from tape.sweeps.driver import Plan

TRACE: list[Callable[..., Any]] = []  # tape.trace, set by tape/api/root.py (a layer above): linearizes jvp rules


def split(flat: Any, shapes: tuple[tuple[int, ...], ...]) -> list[Any]:
    """A flat vector (numbers or a VarArray) cut into arrays of these shapes."""
    ends = np.cumsum([0, *(math.prod(s) for s in shapes)]).tolist()
    return [flat[a:b].reshape(s) for a, b, s in zip(ends[:-1], ends[1:], shapes, strict=True)]


class _Rules:
    """The callee of a custom function's call records for one list of argument shapes (call_records.push)."""

    _callees: tuple = ()  # what call_records._reaches walks
    _recording_now = False
    n_params = 0
    refuses_save = ("a Function holding a call of tape.custom_vjp or tape.custom_jvp cannot be saved: "
                    "its rules are Python functions (keep the Function, or pickle it with importable functions)")

    def __init__(self, owner: _Custom, shapes: tuple[tuple[int, ...], ...], out_shape: tuple[int, ...]):
        self.owner, self.shapes, self.out_shape = owner, shapes, out_shape
        self.n_inputs, self.n_outputs = sum(math.prod(s) for s in shapes), math.prod(out_shape)

    def args(self, flat: np.ndarray) -> list[np.ndarray]:
        return split(flat, self.shapes)

    def flat(self, values: Any, shapes: tuple[tuple[int, ...], ...], what: str) -> np.ndarray:
        """Values (one per shape) as one flat float64 vector, their shapes checked."""
        if len(values) != len(shapes) or any(np.shape(v) != s for v, s in zip(values, shapes, strict=True)):
            raise ValueError(f"{self.owner!r}: {what} gives shapes {[np.shape(v) for v in values]}, expected "
                             f"{list(shapes)}")
        return np.concatenate([np.ravel(np.asarray(v, np.float64)) for v in values]) if values else np.zeros(0)

    def _call_forward(self, s: Any, p: Plan) -> None:
        y = self.owner.fun(*self.args(driver.view(s, s._aval, p.inputs[0])))
        driver.own(s, s._aval, p).reshape(-1)[...] = self.flat([y], (self.out_shape,), "the function")

    def _point(self, s: Any, p: Plan) -> tuple[list[np.ndarray], np.ndarray]:
        """(the arguments, the result) of call record p."""
        return self.args(driver.view(s, s._aval, p.inputs[0])), driver.own(s, s._aval, p).reshape(self.out_shape)

    def _call_reverse(self, s: Any, p: Plan, gen: int, keep: int) -> None:
        g = driver.own(s, s._aadj, p)
        v = p.inputs[0]
        if g.any() and s._op[v.record] != ACONSTANT:  # a zero adjoint sends nothing (the structural-zero rule)
            contribution = self.owner.transpose(self, *self._point(s, p), g.reshape(self.out_shape))
            driver.accumulate(s, v, contribution.reshape(v.shape), gen, keep)

    def _call_tangent(self, s: Any, p: Plan, adot: np.ndarray) -> None:
        tangents = self.args(driver.view(s, adot, p.inputs[0]))
        driver.region(adot, p).reshape(-1)[...] = self.owner.tangent(self, *self._point(s, p), tangents)

    def _call_pattern(self) -> Any:
        """Dense: a user's rule says nothing about which outputs read which inputs."""
        from scipy import sparse  # noqa: PLC0415  scipy.sparse costs tape's import time

        return sparse.csr_matrix(np.ones((self.n_outputs, self.n_inputs)))

    def _call_pairs(self, marked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every pair of inputs where an output is marked (dense, as the pattern)."""
        n = self.n_inputs if np.any(marked) else 0
        return np.repeat(np.arange(n), n), np.tile(np.arange(n), n)

    def _call_derivative(self, h: Any, p: Plan, second: Any, kind: str) -> Any:
        raise NotImplementedError(f"a derivative recorded as records (grad_function, vjp_function, jvp_function, a "
                                  f"transform inside a recorded function) through {self.owner!r} is not supported "
                                  "yet: use the numeric derivatives (F.gradient, F.hessian, F.hvp)")

    def _call_second(self, s: Any, p: Plan, arenas: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        """x' += Jᵀ g, ẋ' += H(g·f) ẋ + Jᵀ ġ (a Function's call record does the same, tape/function/derivatives.py)."""
        adot, aadj, aadj_dot = arenas
        v = p.inputs[0]
        g, gd = (driver.region(arena, p).reshape(self.out_shape) for arena in (aadj, aadj_dot))
        if s._op[v.record] == ACONSTANT or not (g.any() or gd.any()):
            return
        sends = self.owner.second(self, *self._point(s, p), g, gd, self.args(driver.view(s, adot, v)))
        for arena, numbers in zip((aadj, aadj_dot), sends, strict=True):
            target = driver.view(s, arena, v)
            target += numbers.reshape(v.shape)


class _Custom:
    """A function with a user's derivative rule (see the module docstring)."""

    kind = ""

    def __init__(self, fun: Callable[..., Any]):
        self.fun = fun
        self._rules: dict[tuple[tuple[int, ...], ...], _Rules] = {}
        functools.update_wrapper(self, fun)

    def __repr__(self) -> str:
        return f"tape.{self.kind}({getattr(self.fun, '__name__', 'f')})"

    def __reduce__(self) -> str | tuple:
        return getattr(self, "__qualname__")  # noqa: B009  pickled by name, as the module-level function it decorates

    def __call__(self, *args: Any) -> Any:
        if not any(call_records.holds_handles(a) for a in args):
            return self.fun(*args)
        self.check()
        t = call_records._tape_of(list(args))
        shapes = tuple(np.shape(a) for a in args)
        x_view = call_records._input_view(t, list(args), sum(math.prod(s) for s in shapes))
        y = self.fun(*split(driver.view(t, t._aval, x_view), shapes))
        rules = self._rules.get(shapes)
        if rules is None or rules.out_shape != np.shape(y):
            rules = self._rules[shapes] = _Rules(self, shapes, np.shape(y))
        return call_records.push(t, rules, (x_view,), rules.flat([y], (rules.out_shape,), "the function"),
                                 rules.out_shape)

    def check(self) -> None:
        """Raise where the rule is missing."""

    def transpose(self, rules: _Rules, x: list[np.ndarray], y: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Jᵀ g at args x (result y), flat."""
        raise NotImplementedError

    def tangent(self, rules: _Rules, x: list[np.ndarray], y: np.ndarray, tangents: list[np.ndarray]) -> np.ndarray:
        """J ẋ, flat."""
        raise NotImplementedError

    def second(self, rules: _Rules, x: list[np.ndarray], y: np.ndarray, g: np.ndarray, gd: np.ndarray,
               tangents: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(Jᵀ g, H(g·f) ẋ + Jᵀ ġ), flat."""
        raise TapeError(f"second order (hvp, hessian) through {self!r}: a user's derivative rule has no "
                        "derivative of its own here")


class custom_vjp(_Custom):  # noqa: N801  JAX's name
    """f with a reverse-mode rule: ``f.defvjp(fwd, bwd)``, fwd(*args) -> (y, residuals), bwd(residuals, g)
    -> a tuple of one cotangent per argument. Forward mode through it is refused, as in JAX."""

    kind = "custom_vjp"
    fwd: Callable[..., Any] | None = None
    bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        self.fwd, self.bwd = fwd, bwd

    def check(self) -> None:
        if self.fwd is None or self.bwd is None:
            raise TapeError(f"{self!r} called on Vars before its rule was given: call f.defvjp(fwd, bwd)")

    def transpose(self, rules, x, y, g):
        assert self.fwd is not None and self.bwd is not None
        _, residuals = self.fwd(*x)
        cotangents = self.bwd(residuals, g)
        if not isinstance(cotangents, (tuple, list)):
            raise TypeError(f"{self!r}: bwd gives a tuple of one cotangent per argument (as JAX), got "
                            f"{type(cotangents).__name__}")
        return rules.flat(tuple(cotangents), rules.shapes, "bwd")

    def tangent(self, rules, x, y, tangents):
        raise TapeError(f"forward mode (jvp, hvp, hessian) through {self!r}: it has a reverse rule only, as in "
                        "JAX; give a tangent rule with tape.custom_jvp")


class custom_jvp(_Custom):  # noqa: N801  JAX's name
    """f with a forward-mode rule: ``f.defjvp(jvp)`` (usable as a decorator), jvp(primals, tangents) ->
    (y, ẏ). Reverse and second order linearize the rule, as JAX: ẏ traced by tape as a Function of
    (x, ẋ), one reverse sweep of it gives Jᵀ g, its Hessian the second order. A rule tape cannot trace
    (a TypeError: SciPy, a NumPy function tape lacks) falls back to one jvp per input number for the
    reverse and has no second order."""

    kind = "custom_jvp"
    jvp: Callable[..., Any] | None = None

    def __init__(self, fun: Callable[..., Any]):
        super().__init__(fun)
        self._linearized: dict[_Rules, tuple[Any, Any] | TypeError] = {}

    def _linear(self, rules: _Rules, x: list[np.ndarray]) -> tuple[np.ndarray, tuple[Any, Any] | TypeError]:
        """(z = (x, 0), Functions of z = (x, ẋ): ẏ, and g·ẏ with params g; or the TypeError tracing met)."""
        n = rules.n_inputs
        z = np.concatenate([np.ravel(a) for a in x] + [np.zeros(n)])
        found = self._linearized.get(rules)
        if found is None:
            def dot(z: Any) -> Any:
                assert self.jvp is not None
                return np.ravel(self.jvp(tuple(rules.args(z[:n])), tuple(rules.args(z[n:])))[1])
            try:
                found = (TRACE[0](dot, z, on_branch_change="retrace"),
                         TRACE[0](lambda z, g: np.sum(dot(z) * g), z, params=np.zeros(rules.n_outputs),
                                  on_branch_change="retrace"))
            except TypeError as exc:
                found = exc
            self._linearized[rules] = found
        return z, found

    def defjvp(self, jvp: Callable[..., Any]) -> Callable[..., Any]:
        self.jvp = jvp
        return jvp

    def check(self) -> None:
        if self.jvp is None:
            raise TapeError(f"{self!r} called on Vars before its rule was given: call f.defjvp(jvp)")

    def tangent(self, rules, x, y, tangents):
        assert self.jvp is not None
        return rules.flat([self.jvp(tuple(x), tuple(tangents))[1]], (rules.out_shape,), "jvp")

    def transpose(self, rules, x, y, g):
        z, linear = self._linear(rules, x)
        if not isinstance(linear, TypeError):
            return linear[0].vjp(z, g.reshape(-1))[rules.n_inputs:]
        columns = np.eye(rules.n_inputs)
        jacobian = np.stack([self.tangent(rules, x, y, rules.args(e)) for e in columns], axis=1)
        return g.reshape(-1) @ jacobian

    def second(self, rules, x, y, g, gd, tangents):
        """Jᵀ g, and H(g·f) ẋ + Jᵀ ġ: the ẋ-block of (g·ẏ)'s Hessian along (ẋ, 0)."""
        z, linear = self._linear(rules, x)
        if isinstance(linear, TypeError):
            raise TapeError(f"second order through {self!r}: tape could not trace its jvp rule ({linear})")
        n = rules.n_inputs
        along = np.concatenate([np.ravel(t) for t in tangents] + [np.zeros(n)])
        hessian = linear[1].hvp(z, along, params=g.reshape(-1))[n:]
        return linear[0].vjp(z, g.reshape(-1))[n:], hessian + linear[0].vjp(z, gd.reshape(-1))[n:]
