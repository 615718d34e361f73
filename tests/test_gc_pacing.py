"""tape/base/gc_pacing.py: a big tape raises the full-collection threshold while it records, and every way
it stops recording puts the process's thresholds back."""

import gc

import numpy as np
import pytest

import tape
from tape.base import gc_pacing

USER = (100, 2, 2)  # small enough that a few thousand records raise the third


@pytest.fixture(autouse=True)
def thresholds(monkeypatch):
    """Small tapes count as big; the process's thresholds are the defaults before and after. Tapes of earlier tests
    that still hold the raise (a tape kept by an exception's traceback until a collection frees the cycle: a JitError
    inside pytest.raises) let it go first."""
    monkeypatch.setattr(gc_pacing, "GROWN", 64)
    tape.pace_gc(False)
    before = gc.get_threshold()
    gc.set_threshold(*USER)
    tape.pace_gc(True)
    yield
    tape.pace_gc(True)
    assert gc_pacing.state() == (0, None)
    gc.set_threshold(*before)


def grown(n=200):
    t = tape.Tape(capacity=8)
    xs = [t.var(0.1 * k) for k in range(4)]
    y = xs[0]
    nodes = []
    for k in range(n):
        y = tape.sin(y) * xs[k % 4] + 0.5
        nodes.append(y)
    return t, xs, y, nodes


def test_growth_raises_only_the_full_collection_threshold():
    t, xs, y, _ = grown()
    t0, t1, t2 = gc.get_threshold()
    assert (t0, t1) == USER[:2] and t2 == max(USER[2], -(-2 * t.capacity // (t0 * t1)))
    assert gc_pacing.state() == (1, USER)


@pytest.mark.parametrize("stop", ["gradient", "backward", "forward", "function", "clear", "rewind", "free"])
def test_every_way_of_stopping_restores(stop):
    t, xs, y, nodes = grown(3000)
    assert gc.get_threshold() != USER
    if stop == "gradient":
        t.gradient(y, xs)
    elif stop == "backward":
        y.backward()
    elif stop == "forward":
        t.forward(xs, [0.2, 0.3, 0.4, 0.5])
    elif stop == "function":
        t.function(xs, y)
    elif stop == "clear":
        t.clear()
    elif stop == "rewind":
        t.rewind(4)
    else:
        del t, xs, y, nodes
        gc.collect()
    assert gc.get_threshold() == USER
    assert gc_pacing.state() == (0, None)


def test_two_tapes_restore_when_both_stopped():
    a, b = grown(), grown(3000)
    a[0].gradient(a[2], a[1])
    assert gc.get_threshold() != USER  # b still records
    b[0].gradient(b[2], b[1])
    assert gc.get_threshold() == USER


def test_recording_again_after_a_sweep_raises_again():
    t, xs, y, _ = grown()
    t.gradient(y, xs)
    for _ in range(3 * t.capacity):
        y = y * 1.0
    assert gc.get_threshold() != USER
    t.gradient(y, xs)
    assert gc.get_threshold() == USER


def test_the_programs_own_change_wins():
    t, xs, y, _ = grown()
    gc.set_threshold(50, 5, 5)
    t.gradient(y, xs)
    assert gc.get_threshold() == (50, 5, 5)


def test_off_and_with_gc_disabled_nothing_changes():
    tape.pace_gc(False)
    grown(3000)
    assert gc.get_threshold() == USER
    tape.pace_gc(True)
    gc.disable()
    try:
        grown(3000)
        assert gc.get_threshold() == USER
    finally:
        gc.enable()


def test_turning_off_while_raised_restores():
    t, xs, y, _ = grown()
    assert tape.pace_gc(False) is True
    assert gc.get_threshold() == USER and gc_pacing.state() == (0, None)


def test_a_presized_big_tape_paces_from_the_start():
    t = tape.Tape(capacity=1000)
    assert gc.get_threshold() != USER
    t.clear()
    assert gc.get_threshold() == USER


def test_records_and_gradients_identical_with_and_without():
    results = []
    for on in (True, False):
        tape.pace_gc(on)
        t, xs, y, _ = grown(3000)
        n = len(t)
        g = t.gradient(y, xs)
        results.append((t._op[:n].tobytes(), t._in0[:n].tobytes(), t._in1[:n].tobytes(), t._val[:n].tobytes(),
                        t._consts[:t.n_consts].tobytes(), g.tobytes()))
    assert results[0] == results[1]
    assert np.all(np.isfinite(np.frombuffer(results[0][5])))


def test_a_function_is_made_with_collection_paused(monkeypatch):
    """No automatic collection while a Function is made from a tape (its passes' garbage dies by reference
    counting) or a sweep's steps are made, on again after; a collection that was off stays off, and an error
    inside turns it back on."""
    from tape.function import replay
    from tape.records import array_records
    from tape.sweeps import steps

    monkeypatch.setattr(array_records, "SMALL", 1)  # array records
    seen = []
    for module, name in ((replay, "from_storage"), (steps, "_forward_sweep")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, real=real, **k: seen.append(gc.isenabled()) or real(*a, **k))
    F = tape.trace(lambda x: (np.sin(x) * x).sum(), np.linspace(0.1, 1.0, 8))
    assert seen == [False] and gc.isenabled()
    assert F.value_and_grad(np.ones(8))[0] == pytest.approx(np.sin(1.0) * 8) and len(seen) > 1
    assert not any(seen)
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_pacing.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(KeyError), gc_pacing.paused():
        raise KeyError("inside")
    assert gc.isenabled()
