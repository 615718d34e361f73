"""The short paths of recording array records afresh (issue 26): slices computed without NumPy, numbers recorded
once per tape, and value_and_grad's reverse sweep unchecked for 0 * inf, swept again checked where its gradient
holds a NaN. Each is checked against the general path it stands for."""

import numpy as np
import pytest

import tape
from tape.records import array_records
from tape.sweeps import driver

RNG = np.random.default_rng(26)


@pytest.fixture
def arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def random_key(shape):
    key = []
    for n in shape[:RNG.integers(1, len(shape) + 1)]:
        if RNG.random() < 0.3:
            key.append(int(RNG.integers(-n, n)))
        else:
            bounds = [None, *range(-n - 2, n + 3)]
            start, stop = RNG.choice(len(bounds), 2)
            key.append(slice(bounds[start], bounds[stop], [None, 1, 2, -1, -2, 3][RNG.integers(6)]))
    return tuple(key)


@pytest.mark.parametrize("shape", [(7,), (5, 6), (3, 4, 5), (1, 9), (2, 1, 3)])
def test_slices_give_the_view_numpy_gives(arrays, monkeypatch, shape):
    """_sliced's view of random slice and int keys (negative steps, past the ends, on transposed views) is the
    one NumPy's basic indexing over the arena gives."""
    t = tape.Tape()
    x = t.array(RNG.normal(size=shape))
    agreed = 0
    for v in (x._view, array_records.transpose(x._view, None)):
        for _ in range(300):
            key = random_key(v.shape)
            fast = array_records._sliced(v, key)
            with monkeypatch.context() as m:
                m.setattr(array_records, "_sliced", lambda v, key: None)
                want = array_records.index(t, v, key)
            if fast is not None:
                agreed += 1
                assert fast == want, key
                assert np.array_equal(driver.view(t, t._aval, fast), x.value.transpose(
                    None if v is not x._view else range(len(shape)))[key])
    assert agreed > 100


def test_slices_refuse_what_numpy_must_answer(arrays):
    t = tape.Tape()
    v = t.array(np.arange(12.0).reshape(3, 4))._view
    for key in [(3,), (slice(2, 2),), (slice(0, 2, 0),), (slice(np.int64(1), 3),), (None,), (Ellipsis, 1),
                (1, 2, 3), (True,)]:
        assert array_records._sliced(v, key) is None, key
    with pytest.raises(IndexError):
        t.array(np.arange(12.0).reshape(3, 4))[3]


def test_a_number_is_recorded_once_per_tape_with_its_sign(arrays):
    """Once per recycling tape (value_and_grad's); a traced tape records each, and a rewind forgets them."""
    for recycling in (True, False):
        t = tape.Tape()
        if recycling:
            t._recycle()
        x = t.array(RNG.normal(size=64))
        before = t.n_arrays
        y = [x * 2.0, 2.0 * x, x - 2.0, x * 0.0, x * -0.0]
        assert t.n_arrays - before == 5 + (3 if recycling else 5)  # one record per op; 2.0, 0.0, -0.0 once each
        assert np.array_equal(np.signbit(y[3].value), np.signbit(x.value * 0.0))
        assert np.array_equal(np.signbit(y[4].value), np.signbit(x.value * -0.0))
        t.rewind(len(t))
        assert not t._numbers


def test_an_unchecked_nan_is_swept_again_checked(arrays):
    """u = x * a with a[0] = inf, loss Σ u m with m[0] = 0: x's gradient is m a, 0 at 0 (0 * inf sends nothing);
    the unchecked sweep makes a NaN there, so value_and_grad sweeps again checked."""
    a, m = np.full(64, 2.0), np.ones(64)
    a[0], m[0] = np.inf, 0.0
    value, grad = tape.value_and_grad(lambda x: (x * a * m).sum())(RNG.normal(size=64))
    want = np.full(64, 2.0)
    want[0] = 0.0
    assert np.isnan(value) and np.array_equal(grad, want)
    value, grad = tape.value_and_grad(lambda x: (x * np.full(64, np.nan)).sum())(np.ones(64))
    assert np.isnan(grad).all()  # a NaN the checked sweep keeps
