"""Rows moved up past rows of other sizes before stretches are found (tape/sweeps/places.py's hoisted): only
where they meet nothing they pass; tape.jit's mixture, whose small vectors are made between its big rows, then sweeps
back in one stretch, with the bits of its rows unmoved."""

from types import SimpleNamespace

import numpy as np
import pytest
from reference import central

import tape
from tape.compiled import array_calls
from tape.kernels import _array_driver as K
from tape.kernels.ops import OPCODE
from tape.sweeps import compiled, fusion, places, stretches
from tape.sweeps.driver import Plan

NEG, MUL = OPCODE["neg"], OPCODE["mul"]


def _row(op: int, record: int, out: int, size: int, views: list[tuple[int, int, int, int, int]]) -> np.ndarray:
    """An elementwise row of one axis: views (record, base, region, region size, wants), each of unit steps or, where
    its base reads one element for all, of step 0."""
    t = np.zeros(K.WIDTH, np.int64)
    t[K.KIND], t[K.OP], t[K.ROW], t[K.OUT], t[K.SIZE], t[K.NIN] = K.ELEMENTWISE, op, record, out, size, len(views)
    t[K.SHAPE:K.SHAPE + 4] = (1, 1, 1, size)
    t[K.OUT_STRIDES + 3] = 1
    for q, (rec, base, region, length, wants) in enumerate(views):
        f = K.VIEWS + K.VIEW * q
        t[f + K.REC], t[f + K.BASE], t[f + K.REGION], t[f + K.REGION_SIZE], t[f + K.WANT] = (rec, base, region, length,
                                                                                            wants)
        t[f + K.STRIDES + 3] = 0 if length == 1 or base < 0 else 1
    return t


# records: 0 a vector of 32 (offset 0), 1 a vector of 64 (offset 300); each row's output its own record
TAPE = SimpleNamespace(_plans=[Plan(0, 0, 0, (32,)), Plan(0, 1, 300, (64,)), Plan(0, 2, 100, (64,)),
                               Plan(0, 3, 200, (8,)), Plan(0, 4, 210, (8,)), Plan(0, 5, 164, (64,)),
                               Plan(0, 6, 120, (8,))], _in0=np.arange(7))
SMALL = _row(NEG, 3, 200, 8, [(0, 8, 0, 32, 1)])  # neg of the vector's elements 8..15
BIG = _row(NEG, 2, 100, 64, [(1, 300, 300, 64, 1)])
AFTER = _row(MUL, 5, 164, 64, [(2, 100, 100, 64, 1), (2, 100, 100, 64, 1)])


@pytest.mark.parametrize("small, moves", [
    (_row(NEG, 4, 210, 8, [(0, 16, 0, 32, 1)]), True),  # the vector's elements 16..23: apart
    (_row(NEG, 4, 210, 8, [(2, 100, 100, 64, 1)]), False),  # BIG's output read
    (_row(MUL, 4, 210, 8, [(0, 0, 0, 32, 1), (1, 300, 300, 64, 0)]), True),  # an element BIG reads, no adjoint sent
    (_row(MUL, 4, 210, 8, [(0, 16, 0, 32, 1), (1, 300, 300, 64, 1)]), False),  # BIG's input's adjoint sent to too
    (_row(NEG, 6, 120, 8, [(0, 16, 0, 32, 1)]), False),  # its output in BIG's region (recycled)
])
def test_a_row_moves_up_to_one_of_its_size_only_past_rows_it_does_not_meet(small, moves):
    rows = [SMALL, BIG, small, AFTER]
    got = [int(r[K.ROW]) for r in places.hoisted(TAPE, rows)]
    assert got == ([3, int(small[K.ROW]), 2, 5] if moves else [3, 2, int(small[K.ROW]), 5])


def test_no_row_moves_past_hoist_rows_nor_after_a_row_that_joins_no_stretch(monkeypatch):
    moved = _row(NEG, 4, 210, 8, [(0, 16, 0, 32, 1)])
    monkeypatch.setattr(places, "HOIST", 1)
    assert [int(r[K.ROW]) for r in places.hoisted(TAPE, [SMALL, BIG, AFTER, moved])] == [3, 2, 5, 4]
    monkeypatch.setattr(places, "HOIST", 8)
    unfit = SMALL.copy()
    unfit[K.OP] = OPCODE["exp"]  # (an op no stretch takes: not exact)
    assert [int(r[K.ROW]) for r in places.hoisted(TAPE, [unfit, BIG, moved, AFTER])] == [3, 2, 4, 5]


MIXTURE = 60, 8  # points, components


def mixture(th, x):
    k = MIXTURE[1]
    mu, logs, logits = th[:k], th[k:2 * k], th[2 * k:]
    logw = logits - tape.logsumexp(logits)
    z = (x - mu) * np.exp(-logs)
    return tape.logsumexp(logw - 0.5 * z * z - logs, axis=1).sum()


def _numpy(th, x):
    k = MIXTURE[1]
    mu, logs, logits = th[:k], th[k:2 * k], th[2 * k:]
    logw = logits - np.log(np.exp(logits - logits.max()).sum()) - logits.max()
    z = (x - mu) * np.exp(-logs)
    a = logw - 0.5 * z * z - logs
    return float((np.log(np.exp(a - a.max(1, keepdims=True)).sum(1)) + a.max(1)).sum())


def _gradients(monkeypatch, hoist: int, th: np.ndarray, x: np.ndarray) -> tuple[list, list]:
    """tape.jit's mixture's value and gradient over a few calls (its tables and kernels made at once), and the shapes
    of its back stretches."""
    monkeypatch.setattr(places, "HOIST", hoist)
    monkeypatch.setattr(compiled, "TAPE_RUNS", 256)  # (its records of 480 elements big: tables with back stretches)
    monkeypatch.setattr(fusion, "TAPE_RUNS", 256)
    monkeypatch.setattr(compiled, "_made", {})
    monkeypatch.setattr(fusion, "KEPT", {})
    monkeypatch.setattr(stretches.Stretch, "made", {})
    vg = tape.value_and_grad(tape.jit(mixture))
    got = [vg(th, x) for _ in range(4)]
    return got, [shape for shape in stretches.Stretch.made if shape[0]]


def test_jit_mixture_sweeps_back_in_one_stretch_with_its_rows_bits(monkeypatch):
    """The small vectors (exp(-logs)) made between x - mu and the rest move up: x - mu joins the back stretch, which
    then holds every row of the points' size and the logsumexp (before: none); the bits are the unmoved
    tables'."""
    monkeypatch.setattr(stretches.Stretch, "PAYBACK", 0.0)
    monkeypatch.setattr(array_calls, "PAYBACK", 0.0)
    points, k = MIXTURE
    rng = np.random.default_rng(3)
    x, th = rng.normal(size=(points, 1)) * 2.0, np.concatenate([rng.normal(size=k), rng.normal(size=k) * 0.3,
                                                                 rng.normal(size=k)])
    moved, shapes = _gradients(monkeypatch, places.HOIST, th, x)
    unmoved, before = _gradients(monkeypatch, 0, th, x)
    assert [len(shape[1]) for shape in shapes] == [7], shapes  # (its logsumexp taken in)
    assert not before  # (x - mu apart, the rest sends lines and a view back: refused, stretches.places.sends)
    for (v, g), (w, h) in zip(moved, unmoved, strict=True):
        assert np.float64(v).tobytes() == np.float64(w).tobytes() and g.tobytes() == h.tobytes()
    assert moved[-1][0] == pytest.approx(_numpy(th, x), rel=1e-12)
    np.testing.assert_allclose(moved[-1][1], central(lambda t: _numpy(t, x), th), rtol=1e-6, atol=1e-7)
