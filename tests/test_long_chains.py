"""A long chain of elementwise records is cut into fused runs and stretches of at most MEMBERS members: each one's
kernel is straight-line code per member, and a 200-step chain of 1,800 members in one run took LLVM over 8 GB (killed)
to compile. Cut, the chain keeps NumPy's steps' bits and the hand-derived gradient."""

import numpy as np
import pytest
from sameness import same_bits
from test_shaped import _by
from test_stretches import _headers, _run, _trace

import tape
from tape.kernels.shaped import MEMBERS
from tape.records import array_records
from tape.sweeps import compiled, fusion, stretches

A, D = 0.3, 0.1


def chain(steps):
    """Ten elementwise records a step, none of them a view: one group of 10 * steps members."""
    def f(u):
        for _ in range(steps):
            u = u - A * u * (u - 0.5) + D * (u * u - 2.0 * u + 1.0)
        return 0.5 * (u * u).sum()
    return f


def hand(u, steps):
    """f's value and gradient by hand: each step's derivative 1 - A (2u - 0.5) + D (2u - 2)."""
    slopes = []
    for _ in range(steps):
        slopes.append(1.0 - A * (2.0 * u - 0.5) + D * (2.0 * u - 2.0))
        u = u - A * u * (u - 0.5) + D * (u * u - 2.0 * u + 1.0)
    g = u.copy()
    for slope in reversed(slopes):
        g = g * slope
    return 0.5 * float((u * u).sum()), g


def test_a_long_chain_is_cut_into_runs_of_members(monkeypatch):
    monkeypatch.setattr(compiled, "kept", lambda s, runs: runs)  # (every run fused, not rows: compiled.kept)
    steps = 3 * MEMBERS // 10 + 1
    x = np.random.default_rng(1).uniform(-0.5, 0.5, 2000)
    F = tape.trace(chain(steps), x)
    F.value_and_grad(x)
    lengths = sorted(len(run.program[0]) for run in F._runs_first.values())
    assert lengths[-1] == MEMBERS and len(lengths) >= 3
    assert sum(lengths) >= 10 * steps - 1  # every member in a run (a last piece of one member runs as a record)


@pytest.mark.parametrize("most", [8, 7])
def test_runs_cut_keep_numpys_bits_and_the_hand_gradient(monkeypatch, most):
    monkeypatch.setattr(fusion, "MEMBERS", most)
    monkeypatch.setattr(fusion, "MADE", {})
    x = np.random.default_rng(2).uniform(-0.5, 0.5, 1100)
    got, F, called = _by(monkeypatch, "shaped", chain(3), x)
    runs = list(F._runs_first.values())
    assert max(len(run.program[0]) for run in runs) == most and len(runs) >= 30 // most
    assert all(run.shaped for run in runs) and {"forward", "reverse"} <= set(called)
    for a, b in zip(_by(monkeypatch, "numpy", chain(3), x)[0], got, strict=True):
        assert same_bits(a[1:], b[1:])
    value, grad = F.value_and_grad(x)
    want_value, want = hand(x, 3)
    np.testing.assert_allclose(value, want_value, rtol=1e-14)
    np.testing.assert_allclose(grad, want, rtol=1e-13, atol=1e-15)


def test_stretches_cut_keep_the_rows_bits_and_the_hand_gradient(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)
    monkeypatch.setattr(stretches.Stretch, "PAYBACK", 0.0)
    monkeypatch.setattr(stretches.Stretch, "made", {})
    monkeypatch.setattr(stretches, "MEMBERS", 6)
    monkeypatch.setattr(fusion, "FITS", np.zeros_like(fusion.FITS))  # no fused runs: the rows are the table's
    x = np.random.default_rng(3).uniform(-0.5, 0.5, 300)
    F, G = _trace(chain(3), x, monkeypatch, True, True), _trace(chain(3), x, monkeypatch, True, False)
    got = _run(F, x, monkeypatch, True, True)
    count, called = _headers(F)
    assert count >= 2 * (30 // 6) and called == count  # forward and back, every one by its kernel
    assert max(len(shape[1]) for shape in stretches.Stretch.made) == 6
    for a, b in zip(got, _run(G, x, monkeypatch, True, False), strict=True):
        assert same_bits(a, b)
    want_value, want = hand(x, 3)
    np.testing.assert_allclose(got[0], want_value, rtol=1e-14)
    np.testing.assert_allclose(got[1], want, rtol=1e-13, atol=1e-15)
