"""map_value_and_grad on a real Dask cluster: two worker processes on loopback."""

from __future__ import annotations

import numpy as np
import pytest

import tape
from tape.function import distributed as _distributed

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as c:
        yield c


def f(x):
    return (tape.sigmoid(x[0] * x[1] + x[2]) - x[3]) ** 2 + tape.where(x[0] > 0.0, x[1], x[2])


def test_results_equal_the_local_call_in_order(client):
    F = tape.trace(f, np.zeros(4))
    X = np.random.default_rng(0).uniform(-1, 1, (1001, 4))
    values, grads = F.map_value_and_grad(X, client=client)
    local_values, local_grads = F.map_value_and_grad(X)
    np.testing.assert_array_equal(values, local_values)
    np.testing.assert_array_equal(grads, local_grads)
    empty_values, empty_grads = F.map_value_and_grad(np.zeros((0, 4)), client=client)
    assert empty_values.shape == (0,) and empty_grads.shape == (0, 4)


def test_every_map_takes_a_client_and_equals_the_local_map(client):
    rng = np.random.default_rng(1)
    X, V = rng.uniform(-1, 1, (203, 4)), rng.normal(size=(203, 4))
    scalar = tape.trace(f, np.zeros(4))
    vector = tape.trace(lambda x: [x[0] * x[1], tape.exp(x[2]) - x[3]], np.zeros(4))
    W = rng.normal(size=(203, 2))
    arrays = tape.trace(lambda x: (np.tanh(x * 0.5) ** 2).sum(), np.zeros(40))  # array records: point by point
    XA, VA = rng.normal(size=(9, 40)), rng.normal(size=(9, 40))
    cases = [(scalar.map, (X,)), (vector.map, (X,)), (scalar.map_jvp, (X, V)), (vector.map_jvp, (X, V)),
             (vector.map_vjp, (X, W)), (scalar.map_hvp, (X, V)), (arrays.map_value_and_grad, (XA,)),
             (arrays.map_hvp, (XA, VA)), (arrays.map, (XA,))]
    for method, args in cases:
        remote, local = method(*args, client=client), method(*args)
        for r, loc in zip(remote if isinstance(remote, tuple) else [remote],
                          local if isinstance(local, tuple) else [local], strict=True):
            np.testing.assert_array_equal(r, loc)
    with pytest.raises(TypeError, match="dask.distributed.Client"):
        scalar.map(X, client=object())


def piecewise(x):
    if x[0] < 0.0:
        return x[0] * x[0] * x[1]
    return tape.sin(x[0]) + x[1]


def test_branch_policy_applies_to_remote_points(client):
    X = np.array([[0.5, 1.0], [0.2, 2.0], [-0.3, 1.0], [0.1, 1.0]])
    with pytest.raises(tape.BranchChanged, match="point 2 of the 4"):
        tape.trace(piecewise, [0.5, 2.0]).map_value_and_grad(X, client=client)
    F = tape.trace(piecewise, [0.5, 2.0], on_branch_change="retrace")
    values, _ = F.map_value_and_grad(X, client=client)
    assert values[2] == pytest.approx(0.09) and F.retraces == 1
    V = np.ones_like(X)
    for method in ("map", "map_jvp", "map_hvp"):  # every map applies the policy to what workers report
        G = tape.trace(piecewise, [0.5, 2.0])
        with pytest.raises(tape.BranchChanged, match="point 2 of the 4"):
            getattr(G, method)(*((X,) if method == "map" else (X, V)), client=client)
    G = tape.trace(piecewise, [0.5, 2.0], on_branch_change="retrace")
    np.testing.assert_allclose(G.map_hvp(X, V, client=client)[2], [2 * 1.0 + 2 * -0.3, 2 * -0.3])


def test_a_failing_worker_is_a_clear_error(client, monkeypatch):
    F = tape.trace(f, np.zeros(4))
    monkeypatch.setattr(_distributed, "pack", lambda F: b"not a tape file")
    expected = r"chunk 0 of \d+ \(points 0 to \d+\) failed .*TapeFormatError"
    with pytest.raises(tape.DistributedError, match=expected):
        F.map_value_and_grad(np.zeros((10, 4)), client=client)


@pytest.mark.slow  # a cluster whose workers are killed and restarted
def test_workers_killed_during_a_map_are_survived_or_named():
    """U6: the Function is a task, not scattered data, so the scheduler recomputes it when workers die;
    the chunks are rerun and the result is the local one (or, past Dask's retries, a named KilledWorker)."""
    import os
    import threading
    import time

    from tape.bench import engines, programs

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as c:
        t, xs, out = engines.tape_record("rdag", programs.rdag_plan(20000))
        F = t.function(xs, out)
        X = np.random.default_rng(0).normal(size=(4000, len(xs)))

        def kill_workers():
            for _ in range(4):
                time.sleep(0.5)
                try:
                    c.run(os._exit, 1)
                except Exception:  # the workers are gone before they answer
                    pass

        killer = threading.Thread(target=kill_workers)
        killer.start()
        try:
            values, grads = F.map_value_and_grad(X, client=c)
            np.testing.assert_array_equal(grads, F.map_value_and_grad(X)[1])
        except tape.DistributedError as exc:
            assert "KilledWorker" in str(exc) and "forgotten" not in str(exc)
        finally:
            killer.join()


def test_a_Function_with_call_records_travels_with_its_callees(client):
    inner = tape.trace(lambda x: [x[0] * tape.sin(x[1]), x[1] + x[2] * x[3], x[2], x[3]], np.zeros(4))
    F = tape.trace(lambda x: f(inner(inner(x))), np.zeros(4))
    X = np.random.default_rng(2).uniform(-1, 1, (101, 4))
    values, grads = F.map_value_and_grad(X, client=client)
    local_values, local_grads = F.map_value_and_grad(X)
    np.testing.assert_array_equal(values, local_values)
    np.testing.assert_array_equal(grads, local_grads)
