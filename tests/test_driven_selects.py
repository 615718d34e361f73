"""np.where and comparisons in the compiled sweeps (tape/sweeps/encoding.py's _selected: two SELECT rows a select, each
its condition and one branch; a comparison an elementwise row that sends nothing): values and gradients are NumPy's
steps' bit for bit on every layout of condition and branches (broadcast, strided, transposed, one number, a constant,
both branches one record, a branch that is part of its region or read again later) and of a comparison's operands, at
edge values (NaN and infinities in the branch not taken never reach the gradient; NaN compares false, -0.0 equal to
0.0); broadcast branches past BROADCAST stay NumPy's steps; and the gradients equal the hand-written np.where
rule's."""

import operator

import numpy as np
import pytest
from test_array_driver import EDGES, RNG, S, _both, _driven, arrays  # noqa: F401 (arrays: the fixture)
from test_array_driver import LAYOUTS as OPERANDS

import tape
from tape.sweeps import encoding
from tape.sweeps.compiled import kernels

W = RNG.normal(size=96)
MASK = RNG.uniform(size=48).reshape(S) > 0.5
LAYOUTS = {  # name: (c, a, b) of X, 96 elements; a and b of the output's shape S or broadcast to it
    "alike": lambda X: (X[:48].reshape(S) > 0.2, X[:48].reshape(S) * 2.0, X[48:].reshape(S)),
    "a condition broadcast along rows": lambda X: (X[50:58] > 0.0, X[:48].reshape(S) * 2.0, X[48:].reshape(S)),
    "a condition of a column": lambda X: (X[:6].reshape(2, 3, 1) < 0.5, np.tanh(X[:48]).reshape(S),
                                          X[48:].reshape(S)),
    "a NumPy mask": lambda X: (MASK, X[:48].reshape(S), X[48:].reshape(S) * X[:48].reshape(S)),
    "a constant number (a clip)": lambda X: (X[:48].reshape(S) > 0.8, 0.8, X[:48].reshape(S)),
    "a record read by all": lambda X: (X[:48].reshape(S) > 0.0, X[:48].reshape(S), X[7] * 3.0),
    "a row broadcast, summed back": lambda X: (X[:48].reshape(S) > X[48:].reshape(S), X[50:58] * 1.5,
                                               X[48:].reshape(S)),
    "a column broadcast, summed back": lambda X: (X[48:].reshape(S) < 0.3, X[:48].reshape(S),
                                                  X[:6].reshape(2, 3, 1) * 2.0),
    "transposed and strided": lambda X: (X[:48].reshape(8, 3, 2).T > 0.1, X[::2].reshape(S),
                                         (X * 1.5).reshape(8, 3, 4)[:, :, ::2].T),
    "one record both branches": lambda X: (X[:48].reshape(S) > 0.5, *(X[48:].reshape(S) * 0.5,) * 2),
    "part of its region": lambda X: (X[:48].reshape(S) > 0.0, (X * 1.5)[:48].reshape(S),
                                     (X * 0.5)[48:].reshape(S)),
}


def _program(layout, again=False):
    def f(X):
        c, a, b = LAYOUTS[layout](X)
        y = np.where(c, a, b)
        out = (y * W[:48].reshape(S)).sum()
        if again:  # (the branches read again after the select: their adjoints are this pass's before it sends)
            out = out + (np.broadcast_to(a, S) * np.broadcast_to(b, S)).sum()
        return out
    return f


def _points():
    x = RNG.uniform(-1.5, 1.5, 96)
    return [x, np.resize(EDGES, 96), np.resize(EDGES[::-1], 96), np.where(x > 0.5, 0.0, -0.0),
            np.where(x > 1.0, np.inf, x), np.where(x > 0.9, np.nan, x), x * 1e300]


@pytest.mark.parametrize("again", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_selects_as_numpys_steps(layout, again, monkeypatch):
    F = _both(_program(layout, again), _points()[0], _points(), monkeypatch)
    assert _driven(F, kernels.SELECT)


def test_broadcast_branches_past_broadcast_stay_numpys(monkeypatch):
    monkeypatch.setattr(encoding, "BROADCAST", 16)
    F = _both(_program("a row broadcast, summed back"), _points()[0], _points(), monkeypatch)
    assert not _driven(F, kernels.SELECT)
    F = _both(_program("a constant number (a clip)"), _points()[0], _points(), monkeypatch)  # (nothing summed back)
    assert _driven(F, kernels.SELECT)


def test_a_huber_loss_against_its_hand_gradient(monkeypatch):
    """Branches of the condition's record (a Huber loss), a leaky activation, a clip: the np.where rules by hand."""
    A, y = RNG.normal(size=4000), RNG.normal(size=4000) * 2.0

    def f(w):
        r = w * A - y
        huber = np.where(np.abs(r) < 1.0, 0.5 * r * r, np.abs(r) - 0.5)
        act = np.where(w > 0.0, w, 0.1 * w)
        return huber.sum() + (act * act).sum() + (np.where(r > 2.0, 2.0, r) * w).sum()

    w = RNG.normal(size=4000)
    r = w * A - y
    clipped = np.where(r > 2.0, 2.0, r)
    act = np.where(w > 0.0, w, 0.1 * w)
    by_hand = ((np.where(np.abs(r) < 1.0, r, np.sign(r)) + np.where(r > 2.0, 0.0, w)) * A
               + 2.0 * act * np.where(w > 0.0, 1.0, 0.1) + clipped)
    F = _both(f, w, [w, w * 3.0], monkeypatch)
    assert _driven(F, kernels.SELECT)
    np.testing.assert_allclose(F.value_and_grad(w)[1], by_hand, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(tape.value_and_grad(tape.jit(f))(w)[1], by_hand, rtol=1e-13, atol=1e-13)


def test_a_loop_of_selects_keeps_its_conditions_not_its_branches(monkeypatch):
    """The reverse of a select reads its condition only (Select.back_reads): a loop of N steps whose branches are
    products by constants keeps about a condition a step, not the branches too."""
    n, steps = 1000, 40

    def f(x):
        for _ in range(steps):
            x = np.where(x > 0.0, x * 0.5, x * -1.5 + 0.1)
        return (x * x).sum()

    x = RNG.normal(size=n)
    F = _both(f, x, [x], monkeypatch)
    assert F._aval.nbytes <= 1.5 * steps * n * 8  # (each step's condition, 8 bytes an element; the branches shared)
    by_hand = np.ones(n)
    z = x.copy()
    for _ in range(steps):
        by_hand *= np.where(z > 0.0, 0.5, -1.5)
        z = np.where(z > 0.0, z * 0.5, z * -1.5 + 0.1)
    np.testing.assert_allclose(F.value_and_grad(x)[1], 2.0 * z * by_hand, rtol=1e-13)


COMPARED = {"<": (operator.lt, "lt"), "<=": (operator.le, "le"), ">": (operator.gt, "lt"), ">=": (operator.ge, "le"),
            "==": (operator.eq, "eq"), "!=": (operator.ne, "ne")}  # (> and >= are < and <= of swapped operands)


@pytest.mark.parametrize("layout", OPERANDS)
@pytest.mark.parametrize("spelled", COMPARED)
def test_comparisons_on_every_layout(spelled, layout, monkeypatch):
    fn, name = COMPARED[spelled]

    def f(X):
        a, b = OPERANDS[layout](X)
        return (np.where(fn(a, b), X[:48].reshape(S) * 2.0, X[48:].reshape(S)) * W[:48].reshape(S)).sum()

    points = _points()
    points[1] = np.resize([0.0, -0.0, np.nan, np.inf, -np.inf, 1.75, 0.6, 1.0], 96)  # (ties with the numbers too)
    _both(f, points[0], points, monkeypatch, driven=[name])

