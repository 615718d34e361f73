"""What tape.value_and_grad of a jitted f keeps from one call for the next of the same structure (s25): a tape's fused
runs (fusion.KEPT), what adopt makes of plan rows (array_plans._ADOPTED) and their count of big plans
(Pending.at_least), and x's INPUT record on the tape the call renews. Each served only to a tape of the same records,
plans and numbers: a changed constant, exponent, op or shape gets its own, bit for bit the uncached path's and the
gradient by hand."""

from __future__ import annotations

import numpy as np
import pytest
from test_jit_arrays import namespace

import tape
from tape.compiled import array_plans
from tape.records import array_records
from tape.sweeps import arenas, fusion
from tape.tape import Tape

FILTER = '''
def f(u, a, b, p):                   # 3-tap passes (0-d constants a and b: numbers a fused run reads), then u ** p
    for _ in range(3):
        u = a * u[:-2] + b * u[1:-1] + a * u[2:]
    return 0.5 * (u ** p).sum()
'''
SINES = '''
def f(u, a, b, p):                   # FILTER's records, but sin where it adds the middle tap
    for _ in range(3):
        u = a * u[:-2] + b * np.sin(u[1:-1]) + a * u[2:]
    return 0.5 * (u ** p).sum()
'''
TAPS = '''
def f(u, k):                         # FILTER without numbers: only the plans tell k apart
    u = u[k:]
    for _ in range(3):
        u = u[:-2] + u[1:-1] + u[2:]
    return (u * u).sum()
'''
PAD = '''
def f(u, c, m):                      # a gather of a record f wrote (np.pad's reflection)
    return (np.pad(np.tanh(u * c), (2, 3), "reflect") * m).sum()
'''
CHAIN = '''
def f(x, c):                         # temporaries that die as the next is made: regions given away and taken
    y = x * c
    for _ in range(4):
        y = np.tanh(y) * c
    z = np.tanh(y[1:]) * c           # (a region wider than z, taken)
    return (z * x[1:]).sum() + (y * x).sum()
'''


@pytest.fixture(autouse=True)
def small(monkeypatch):
    """Arrays of 64 elements and more as array records, runs fused from 16 elements, nothing kept before."""
    monkeypatch.setattr(array_records, "SMALL", 64)
    monkeypatch.setattr(fusion, "TAPE_RUNS", 16)
    monkeypatch.setattr(fusion, "KEPT", {})
    monkeypatch.setattr(array_plans, "_ADOPTED", {})
    monkeypatch.setattr(array_plans, "_COUNTED", {})


def filtered(u, a, b, p, sines=False):
    """FILTER's (or SINES') value and gradient by hand."""
    ins = []
    for _ in range(3):
        ins.append(u)
        u = a * u[:-2] + b * (np.sin(u[1:-1]) if sines else u[1:-1]) + a * u[2:]
    g = 0.5 * p * u ** (p - 1)
    for v in reversed(ins):
        back = np.zeros(len(g) + 2)
        back[:-2] += a * g
        back[1:-1] += b * g * (np.cos(v[1:-1]) if sines else 1.0)
        back[2:] += a * g
        g = back
    return 0.5 * float((u ** p).sum()), g


def uncached(f, *args):
    """value_and_grad of f with nothing kept (every count, adoption and run found anew)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(array_plans, "_COUNTED_ROWS", -1)
        m.setattr(fusion, "KEPT_MOST", 0)
        m.setattr(fusion, "KEPT", {})
        return tape.value_and_grad(f)(*args)


def same(a, b):
    assert a[0] == b[0] and a[1].shape == b[1].shape and np.array_equal(a[1], b[1])


def test_kept_runs_are_served_only_for_the_same_records_plans_and_numbers(monkeypatch):
    """The filter called again with the same numbers takes its kept runs (found once); a changed tap weight (a run's
    imm), exponent (2 fused exactly, 3 not fused), op or length finds runs anew: every call bit for bit the uncached
    path's, and the gradient by hand. (A wrapper's first call recycles its regions, its second not: its own runs.)"""
    (_, jn), (_, js) = namespace(FILTER, arrays=True), namespace(SINES, arrays=True)
    found = []
    runs = fusion._runs
    monkeypatch.setattr(fusion, "_runs", lambda *a: found.append(1) or runs(*a))
    rng = np.random.default_rng(0)
    u = {n: rng.uniform(0.5, 1.5, n) for n in (200, 201)}
    vg, vs = tape.value_and_grad(jn["f"]), tape.value_and_grad(js["f"])
    calls = [(vg, 200, 0.25, 0.5, 2.0, None), (vg, 200, 0.25, 0.5, 2.0, None), (vg, 200, 0.25, 0.5, 2.0, 0),
             (vg, 200, 0.3, 0.5, 2.0, 1), (vg, 200, 0.3, 0.5, 2.0, 0), (vg, 200, 0.3, 0.4, 2.0, 1),
             (vg, 200, 0.3, 0.4, 3.0, 1), (vg, 200, 0.3, 0.4, 3.0, 0), (vg, 200, 0.3, 0.4, 2.0, 1),
             (vs, 200, 0.3, 0.4, 2.0, 1), (vs, 200, 0.3, 0.4, 2.0, None), (vs, 200, 0.3, 0.4, 2.0, 0),
             (vg, 200, 0.3, 0.4, 2.0, 0), (vg, 201, 0.3, 0.4, 2.0, 1), (vg, 201, 0.3, 0.4, 2.0, 0),
             (vg, 200, 0.3, 0.4, 2.0, 1)]
    for g, n, a, b, p, new in calls:
        found.clear()
        got = g(u[n], a, b, p)
        assert new is None or len(found) == new, (n, a, b, p)
        f = js["f"] if g is vs else jn["f"]
        same(got, uncached(f, u[n], a, b, p))
        want = filtered(u[n], a, b, p, g is vs)
        assert got[0] == pytest.approx(want[0], rel=1e-13)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-13, atol=1e-15)


def test_kept_runs_of_other_plans_are_not_served():
    """TAPS from u[k:]: the same records and no numbers for k = 0 and 1, runs of their own, the gradient by hand."""
    _, jn = namespace(TAPS, arrays=True)
    u = np.random.default_rng(3).normal(size=300)
    vg = tape.value_and_grad(jn["f"])
    for k in (0, 0, 0, 1, 1, 0, 1):
        got = vg(u, k)
        same(got, uncached(jn["f"], u, k))
        v = u[k:]
        for _ in range(3):
            v = v[:-2] + v[1:-1] + v[2:]
        g = 2 * v
        for _ in range(3):
            back = np.zeros(len(g) + 2)
            back[:-2] += g
            back[1:-1] += g
            back[2:] += g
            g = back
        want = np.zeros(300)
        want[k:] = g
        assert got[0] == pytest.approx(float((v * v).sum()), rel=1e-13)
        np.testing.assert_allclose(got[1], want, rtol=1e-13, atol=1e-12)


def test_a_gather_reads_its_inputs_plan_call_after_call(monkeypatch):
    """PAD's gather, whose input's plan adopt writes into its row each call (a table's cells f leaves are not the last
    call's): its gradient bit for bit the Python recorder's, and NumPy's reflection of the indices summed back by
    hand."""
    table = array_plans.plan_table
    monkeypatch.setattr(array_plans, "plan_table", lambda t, room: np.full_like(table(t, room), -(2**40)))
    py, jn = namespace(PAD, arrays=True)
    rng = np.random.default_rng(4)
    u, m = rng.normal(size=100), rng.normal(size=105)
    index = np.pad(np.arange(100), (2, 3), "reflect")
    vg = tape.value_and_grad(jn["f"])
    for c in (0.5, 0.5, 0.5, -0.7, -0.7):
        got = vg(u, c, m)
        same(got, tape.value_and_grad(py["f"])(u, c, m))
        y = np.tanh(u * c)
        gy = np.zeros(100)
        np.add.at(gy, index, m)
        assert got[0] == pytest.approx(float((y[index] * m).sum()), rel=1e-13)
        np.testing.assert_allclose(got[1], gy * (1 - y * y) * c, rtol=1e-13, atol=1e-15)


def test_a_kept_adoption_leaves_the_tape_as_one_made_anew(monkeypatch):
    """CHAIN recorded on recycling tapes (arenas.CHECK: every record collects): the regions given away, taken and
    watched, the capacities and the elements written are those of an adoption made anew, call after call; gradients
    bit for bit the uncached path's and central differences'."""
    monkeypatch.setattr(arenas, "CHECK", True)
    _, jn = namespace(CHAIN, arrays=True)
    x = np.random.default_rng(1).normal(size=(8, 12))

    def state(c):
        t = Tape._afresh(x.size, 0)
        jn["f"](t.array(x), c)
        return (t._n, t._n_arena, dict(t._freed), dict(t._caps), {k: list(v) for k, v in t._free.items()},
                t._n_free, set(t._watched), set(t._read), jn["f"]._written)

    for c in (0.7, 0.7, -1.3):
        kept = state(c)
        assert array_plans._ADOPTED
        with monkeypatch.context() as m:
            m.setattr(array_plans, "_COUNTED_ROWS", -1)
            made = state(c)
        assert kept == made and kept[2] and kept[3] and kept[4] and kept[6]
        assert kept[5] == sum(cap for regions in kept[4].values() for _, cap, _ in regions)
        assert not kept[6] & (kept[7] | set(kept[2]))  # (watched: released, neither read back nor given away)
    vg = tape.value_and_grad(jn["f"])
    for c in (0.7, 0.7, -1.3):
        got = vg(x, c)
        same(got, uncached(jn["f"], x, c))
        h = 1e-6
        e = np.zeros(x.size)
        for k in (0, 17, 95):
            e[:] = 0.0
            e[k] = h
            d = (vg(x + e.reshape(x.shape), c)[0] - vg(x - e.reshape(x.shape), c)[0]) / (2 * h)
            assert got[1].flat[k] == pytest.approx(d, rel=1e-6, abs=1e-8)


def test_the_input_record_kept_takes_each_calls_values_and_shape():
    """The direct path's tape keeps x's INPUT record for the next call: new values each call, and a new shape of the
    same size (1-d, 2-d) or another size records x anew; the gradient by hand each time, bit for bit the general
    path's."""
    _, jn = namespace(CHAIN, arrays=True)
    rng = np.random.default_rng(2)
    vg = tape.value_and_grad(jn["f"])
    for shape in [(8, 12), (8, 12), (96,), (12, 8), (10, 10), (8, 12)]:
        x = rng.normal(size=shape)
        c = float(rng.uniform(0.5, 1.5))
        got = vg(x, c)
        jn["f"]._arrays_direct = False
        general = tape.value_and_grad(jn["f"])(x, c)
        jn["f"]._arrays_direct = True
        same(got, general)
        ys = [x * c]
        for _ in range(4):
            ys.append(np.tanh(ys[-1]) * c)
        y = ys[-1]
        z = np.tanh(y[1:]) * c
        g, want = x.copy(), y.copy()
        g[1:] += x[1:] * c * (1 - np.tanh(y[1:]) ** 2)
        want[1:] += z
        for v in reversed(ys[:-1]):
            g = g * c * (1 - np.tanh(v) ** 2)
        want += g * c
        assert got[0] == pytest.approx(float((z * x[1:]).sum() + (y * x).sum()), rel=1e-13)
        np.testing.assert_allclose(got[1], want, rtol=1e-12, atol=1e-14)


def test_counts_of_big_plans_are_their_rows():
    """Pending.at_least of two tables of the same length but other shapes: each its own count, kept or not."""
    _, jn = namespace(CHAIN, arrays=True)
    counts = []
    for shape in [(8, 12), (4, 16), (8, 12)]:
        t = Tape()
        jn["f"](t.array(np.ones(shape)), 0.5)
        assert type(t._plans) is array_plans.Pending and not t._plans.listed
        counts.append([t._plans.at_least(size) for size in (1, 64, 96)])
        assert counts[-1] == [sum(p.size >= size and len(p.shape) > 0 for p in list(t._plans)) for size in (1, 64, 96)]
    assert counts[0] == counts[2] != counts[1]


def test_a_rewind_keeps_the_constants_of_the_records_below_its_mark():
    """Rewinding a tape with const-op records below and above the mark (the pool counted from its records' ops): a
    constant recorded after it takes the next slot, and those below keep theirs."""
    t = Tape()
    x = t.var(2.0)
    y = x * 3.0
    for _ in range(3):
        mark = len(t)
        _ = y * 5.0 + 1.0
        t.rewind(mark)
        assert t.n_consts == 1
    w = y * 7.0
    assert (t.record(y._index).constant, t.record(w._index).constant, w.value) == (3.0, 7.0, 42.0)


def test_equal_places_are_one_object_of_their_shape():
    """A plan's places of up to arenas.SHARED elements: one object for equal ones (a pack of the same records on two
    tapes, of either shape, and a gather's: plans compare by identity first), read-only; bigger ones each their
    own."""
    tapes = [Tape() for _ in range(2)]
    for t in tapes:
        rows = np.array([v.index for v in t.vars(np.arange(4.0))])
        array_records.pack(t, rows)
        array_records.pack(t, rows.reshape(2, 2))
        big = t.array(np.arange(2.0 * arenas.SHARED))
        array_records.index(t, big._view, np.arange(arenas.SHARED + 1)[::-1])
        array_records.index(t, big._view, np.array([[0, 1], [2, 3]]))
    (p, q, _, g, h), (p2, q2, _, g2, h2) = (t._plans for t in tapes)
    assert p.places is p2.places and q.places is q2.places and h.places is h2.places
    assert p.places is q.places and p.places.shape == (4,)
    assert not p.places.flags.writeable and g.places is not g2.places
    assert np.array_equal(g.places, g2.places) and np.array_equal(h.places.ravel(), [0, 1, 2, 3])
