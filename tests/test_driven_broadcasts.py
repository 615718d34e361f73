"""Broadcasting binary records in the compiled sweeps (kernels/codegen/array_broadcasts.py's LINED rows, written by
tape/sweeps/encoding.py): values and gradients are NumPy's steps' bit for bit, rows, columns and middle axes
broadcast on either side, past the BROADCAST bound, in blocks of one line, seven or many, long lines a line at a time
read in place (a number a line too), at edge values; the layouts they leave to the gathering rows or to NumPy's step
stay there."""

import operator

import numpy as np
import pytest
from test_array_driver import EDGES, RNG, _both, _driven, arrays  # noqa: F401 (arrays: the fixture)

import tape
from tape.sweeps import compiled, encoding

OPS = {"sub": operator.sub, "mul": operator.mul, "div": operator.truediv, "maximum": np.maximum}
W = RNG.normal(size=12000)
LAYOUTS = {  # name: (a, b of X, whether a LINED row runs it)
    "a row on the right": (lambda X: (X[:6000].reshape(375, 16), X[6000:6016]), True),
    "a column on the left": (lambda X: (X[:375].reshape(375, 1), X[:6000].reshape(375, 16)), True),
    "a column by a row (the mixture's x - mu)": (lambda X: (X[:700].reshape(700, 1), X[700:716]), True),
    "a middle axis": (lambda X: (X[:6000].reshape(5, 75, 16), X[6000:6080].reshape(5, 1, 16)), True),
    "lines of 13, a row (runs of four lines and a rest)": (lambda X: (X[:1313].reshape(101, 13), X[1313:1326]), True),
    "long lines, a row": (lambda X: (X[:6000].reshape(2, 3000), X[5000:8000]), True),
    "a column of a 3-d space": (lambda X: (X[:6000].reshape(3, 125, 16), X[6000:6375].reshape(3, 125, 1)), True),
    "a column of a 4-d space, broadcast along axis 1": (lambda X: (X[:480].reshape(2, 3, 5, 16),
                                                                 X[500:510].reshape(2, 1, 5, 1)), True),
    "long lines by a column (a number a line, read in place)": (lambda X: (X[:6000].reshape(20, 300),
                                                                        X[6000:6020].reshape(20, 1)), True),
    "a column by long lines broadcast along it (conv1d's taps)": (lambda X: (X[:4].reshape(4, 1),
                                                                         X[4:604].reshape(2, 1, 300)), True),
    "long lines of a row by a column": (lambda X: (X[:257], X[300:310].reshape(10, 1)), True),
    "long lines of a 4-d space by a column": (lambda X: (X[:1024].reshape(2, 1, 2, 256),
                                                         X[2000:2006].reshape(1, 3, 2, 1)), True),
    "short lines (gathered)": (lambda X: (X[:6000].reshape(1500, 4), X[6000:6004]), False),
    "a strided row (gathered)": (lambda X: (X[:6000].reshape(375, 16), X[6000:6032:2]), False),
    "a number a block of lines (gathered)": (lambda X: (X[:6000].reshape(3, 125, 16)[:, ::2],
                                                        X[6000:6003].reshape(3, 1, 1)), False),
}


def _program(op, layout):
    def f(X):
        a, b = LAYOUTS[layout][0](X)
        y = OPS[op](a, b)
        return (y * W[:y.size].reshape(y.shape)).sum()
    return f


def _points(size):
    x = RNG.normal(size=size) * 3.0
    return [x, np.resize(EDGES, size), np.resize(EDGES[::-1], size), np.where(x > 0.0, 0.0, -0.0),
            np.where(x > 2.0, np.inf, x), np.where(x > 3.0, np.nan, x), x * 1e300, x * 1e-310]


@pytest.mark.parametrize("block", [1, 7 * 16, compiled.LINES])  # 7 lines of 16: runs cut by blocks, not by fours
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_broadcasts_as_numpys_steps(layout, op, block, monkeypatch):
    monkeypatch.setattr(compiled, "LINES", block)  # 1: a block of one line
    monkeypatch.setattr(encoding, "BROADCAST", 2 ** 10)  # the gathering rows left to NumPy's step past it
    F = _both(_program(op, layout), RNG.normal(size=8000), _points(8000), monkeypatch)
    assert _driven(F, compiled.kernels.LINED) == LAYOUTS[layout][1]


def test_broadcasts_against_central_differences(monkeypatch):
    from reference import central
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)

    def f(X):  # the mixture's broadcasts: a column by a row, both wanting adjoints
        z = (X[:40].reshape(40, 1) - X[40:56]) * X[56:72]
        return (z * z).sum()

    x = np.random.default_rng(72).normal(size=72)  # its own points: the shared RNG's draws depend on earlier tests
    F = tape.trace(f, x)
    grad = F.value_and_grad(x)[1]
    a, b, c = x[:40, None], x[40:56], x[56:72]
    twice_zc = 2.0 * (a - b) * c * c  # by hand: d/da, d/db, d/dc of sum(((a - b) c)^2)
    by_hand = np.concatenate([twice_zc.sum(1), -twice_zc.sum(0), (2.0 * (a - b) ** 2 * c).sum(0)])
    np.testing.assert_allclose(grad, by_hand, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(grad, central(lambda v: float(F(v)), x), rtol=1e-6, atol=1e-6)  # f ~ 10^3: its noise
    assert _driven(F, compiled.kernels.LINED)
