"""Many points at once: every map equals the single-point calls bit for bit, on any thread count."""

from __future__ import annotations

import threading

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
    """Until a map kernel is ready, a map's points run one by one on the single call's kernels (maps.BY_POINT):
    the map kernel's bytes at edge points (inf, NaN, -0.0, subnormal, huge), failed checks included, whether it
    hands over to the kernel at the start, after 3 points or never."""
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
    for after in (0, 3, points):  # points run by point before the kernel is called
        def raw(*args, after=after):
            for gate, _ in maps.BY_POINT.values():
                calls = iter(range(10**9))
                monkeypatch.setattr(gate, "ready", lambda calls=calls, after=after: next(calls) >= after)
            return maps.raw(F, *args)

        ran.clear()
        got = [raw("map", X), raw("jvp", X, V), raw("vjp", X, W[:, :F.n_outputs])]
        got += [raw("value_and_grad", X)] if F._scalar else []
        assert sum(hi - lo for lo, hi, by_point in ran if by_point) == after * len(got)
        assert sorted(r[:2] for r in ran) == sorted(ran_once(after, points) * len(got))
        results[after] = [r.tobytes() for result in got for r in result]
    assert results[0] == results[3] == results[points]


def ran_once(after, points):
    """The calls of a map that runs its first ``after`` points one by one, then the rest in a block per thread."""
    blocks = min(numba.get_num_threads(), points - after)
    return [(p, p + 1) for p in range(after)] + [(after + b * (points - after) // blocks,
                                                  after + (b + 1) * (points - after) // blocks) for b in range(blocks)]
