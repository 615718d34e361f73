"""logsumexp in the compiled sweeps (kernels/array_driver.py's LOGSUMEXP rows, tape/sweeps/encoding._lines): values and
gradients are NumPy's step's bit for bit, on lines of every length around NumPy's pairwise blocks, in blocks of lines
of any size, at edge values (lines all -inf, inf, NaN, huge), and the layouts it leaves to NumPy's step stay there."""

import numpy as np
import pytest
from test_array_driver import EDGES, RNG, _both, _driven, arrays  # noqa: F401 (arrays: the fixture)

import tape
from tape.sweeps import compiled

LSE = tape.logsumexp
LINES = {  # name: (f, whether a LOGSUMEXP row runs it)
    "rows": (lambda X: (LSE(X[:600].reshape(75, 8), axis=1) * X[:75]).sum(), True),
    "keepdims, short rows": (lambda X: (LSE(X[:300].reshape(100, 3), axis=-1, keepdims=True) * X[:300].reshape(100, 3))
                             .sum(), True),
    "long rows": (lambda X: (LSE(X[:2000].reshape(2, 1000), axis=1) ** 2).sum() + LSE(X[:257] * 2.0), True),
    "trailing axes": (lambda X: (LSE(X[:360].reshape(3, 4, 30), axis=(1, 2)) * X[:3]).sum(), True),
    "rows of a wider array": (lambda X: (LSE(X[:1200].reshape(20, 60)[::2, 5:40], axis=1) * X[:10]).sum(), True),
    "a softmax": (lambda X: ((X[:64].reshape(8, 8) - LSE(X[:64].reshape(8, 8), axis=1, keepdims=True)) * X[64:128]
                             .reshape(8, 8)).sum(), True),
    "along the first axis (NumPy's step)": (lambda X: (LSE(X[:96].reshape(12, 8), axis=0) * X[:8]).sum(), False),
    "strided lines (NumPy's step)": (lambda X: (LSE(X[:192:2].reshape(12, 8), axis=1) * X[:12]).sum(), False),
}


def _points(size):
    x = RNG.normal(size=size) * 3.0
    lines = np.where(np.arange(size) % 8 < 4, -np.inf, x)  # lines of -inf only, and half -inf
    return [x, x * 1e3, np.resize(EDGES, size), np.resize(EDGES[::-1], size), lines, np.full(size, -np.inf),
            np.where(x > 2.0, np.inf, x), np.where(x > 3.0, np.nan, x), np.where(x > 0.0, 0.0, -0.0), x + 1e300]


@pytest.mark.parametrize("block", [1, compiled.LINES])
@pytest.mark.parametrize("program", LINES)
def test_logsumexp_lines_as_numpys_step(program, block, monkeypatch):
    monkeypatch.setattr(compiled, "LINES", block)  # 1: each block as few lines as scratch holds
    f, driven = LINES[program]
    F = _both(f, RNG.normal(size=2400), _points(2400), monkeypatch)
    assert _driven(F, compiled.kernels.LOGSUMEXP) == driven


def test_logsumexp_lines_against_central_differences(monkeypatch):
    from reference import central
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    f = LINES["a softmax"][0]
    x = RNG.normal(size=128)
    F = tape.trace(f, x)
    np.testing.assert_allclose(F.value_and_grad(x)[1], central(lambda v: float(F(v)), x), rtol=1e-6, atol=1e-7)
    assert _driven(F, compiled.kernels.LOGSUMEXP)


def test_without_numpys_loops_logsumexp_stays_numpys(monkeypatch):
    monkeypatch.setattr(compiled.kernels, "LOOPS", frozenset({"exp"}))
    F = _both(LINES["rows"][0], RNG.normal(size=2400), _points(2400)[:2], monkeypatch)
    assert not _driven(F, compiled.kernels.LOGSUMEXP)
