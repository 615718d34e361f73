"""A compiled table runs on past a small vector made between its rows (compiled.grouped): a pack of scalar records or a
stretch of scalar records whose regions meet none of the table's rows runs before the table forward and after it back,
so the mixture's sweeps are one table each and its forward one stretch. Values and gradients are NumPy's steps' bit for
bit (NaN for NaN), replayed and recorded afresh, at edge values; an item that reads a row's output still ends the
table; packs keep regions of their own (layout.compact)."""

import numpy as np
import pytest
from sameness import edge_points, same_bits

import tape
from tape.kernels.stretched import REDUCED
from tape.sweeps import compiled, layout, steps, stretches

LSE = tape.logsumexp


def mixture(u):  # the bench's mixture: 160 points, 9 components (the means, scales, weights: packs between rows)
    mu, logs, logits = u[:9], u[9:18], u[18:27]
    x = np.linspace(-3.0, 3.0, 160).reshape(160, 1)
    logw = logits - LSE(logits)
    z = (x - mu) * np.exp(-logs)
    return LSE(logw - 0.5 * z * z - logs, axis=1).sum()


def softmax(u):  # cross-entropy of a softmax over rows: scores (120, 10) shifted and scaled by packs of 10
    X = np.cos(np.arange(1200.0)).reshape(120, 10)
    labels = np.eye(10)[np.arange(120) % 10]
    scores = (X * np.exp(u[:10]) + u[10:20]) * 2.0
    return -((scores - LSE(scores, axis=1, keepdims=True)) * labels).sum()


def normalised(u):  # rows centred on their means, scaled per column by a pack, then a squared loss
    X = np.sin(np.arange(1200.0)).reshape(100, 12) * 3.0
    centred = X * u[:12] - (X * u[:12]).mean(axis=1, keepdims=True)
    y = centred * np.exp(u[12:24]) + u[24:36]
    return (y * y).sum() * 0.5


def reading(u):  # a small vector made of a row's elements between rows: it must run after that row
    X = np.cos(np.arange(1600.0)).reshape(160, 10)
    y = X * u[:10]
    w = u[10:20] * y[3, 4] + y[5, 6]  # (scalar records reading y's elements, packed)
    return ((y - w) * y).sum()


PROGRAMS = {"mixture": mixture, "softmax": softmax, "normalised": normalised, "reading": reading}
def _tables(F):
    """The sizes (rows) of F's compiled tables, by sweep."""
    return {key[0]: [len(call.args[1]) for call in sweep.calls if getattr(call, "func", None) in
                     (compiled.forward, compiled.reverse)]
            for key, sweep in F._steps.items() if isinstance(key, tuple) and isinstance(sweep, steps.Sweep)}


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    monkeypatch.setattr(stretches.Stretch, "PAYBACK", 0.0)  # stretch kernels compiled at a table's first sweep


@pytest.mark.parametrize("name", PROGRAMS)
def test_tables_past_small_vectors_give_numpys_bits(name, monkeypatch):
    f, x = PROGRAMS[name], np.random.default_rng(7).normal(size=36) * 0.5
    ways = {}
    for driven in (True, False):
        monkeypatch.setattr(compiled, "ready", lambda s, runs, driven=driven: driven)
        ways[driven] = tape.trace(f, x)
    for point in edge_points(x):
        got = []
        for driven in (True, False):
            monkeypatch.setattr(compiled, "ready", lambda s, runs, driven=driven: driven)
            with np.errstate(all="ignore"):
                got.append(ways[driven].value_and_grad(point))
        assert all(same_bits(a, b) for a, b in zip(*got, strict=True)), point[:4]
    assert _tables(ways[False]) == {"forward": [], "reverse": []}


def test_the_mixture_sweeps_one_table_each(monkeypatch):
    """Forward: the logits' logsumexp (the weights read it: a table of its own), then one table of every large row;
    back the same; its forward stretch has the six elementwise rows and, taken in as a last member, the logsumexp of the
    last along its lines (stretched.REDUCED)."""
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    monkeypatch.setattr(stretches.Stretch, "made", {})
    F = tape.trace(mixture, np.random.default_rng(8).normal(size=27))
    F.value_and_grad(np.random.default_rng(9).normal(size=27))
    assert _tables(F) == {"forward": [1, 9], "reverse": [9, 1]}
    assert any(not s.shape[0] and len(s.shape[1]) == 7 and s.shape[1][-1][0] == REDUCED and s.address
               for s in stretches.Stretch.made.values())


def test_a_vector_reading_a_row_ends_the_table(monkeypatch):
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    F = tape.trace(reading, np.ones(20))
    F.value_and_grad(np.full(20, 0.5))
    assert len(_tables(F)["forward"]) == 2


@pytest.mark.parametrize("name", PROGRAMS)
def test_afresh_tables_past_small_vectors_give_numpys_bits(name, monkeypatch):
    """tape.value_and_grad recorded afresh: its reverse by tables (compiled.tape_reverse) is NumPy's steps'."""
    f, x = PROGRAMS[name], np.random.default_rng(10).normal(size=36) * 0.5
    monkeypatch.setattr(compiled._gate, "ready", lambda: True)
    monkeypatch.setattr(compiled, "_made", {})  # (cleared before NumPy's steps: a small tape takes the tables kept)
    g = tape.value_and_grad(f)
    for point in edge_points(x):
        got = []
        for few in (0, 10 ** 12):
            monkeypatch.setattr(compiled, "FEW", few)
            compiled._made.clear()
            with np.errstate(all="ignore"):
                got.append(g(point))
        assert all(same_bits(a, b) for a, b in zip(*got, strict=True)), point[:4]


def test_packs_keep_regions_of_their_own():
    F = tape.trace(mixture, np.ones(27))
    packs = [p for p in F._plans if layout.PACK[p.code]]
    assert len(packs) >= 4
    others = [p for p in F._plans if p not in packs]
    for p in packs:
        assert all(q.offset + q.size <= p.offset or p.offset + p.size <= q.offset for q in F._plans if q is not p), (
            p, others)
