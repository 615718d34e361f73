"""tape.jit's joins and pads written by compiled code (array_records.py's write_moved: the elements copied, as NumPy's
concatenate and pad copy them), and the tape's plans as the plan rows f wrote (array_plans.Pending: a Plan made only
where one is asked for): values against NumPy's own, tapes against the Python recorder's bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from test_jit_array_records import plans, recorded, same_tapes
from test_jit_arrays import namespace

import tape
from tape.compiled import array_plans
from tape.records import array_records


@pytest.fixture(autouse=True)
def small_arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)  # (short arrays as array records)

MOVES = '''
def f(u, b0, a0, b1, a1, m):         # np.pad of a 1-d strided view, its modes by m
    v = u[::-2]
    if m == 0:
        return np.pad(v, (b1, a1), "edge")
    if m == 1:
        return np.pad(v, (b1, a1), "reflect")
    if m == 2:
        return np.pad(v, (b1, a1), "symmetric")
    return np.pad(v, (b1, a1), "wrap")
'''
MOVES2 = MOVES.replace("1-d strided view", "2-d record").replace("v = u[::-2]", """n = u.shape[0] // 6
    v = u[:3 * n].reshape(3, n)""").replace("(b1, a1)", "((b0, a0), (b1, a1))")
MODES = ("edge", "reflect", "symmetric", "wrap")

JOINS = '''
def f(u, k, m):                      # joins of strided views: 1-d, 2-d along either axis, three at a time
    A = u[:4 * k].reshape(4, k)
    if m == 0:
        return np.concatenate((A[:, ::-1], A[:, 1:2], A[::-1, ::2]), axis=1)
    return np.concatenate((A[1:2], A[::-2], A[:, ::-1]), axis=0)
'''
JOINS1 = '''
def f(u, k):
    return np.concatenate((u[::-3], u[:k], u[1::2]))
'''


def listed(ps):
    return [(*p[:6], p.places.tolist(), p.wide) for p in ps]


@pytest.fixture(scope="module")
def moves():
    return namespace(MOVES, arrays=True)


@pytest.fixture(scope="module")
def moves2():
    return namespace(MOVES2, arrays=True)


@pytest.mark.parametrize("m", range(8))
def test_pads_of_short_axes_and_wide_widths_copy_numpy_s_elements(moves, moves2, m):
    """Every copying mode, 1-d (m < 4) and 2-d, axes of 1 to 4 elements padded by up to 3 times their length: np.pad's
    values, and the Python recorder's tape (records, plans with their places, arena) bit for bit."""
    py, jn = moves if m < 4 else moves2
    rng = np.random.default_rng(m)
    for size in (2, 6, 8, 12, 24):  # v of 1, 3, 4, 6, 12 elements (2-d: 3 x 0 .. 3 x 4, C order)
        x0 = rng.normal(size=size)
        v, n = x0[::-2], size // 6
        if m >= 4 and n == 0:  # (an empty record: NumPy refuses to pad it)
            continue
        for b0, a0, b1, a1 in [(0, 0, 0, 0), (1, 0, 0, 2), (0, 3, 3, 0), (2, 5, 7, 1), (9, 1, 2, 10), (4, 4, 12, 11)]:
            data = (b0, a0, b1, a1, m % 4)
            want = np.pad(v, (b1, a1), MODES[m]) if m < 4 else np.pad(x0[:3 * n].reshape(3, n), ((b0, a0), (b1, a1)),
                                                                      MODES[m - 4])
            _, y = same_tapes(py["f"], jn["f"], x0, data)
            assert np.array_equal(y.value, want), (size, data)


def test_joins_of_strided_views_copy_numpy_s_elements():
    (py, jn), (py1, jn1) = namespace(JOINS, arrays=True), namespace(JOINS1, arrays=True)
    x0 = np.random.default_rng(3).normal(size=40)
    for k in (2, 3, 5, 10):
        A = x0[:4 * k].reshape(4, k)
        _, B = same_tapes(py["f"], jn["f"], x0, (k, 0))
        _, C = same_tapes(py["f"], jn["f"], x0, (k, 1))
        _, y = same_tapes(py1["f"], jn1["f"], x0, (k,))
        assert np.array_equal(B.value, np.concatenate((A[:, ::-1], A[:, 1:2], A[::-1, ::2]), axis=1))
        assert np.array_equal(C.value, np.concatenate((A[1:2], A[::-2], A[:, ::-1]), axis=0))
        assert np.array_equal(y.value, np.concatenate((x0[::-3], x0[:k], x0[1::2])))


PENDING = """
def f(u, c):                         # a gather of a record f wrote (after a scalar record: records are not plans)
    return np.pad(np.tanh(u * u[0, 1]), (2, 3), "reflect") * c
"""


def test_plans_are_made_only_where_asked(monkeypatch):
    """After a call, the tape's plans are the rows f wrote: none made a Plan until one is read (a gather's with its
    input's, whose whole region it reads), all once they are walked; a rewind cuts the rows, or the plans before
    them."""
    py, jn = namespace(PENDING, arrays=True)
    made = []
    plan_of = array_plans.plan_of
    monkeypatch.setattr(array_plans, "plan_of", lambda *args: made.append(args[0][1]) or plan_of(*args))
    x0 = np.random.default_rng(5).normal(size=(4, 6))
    tp, _ = recorded(py["f"], x0, (1.5,))

    def taped():
        t = tape.Tape()
        return t, jn["f"](t.array(x0), 1.5)

    t, y = taped()
    count, rows = len(t._plans), list(t._plan_rows)
    assert type(t._plans) is array_plans.Pending and count == len(tp._plans) >= 4 and made == []
    assert t._plans[-1].row == y._view.record == rows[-1] and made == [rows[-1]]
    gather = next(k for k in range(count) if tp._plans[k].name == "gather")
    assert t._plans[gather].places.size and made == [rows[-1], rows[gather - 1], rows[gather]]  # (its input's first)
    assert t._plans[gather].inputs[0].shape == t._plans[gather - 1].shape  # (its input whole, as Python's)
    for k in (count, -count - 1):
        with pytest.raises(IndexError):
            t._plans[k]
    assert listed(t._plans[1:]) == listed(tp._plans[1:]) and len(made) == count - 1  # (xs's: Python's)
    assert t._plans.listed and plans(t) == plans(tp)
    t.rewind(rows[2])
    assert len(t._plans) == 2 and listed(t._plans) == listed(tp._plans[:2])
    t, _ = taped()
    made.clear()
    array_plans._MADE.clear()  # (else the first tape's Plan of that row: test_plans_of_equal_rows_are_made_once)
    t.rewind(rows[2])
    assert len(t._plans) == 2 and not t._plans.listed and made == [rows[2]]  # (the first cut: the arena's top)
    assert listed(t._plans) == listed(tp._plans[:2])
    t, _ = taped()
    t.rewind(rows[0])
    assert len(t._plans) == 0 and t._plans == []


def test_plans_compare_by_their_rows(moves2, monkeypatch):
    """Two tapes of one call's structure have equal plans, compared by their rows (no Plan made): a pad of another
    mode or widths, of the same shape, has other plans; a plan recorded after the rows is compared too."""
    py, jn = moves2
    x0 = np.random.default_rng(6).normal(size=24)

    def taped(*data):
        t = tape.Tape()
        return t, jn["f"](t.array(x0), *data)

    (t1, y1), (t2, _), (t3, _), (t4, _) = taped(1, 2, 3, 4, 2), taped(1, 2, 3, 4, 2), taped(1, 2, 3, 4, 3), taped(
        2, 1, 3, 4, 2)
    plan_of = array_plans.plan_of
    monkeypatch.setattr(array_plans, "plan_of", None)  # (none made from here)
    assert t1._plans == t2._plans and t1._plans == t1._plans.copy()
    assert t1._plans != t3._plans and t1._plans != t4._plans
    assert t1._plans.at_least(1) == len(t1._plans) == 2 and t1._plans.at_least(67) == 0 and t1._plans.at_least(66) == 1
    monkeypatch.setattr(array_plans, "plan_of", plan_of)
    tp, yp = recorded(py["f"], x0, (1, 2, 3, 4, 2))
    y1 * 2.0, yp * 2.0  # noqa: B018  # a Python plan after the rows: all made, compared as lists
    assert t1._plans.listed and plans(t1) == plans(tp) and t1._plans != t2._plans
