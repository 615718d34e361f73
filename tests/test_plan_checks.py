"""A plan table's checks by NumPy over the whole table (tape/sweeps/plans.py's _fine, on tape.trace's path) against
the row-by-row checks that name a bad row (_plan, which files take): on the tables of programs of every kind of
array record, each changed at random cells, _fine says a table is fine only where no row fails its check."""

from __future__ import annotations

import numpy as np
import pytest

import tape
from tape.errors import TapeFormatError
from tape.function import format as file_format
from tape.records import array_records
from tape.sweeps import plans as _plans


def programs():
    rng = np.random.default_rng(0)
    X, v = rng.normal(size=(6, 4)), rng.normal(size=40)
    yield lambda X: (X[[0, 1, 1]] * X[:3]).sum() + X[1, 2] * 2.0, X  # gather, elem, pack
    yield lambda X: (np.tanh(X @ X.T) + X.sum(axis=1, keepdims=True)).mean(), X  # matmul, broadcast, sums
    yield lambda X: (np.concatenate([X, X[::-1] * 2.0], axis=1) ** 2).sum() + X.T.max(), X  # join, views, extreme
    yield lambda u: (np.pad(u, 2, mode="wrap")[3:] * u[1:].sum()).sum() + np.cumsum(u).mean(), v  # scan
    yield lambda u: tape.where(u > 0.1, np.exp(u), u * 0.5).sum() + tape.logsumexp(u), v  # select, compare
    yield lambda u: (np.sort(u)[::2] * np.stack([u[:20], u[20:]]).sum(0)).sum(), v  # sort, stack
    yield lambda X: (X.reshape(4, 6) @ np.ones(6) + X[:, 1] @ X[:, 2]).sum(), X  # 1-d matmuls (wide)


CHANGES = (-2**62, -2**40, -1, 0, 1, 2, 3, 7, 2**40, 2**62)


@pytest.mark.parametrize("k", range(7))
def test_fine_where_no_row_fails_its_check(k, monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)  # array records of small arrays too
    f, x0 = list(programs())[k]
    a = file_format.arrays(tape.trace(f, x0))
    table, places, op, in0, in1 = a["plans"], a["plan_places"], a["op"], a["in0"], a["in1"]
    assert _plans._fine(table, places, op, in0, in1)
    decoded = _plans.decode(table, places, op, in0, in1)  # row by row
    assert decoded == _plans.decode(table, places, op, in0, in1, plans=decoded)
    rng = np.random.default_rng(k)
    fine = 0
    for trial in range(400):
        bad, bad_places = table.copy(), places.copy()
        for _ in range(int(rng.integers(1, 3))):
            if len(places) and rng.random() < 0.15:
                bad_places[rng.integers(len(places))] = rng.choice(CHANGES)
                continue
            row, col = int(rng.integers(len(table))), int(rng.integers(_plans.WIDTH))
            bad[row, col] = rng.choice([*CHANGES, bad[row, col] + 1, bad[row, col] - 1])
        try:
            _plans.decode(bad, bad_places, op, in0, in1)
            passes = True
        except TapeFormatError:
            passes = False
        found = _plans._fine(bad, bad_places, op, in0, in1)
        assert not found or passes, (trial, np.argwhere(bad != table), np.flatnonzero(bad_places != places))
        fine += found
    assert fine  # some changes keep a table fine (a stride of a one-element axis, ...)
    for row in np.flatnonzero(table[:, _plans.VIEWS[0].start] >= 0):  # a view of its own record, or a later one
        for record in (table[row, 1], table[-1, 1]):
            bad = table.copy()
            bad[row, _plans.VIEWS[0].start] = record
            assert not _plans._fine(bad, places, op, in0, in1)
            with pytest.raises(TapeFormatError):
                _plans.decode(bad, places, op, in0, in1)


def test_a_function_keeps_its_plans_while_its_tape_records_on():
    """Tape.function's Function keeps the tape's plans (checked by NumPy, not built again): a list of its own, so
    what the tape records afterwards reaches neither its plans nor its numbers."""
    t = tape.Tape()
    X = t.array(np.linspace(0.5, 1.5, 2000))
    y = (np.sin(X) * X).sum()
    F = t.function(X, y)
    x = np.linspace(-1.0, 1.0, 2000)
    want, n = F.value_and_grad(x), len(F._plans)
    for _ in range(3):
        Z = np.exp(X * 0.5) + X
    (Z * Z).sum()
    got = F.value_and_grad(x)
    assert len(F._plans) == n and got[0] == want[0] and np.array_equal(got[1], want[1])
    assert np.allclose(want[1], np.sin(x) + x * np.cos(x), rtol=1e-13, atol=1e-13)  # by hand


def test_rows_sharing_places_are_checked_against_each_reader(monkeypatch):
    """Gathers may share a range of places (np.pad's index in a loop): each row's record bounds them, the smaller
    one too."""
    monkeypatch.setattr(array_records, "SMALL", 1)
    u = np.linspace(0.5, 1.5, 40)
    a = file_format.arrays(tape.trace(lambda u: (u[[0, 1, 2, 4]] * (u[:4] * 2.0)[[0, 1, 2, 3]]).sum(), u))
    table, places, op, in0, in1 = a["plans"], a["plan_places"], a["op"], a["in0"], a["in1"]
    big, small = np.flatnonzero(table[:, 5] == 4)
    for reader, shared in ((big, small), (small, big)):
        bad = table.copy()
        bad[reader, 4] = table[shared, 4]
        fine = reader == big  # the big record's gather may read the small one's places, not the other way round
        assert _plans._fine(bad, places, op, in0, in1) == fine
        decoded = _plans.decode(bad, places, op, in0, in1) if fine else None
        if fine:
            assert decoded[big].places is decoded[small].places
        else:
            with pytest.raises(TapeFormatError):
                _plans.decode(bad, places, op, in0, in1)


@pytest.mark.parametrize("weights", ["odd", "colliding"])
def test_distinct_rows(weights, monkeypatch):
    """distinct's picks are the distinct rows, each row's pick equal to it, also where every hash collides."""
    if weights == "colliding":
        monkeypatch.setattr(_plans, "WEIGHTS", np.zeros(_plans.WIDTH, np.uint64))
    keys = np.random.default_rng(5).integers(-2, 3, (300, 4))
    pick, which = _plans.distinct(keys)
    assert np.array_equal(keys[pick][which], keys) and len(pick) == len(np.unique(keys, axis=0))
