"""Many points at once: every map equals the single-point calls bit for bit, on any thread count."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import compiles
import numba
import numpy as np
import pytest

import tape

RNG = np.random.default_rng(5)


def scalar(x):
    return (tape.sigmoid(x[0] * x[1] + x[2] * x[3] + x[4]) - x[5]) ** 2 + tape.where(x[0] > 0.0, x[1], -x[2])


def vector(x):
    return [x[0] * x[1] + tape.sin(x[2]), tape.exp(-x[0] * x[0]), 2.0]


@pytest.fixture(params=[1, 2], ids=["1 thread", "2 threads"])
def threads(request):
    before = numba.get_num_threads()
    numba.set_num_threads(min(request.param, numba.config.NUMBA_NUM_THREADS))
    yield request.param
    numba.set_num_threads(before)


def test_map_value_and_grad_equals_single_calls(threads):
    F = tape.trace(scalar, np.full(6, 0.5))
    X = RNG.uniform(-2, 2, (257, 6))
    values, grads = F.map_value_and_grad(X)
    assert values.shape == (257,) and grads.shape == (257, 6)
    for p in range(len(X)):
        value, grad = F.value_and_grad(X[p])
        assert values[p] == value
        np.testing.assert_array_equal(grads[p], grad)
    np.testing.assert_array_equal(F.map(X), values)


def test_vector_maps_equal_single_calls(threads):
    F = tape.trace(vector, np.full(3, 0.5))
    X, V, W = RNG.uniform(-2, 2, (100, 3)), RNG.normal(size=(100, 3)), RNG.normal(size=(100, 3))
    out = F.map(X)
    jvps = F.map_jvp(X, V)
    vjps = F.map_vjp(X, W)
    assert out.shape == (100, 3) and jvps.shape == (100, 3) and vjps.shape == (100, 3)
    for p in range(len(X)):
        np.testing.assert_array_equal(out[p], F(X[p]))
        np.testing.assert_array_equal(jvps[p], F.jvp(X[p], V[p]))
        np.testing.assert_array_equal(vjps[p], F.vjp(X[p], W[p]))


def test_map_hvp_equals_single_calls_and_applies_the_branch_policy(threads):
    F = tape.trace(scalar, np.full(6, 0.5))
    X, V = RNG.uniform(-2, 2, (50, 6)), RNG.normal(size=(50, 6))
    out = F.map_hvp(X, V)
    assert out.shape == (50, 6)
    for p in range(len(X)):
        np.testing.assert_array_equal(out[p], F.hvp(X[p], V[p]))
    G = tape.trace(lambda x: (x ** 3).sum() * x[0] if x[0] > 0 else -x[1] * x[1], np.ones(2))
    with pytest.raises(tape.BranchChanged, match="point 1 of the 2"):
        G.map_hvp(np.array([[1.0, 2.0], [-1.0, 2.0]]), np.ones((2, 2)))
    with pytest.raises(ValueError, match="one output"):
        tape.trace(vector, np.ones(3)).map_hvp(X[:, :3], V[:, :3])


def test_map_with_params_and_edge_sizes():
    F = tape.trace(lambda w, d: (w[0] * d[0] - d[1]) ** 2, [1.0], params=[2.0, 3.0])
    values, grads = F.map_value_and_grad(np.array([[1.0], [2.0]]), params=[1.0, 1.0])
    np.testing.assert_array_equal(values, [0.0, 1.0])
    np.testing.assert_array_equal(grads, [[0.0], [2.0]])
    np.testing.assert_array_equal(F.map([1.0, 2.0]), [0.0, 1.0])  # one input: a 1-D X is N points
    empty_values, empty_grads = F.map_value_and_grad(np.zeros((0, 1)))
    assert empty_values.shape == (0,) and empty_grads.shape == (0, 1)
    with pytest.raises(ValueError, match=r"shape \(N, 1\)"):
        F.map(np.zeros((3, 2)))
    G = tape.trace(vector, np.zeros(3))
    with pytest.raises(ValueError, match="one output"):
        G.map_value_and_grad(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="rows of weights"):
        G.map_vjp(np.zeros((2, 3)), np.zeros((3, 3)))


def piecewise(x):
    if x[0] < 0.0:
        return x[0] * x[0] * x[1]
    return tape.sin(x[0]) + x[1]


def test_branch_changes_are_reported_by_point():
    F = tape.trace(piecewise, [0.5, 2.0])
    X = np.array([[0.2, 1.0], [0.3, 1.0], [-0.4, 1.0], [0.9, 1.0]])
    with pytest.raises(tape.BranchChanged, match=r"point 2 of the 4 given; 1 points changed branch"):
        F.map_value_and_grad(X)
    ignore = tape.trace(piecewise, [0.5, 2.0], on_branch_change="ignore")
    assert ignore.map(X)[2] == np.sin(-0.4) + 1.0  # the recorded branch, on purpose


def test_retrace_policy_per_point():
    F = tape.trace(piecewise, [0.5, 2.0], on_branch_change="retrace")
    X = np.column_stack([RNG.uniform(-2, 2, 60), RNG.uniform(0.5, 1.5, 60)])
    values, grads = F.map_value_and_grad(X)
    for (a, b), value, grad in zip(X, values, grads, strict=True):
        if a < 0:
            assert value == pytest.approx(a * a * b) and grad == pytest.approx([2 * a * b, a * a])
        else:
            assert value == pytest.approx(np.sin(a) + b) and grad == pytest.approx([np.cos(a), 1.0])
    assert F.retraces >= 1


def test_maps_from_several_python_threads_take_turns():
    import threading

    F = tape.trace(scalar, np.full(6, 0.5))
    X = RNG.uniform(-2, 2, (2000, 6))
    expected = F.map_value_and_grad(X)[1]
    results = []

    def work():
        G = tape.trace(scalar, np.full(6, 0.5))
        results.append(G.map_value_and_grad(X)[1])

    threads = [threading.Thread(target=work) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(results) == 3 and all(np.array_equal(r, expected) for r in results)


def test_a_map_runs_one_block_per_thread_and_small_work_in_one(monkeypatch):
    """Records x points above twins.SMALL: one kernel call per thread, the blocks covering the points once; at most
    SMALL: one call in the calling thread (where a CPython twin, which restores the arrays after an arithmetic error,
    may serve it: in two threads it would undo the other's block)."""
    from tape.function import maps
    from tape.kernels import _sweeps, twins

    calls = []

    def kernel(lo, hi, *args):
        calls.append((lo, hi, threading.get_ident()))
        return _sweeps.map_values(lo, hi, *args)

    monkeypatch.setattr(maps, "map_values", kernel)
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    try:
        F = tape.trace(scalar, np.full(6, 0.5))
        few = twins.SMALL // len(F._op)
        for points in (few, few + 1, 1000):
            calls.clear()
            X = RNG.uniform(-2, 2, (points, 6))
            np.testing.assert_array_equal(F.map(X), [F(x) for x in X])
            blocks = 1 if points == few else numba.get_num_threads()
            assert sorted(c[:2] for c in calls) == [(b * points // blocks, (b + 1) * points // blocks)
                                                    for b in range(blocks)]
            assert (calls[0][2] == threading.get_ident()) == (blocks == 1)
    finally:
        numba.set_num_threads(before)


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, -5e-324, 1.0, -1.0, 0.5, 2.0, -3.0])


def grouped(x):
    """Grouped ops (log1p, arctan2, hypot: kernels/ops.py's GROUPED, GROUPED_PAIRS) between plain ones, a select."""
    y = tape.log1p(x[0] * x[1]) + tape.arctan2(x[2], x[3]) * tape.hypot(x[0], x[2]) - tape.sqrt(x[3])
    return [y, tape.where(x[1] > x[2], y * x[0], tape.exp(x[3])), tape.cbrt(x[1]) / x[0]]


@pytest.mark.parametrize("f, n", [(scalar, 6), (vector, 3), (grouped, 4)], ids=["scalar", "vector", "grouped"])
def test_maps_by_point_give_the_map_kernels_bytes(monkeypatch, threads, f, n):
    """Until a map kernel is ready, a map's points run on the single call's kernels (maps.BY_POINT), in a block per
    thread after the first ones: the map kernel's bytes at edge points (inf, NaN, -0.0, subnormal, huge), failed
    checks included, whether it hands over to the kernel at the start, after the first points or never."""
    from tape.function import maps
    from tape.kernels import _sweeps, twins

    monkeypatch.setattr(twins, "ENABLED", True)  # (off in the tests: conftest's warmup)
    F = tape.trace(f, np.full(n, 0.5), on_branch_change="ignore")
    points = twins.SMALL // len(F._op) + 50  # past the map kernels' CPython twins
    X = np.random.default_rng(n).choice(EDGES, (points, n))
    V, W = np.random.default_rng(1).choice(EDGES, (points, n)), np.random.default_rng(2).choice(EDGES, (points, 3))
    ran = []  # (lo, hi, by point) of each call
    for kernel, (gate, stand_in) in list(maps.BY_POINT.items()):
        def counted(lo, hi, *args, stand_in=stand_in):
            ran.append((lo, hi, True))
            stand_in(lo, hi, *args)
        monkeypatch.setitem(maps.BY_POINT, kernel, (gate, counted))
    for name in ("map_values", "map_gradients", "map_tangents"):
        kernel = getattr(maps, name)

        def called(lo, hi, *args, kernel=kernel):
            ran.append((lo, hi, False))
            kernel(lo, hi, *args)
        called.kernel = getattr(_sweeps, name)
        monkeypatch.setattr(maps, name, called)
    results = {}
    for after in ("start", "first points", "never"):  # when the kernel's Gate opens
        def raw(*args, after=after):
            for gate, _ in maps.BY_POINT.values():
                calls = iter(range(10**9))
                opens = {"start": 0, "first points": 1, "never": 10**9}[after]
                monkeypatch.setattr(gate, "ready", lambda calls=calls, opens=opens: next(calls) >= opens)
            ran.clear()
            out = maps.raw(F, *args)
            lo = 0  # the calls cover the points once, in order, those by point first
            for a, b, _ in sorted(ran):
                assert a == lo and b > a
                lo = b
            least, most = {"start": (0, 0), "first points": (1, points // 8), "never": (points, points)}[after]
            assert lo == points and sorted(ran, key=lambda call: not call[2]) == ran
            assert least <= sum(b - a for a, b, by in ran if by) <= most  # (a first point off the clock, a probe)
            return out

        got = [raw("map", X), raw("jvp", X, V), raw("vjp", X, W[:, :F.n_outputs])]
        got += [raw("value_and_grad", X)] if F._scalar else []
        results[after] = [r.tobytes() for result in got for r in result]
    assert results["start"] == results["first points"] == results["never"]


class _Kernel:
    """A map kernel's face as a Gate sees it: no signatures, its cache's index file."""

    def __init__(self, index):
        self.signatures = []
        self._cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=str(index)))


def test_a_maps_stand_ins_rent_up_to_the_kernels_compile(monkeypatch, tmp_path):
    """The single call's kernels serve a map while their CPU seconds in this process and this map's rest stay within
    the map kernel's compile (its load where cached), else the map kernel serves after a first point or two: a
    stand-in costing 0.05 s a point, a compile of 1 s."""
    from tape.function import maps
    from tape.kernels import compiling

    monkeypatch.setattr(compiling, "EAGER", False)
    monkeypatch.setattr(compiling.Gate, "loaded", False)
    cost, calls = [0.05], []  # a point's seconds; the stand-in's calls on the clock
    monkeypatch.setattr(maps, "cpu", lambda f, lo, hi, *a: f(lo, hi) or calls.append((lo, hi)) or cost[0] * (hi - lo))
    monkeypatch.setattr(maps, "_RUN", set())
    ran = []

    def first(points, gate, stand_in=lambda lo, hi: ran.extend(range(lo, hi))):  # (how many points by point, the
        ran.clear()  # stand-in's points, its seconds in this process)
        n = maps.by_point_first(gate, stand_in, points, ())
        return n, sorted(ran), round(gate.clock.spent, 9)

    def gate(index="absent.nbi"):
        return compiling.Gate((_Kernel(tmp_path / index),), (compiling.LOAD, 1.0))

    cold = gate()
    assert first(10, cold) == (10, list(range(10)), 0.45)  # the first point off the clock (it may compile), the rest
    assert first(9, cold) == (9, list(range(9)), 0.9)  # within the payback: all
    assert first(3, cold) == (1, [0], 0.95)  # past it with the rest: the kernel after the point that told
    assert first(3, cold) == (0, [], 0.95)  # open for good
    assert first(100, gate()) == (1, [0], 0.05)  # this map's rest (4.95 s) alone would pass: compiled at once
    assert first(100, gate(), lambda lo, hi: ran.extend(range(lo, hi)))[:2] == (2, [0, 1])  # (a stand-in's first run)
    assert first(1, gate(), lambda lo, hi: ran.extend(range(lo, hi))) == (1, [0], 0.0)
    (tmp_path / "cached.nbi").write_text("")
    cached = gate("cached.nbi")
    assert first(4, cached) == (4, list(range(4)), 0.2)  # within LOAD (0.3 s)
    assert first(3, cached) == (1, [0], 0.25)  # past LOAD with the rest: loaded
    assert first(10, gate("cached.nbi")) == (1, [0], 0.05)  # a cached kernel loads for a map past LOAD
    cost[0], cheap = 0.001, gate()  # the first points tell the rest's cost once they have run 0.02 s or a 64th of
    calls.clear()  # the map's points
    assert first(900, cheap) == (900, list(range(900)), 0.9)
    assert calls[:4] == [(0, 1), (1, 3), (3, 7), (7, 15)] and calls[4][0] == 15  # (15 > 900 / 64: the rest)
    calls.clear()
    assert first(10**5, cheap)[0] == 31 and calls == [(0, 1), (1, 3), (3, 7), (7, 15), (15, 31)]  # 0.031 s > 0.02
    compiled = _Kernel(tmp_path / "absent.nbi")
    compiled.signatures = ["compiled"]
    assert first(10, compiling.Gate((compiled,), (compiling.LOAD, 1.0))) == (0, [], 0.0)


BIG_MAP = """
import numpy as np
import tape

x = np.linspace(-1.0, 1.0, 300)  # 2,700 scalar records: past the twins, so the single calls compile their kernels
F = tape.trace(lambda x: (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum(), x)
F(x), F.value_and_grad(x), F.jvp(x, x)
listen()
X = np.random.default_rng(0).uniform(-1.0, 1.0, (400, 300))
(values, grads), out, dots = F.map_value_and_grad(X), F.map(X), F.map_jvp(X, X[::-1])
assert all(np.array_equal(grads[p], F.value_and_grad(X[p])[1]) and out[p] == values[p] == F(X[p])
           and dots[p] == F.jvp(X[p], X[-1 - p]) for p in (0, 1, 2, 199, 399))
"""


def test_a_first_map_within_its_kernels_compile_compiles_nothing(tmp_path):
    """In a fresh process on an empty cache, after a Function's single calls, maps whose stand-ins cost less than the
    map kernels' compile compile nothing: the single call's kernels serve them (a 20,000-point map_value_and_grad of
    an 8k-record tape: 5.7-5.9 -> 2.8 CPU-s cold)."""
    assert compiles.compiled(BIG_MAP, tmp_path) == []
