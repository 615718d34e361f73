"""The fused kernels' NumPy twins (tape/sweeps/fused_numpy.py) give the kernels' bits, and stand in only until
the kernels are compiled, cached, or have been waited for long enough."""

from types import SimpleNamespace

import numpy as np
import pytest

import tape
from tape.kernels.codegen import fused
from tape.kernels.compiling import LOAD
from tape.sweeps import compiled, fused_numpy, fusion

RNG = np.random.default_rng(11)


def _stencil(X):
    r = 4.0 * X[1:-1, 1:-1] - X[2:, 1:-1] - X[:-2, 1:-1] - X[1:-1, 2:] - X[1:-1, :-2] - 1.0
    return 0.5 * (r * r).sum()


PROGRAMS = {  # name: (f, x)
    "rosenbrock, a length not of 512": (lambda X: (100.0 * (X[1:] - X[:-1] ** 2) ** 2 + (1.0 - X[:-1]) ** 2).sum(),
                                        RNG.uniform(-2.0, 2.0, 12_295)),
    "stencil: rows apart": (_stencil, RNG.normal(size=(90, 70))),
    "rows one after another": (lambda X: ((X * X - X / 3.0) * X - 2.0 * X).sum() + (X * 0.5 - X)[3, 4],
                               RNG.uniform(0.5, 2.0, (700, 9))),
    # a lower member reads X[1:], a higher one X[:-1]: at a block's edge the kernel adds into X's adjoint in block order
    "block edges": (lambda X: (X[1:] * 3.0 - (X[:-1] * X[:-1]) * 0.5).sum(), RNG.normal(size=3 * 512 + 7)),
    "strides": (lambda X: (X[::2] * X[1::2] - X[::2] / 3.0).sum() + (X.T[1:, :] * X.T[:-1, :] - 1.0).sum(),
                RNG.normal(size=(64, 41))),
    "members read outside, no sum": (lambda X: tape.exp(X * 2.0 - X / 7.0).sum() + (X - -X)[5], RNG.normal(size=5000)),
    "the sum of 391 blocks": (lambda X: (X * 3.0 - X * X).sum(),
                              RNG.normal(size=200_003) * np.exp(RNG.uniform(-20.0, 20.0, 200_003))),
    "zeros and edges": (lambda X: (tape.sqrt(X * X) * X - X / (X + 0.0) + tape.sqrt(X) * 0.0).sum(),
                        np.array([0.0, -0.0, 1e-310, -1e308, 1e308, 2.0, -3.0, 4.0] * 300)),
}


def _bits(*xs):
    return [np.asarray(x, float).tobytes() for x in xs]


def _results(monkeypatch, twin, f, x):
    monkeypatch.setattr(compiled, "ready", lambda s, runs: False)  # runs stay fused (not table rows: steps._kept)
    for tiered in (fusion.FORWARD, fusion.REVERSE):
        monkeypatch.setattr(tiered.gate, "ready", lambda: not twin)
    calls = []
    for tiered in (fusion.FORWARD, fusion.REVERSE):
        monkeypatch.setattr(tiered, "twin", lambda *a, _t=tiered.twin: calls.append(1) or _t(*a))
    with np.errstate(all="ignore"):
        F = tape.trace(f, x)
        assert F._runs_first and all(run.twinned for run in F._runs_first.values())
        v, g = F.value_and_grad(x)
        out = _bits(v, g, F(x), F.gradient(x), F.hvp(x, np.ones_like(x)))
    assert bool(calls) == twin
    return out


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_twins_give_the_kernels_bits(monkeypatch, program):
    f, x = PROGRAMS[program]
    assert _results(monkeypatch, True, f, x) == _results(monkeypatch, False, f, x)


def test_the_twins_block_is_the_kernels():
    assert (fused_numpy.BLOCK, fused_numpy.LANES) == (fused.BLOCK, 8)


def test_a_run_with_an_inexact_op_is_not_twinned():
    """pow's C library call is not NumPy's loop: such a run runs the kernel; x ** 2 is exact."""
    x = RNG.uniform(0.5, 2.0, 2000)
    F = tape.trace(lambda X: (X ** 1.7 * X - X).sum(), x)
    G = tape.trace(lambda X: (X ** 2 * X - X).sum(), x)
    assert [run.twinned for run in F._runs_first.values()] == [False]
    assert [run.twinned for run in G._runs_first.values()] == [True]


class _Kernel:
    """A dispatcher's face as Tiered sees it: signatures (one once called), its cache's index file, a call."""

    def __init__(self, index, calls):
        self.signatures, self.calls = [], calls
        self._cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=index))

    def __call__(self, *args):
        self.calls.append("kernel")
        self.signatures = ["compiled"]


def test_the_kernel_takes_over_when_cached_or_paid_back(tmp_path):
    calls = []
    index = tmp_path / "index.nbi"

    def tiered(payback):
        return fusion.Tiered(_Kernel(index, calls), lambda *a: calls.append("twin"), payback)

    cold = tiered(1e9)
    cold(True), cold(True), cold(False), cold(True)  # a run not twinned calls the kernel, which stays then
    paid = tiered(1e-12)
    paid(True), paid(True)
    index.write_text("")
    cached = tiered(1e9)
    cached(True)
    cached.gate.clock.spent = LOAD  # a cached kernel loads once its twin has run LOAD seconds
    cached(True)
    assert calls == ["twin", "twin", "kernel", "kernel"] + ["twin", "kernel"] + ["twin", "kernel"]
