"""The compiled sweeps of array records (kernels/array_driver.py, tape/sweeps/compiled.py): a Function's
values and gradients with them equal its NumPy steps' to rounding (Numba's math library against NumPy's
SIMD loops) on every kind they run, broadcasting on either side, views and 0-d constants, beside kinds
they do not run; against central differences; the same bits on every call; and not used before the
kernels are compiled."""

import operator

import numpy as np
import pytest
from reference import central

import tape
from tape.kernels.array_ops import ARRAY_OPS
from tape.records import array_records
from tape.sweeps import compiled

RNG = np.random.default_rng(26)


@pytest.fixture(autouse=True)
def arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def _traced(f, x, on, monkeypatch):
    monkeypatch.setattr(compiled, "ready", lambda s, runs: on)
    return tape.trace(f, x)


def _tables(F) -> int:
    """How many calls of F's sweeps are compiled stretches."""
    return sum(getattr(call, "func", None) in (compiled.forward, compiled.reverse)
               for calls in F._steps.values() if isinstance(calls, list) for call in calls)


def _both(f, x, points, monkeypatch, rtol=1e-13):
    """Values and gradients at points by the compiled sweeps and by NumPy's steps: equal to rtol; the
    compiled ones the same bits at every call. Returns the compiled Function."""
    F, G = _traced(f, x, True, monkeypatch), _traced(f, x, False, monkeypatch)
    for point in points:
        got = []
        for _ in range(2):
            monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
            got.append(F.value_and_grad(point))
        monkeypatch.setattr(compiled, "ready", lambda s, runs: False)
        want = G.value_and_grad(point)
        assert np.array_equal(got[0][0], got[1][0], equal_nan=True)
        assert np.array_equal(got[0][1], got[1][1], equal_nan=True)
        scale = 1.0 + np.max(np.abs(want[1][np.isfinite(want[1])]), initial=0.0)
        np.testing.assert_allclose(got[0][0], want[0], rtol=rtol, atol=rtol, equal_nan=True)
        np.testing.assert_allclose(got[0][1], want[1], rtol=rtol, atol=rtol * scale, equal_nan=True)
    assert _tables(F) > 0
    return F


M, N = 6, 8
BROADCASTS = {  # (a, b) of a binary op over the 96 inputs: broadcasting on either side, views, numbers
    "same": lambda X: (X[:48].reshape(M, N), X[48:][::-1].reshape(M, N)),
    "row": lambda X: (X[:48].reshape(M, N), X[50:50 + N]),
    "column on the left": lambda X: (X[60:60 + M].reshape(M, 1), X[:48].reshape(M, N)),
    "outer": lambda X: (X[:M].reshape(M, 1), X[70:70 + N].reshape(1, N)),
    "transposed": lambda X: (X[:48].reshape(N, M).T, X[::2].reshape(M, N)),
    "number on the right": lambda X: (X[:48].reshape(M, N), 1.75),
    "number on the left": lambda X: (0.6, X[48:].reshape(M, N)),
}
SPELLED = {"neg": operator.neg, "abs": abs, "add": operator.add, "sub": operator.sub, "mul": operator.mul,
           "div": operator.truediv, "pow": operator.pow}
UNARY = {op.name: SPELLED.get(op.name) or getattr(tape, op.name) for op in ARRAY_OPS if op.kind == "unary"}
BINARY = {op.name: SPELLED.get(op.name) or getattr(tape, op.name) for op in ARRAY_OPS
          if op.kind == "binary" and op.name != "mul_nz"}  # (mul_nz: gradient tapes' records only)


def _point(shift=0.0):
    return np.linspace(0.15, 0.95, 2 * M * N) + shift  # every op's domain, except arccosh's (NaN on both sides)


@pytest.mark.parametrize("name", UNARY)
def test_every_unary_op(name, monkeypatch):
    fn = UNARY[name]
    _both(lambda X: (fn(X.reshape(M, 2 * N)[:, ::2] * 1.1) * X[:N]).sum(), _point(), [_point(), _point(0.05)],
          monkeypatch, rtol=1e-12)


@pytest.mark.parametrize("shape", BROADCASTS)
@pytest.mark.parametrize("name", BINARY)
def test_every_binary_op_broadcast(name, shape, monkeypatch):
    fn = BINARY[name]

    def f(X):
        a, b = BROADCASTS[shape](X)
        return (fn(a, b) * X[:M * N].reshape(M, N)).sum()

    _both(f, _point(), [_point(), _point(0.1)], monkeypatch, rtol=1e-12)


PROGRAMS = {  # matmuls (C and Fortran blocks, vectors), sums (full, over an axis, kept), kinds it does not run
    "matmul": lambda X: (X[:24].reshape(4, 6) @ X[24:54].reshape(6, 5)).sum(axis=0) @ X[:5],
    "transposed operands": lambda X: (X[:24].reshape(6, 4).T @ X[24:54].reshape(5, 6).T * X[:20].reshape(4, 5)).sum(),
    "vector times matrix": lambda X: ((X[:6] @ X[6:36].reshape(6, 5)) ** 2).sum() + X[:5] @ X[5:10],
    "sums": lambda X: (X[:60].reshape(3, 4, 5).sum(axis=1) * X[:5]).sum() + X[:60].reshape(3, 20).sum(
        axis=0, keepdims=True).mean() + (X[:60:3] ** 2).sum(),
    "mixed with NumPy's steps": lambda X: (tape.logsumexp(X[:40].reshape(5, 8) * 2.0, axis=1) * np.cumsum(
        X[:5]) + np.concatenate([X[:3], X[10:12]]) * X[:40].reshape(5, 8).max(axis=1)).sum()
    + (np.tanh(X[:48].reshape(6, 8) @ X[:8]) - 0.5).sum(),
    "mlp": lambda X: ((np.tanh(X[:32].reshape(4, 8) @ X[32:96].reshape(8, 8) + X[96:104]) @ X[:8] - 0.3) ** 2).mean(),
}


@pytest.mark.parametrize("program", PROGRAMS)
def test_programs_against_numpy_steps_and_central_differences(program, monkeypatch):
    f = PROGRAMS[program]
    x = RNG.uniform(-1.0, 1.0, 110)
    F = _both(f, x, [x, x[::-1].copy(), np.where(x > 0.5, 0.0, x)], monkeypatch)
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    np.testing.assert_allclose(F.value_and_grad(x)[1], central(lambda v: float(F(v)), x), rtol=1e-6, atol=1e-8)


def test_structural_zeros_and_nans(monkeypatch):
    """A product with a zero factor sends nothing: a where-free sqrt at 0 times 0, an inf times 0."""
    x = np.linspace(0.0, 1.0, 40)
    x[3] = np.inf
    _both(lambda X: (np.sqrt(X) * (X * 0.0) + X * X[::-1]).sum(), x, [x, np.zeros(40)], monkeypatch)


def test_not_before_the_kernels_are_compiled(monkeypatch):
    """With the kernels neither compiled nor cached, a Function runs NumPy's steps until it has spent PAYBACK
    seconds in them (their compile never lands on a first gradient), then the compiled sweeps; a Function with
    nothing for them (every record too large) never asks for them."""
    monkeypatch.setattr(compiled, "_compiled", lambda: False)
    monkeypatch.setattr(compiled, "PAYBACK", 0.05)
    F = tape.trace(PROGRAMS["mlp"], RNG.uniform(-1.0, 1.0, 110))
    x = RNG.uniform(-1.0, 1.0, 110)
    first = F.value_and_grad(x)
    assert _tables(F) == 0
    while F._swept < compiled.PAYBACK:
        F.value_and_grad(x)
    later = [F.value_and_grad(x) for _ in range(3)]
    assert _tables(F) > 0
    np.testing.assert_allclose(first[1], later[-1][1], rtol=1e-13, atol=1e-15)
    big = tape.trace(lambda X: np.sum(np.sin(X) * X), np.ones(compiled.LARGE + 1))
    while getattr(big, "_swept", 0.0) < compiled.PAYBACK:
        big.value_and_grad(np.ones(compiled.LARGE + 1))
    big.value_and_grad(np.ones(compiled.LARGE + 1))
    assert big._driven is False and _tables(big) == 0
