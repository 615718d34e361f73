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


@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 16, 17, 24, 31, 127, 128, 129, 300])
def test_line_sums_two_at_a_time_are_pairwise_sums(n):
    """_sums (a logsumexp row's sums of its lines, two at a time) gives each line's 0.0 + _pairwise sum, bit for bit,
    NaN signs too, at lengths around its 8-wide blocks and 128, odd and even counts of lines, and np.sum's bits."""
    kernels = compiled.kernels
    for count in (1, 2, 3, 6):
        X = RNG.normal(size=count * n + 5) * 10.0 ** RNG.integers(-8, 9, count * n + 5)
        X[RNG.integers(0, X.size, 3)] = [-0.0, np.inf, np.nan]
        X[5:5 + n] = -0.0  # a line of -0.0 sums to 0.0
        S = np.full(count + 2, 7.0)
        kernels._sums(X, 5, count, n, S, 1)
        want = [0.0 + kernels._pairwise(X, 5 + i * n, n, 1) for i in range(count)]
        assert S.view(np.int64).tolist() == np.array([7.0, *want, 7.0]).view(np.int64).tolist()
        finite = np.where(np.isfinite(X), X, 1.0)
        kernels._sums(finite, 5, count, n, S, 1)
        assert S[1:-1].tolist() == [0.0 + np.sum(finite[5 + i * n:5 + (i + 1) * n]) for i in range(count)]
