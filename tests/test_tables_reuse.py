"""A tape's reverse by the compiled tables reuses the tables and walk of the last tape of the same structure
(tape/sweeps/compiled.py's Made): only where its plans, records, borrowed records and settings are all equal, and then
with the bits of tables made afresh. Each pair below records as many records and plans (the same key), differing in
one thing that must not be reused: one op, one shape, one view, one gather's places, one scalar record's input, a
borrowed record, a setting. Values (constants) are not structure: those pairs reuse and still give their own bits."""

import numpy as np
import pytest

import tape
from tape.records import array_records
from tape.sweeps import compiled, encoding, fusion, plans

RNG = np.random.default_rng(26)
X = RNG.uniform(0.2, 1.5, 24)
C1, C2 = RNG.normal(size=24), RNG.normal(size=24)
ONE = np.array([0, 3, 5, 8, 9, 10, 11, 12, 13, 14, 15, 16])
TWO = np.array([1, 3, 5, 8, 9, 10, 11, 12, 13, 14, 15, 16])

DIFFER = {  # (f, g): the same number of records and plans, one plan or record different
    "op": (lambda x: (np.tanh(x) * x).sum(), lambda x: (np.sin(x) * x).sum()),
    "shape": (lambda x: (np.tanh(x.reshape(4, 6)).sum(0) ** 2).sum(),
              lambda x: (np.tanh(x.reshape(6, 4)).sum(0) ** 2).sum()),
    "view": (lambda x: (np.tanh(x[::2]) * x[1::2]).sum(), lambda x: (np.tanh(x[1::2]) * x[::2]).sum()),
    "strides": (lambda x: (np.tanh(x[:12]) * x[:12]).sum(), lambda x: (np.tanh(x[::2]) * x[:12]).sum()),
    "places": (lambda x: (np.exp(x)[ONE] * x[:12]).sum(), lambda x: (np.exp(x)[TWO] * x[:12]).sum()),
    "scalar input": (lambda x: (np.tanh(x) * (x[0] * x[1])).sum(), lambda x: (np.tanh(x) * (x[0] * x[2])).sum()),
    "axis": (lambda x: (np.exp(x.reshape(4, 6)).sum(0) ** 2).sum(), lambda x: (np.exp(x.reshape(4, 6)).sum(1)
                                                                              ** 2).sum()),
}
ALIKE = {  # the same structure, other values: reused
    "array constant": (lambda x: (np.tanh(x) * C1).sum(), lambda x: (np.tanh(x) * C2).sum()),
    "number": (lambda x: (np.tanh(x * 2.0) * x).sum(), lambda x: (np.tanh(x * 3.0) * x).sum()),
    "same places": (lambda x: (np.exp(x)[ONE] * x[:12]).sum(), lambda x: (np.exp(x)[ONE.copy()] * x[:12]).sum()),
}


@pytest.fixture
def tables(monkeypatch):
    """Every tape's reverse by the tables (kernels ready, FEW 0), none kept before; a list that counts those made."""
    monkeypatch.setattr(array_records, "SMALL", 1)
    monkeypatch.setattr(compiled, "FEW", 0)
    monkeypatch.setattr(compiled._gate, "ready", lambda: True)
    monkeypatch.setattr(compiled, "_made", {})
    made = []
    of = compiled.Made.of
    monkeypatch.setattr(compiled.Made, "of", classmethod(lambda cls, *a: made.append(1) or of(*a)))
    return made


def _afresh(f, x):
    """f's value and gradient with the tables made for it."""
    compiled._made.clear()
    return tape.value_and_grad(f)(x)


def _same(a, b):
    assert np.float64(a[0]).tobytes() == np.float64(b[0]).tobytes()
    assert np.array_equal(a[1], b[1], equal_nan=True) and (np.signbit(a[1]) == np.signbit(b[1])).all()


def _after(f, g, x):
    """g's value and gradient called right after f's (whose tables are then kept), and how many tables g made."""
    compiled._made.clear()
    tape.value_and_grad(f)(x)
    assert len(compiled._made) == 1
    before = len(compiled._made)
    key = next(iter(compiled._made))
    got = tape.value_and_grad(g)(x)
    assert len(compiled._made) == before and next(iter(compiled._made)) == key  # the same key: fits decided
    return got


@pytest.mark.parametrize("pair", DIFFER)
def test_a_tape_that_differs_in_one_thing_makes_its_own(pair, tables):
    f, g = DIFFER[pair]
    for x in (X, np.where(X > 1.0, np.nan, X), -X):
        want = _afresh(g, x)
        del tables[:]
        _same(_after(f, g, x), want)
        assert len(tables) == 2  # f's and g's
        del tables[:]
        _same(tape.value_and_grad(g)(x), want)  # g again: its own kept
        assert not tables


@pytest.mark.parametrize("pair", DIFFER)
def test_tapes_of_one_size_and_two_structures_in_turn_keep_both(pair, tables):
    """f's and g's tapes share a key (records, plans, top) but not a structure: called in turn (the Python recorder's
    and tape.jit's tapes of one f), each keeps its own tables (compiled.SHARING), made once."""
    f, g = DIFFER[pair]
    want = [_afresh(f, X), _afresh(g, X)]
    compiled._made.clear()
    del tables[:]
    for k in (0, 1, 0, 1, 0, 1):
        _same(tape.value_and_grad((f, g)[k])(X), want[k])
    assert len(tables) == 2 and len(compiled._made) == 1 and len(next(iter(compiled._made.values()))) == 2


@pytest.mark.parametrize("pair", ALIKE)
def test_a_tape_of_the_same_structure_reuses_with_its_own_values(pair, tables):
    f, g = ALIKE[pair]
    for x in (X, np.where(X > 1.0, np.inf, X), X * 1e300):
        want = _afresh(g, x)
        del tables[:]
        _same(_after(f, g, x), want)
        assert len(tables) == 1  # f's only


def test_a_borrowed_record_or_a_setting_is_structure(tables, monkeypatch):
    f = DIFFER["op"][0]
    want = _afresh(f, X)
    key = next(iter(compiled._made))
    made = compiled._made[key][-1]
    compiled._made[key] = [made._replace(same=(made.same[0], (1,), *made.same[2:]))]
    del tables[:]
    _same(tape.value_and_grad(f)(X), want)
    assert tables
    compiled._made[key] = [made._replace(same=((0,), *made.same[1:]))]
    del tables[:]
    _same(tape.value_and_grad(f)(X), want)
    assert tables
    monkeypatch.setattr(encoding, "BROADCAST", 1)
    del tables[:]
    tape.value_and_grad(f)(X)
    assert tables


def test_plans_compared_field_by_field():
    p = compiled.driver.Plan(1, 2, 3, (4,), places=np.arange(4))
    q = p._replace(places=np.arange(4))
    assert plans.same_plans([p, p], [p, q])
    assert not plans.same_plans([p, p], [p, q._replace(places=np.arange(1, 5))])
    assert not plans.same_plans([p, p], [p, q._replace(wide=(2, 2))])
    assert not plans.same_plans([p, p], [p])
    assert not plans.same_plans([p], [p._replace(offset=4)])
    empty = p._replace(places=np.zeros(0, np.int64))
    assert plans.same_plans([empty], [empty._replace(places=np.zeros(0, np.int64))])


def test_at_most_made_kept(tables):
    for k in range(compiled.MADE + 3):
        tape.value_and_grad(lambda x, k=k: sum((np.tanh(x) * x).sum() for _ in range(k + 1)))(X)
    assert len(compiled._made) == compiled.MADE


def _reversed(t, y, X, fused):
    t._reverse(t._resolve(y), False, fused)
    return np.float64(0.0), X.grad


def test_the_walk_is_made_again_where_the_runs_differ(tables, monkeypatch):
    """One tape swept with its fused runs (kept: a sum's) and without: the same structure, other runs."""
    t = tape.Tape()
    X = t.array(RNG.uniform(0.2, 1.5, 2 ** 16))
    y = (np.tanh(X * 0.5) * X + X).sum()
    for order in ((True, False), (False, True)):
        want = {fused: (compiled._made.clear(), _reversed(t, y, X, fused))[1] for fused in order}
        compiled._made.clear()
        for fused in order * 2:
            _same(_reversed(t, y, X, fused), want[fused])
            made = next(iter(compiled._made.values()))[-1]
            assert bool(made.marks) == made.fused == fused  # (runs kept in the walk, back stretches)
    assert len(compiled._made) == 1


def test_a_sweep_from_another_record_makes_its_own(tables):
    t = tape.Tape()
    X_ = RNG.uniform(0.2, 1.5, 24)
    X = t.array(X_)
    ys = [(np.tanh(X) * X).sum(), (np.sin(X) * X).sum()]
    want = [(compiled._made.clear(), t.gradient(y, X))[1] for y in ys]
    compiled._made.clear()
    for k in (0, 1, 0, 1):
        assert np.array_equal(t.gradient(ys[k], X), want[k])
    assert np.allclose(want[1], np.cos(X_) * X_ + np.sin(X_), rtol=1e-14)


def test_gathers_of_one_places_object_get_each_gathers_rows(monkeypatch):
    """encoding's runs are found once per places object (np.pad's in a loop): the rows of each gather as found for
    places of their own, with shared and own places mixed, scattered ones (no rows) among them."""
    monkeypatch.setattr(array_records, "SMALL", 1)
    scattered = RNG.permutation(30)
    t = tape.Tape()
    x = t.array(RNG.uniform(size=64))
    y = 0.0
    for k in range(12):  # pads by a tuple of ints: one places object per (shape, widths, mode); by a list: their own
        widths = ((3, 9), (12, 1), (5, 5))[k % 3]
        u = np.pad(x * (k + 1), widths if k % 4 else list(widths), ("edge", "wrap")[k % 2])
        y = y + (u * u).sum() + np.tanh(x)[scattered].sum()
    encoded, starts = encoding.table(t)
    gathers = [k for k, p in enumerate(t._plans) if p.name == "gather"]
    assert len({id(t._plans[k].places) for k in gathers}) <= len(gathers) - 3
    assert (starts[1:] > starts[:-1])[gathers].sum() == 12  # (the scattered ones have none)
    t._plans[:] = [p._replace(places=p.places.copy()) for p in t._plans]
    own, own_starts = encoding.table(t)
    assert np.array_equal(own, encoded) and np.array_equal(own_starts, starts)


def test_threads_reuse_and_make_at_once(tables, monkeypatch):
    """Tapes of three structures (two of one key) swept by 4 threads at once, the kept ones evicted all along (MADE 1):
    each call's own bits."""
    import threading

    monkeypatch.setattr(compiled, "MADE", 1)
    fs = [*DIFFER["op"], DIFFER["shape"][0]]
    want = [_afresh(f, X) for f in fs]
    wrong = []

    def calls(k):
        for i in range(30):
            j = (i + k) % 3
            got = tape.value_and_grad(fs[j])(X)
            wrong.extend([] if got[0] == want[j][0] and np.array_equal(got[1], want[j][1]) else [(k, i)])

    threads = [threading.Thread(target=calls, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong and len(compiled._made) == 1


def test_a_jit_tape_s_fused_runs_are_found_once(monkeypatch):
    """tape.jit's tapes (plans Pending, a pack's places an array) are served by fusion.KEPT once their structure is
    seen: compared by plans.same_plans, not ==, which raised for them (every call found its runs again: the
    mixture's 0.33 ms a call)."""
    monkeypatch.setattr(fusion, "TAPE_RUNS", 512)  # (its records of 1,800 elements big)
    monkeypatch.setattr(compiled, "TAPE_RUNS", 512)
    monkeypatch.setattr(fusion, "KEPT", {})
    found, groups = [], fusion._groups
    monkeypatch.setattr(fusion, "_groups", lambda *args: found.append(1) or groups(*args))
    data = np.linspace(-1.0, 1.0, 1200).reshape(600, 2)  # (f's Var arrays packed into array records: big)

    def f(th, x):
        return ((x[:, :1] - th[:3]) * np.exp(-th[3:]) * (x[:, 1:] + th[:3])).sum()

    vg = tape.value_and_grad(tape.jit(f))
    th = np.array([0.1, -0.2, 0.3, 0.0, 0.5, -0.5])
    got = [vg(th, data) for _ in range(2)]
    first = len(found)  # (the first call's tape and the renewed ones after it: two structures at most)
    got += [vg(th, data) for _ in range(4)]
    assert 1 <= first <= 2 and len(found) == first
    want = tape.value_and_grad(f)(th, data)
    for value, grad in got:
        assert value == pytest.approx(want[0], rel=1e-14) and np.allclose(grad, want[1], rtol=1e-13, atol=0)
