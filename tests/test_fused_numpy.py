"""The fused kernels' NumPy twins (tape/sweeps/fused_numpy.py) give the kernels' bits, and stand in only until
the kernels are compiled, cached, or have been waited for long enough."""

from types import SimpleNamespace

import compiles
import numpy as np
import pytest

import tape
from tape.kernels import compiling
from tape.kernels.codegen import fused
from tape.kernels.compiling import LOAD
from tape.sweeps import compiled, fused_numpy, fused_runs, fusion, steps

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
    # the last member read outside the run and summed: its adjoint sent from outside plus the sum's seed
    "the last member read outside and summed": (lambda X: (lambda y: y.sum() + y[5] * 2.0)(X * 3.0 - X * X),
                                                RNG.normal(size=3000)),
    "zeros and edges": (lambda X: (tape.sqrt(X * X) * X - X / (X + 0.0) + tape.sqrt(X) * 0.0).sum(),
                        np.array([0.0, -0.0, 1e-310, -1e308, 1e308, 2.0, -3.0, 4.0] * 300)),
    # x ** 1 and x ** 0 (a gradient tape's: C's pow(a, 1.0) is a, pow(a, 0.0) 1.0), at zeros and infinities too
    "powers 1 and 0": (lambda X: (X ** 1.0 * 3.0 - X ** 0.0 * X + (X * 2.0) ** 1.0 / X - (X - 1.0) ** -0.0).sum(),
                       np.array([0.0, -0.0, np.inf, -np.inf, 1e-310, -1e308, 1e308, 2.0, -3.0, np.nan] * 300)),
    "power 0 at infinities": (lambda X: (X ** 0.0 * X - (X * 2.0) ** 1.0).sum(),
                              np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3.0] * 500)),
    "power 1 at -0.0": (lambda X: (1.0 / tape.tanh(X ** 1.0 * 3.0)).sum(), np.array([-0.0, 1.0, 2.0, -3.0] * 500)),
}


def _bits(*xs):
    return [np.asarray(x, float).tobytes() for x in xs]


KEPT = compiled.kept


def kept_fused(monkeypatch, rows=False):
    """Every run of a Function traced after fused (not table rows: compiled.kept; ``rows``: as compiled.kept says)."""
    monkeypatch.setattr(compiled, "kept", KEPT if rows else lambda s, runs: runs)
    monkeypatch.setattr(compiled, "ready", lambda s, runs: rows)


def _generic(monkeypatch, twin):
    """The generic fused kernels (twin False) or their twins, on runs kept fused; the twins' calls (a list)."""
    kept_fused(monkeypatch)
    monkeypatch.setattr(fused_runs, "SHAPED", False)  # the interpreted kernels (a shape's own: tests/test_shaped.py)
    for tiered in (fused_runs.FORWARD, fused_runs.REVERSE):
        monkeypatch.setattr(tiered.gate, "ready", lambda: not twin)
    calls = []
    for tiered in (fused_runs.FORWARD, fused_runs.REVERSE):
        monkeypatch.setattr(tiered, "twin", lambda *a, _t=tiered.twin: calls.append(1) or _t(*a))
    return calls


def _results(monkeypatch, twin, f, x):
    calls = _generic(monkeypatch, twin)
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


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_kernels_give_the_recorded_numbers(monkeypatch, program):
    """Up to rounding (the fused sum adds by blocks): the value NumPy gave while recording, and its gradient."""
    f, x = PROGRAMS[program]
    value, grad = (np.frombuffer(b) for b in _results(monkeypatch, False, f, x)[:2])
    with np.errstate(all="ignore"):
        want, want_grad = tape.value_and_grad(f)(x)
    np.testing.assert_allclose(value, want, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(grad, np.ravel(want_grad), rtol=1e-9, atol=1e-300, equal_nan=True)


def test_the_twins_block_is_the_kernels():
    assert (fused_numpy.BLOCK, fused_numpy.LANES) == (fused.BLOCK, 8)


@pytest.mark.parametrize("power", [1.7, 3.0, 0.5, -1.0, "x"])
def test_a_general_power_is_not_fused(power):
    """pow's C library call is not NumPy's SIMD loop (an ulp apart): such a power stays NumPy's step, the run after it
    twinned; x ** 2, x ** 1 and x ** 0 are exact and fused (pow(a, 3.0) is not a * a * a, pow(a, 0.5) not sqrt(a) at
    -0.0, pow(a, -1.0) not 1.0 / a: each within an ulp)."""
    x = RNG.uniform(0.5, 2.0, 2000)
    F = tape.trace(lambda X: (X ** (X if power == "x" else power) * X - X).sum(), x)
    assert [(run.twinned, len(run.members)) for run in F._runs_first.values()] == [(True, 2)]
    for exact in (2, 1.0, 0.0, -0.0):
        G = tape.trace(lambda X, c=exact: (X ** c * X - X).sum(), x)
        assert [(run.twinned, len(run.members)) for run in G._runs_first.values()] == [(True, 3)]


def _gradient_tape(which, x):
    """A first call of F.grad_function(), jvp_function() or vjp_function() of Rosenbrock, and a vjp of it: its
    Function (whose runs read x ** 1) and the results' bits at x and at edge values."""
    F = tape.trace(lambda X: (100.0 * (X[1:] - X[:-1] ** 2) ** 2 + (1.0 - X[:-1]) ** 2).sum(), x)
    G = getattr(F, which)()
    extra = {"grad_function": 0, "jvp_function": len(x), "vjp_function": 1}[which]
    points = [np.concatenate([p, np.cos(np.arange(extra))]) for p in (x, np.resize(EDGES, len(x)), x * 1e154)]
    with np.errstate(all="ignore"):
        out = [G(p) for p in points] + [G.vjp(p, np.linspace(-1.0, 2.0, G.n_outputs)) for p in points]
    return G, [np.where(np.isnan(o), np.nan, o).tobytes() for o in out]  # (a NaN's sign: IEEE's choice in an add)


@pytest.mark.parametrize("which", ["grad_function", "jvp_function", "vjp_function"])
def test_a_gradient_tapes_runs_are_twinned_with_the_kernels_bits(monkeypatch, which):
    """The gradient tape's runs read x ** 1 (d x ** 2 = 2 x ** 1): twinned, so a first call compiles no fused kernel
    (2.0 of its 2.0 CPU-s cold), with the kernels' bits."""
    x = RNG.uniform(-2.0, 2.0, 3001)
    calls = _generic(monkeypatch, True)
    G, twins = _gradient_tape(which, x)
    assert G._runs_first and all(run.twinned for run in G._runs_first.values()) and calls
    _generic(monkeypatch, False)
    assert twins == _gradient_tape(which, x)[1]


class _Kernel:
    """A dispatcher's face as Tiered sees it: signatures and overloads (one once loaded), its cache's index file, a
    compile (a load), a call."""

    def __init__(self, index, calls):
        self.signatures, self.overloads, self.calls = [], {}, calls
        self._cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=index))

    def compile(self, sig):
        self.signatures, self.overloads = ["compiled"], {sig: "compiled"}

    def __call__(self, *args):
        self.calls.append("kernel")


def test_the_kernel_takes_over_when_cached_or_paid_back(monkeypatch, tmp_path):
    monkeypatch.setattr(compiling, "EAGER", False)  # (tape-bench's in-process runs set it)
    calls = []
    index = tmp_path / "index.nbi"

    def tiered(payback):
        return fused_runs.Tiered(_Kernel(index, calls), lambda *a: calls.append("twin"), payback)

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


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 1e-308, -5e-324, 2.5e-310, 1.0, -3.0, 1e154])


def _wave(u):
    for _ in range(3):
        a, b = u[:-1], u[1:]
        u = (a - b) * (a + 0.5 * b) / 3.0 + b * b * 0.01 - 0.1 * a
    return (u * 1.0)[1:].sum()  # (a sum of a view: it does not join the run, and adds in NumPy's order everywhere)


def _filter(u):
    for _ in range(3):
        u = 0.25 * u[2:] + 0.5 * u[1:-1] + 0.25 * u[:-2]  # (the later members read the earlier elements)
    return (u * u)[1:].sum()


EDGE_PROGRAMS = {  # name: (f, elements, whether every path gives the NumPy steps' order); views of one input read one
    # element from different blocks of 512
    "shifted views at block edges": (_wave, 2001, True),
    "a 3-tap filter": (_filter, 9000, True),
    "strided views, two residues": (lambda u: (u[:-2:2] * u[1:-1:2] - u[2::2] * u[2::2] + u[:-2:2] / 7.0 - u[2::2]
                                               * 0.3)[1:].sum(), 9001, True),
    "reversed views": (lambda u: (u[::-1][:-1] * 2.0 - u[::-1][1:] * u[::-1][1:] + u[::-1][:-1] / 7.0)[1:].sum(), 9000,
                       True),
    "rows one after another": (lambda u: ((u.reshape(40, 30)[1:] - u.reshape(40, 30)[:-1] * 0.3) * u.reshape(40, 30)[
        1:] + u.reshape(40, 30)[:-1] / 7.0)[1:].sum(), 1200, True),
    "views far apart": (lambda u: (u[:-600] * u[600:] - u[300:-300] * 0.5)[1:].sum(), 1700, False),
    "rows apart": (lambda u: (u.reshape(40, 50)[1:, 1:] * u.reshape(40, 50)[:-1, :-1] + 1.0)[1:].sum(), 2000, False),
}


def _by(monkeypatch, path, f, x, points):
    """(value, gradient) at points with a Function's fused runs run by path: the "kernels", their "twins", as rows of
    the compiled "tables" where compiled.kept lets them, or as "numpy"'s steps (no runs)."""
    kept_fused(monkeypatch, path == "tables")
    monkeypatch.setattr(fused_runs, "SHAPED", False)
    for tiered in (fused_runs.FORWARD, fused_runs.REVERSE):
        monkeypatch.setattr(tiered.gate, "ready", lambda: path != "twins")
    F = tape.trace(f, x)
    runs = fusion.find(F, set(F._output_rows.tolist()), (F._input_rows, F._param_rows, F._check_rows))
    assert runs and all(run.twinned and run.total < 0 for run in runs)
    if path == "numpy":
        F._runs_first, F._runs_last = {}, {}
    with np.errstate(all="ignore"):
        return [np.concatenate([[v], g]) for v, g in (F.value_and_grad(point) for point in points)], F


@pytest.mark.parametrize("program", sorted(EDGE_PROGRAMS))
def test_every_path_gives_a_functions_bits(monkeypatch, program):
    """Whether the kernels are cached decides whether a small run without a sum is fused (kernels or twins) or rows
    of the compiled tables (compiled.kept): the bits are the same (NaN for NaN: a NaN's sign where two meet in an add
    is IEEE's choice), and, where the run is dissolved, NumPy's steps'; each element of an input read by several
    views gets its adds in the same order."""
    f, n, ordered = EDGE_PROGRAMS[program]
    x = np.random.default_rng(7).normal(size=n)
    points = [x, x * np.random.default_rng(8).uniform(0.5, 9.0, n), x ** 3, np.resize(EDGES, n),
              np.where(x > 1.0, np.resize(EDGES[::-1], n), x * 1e-300)]
    found = {path: _by(monkeypatch, path, f, x, points) for path in ("kernels", "twins", "tables", "numpy")}
    want = found["kernels"][0]
    for path in ("twins", "tables", "numpy") if ordered else ("twins", "tables"):
        for a, b in zip(found[path][0], want, strict=True):
            bits = [np.where(np.isnan(c), np.nan, c).tobytes() for c in (a, b)]  # (-0.0 is not 0.0)
            assert bits[0] == bits[1], (path, np.flatnonzero((a != b) & ~(np.isnan(a) & np.isnan(b))))
    F = found["tables"][1]  # a run in NumPy's order is dissolved (at tape.trace), one not kept
    rows = {int(row) for sweep in F._steps.values() if isinstance(sweep, steps.Sweep) for call in sweep.calls
            if getattr(call, "func", None) is compiled.forward for row in call.args[1][:, 2]}
    runs = fusion.find(F, set(F._output_rows.tolist()), (F._input_rows, F._param_rows, F._check_rows))
    members = {int(row) for run in runs for row in run.members}
    assert members and (members <= rows if ordered else not members & rows), (members, rows)
    assert bool(F._runs_first) != ordered


FIRST_CALL = """
import numpy as np
import tape

listen()
x = np.linspace(-1.0, 1.0, 20_000)
F = tape.trace(lambda X: (100.0 * (X[1:] - X[:-1] ** 2) ** 2 + (1.0 - X[:-1]) ** 2).sum(), x)
for which, extra in (("grad_function", 0), ("jvp_function", len(x)), ("vjp_function", 1)):
    z = np.concatenate([x, np.ones(extra)])
    G = getattr(F, which)()
    G(z), G.vjp(z, np.ones(G.n_outputs)), G.jvp(z, np.ones(len(z)))
"""


def test_a_gradient_tapes_first_calls_compile_nothing(tmp_path):
    """In a fresh process on an empty cache, an array program's gradient, its grad_function, jvp_function and
    vjp_function, their first calls and their vjp and jvp compile no kernel: the twins serve (fused_forward compiled
    in 1.98 of grad_function's first call's 2.0 CPU-s)."""
    assert compiles.compiled(FIRST_CALL, tmp_path) == []
