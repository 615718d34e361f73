"""Issue 29's unclear errors: NumPy scalars as numbers, empty arrays, a Var's 0-d array methods,
tape.jit's refusals, pytree messages and argument checks, tape.where of plain arrays."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import tape

NUMPY_SCALARS = [np.True_, np.False_, np.int64(3), np.int8(-2), np.float32(2.5), np.float64(0.75), np.uint16(4)]
BINARY = {"mul": lambda a, b: a * b, "add": lambda a, b: a + b, "sub": lambda a, b: a - b,
          "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "max": np.maximum, "arctan2": np.arctan2,
          "hypot": np.hypot}


def _central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("c", NUMPY_SCALARS, ids=lambda c: f"{type(c).__name__}({c})")
@pytest.mark.parametrize("name", sorted(BINARY))
def test_numpy_scalars_are_numbers_in_both_orders(name, c):
    op = BINARY[name]
    x0, X0 = 1.5, np.array([0.5, 1.25, 2.0])
    with np.errstate(all="ignore"):
        for value, in_numbers in ((x0, np.float64(x0)), (X0, X0)):  # float64, as tape computes
            for order in (lambda v: op(v, c), lambda v: op(c, v)):
                t = tape.Tape()
                v = t.var(value) if np.ndim(value) == 0 else t.array(value)
                out = order(v)
                expected = order(in_numbers)
                np.testing.assert_allclose(out.value, expected, rtol=1e-15, equal_nan=True)
                if np.ndim(value) == 0 and np.isfinite(expected):
                    assert t.gradient(out, v) == pytest.approx(_central(lambda s: float(order(np.float64(s))), x0), rel=1e-6,
                                                               abs=1e-8)


def test_numpy_bool_does_not_recurse():
    """The RecursionError of Var * np.True_, in a subprocess (a deep recursion could crash it)."""
    code = ("import numpy as np, tape\nt = tape.Tape(); x = t.var(2.0)\n"
            "assert (x * np.True_).value == 2.0 and (np.True_ * x).value == 2.0\n"
            "assert (x + np.False_).value == 2.0 and (np.False_ - x).value == -2.0\nprint('ok')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


@pytest.mark.parametrize("c", NUMPY_SCALARS, ids=lambda c: f"{type(c).__name__}({c})")
def test_numpy_scalars_in_functions_comparisons_and_where(c):
    t = tape.Tape()
    x, X = t.var(1.5), t.array(np.array([0.5, 1.5, 2.5]))
    assert tape.maximum(x, c).value == max(1.5, float(c)) and tape.minimum(c, x).value == min(1.5, float(c))
    assert bool(x > c) == (1.5 > c) and bool(c < x) == (c < 1.5)
    np.testing.assert_array_equal(tape.where(X > c, X, c).value, np.where(X.value > c, X.value, c))
    assert tape.where(x > 1.0, c, x).value == float(c)
    assert tape.exp(c) == pytest.approx(np.exp(float(c)))
    F = tape.trace(lambda v: v * c + c ** 2, 1.0)
    assert F.gradient(1.0) == pytest.approx(float(c))
