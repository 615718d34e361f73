"""var, std and prod of array records inside tape.jit (tape/compiled/array_overloads.py): the Python recorder's
records bit for bit (var and std as tape/arrays/methods.py composes them, prod as elem records and a pairwise
product tree); gradients against hand-derived ones and central differences, at ties, zeros, huge and tiny scales.
(JAX float64's gradients and Hessian-vector products: /work/notes/s23/D/jax_check.py, 1e-13 and below.)"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_jit import run_from_file
from test_jit_array_records import same_tapes

import tape

SOURCE = """
def f(x, which, axis, ddof):
    A = x.reshape(40, 30)
    if which == 0:
        if axis == 9:
            return A.var() + np.var(x, ddof=ddof)
        return (np.var(A, axis=axis, ddof=ddof) * 2.0).sum() + A.var(axis, keepdims=True).sum()
    if which == 1:
        if axis == 9:
            return np.std(A, ddof=ddof) + x[::3].std()
        return A.std(axis, ddof=ddof).sum()
    if axis == 9:
        return A.prod() + np.prod(x[::7]) + A[3].prod()
    return (np.prod(A, axis=axis) * 2.0).sum() + A[:, ::2].T.prod(axis).sum()
"""


@pytest.fixture(scope="module")
def pair():
    f = run_from_file(SOURCE, {"tape": tape, "math": math, "np": np})["f"]
    return f, tape.jit(f, cache=True)


def hand(x, which, axis, ddof):
    """The value and gradient of SOURCE's f by hand (NumPy)."""
    A = x.reshape(40, 30)

    def var_grad(a, ax, dd):  # d/da var(a, ax, ddof) summed: 2 (a - mean) / (n - ddof)
        n = a.size if ax is None else a.shape[ax]
        return 2.0 * (a - a.mean(axis=ax, keepdims=True)) / (n - dd)

    if which == 0 and axis == 9:
        return A.var() + np.var(x, ddof=ddof), (var_grad(A, None, 0).ravel() + var_grad(x, None, ddof))
    if which == 0:
        return (2.0 * np.var(A, axis=axis, ddof=ddof).sum() + A.var(axis).sum(),
                (2.0 * var_grad(A, axis, ddof) + var_grad(A, axis, 0)).ravel())
    if which == 1 and axis == 9:
        g = np.zeros_like(x)
        g[::3] = var_grad(x[::3], None, 0) / (2.0 * x[::3].std())
        return np.std(A, ddof=ddof) + x[::3].std(), var_grad(A, None, ddof).ravel() / (2.0 * np.std(A, ddof=ddof)) + g
    if which == 1:
        s = A.std(axis=axis, ddof=ddof, keepdims=True)
        return A.std(axis=axis, ddof=ddof).sum(), (var_grad(A, axis, ddof) / (2.0 * s)).ravel()
    raise AssertionError("prod: by central differences")


CASES = [(which, axis, ddof) for which in (0, 1) for axis, ddof in ((9, 0), (9, 1), (0, 0), (1, 1), (-1, 0))]


@pytest.mark.parametrize("which, axis, ddof", CASES)
def test_var_and_std_as_python_and_by_hand(pair, which, axis, ddof):
    f, jf = pair
    rng = np.random.default_rng(7)
    for x0 in (rng.normal(size=1200), rng.normal(size=1200) * 1e150, rng.normal(size=1200) * 1e-140):
        same_tapes(f, jf, x0, (which, axis, ddof))
        value, grad = tape.value_and_grad(jf)(x0, which, axis, ddof)
        want_value, want = hand(x0, which, axis, ddof)
        assert np.isclose(value, want_value, rtol=1e-12)
        assert np.allclose(grad, want, rtol=1e-9, atol=1e-12 * np.max(np.abs(want)))


def test_std_of_ties_has_slope_zero(pair):
    """A row of equal elements: var 0, std 0 with slope 0 (tape/arrays/methods.py's std; JAX gives NaN)."""
    f, jf = pair
    x0 = np.random.default_rng(8).normal(size=1200)
    x0[:30] = 2.5  # row 0 of A: ties
    same_tapes(f, jf, x0, (1, 1, 0))
    grad = tape.grad(jf)(x0, 1, 1, 0)
    assert np.all(grad[:30] == 0.0) and np.all(np.isfinite(grad))


@pytest.mark.parametrize("axis", [9, 0, 1, -1])
def test_prod_as_python_and_central_differences(pair, axis):
    f, jf = pair
    rng = np.random.default_rng(9)
    x0 = rng.uniform(0.9, 1.1, size=1200)
    x0[5], x0[31] = 0.0, 0.0  # zero factors (one row of A with one zero, one column with two... of prod(axis=0))
    same_tapes(f, jf, x0, (2, axis, 0))
    grad = tape.grad(jf)(x0, 2, axis, 0)
    k = np.r_[0:40, 5, 31, 35, 600:640]
    steps = (np.eye(1, 1200, j)[0] * 1e-6 for j in k)
    numeric = [(f_np(x0 + e, axis) - f_np(x0 - e, axis)) / 2e-6 for e in steps]
    assert np.allclose(grad[k], numeric, rtol=1e-6, atol=1e-8)


def f_np(x, axis):
    """SOURCE's prod branch on NumPy arrays."""
    A = x.reshape(40, 30)
    if axis == 9:
        return A.prod() + np.prod(x[::7]) + A[3].prod()
    return (np.prod(A, axis=axis) * 2.0).sum() + A[:, ::2].T.prod(axis).sum()
