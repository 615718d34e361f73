"""map_value_and_grad on a real Dask cluster: two worker processes on loopback."""

from __future__ import annotations

import numpy as np
import pytest

import tape
from tape import _distributed

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


def test_a_failing_worker_is_a_clear_error(client, monkeypatch):
    F = tape.trace(f, np.zeros(4))
    monkeypatch.setattr(_distributed, "pack", lambda F: b"not a tape file")
    expected = r"chunk 0 of \d+ \(points 0 to \d+\) failed .*TapeFormatError"
    with pytest.raises(_distributed.DistributedError, match=expected):
        F.map_value_and_grad(np.zeros((10, 4)), client=client)
