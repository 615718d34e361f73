"""Functions pickle and deep-copy (multiprocessing, joblib, concurrent.futures): after a round trip every
method gives the original's bits, calls take turns on a lock of their own, and a process pool maps them."""

import copy
import math
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import tape

RNG = np.random.default_rng(28)


def scalar_program(xs):
    return tape.sin(xs[0]) * xs[1] + tape.exp(xs[0] * 0.1) / (1.0 + xs[1] * xs[1])


def array_program(p):
    A, s = p
    return np.sum(np.tanh(A @ A.T) * s) + tape.sin(s)


def branchy(xs):
    return xs[0] * xs[0] if xs[0] > 0 else -xs[0]


INNER = tape.trace(lambda x: np.sum(np.sin(x) * x), np.ones(1200))


def calling(x):
    return INNER(x * 2.0) + np.sum(x)


CASES = {
    "scalar": (lambda: tape.trace(scalar_program, [0.3, -1.2]), lambda: [0.7, 0.4]),
    "lambda, arrays": (lambda: tape.trace(lambda p: np.sum(np.exp(p) * p), RNG.normal(size=2000)),
                       lambda: RNG.normal(size=2000)),
    "array records, tree": (lambda: tape.trace(array_program, (np.full((30, 30), 0.1), 0.5)),
                            lambda: (RNG.normal(size=(30, 30)) * 0.1, 0.3)),
    "a call record": (lambda: tape.trace(calling, np.ones(1200)), lambda: RNG.normal(size=1200)),
    "dict": (lambda: tape.trace(lambda p: p["a"] * np.sum(np.exp(p["t"] * p["a"])), {"a": 0.5, "t": np.ones(5)}),
             lambda: {"a": RNG.normal(), "t": RNG.normal(size=5)}),
    "a gradient tape": (lambda: tape.trace(scalar_program, [0.3, -1.2]).grad_function(), lambda: [0.7, 0.4]),
}


def bits(F, x):
    """Every derivative of F at x, as arrays of numbers."""
    out = [F(x), *F.value_and_grad(x)] if F.n_outputs == 1 else [F(x), F.vjp(x, np.ones(F.n_outputs))]
    v = x
    out += [F.jvp(x, v), F.jacobian(x)]
    if F.n_outputs == 1:
        out += [F.hvp(x, v), F.hessian(x)]
    return list(_leaves(out))


def _leaves(tree):
    if isinstance(tree, (tuple, list, dict)):
        for item in (tree.values() if isinstance(tree, dict) else tree):
            yield from _leaves(item)
    else:
        yield np.asarray(tree, float)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_round_trip_gives_the_same_bits(name, how):
    make, point = CASES[name]
    F = make()
    G = pickle.loads(pickle.dumps(F)) if how == "pickle" else copy.deepcopy(F)
    assert isinstance(G, tape.Function) and G is not F
    for _ in range(2):  # the working arrays and caches are G's own: a second call reads no stale view
        x = point()
        for a, b in zip(bits(F, x), bits(G, x), strict=True):
            np.testing.assert_array_equal(a, b)
    assert G._lock is not F._lock


def test_the_branch_policy_goes_along():
    F = tape.trace(branchy, [0.5], on_branch_change="retrace")
    G = pickle.loads(pickle.dumps(F))  # a module-level f pickles, so the retrace goes along
    assert G.on_branch_change == "retrace" and G([-2.0]) == 2.0 and G.retraces == 1
    H = pickle.loads(pickle.dumps(tape.trace(branchy, [0.5])))
    with pytest.raises(tape.BranchChanged):
        H([-2.0])


def test_a_lambda_pickles_unless_it_must_retrace():
    F = tape.trace(lambda xs: xs[0] * xs[0] if xs[0] > 0 else -xs[0], [0.5])
    G = pickle.loads(pickle.dumps(F))  # "raise": the lambda is not needed, so not kept
    assert G([0.25]) == 0.0625
    with pytest.raises(ValueError, match="retrace"):
        G.on_branch_change = "retrace"
    F.on_branch_change = "retrace"
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError), match="lambda|local"):
        pickle.dumps(F)


def test_a_process_pool_maps_a_function():
    F = tape.trace(scalar_program, [0.3, -1.2])
    points = [[0.1 * k, 1.0 - 0.2 * k] for k in range(4)]
    with ProcessPoolExecutor(2) as pool:
        remote = list(pool.map(F.gradient, points))
    for x, g in zip(points, remote, strict=True):
        a, b = x
        expected = [math.cos(a) * b + 0.1 * math.exp(0.1 * a) / (1 + b * b),
                    math.sin(a) - math.exp(0.1 * a) * 2 * b / (1 + b * b) ** 2]
        np.testing.assert_allclose(g, expected, rtol=1e-14)
        np.testing.assert_array_equal(g, F.gradient(x))


def test_spawned_processes_and_joblib_map_a_function():
    """A Function crosses a spawn boundary (a fresh interpreter that imports tape, as on macOS and Windows)
    and joblib's loky workers, giving the same bits as at home."""
    import multiprocessing

    import joblib

    F = tape.trace(scalar_program, [0.3, -1.2])
    points = [[0.1 * k, 1.0 - 0.2 * k] for k in range(4)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        spawned = pool.map(F.gradient, points)
    loky = joblib.Parallel(n_jobs=2)(joblib.delayed(F.gradient)(x) for x in points)
    for x, a, b in zip(points, spawned, loky, strict=True):
        np.testing.assert_array_equal(a, F.gradient(x))
        np.testing.assert_array_equal(b, F.gradient(x))
