"""tape.value_and_grad's fixed costs per call (issue 26): an array program's tape renewed for the wrapper's next call
(only where no handle and no reference to it is left, and its arenas are small), a small ndarray's leaves written as
a list's, VarArray[int] of 1-d scalar records and their adjoints gathered by a slice. Each gives the bits of the
general path: a fresh tape per call (tape.tape.RENEWED = 0), Tape.vars, the general __getitem__ and VarArray.grad."""

import threading
import weakref

import numpy as np
import pytest
from sameness import edge_points, same_bits

import tape
from tape import tape as tape_module
from tape.arrays.varray import wrap
from tape.sweeps import arenas

rng = np.random.default_rng(26)
D = rng.normal(size=(40, 50))


def loop(v):  # regions recycled inside a call
    u = v
    for _ in range(6):
        u = 0.5 * np.tanh(u) + 0.25 * u * u - 0.1 * np.roll(u, 1)
    return (u * u).sum() + np.logaddexp(u, 0.3 * v).mean()


def mats(v):
    W = v.reshape(50, 40)
    H = np.maximum(D @ W, 0.0) + np.exp(-W.T @ W[:, :1])[:1, 0]
    return tape.logsumexp(H, axis=1).sum() + (np.where(D[:, :40] > 0, H, -H) ** 2).mean()


def joins(v):
    a = np.concatenate([v[:1000], v[1000:] * 2.0, v[::2]])
    return (np.sqrt(a * a + 1.0) * np.cos(a)).sum() / np.abs(v).max() + np.pad(v, 3)[5:-1].sum()


def results(vg, points):
    """Every call's value and gradient, NaN-canonical bytes, each point twice (the second call on a renewed tape)."""
    out = []
    for p in points:
        for _ in range(2):
            value, grad = vg(p)
            out.append(np.concatenate([[value], np.ravel(grad)]))
    return out


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize("f", [loop, mats, joins])
def test_renewed_tapes_give_the_bits_of_fresh_ones(f, check, monkeypatch):
    monkeypatch.setattr(arenas, "CHECK", check)  # freed regions NaN-filled, collected at every record
    seen = []

    def g(v):
        seen.append(weakref.ref(v.tape))
        return f(v)

    points = edge_points(rng.normal(size=2000) * 0.3)
    vg = tape.value_and_grad(g)  # (its tape lives as long as the wrapper)
    got = results(vg, points)
    assert seen[-1]() is not None and len({id(r()) for r in seen[1:]}) == 1  # one tape, renewed for every call
    monkeypatch.setattr(tape_module, "RENEWED", 0)  # the reference: a fresh tape per call
    seen.clear()
    want = results(tape.value_and_grad(g), points)
    assert all(r() is None for r in seen)
    assert all(same_bits(a, b) for a, b in zip(got, want, strict=True))


def test_a_wrapper_alternating_shapes_and_programs_keeps_its_bits(monkeypatch):
    def f(v):
        return loop(v) if v.size == 2000 else (np.tanh(v) ** 2).sum() + v[0] * v[-1]

    sizes = (2000, 3000, 40, 2000, 6, 1500, 2000)
    got = results(tape.value_and_grad(f), [np.linspace(-2, 2, n) for n in sizes])
    monkeypatch.setattr(tape_module, "RENEWED", 0)
    want = results(tape.value_and_grad(f), [np.linspace(-2, 2, n) for n in sizes])
    assert all(same_bits(a, b) for a, b in zip(got, want, strict=True))


def test_a_handle_kept_from_f_keeps_its_tape_and_values():
    kept = []

    def f(v):
        kept.append(np.tanh(v) * 2.0)
        return kept[-1].sum()

    vg = tape.value_and_grad(f)
    x = rng.normal(size=1500)
    vg(x)
    vg(x * 3.0)  # the first tape is still held: this call records on another
    assert kept[0].tape is not kept[1].tape
    assert kept[0].value.tolist() == (np.tanh(x) * 2.0).tolist()
    assert kept[1].value.tolist() == (np.tanh(x * 3.0) * 2.0).tolist()


def test_a_tape_held_from_f_is_not_cleared():
    tapes = []

    def f(v):
        tapes.append(v.tape)
        return (v * v).sum()

    vg = tape.value_and_grad(f)
    x = rng.normal(size=1500)
    for _ in range(2):
        assert vg(x)[1].tolist() == (2.0 * x).tolist()
    assert tapes[0] is not tapes[1] and len(tapes[0]) == len(tapes[1]) > 0 and tapes[0].n_arrays > 0


def test_big_arenas_are_not_kept_between_calls(monkeypatch):
    seen = []

    def f(v):
        seen.append(weakref.ref(v.tape))
        return (np.sin(v) * v).sum()

    vg = tape.value_and_grad(f)
    x = rng.normal(size=2**20)  # its regions alone take twice RENEWED
    for _ in range(2):
        vg(x)
    assert all(r() is None for r in seen)  # freed with each call
    recycling = []

    def h(v):
        recycling.append((v[0] if isinstance(v, list) else v).tape._recycling)
        return v[0] * v[1] if isinstance(v, list) else (v * v).sum()

    g = tape.grad(h)
    for x in ([1.0, 2.0], [1.0, 2.0], np.ones(1500), np.ones(1500)):  # the second on a cleared tape, no recycling
        g(x)
    assert recycling == [True, False, True, True]  # array programs record on a fresh tape or a renewed one, recycling
    small = rng.normal(size=1500)
    for _ in range(3):  # the first reserves what the last call's regions took: 32 MB, not kept
        vg(small)
    assert seen[-3]() is None and seen[-1]() is not None and seen[-1]() is seen[-2]()
    monkeypatch.setattr(arenas, "_SPARE", [])
    arenas.recycle(np.empty(2**18 + 2**17))  # a spare of 3 MB in the pool, alone
    vg = tape.value_and_grad(f)
    for _ in range(3):  # the first takes the spare for its 9000 * 16 elements' reserve, kept
        vg(rng.normal(size=9000))
    assert seen[-1]() is not None and seen[-1]() is seen[-2]() and len(seen[-1]()._aval) == 2**18 + 2**17


def test_a_call_inside_f_and_a_failing_call_get_tapes_of_their_own():
    x, tapes = rng.normal(size=1500), []

    def f(v):
        tapes.append(weakref.ref(v.tape))
        if len(tapes) == 2:  # reentrant: the same wrapper, on a tape of its own
            return (v * vg(x)[1]).sum()
        if len(tapes) == 4:
            raise RuntimeError("boom")
        return (v * v).sum()

    vg = tape.value_and_grad(f)
    vg(x)
    assert vg(x)[1].tolist() == (2.0 * x).tolist()  # d/dv of v . (2 x)
    assert tapes[1]() is not tapes[2]()
    with pytest.raises(RuntimeError):
        vg(x)
    assert vg(x)[1].tolist() == (2.0 * x).tolist()


def test_threads_calling_one_array_wrapper_at_once():
    g = tape.grad(mats)
    points = [rng.normal(size=2000) * 0.3 for _ in range(3)]
    expected = [g(p) for p in points]
    failures, start = [], threading.Barrier(3)

    def work(k):
        start.wait()
        for i in range(20):
            if not same_bits(g(points[(i + k) % 3]), expected[(i + k) % 3]):
                failures.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []


def records(t):
    n = len(t)
    return t._op[:n].tobytes(), t._in0[:n].tobytes(), t._in1[:n].tobytes(), t._val[:n].tobytes()


@pytest.mark.parametrize("values", [
    np.array([0.5, -0.0, np.inf, np.nan, 1e-310, -5e-324]), np.arange(6.0).reshape(2, 3), np.array(2.5),
    np.zeros(0), np.arange(64.0), np.arange(65.0), np.arange(12, dtype=np.int32).reshape(3, 4),
    np.arange(8, dtype=np.float32) / 3, np.array([True, False]), np.arange(24.0).reshape(4, 6)[:, ::2],
    np.asfortranarray(np.arange(6.0).reshape(2, 3))])
def test_small_array_leaves_are_the_records_of_vars(values):
    a, b = tape.Tape(), tape.Tape()
    a.var(1.0), b.var(1.0)
    x = a.array(values)
    rows = b.vars(np.ravel(values).astype(np.float64))
    assert records(a) == records(b) and x.shape == np.shape(values)
    assert x._idx.tolist() == np.reshape([h.index for h in rows], np.shape(values)).tolist()


def general_item(x, key):
    """VarArray.__getitem__'s general path for scalar records."""
    return wrap(x._live_tape(), np.asarray(x._idx[key]))


@pytest.mark.parametrize("make", [lambda t: t.array(np.arange(6.0) - 2.0), lambda t: t.array(np.arange(6.0)) * 2.0,
                                  lambda t: t.array(np.arange(8.0))[::2], lambda t: t.array(np.arange(6.0)).reshape(6)])
def test_an_element_of_scalar_records_is_the_general_paths(make):
    t = tape.Tape()
    x = make(t)
    for key in (len(x), -len(x) - 1):  # (before x._idx: rows a range, made by Tape.array or tape/arrays/small.py)
        with pytest.raises(IndexError, match="out of bounds"):
            x[key]
    for key in range(-len(x), len(x)):
        assert x[key].index == general_item(x, key).index and x[key].value == x.value[key]
    for key in (len(x), -len(x) - 1):
        with pytest.raises(IndexError, match="out of bounds"):
            x[key]
    assert x[True].shape == (1, len(x)) and x[np.int64(1)].index == general_item(x, 1).index


def test_an_element_of_other_arrays_takes_the_general_path():
    t = tape.Tape()
    m = t.array(np.arange(6.0).reshape(2, 3))
    assert m[1].shape == (3,) and m[1].value.tolist() == [3.0, 4.0, 5.0]
    big = t.array(np.arange(2000.0))  # an array record: an elem record reads element 7
    assert big[7].value == 7.0 and big[-1].value == 1999.0 and t._op[big[3].index] != t._op[m[0, 0].index]
    x = t.array(np.arange(6.0))
    t.clear()
    with pytest.raises(tape.StaleHandleError):
        x[0]


def test_small_ndarray_gradients_are_a_lists():
    def f(v):  # v[1] and v[4] unreached, v[2]'s adjoint -0.0, v[3]'s NaN
        return tape.sigmoid(v[0] * 2.0) - 0.0 * v[2] + v[3] * np.nan + v[5] * v[5]

    g = tape.grad(f)
    for p in edge_points(rng.normal(size=6)):
        got, want = g(p), np.array(g(p.tolist()))
        assert same_bits(got, want) and got.shape == (6,)
    assert g(np.arange(6.0).reshape(2, 3).ravel()).shape == (6,)
    h = tape.grad(lambda m: (m * m).sum() + m[1, 2])  # m[1, 2]: the general path (m._idx)
    assert h(np.ones((2, 3))).tolist() == [[2.0, 2.0, 2.0], [2.0, 2.0, 3.0]]
    h = tape.grad(lambda m: (m * m).sum())  # rows a range throughout
    assert h(np.ones((2, 3))).tolist() == [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]


def test_mixed_numbers_and_vars_take_their_paths():
    g = tape.grad(lambda v: v[0] * v[1] + v[2] ** 2)
    assert g([1, 2.5, 3]) == [2.5, 1.0, 6.0]
    pair = tape.grad(lambda p: (p[0] * p[1]).sum())((np.array(2.0), np.arange(5.0)))  # a 0-d leaf times a 1-d
    assert pair[0].tolist() == 10.0 and pair[1].tolist() == [2.0] * 5
    assert g(np.array([1, 2, 3])).tolist() == [2.0, 1.0, 6.0]  # ints: real_array's float64 copy
    inner = tape.grad(lambda v: v[0] * v[0] * v[1])
    assert tape.grad(lambda x: inner([x, 3.0])[0])(2.0) == 6.0  # Vars inside an outer transform (nest)
