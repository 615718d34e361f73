"""What a Function's replay of array records finds once and keeps (tape/function/array_replay.py's slots, the seed of
value_and_grad, arguments.prepare's check of a plain array, a fused run's bound kernels): the same answers as the
general path, and nothing kept past the install it was found for."""

import numpy as np
import pytest

import tape
from tape.function import array_replay
from tape.records import array_records
from tape.sweeps import compiled, fused_runs


@pytest.fixture(autouse=True)
def arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def bits(result):
    return b"|".join(np.asarray(r, np.float64).tobytes() for r in (result if isinstance(result, tuple) else (result,)))


def branching(x):
    """Two programs of different array records (and arenas) by the sign of x[0]."""
    if x[0] > 0:
        return (np.tanh(x) * x).sum()
    return (np.sin(x[::-1]) @ np.exp(x) + (x * x * x).sum()) * 0.5


def test_slots_found_once_do_not_survive_a_retrace():
    """Input, output and adjoint slots are views of the arenas of one install: after a retrace (a new install, other
    arenas) each call equals a Function traced afresh at its point."""
    a, b = np.linspace(0.1, 1.0, 6), np.linspace(-1.0, 0.5, 6)
    F = tape.trace(branching, a, on_branch_change="retrace")
    for p in (a, a * 2, b, b * 3, a, b):
        assert bits(F.value_and_grad(p)) == bits(tape.trace(branching, p).value_and_grad(p))
        assert bits(F.vjp(p, [0.5])) == bits(tape.trace(branching, p).vjp(p, [0.5]))
    assert F.retraces == 3


def test_an_input_the_sweep_did_not_reach_gets_zeros_not_an_old_adjoint():
    def f(x):
        return [(x * x).sum(), (np.ones(3) * 2.0).sum() + 1.0]

    x = np.array([1.0, -2.0, 3.0])
    F = tape.trace(f, x)
    assert bits(F.vjp(x, [1.0, 0.0])) == bits(2 * x)
    assert bits(F.vjp(x, [0.0, 1.0])) == bits(np.zeros(3))  # the first call's adjoint is still in the arena


@pytest.mark.parametrize("f", [lambda x: (np.tanh(x) * x).sum(), lambda x: np.tanh(x) * x,
                               lambda x: np.tanh(x[:1]) * 3.0, lambda x: [(x * x).sum(), np.sin(x).sum()]])
def test_the_seed_of_ones_is_the_general_seeds(f):
    """sweep_reverse's seed for F._ones (written once found) against driver.seed's for the same weights."""
    x = np.array([0.5, -1.5, 2.0, -0.0])
    F = tape.trace(f, x)
    assert F._plans
    for p in (x, -x, x * 1e300):
        F(p)
        with np.errstate(all="ignore"):
            got = array_replay.sweep_reverse(F, F._ones)
            want = array_replay.sweep_reverse(F, F._ones.copy())
        assert bits(got) == bits(want)
        if F.n_outputs == 1:
            assert bits(F.value_and_grad(p)[1]) == bits(F.vjp(p, np.ones(1)))


def test_has_nan():
    assert not array_replay.has_nan(np.zeros(0))
    assert not array_replay.has_nan(np.array([np.inf, -np.inf, -0.0, 1e308]))
    for at in (0, 3, 6):
        a = np.arange(7.0)
        a[at] = np.nan
        assert array_replay.has_nan(a)
    assert array_replay.has_nan(np.array([np.inf, -np.nan, -np.inf]))


def test_a_plain_array_takes_the_quick_check_with_the_same_answers_and_errors():
    F = tape.trace(lambda X: (np.tanh(X) @ X.T).sum(), np.ones((3, 2)))
    X = np.linspace(-1, 1, 6).reshape(3, 2)
    want = bits(F.value_and_grad(X))
    for same in (X.ravel(), X.astype(">f8"), np.asfortranarray(X), X.tolist()):
        assert bits(F.value_and_grad(same)) == want
    whole = np.arange(6).reshape(3, 2)
    assert bits(F.value_and_grad(whole)) == bits(F.value_and_grad(whole.astype(float)))
    assert F.value_and_grad(X.ravel())[1].shape == (3, 2)
    with pytest.raises(ValueError, match=r"expected inputs of shape \(3, 2\), got shape \(2, 3\)"):
        F.value_and_grad(X.T.copy())
    with pytest.raises(TypeError, match="real numbers"):
        F.value_and_grad(X.astype(complex))


def test_a_plain_array_after_a_structured_call_gets_a_plain_gradient():
    F = tape.trace(lambda d: (d["a"] * d["b"]).sum(), {"a": np.ones(2), "b": np.full(2, 2.0)})
    g = F.gradient({"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])})
    assert isinstance(g, dict)
    g = F.gradient(np.array([1.0, 2.0, 3.0, 4.0]))
    assert isinstance(g, np.ndarray) and bits(g) == bits([3.0, 4.0, 1.0, 2.0])


def test_a_runs_bound_kernels_give_way_when_shaped_kernels_are_off(monkeypatch):
    """Once bound (the shape's kernels ready), a run's calls skip Run.forward and Run.back; with fused_runs.SHAPED off
    they go back to the interpreted kernels, with the same bits."""
    monkeypatch.setattr(compiled, "ready", lambda s, runs: False)  # runs stay fused (not table rows)
    monkeypatch.setattr(fused_runs.Shaped, "eager", True)
    f = lambda x: (np.tanh(x) * x + x * 3.0).sum()  # noqa: E731
    x = np.linspace(-2, 2, 50)
    F = tape.trace(f, x)
    assert F._runs_first
    want = [bits(F.value_and_grad(p)) for p in (x, -x, x * 7)]
    calls = []
    for name in ("forward", "back"):
        method = getattr(fused_runs.Run, name)
        monkeypatch.setattr(fused_runs.Run, name, lambda self, *a, _m=method, _n=name: calls.append(_n) or _m(self, *a))
    assert [bits(F.value_and_grad(p)) for p in (x, -x, x * 7)] == want
    assert calls == []  # the bound kernels ran
    monkeypatch.setattr(fused_runs, "SHAPED", False)
    assert [bits(F.value_and_grad(p)) for p in (x, -x, x * 7)] == want
    assert calls == ["forward", "back"] * 3


def test_a_bound_run_with_a_member_read_outside_takes_the_general_kernels_where_not_every_adjoint_came(monkeypatch):
    """y is read outside its run (y[0]): a pass that does not reach y[0] (w = (1, 0)) or not the sum (w = (0, 1))
    gives the run part of its adjoints, which the shape's kernels do not take (Run._full)."""
    monkeypatch.setattr(compiled, "ready", lambda s, runs: False)
    monkeypatch.setattr(fused_runs.Shaped, "eager", True)

    def g(x):
        y = np.tanh(x) * x
        return [(y * 3.0).sum(), y[0] * 2.0]

    x = np.linspace(-1, 1, 5)
    G = tape.trace(g, x)
    assert any(run.watched for run in G._runs_first.values())
    slope = np.tanh(x) + x * (1 - np.tanh(x) ** 2)
    for w in ([1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.5, 2.0]):
        want = 3.0 * w[0] * slope + np.eye(5)[0] * 2.0 * w[1] * slope
        np.testing.assert_allclose(G.vjp(x, w), want, rtol=1e-14, atol=1e-300)


def test_a_checked_call_sweeps_back_without_runs_and_names_the_first_non_finite_adjoint():
    """check_finite asked once a call: its reverse sweep keeps every member's adjoint, so the report names the member
    where the adjoint first overflows (record #2), not the input it reaches."""
    F = tape.trace(lambda x: (x * 1e-300 * 1e200 * 1e200).sum(), np.ones(4))
    F.check_finite = True
    for _ in range(2):
        with pytest.raises(tape.NonFiniteError, match=r"adjoint inf first appears at element \(0,\) of record #2 "):
            F.value_and_grad(np.ones(4))


@pytest.mark.parametrize("small", [1, 10**12])
def test_a_strided_array_is_copied_into_order_as_before(monkeypatch, small):
    """A Function of scalar records (SMALL 10^12) hands the point to kernels that take it C-ordered (a strided one
    compiled anew, or refused); one of array records copies it in."""
    monkeypatch.setattr(array_records, "SMALL", small)
    F = tape.trace(lambda v: (tape.sigmoid(v[0] * v[1] + v[2]) * np.tanh(v)).sum(), np.ones(3))
    assert bool(F._plans) == (small == 1)
    wide = np.linspace(-1, 1, 6)
    want = bits(F.value_and_grad(wide[::2].copy()))
    assert bits(F.value_and_grad(wide[::2])) == want
    assert F._at_point.flags.c_contiguous
