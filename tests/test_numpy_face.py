"""The NumPy face (issue 12): a Var as a 0-d array wherever NumPy is involved."""

import math
import operator

import numpy as np
import pytest

import tape
from tape import _blocks


@pytest.fixture(params=["array", "scalar"])
def form(request, monkeypatch):
    """Array records for every size, then scalar records for every size."""
    monkeypatch.setattr(_blocks, "SMALL", 1 if request.param == "array" else 10**12)
    return request.param


def central(f, x, h=1e-6):
    x = np.asarray(x, float)
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        g.flat[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


T = np.linspace(0.0, 2.0, 40)


def decay_fit(p):
    """The issue's first line: a scalar Var with a NumPy array."""
    a, k = p
    return ((a * np.exp(-k * T) - 2.0 * np.exp(-0.5 * T)) ** 2).sum()


def test_a_scalar_var_with_an_ndarray_differentiates(form):
    p = np.array([1.3, 0.7])
    value, grad = tape.value_and_grad(decay_fit)(p)
    r = p[0] * np.exp(-p[1] * T) - 2.0 * np.exp(-0.5 * T)
    assert value == pytest.approx(float((r * r).sum()), rel=1e-14)
    by_hand = [float((2 * r * np.exp(-p[1] * T)).sum()), float((2 * r * p[0] * -T * np.exp(-p[1] * T)).sum())]
    np.testing.assert_allclose(grad, by_hand, rtol=1e-12)
    np.testing.assert_allclose(grad, central(decay_fit, p), rtol=1e-7)
    F = tape.trace(decay_fit, p)  # replayed at another point
    q = np.array([0.4, 2.0])
    np.testing.assert_allclose(F.gradient(q), central(decay_fit, q), rtol=1e-7)


def test_a_reduction_to_one_element_keeps_working_in_array_code(form):
    def f(x):
        s = x.sum()
        return np.exp(s * 0.1) + s.sum().sum() + np.sum(s) * np.mean(s) + np.sqrt(np.abs(s)).prod()

    x = np.linspace(-1.0, 2.0, 6)
    value, grad = tape.value_and_grad(f)(x)
    s = x.sum()
    assert value == pytest.approx(math.exp(0.1 * s) + s + s * s + math.sqrt(abs(s)), rel=1e-14)
    np.testing.assert_allclose(grad, central(f, x), rtol=1e-7)


def test_a_var_is_0_d():
    x = tape.Tape().var(1.5)
    assert (x.shape, x.ndim, x.size) == ((), 0, 1) and np.shape(x) == () and np.ndim(x) == 0
    with pytest.raises(ValueError, match="0-d"):
        x.sum(axis=0)


ZERO_D = [0.75, 2, np.float64(-1.25), np.array(0.5)]  # what NumPy counts as 0-d, beside a Var
BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.power, np.maximum, np.minimum]


@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("other", ZERO_D, ids=lambda c: type(c).__name__)
@pytest.mark.parametrize("var_first", [True, False])
def test_numpy_binary_ufuncs_on_a_var_and_a_0_d_number_give_a_var(ufunc, other, var_first):
    a = 1.7
    t = tape.Tape()
    x = t.var(a)
    y = ufunc(x, other) if var_first else ufunc(other, x)
    assert type(y) is tape.Var
    with np.errstate(invalid="ignore"):
        expected = ufunc(a, float(other)) if var_first else ufunc(float(other), a)
    if math.isnan(expected):  # a negative number to a fractional power
        assert math.isnan(y.value)
        return
    assert y.value == expected
    fd = central(lambda v: ufunc(v[0], float(other)) if var_first else ufunc(float(other), v[0]), [a])
    assert t.gradient(y, x) == pytest.approx(fd[0], rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "negative", "absolute"])
def test_numpy_unary_ufuncs_on_a_var_give_the_tape_functions_record(name):
    a = 0.6
    t = tape.Tape()
    x = t.var(a)
    y = getattr(np, name)(x)
    assert type(y) is tape.Var and y.value == pytest.approx(getattr(np, name)(a), rel=4e-16)  # the C library's
    fd = central(lambda v: getattr(np, name)(v[0]), [a])
    assert t.gradient(y, x) == pytest.approx(fd[0], rel=1e-7)


@pytest.mark.parametrize("compare", [np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal],
                         ids=lambda u: u.__name__)
def test_numpy_comparisons_of_a_var_are_checked_conditions(compare):
    x = tape.Tape().var(1.0)
    c = compare(x, np.float64(1.0))
    assert isinstance(c, tape.Condition) and bool(c) == bool(compare(1.0, 1.0))


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize("spell", ["operator", "ufunc"])
@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
def test_a_var_with_an_ndarray_on_either_side_broadcasts(form, shape, spell, ufunc):
    arr = np.random.default_rng(1).uniform(0.5, 2.0, shape)
    ops = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
           np.true_divide: operator.truediv, np.power: operator.pow}
    apply = ops[ufunc] if spell == "operator" and ufunc in ops else ufunc

    def f(v):
        a = v[0]
        return (apply(a, arr) * 1.5 + apply(arr, a)).sum()

    x = np.array([1.3])
    value, grad = tape.value_and_grad(f)(x)
    assert value == pytest.approx(float((ufunc(1.3, arr) * 1.5 + ufunc(arr, 1.3)).sum()), rel=1e-13)
    np.testing.assert_allclose(grad, central(f, x), rtol=1e-7)


def test_a_var_with_an_ndarray_gives_a_vararray_of_its_shape():
    t = tape.Tape()
    x = t.var(2.0)
    for y in (x * np.ones((2, 3)), np.ones((2, 3)) * x, np.exp(x * np.ones(4)), np.maximum(x, np.zeros(5))):
        assert isinstance(y, tape.VarArray)
    assert (np.ones((2, 3)) - x).shape == (2, 3)
