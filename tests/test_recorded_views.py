"""What recording keeps from one array record to the next (tape/sweeps/driver.py's Kept, the errstate of each record,
array_records.broadcast's shapes): the numbers stay NumPy's.

A tape keeps the views of its arenas by (element start, shape, strides) while each arena is the same object: a
region recycled by a record of another shape, a view of the same start with other strides, an arena that grew, a
constant read in place (not from its region) must each get views of their own, and the arenas still go back to the
spares when the tape dies."""

import gc
import warnings

import numpy as np
import pytest

import tape
from tape.records import array_records
from tape.sweeps import arenas, driver


@pytest.fixture
def arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def _shapes(u):
    """Regions freed and taken again by records of other shapes; views of one start with other shapes and strides."""
    total = 0.0
    for k in range(12):
        a = (u * 1.5 + k).reshape(20, 30)  # (600,) and (20, 30) records take each other's regions
        b = a.T * 0.5 - u[:20]  # a transposed view, broadcast against a slice
        c = u[::2] * u[:300] + u[300:][::-1]  # one start, three strides
        total = total + (b * b).sum() + (c * a.reshape(-1)[::2]).sum()
        u = np.tanh(u * 0.9 + 0.1)
    return total + (u * u).sum()


def _shapes_numpy(u):
    total = 0.0
    for k in range(12):
        a = (u * 1.5 + k).reshape(20, 30)
        b = a.T * 0.5 - u[:20]
        c = u[::2] * u[:300] + u[300:][::-1]
        total = total + (b * b).sum() + (c * a.reshape(-1)[::2]).sum()
        u = np.tanh(u * 0.9 + 0.1)
    return total + (u * u).sum()


@pytest.mark.parametrize("check", [True, False], ids=["collected at every record", "as used"])
def test_views_of_recycled_regions_are_numpys(check, arrays, monkeypatch):
    """Afresh, recycling with views kept, at several points, twice each: NumPy's value, and the bits of the same
    calls with no view kept (built at every read, as for other states); arenas.CHECK frees and refills regions with
    NaN at every record, so a view kept for a region's earlier record would read NaN or another shape's numbers."""
    x = np.random.default_rng(0).normal(size=600)
    monkeypatch.setattr(arenas, "CHECK", check)
    got = []
    for keep in (True, False):
        with monkeypatch.context() as m:
            if not keep:
                m.setattr(driver.Kept, "of", lambda self, s, arena: None)
            g = tape.value_and_grad(_shapes)
            got.append([g(point) for point in (x, -x, 3.0 * x, x) for _ in range(2)])
    for (value, grad), (want_value, want_grad), point in zip(*got, [x, x, -x, -x, 3 * x, 3 * x, x, x], strict=True):
        assert value == want_value and np.array_equal(grad, want_grad)
        assert value == pytest.approx(_shapes_numpy(point), rel=1e-12)


def test_views_survive_an_arena_that_grows(arrays):
    """A tape with a small arena that doubles several times while it records (no reserve): every record reads the
    arena it is in now, not a kept view of the one it left."""
    x = np.random.default_rng(1).normal(size=700)
    t = tape.Tape()
    u = t.array(x)
    arenas_seen = set()
    for _ in range(40):
        u = u * 0.97 + u[::-1] * 0.01
        arenas_seen.add(id(t._aval))
    want = x
    for _ in range(40):
        want = want * 0.97 + want[::-1] * 0.01
    assert len(arenas_seen) > 2
    assert np.array_equal(u.value, want)


def test_a_borrowed_constant_is_read_in_place():
    """A big NumPy constant (arenas.BORROWED elements) is read from its own array, not from its empty region."""
    n = arenas.BORROWED
    rng = np.random.default_rng(2)
    x, c = rng.normal(size=n), rng.normal(size=n)

    def f(u):
        return ((u * c + c) * u).sum()

    for _ in range(2):
        value, grad = tape.value_and_grad(f)(x)
        assert value == pytest.approx(float(((x * c + c) * x).sum()), rel=1e-12)
        assert np.allclose(grad, 2 * c * x + c, rtol=1e-13, atol=0)


def test_arenas_go_back_to_the_spares(monkeypatch):
    """tape.value_and_grad's arenas are spares for the next tape once it returns: its kept views let go of them."""
    gc.collect()  # (earlier tests' tapes in cycles give theirs back now, not below)
    monkeypatch.setattr(arenas, "_SPARE", [])

    def f(u):
        for _ in range(30):
            u = u + 0.2 * (u[::-1] - 2.0 * u)
        return (u * u).sum()

    tape.value_and_grad(f)(np.random.default_rng(3).normal(size=50_000))
    gc.collect()
    assert len(arenas._SPARE) == 2  # the value arena and the adjoint arena


def test_recording_warns_of_nothing_and_leaves_errstate_as_it_was(arrays):
    """Records of inf and NaN warn of nothing (as every sweep), under any errstate; the caller's errstate is the same
    after each record, and NumPy's own arithmetic inside f still warns."""
    x = np.array([-1.0, 0.0, 1.0, 2.0])

    def f(u):
        y = np.log(u) + 1.0 / u + np.sqrt(u) * 1e308 * 1e308
        assert np.geterr()["invalid"] == "raise"
        with pytest.warns(RuntimeWarning):
            with np.errstate(invalid="warn"):
                np.log(-np.ones(2))
        return (y * 0.0 + u).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            value, grad = tape.value_and_grad(f)(x)
            assert np.geterr() == {"divide": "raise", "over": "raise", "under": "raise", "invalid": "raise"}
    assert np.isnan(value)
    assert np.geterr()["invalid"] != "raise"


def test_broadcast_shapes_are_decided_once_each():
    """broadcast gives NumPy's shape for each tuple of shapes (kept by all of them, not the first), and its error each
    time for shapes that do not broadcast."""
    for shapes in [((3, 1), (1, 4)), ((3, 1), (4,)), ((4,), (3, 1)), ((), (5,)), ((2, 1, 3), (4, 1)), ((7,), (7,))]:
        assert array_records.broadcast(*shapes) == np.broadcast_shapes(*shapes)
    for _ in range(2):
        with pytest.raises(ValueError, match=r"shapes \(3,\) and \(4,\)"):
            array_records.broadcast((3,), (4,))


def test_kept_views_are_by_arena_start_shape_and_strides():
    """driver.Kept: another arena object starts afresh; one key per start, shape and strides."""
    t = tape.Tape()
    t.array(np.arange(2000.0))
    kept = driver.Kept()
    views = kept.of(t, t._aval)
    a = driver.kept_view(views, t._aval, 10, (5,), (1,))
    assert driver.kept_view(views, t._aval, 10, (5,), (1,)) is a
    assert list(driver.kept_view(views, t._aval, 10, (5,), (2,))) == [10.0, 12.0, 14.0, 16.0, 18.0]
    assert driver.kept_view(views, t._aval, 10, (1, 5), (5, 1)).shape == (1, 5)
    assert kept.of(t, np.zeros(3)) is None
    t._aval = t._aval.copy()
    assert kept.of(t, t._aval) == {}


def test_an_adjoint_arena_that_grows_goes_back_to_the_spares(monkeypatch):
    """A tape swept back, then recording more and swept again: its first adjoint arena, which kept views read,
    goes to the spares when the second grows it."""
    monkeypatch.setattr(arenas, "_SPARE", [])
    t = tape.Tape()
    t._reserve(2_000_000)  # the value arena never grows (which lets go of every kept view)
    u = t.array(np.random.default_rng(4).normal(size=200_000))
    t.backward((u * u).sum())
    first = id(t._aadj)  # (not the array: a reference held here would keep it from the spares)
    v = u * 2.0 + u
    t.backward((v * v).sum())
    assert id(t._aadj) != first and any(id(a) == first for a in arenas._SPARE)


def _reshaped_over_a_buffer(shape, strides, new):
    """array_records.reshape's decision as it was made: NumPy reshaping a view of real elements."""
    extent = 1 + sum(abs(s) * (n - 1) for n, s in zip(shape, strides, strict=True) if n)
    start = sum(-s * (n - 1) for n, s in zip(shape, strides, strict=True) if s < 0 and n)
    elements = np.ndarray(shape, np.float64, np.zeros(extent + 1), 8 * start, tuple(8 * s for s in strides))
    new_shape = np.empty(shape, np.bool_).reshape(new).shape
    try:
        reshaped = elements.view()
        reshaped.shape = new_shape
    except AttributeError:
        return new_shape, None
    return new_shape, tuple(s // 8 for s in reshaped.strides)


def test_reshapes_are_decided_by_shape_and_strides_as_numpy_decides():
    """_reshaped (kept by shape, strides and the new shape) against NumPy over real elements: C and Fortran
    order, slices with steps, reversed axes, zero-size axes, -1; and NumPy's error for a size that does not fit."""
    rng = np.random.default_rng(5)
    cases = 0
    for _ in range(300):
        ndim = int(rng.integers(1, 4))
        base = tuple(int(n) for n in rng.integers(0, 5, ndim))
        strides = list(driver.contiguous(base))
        if rng.uniform() < 0.3:
            strides = strides[::-1]  # Fortran-like
        strides = [s * int(rng.choice([1, 2, -1])) for s in strides]
        shape, strides = base, tuple(strides)
        size = int(np.prod(shape))
        for new in [(size,), (-1,), (1, size), (size, 1), shape[::-1], (-1, shape[-1]) if shape[-1] else (0, 1)]:
            try:
                want = _reshaped_over_a_buffer(shape, strides, new)
            except ValueError:
                with pytest.raises(ValueError):
                    array_records._reshaped(shape, strides, new)
                continue
            assert array_records._reshaped(shape, strides, new) == want, (shape, strides, new)
            cases += 1
    assert cases > 1000
    with pytest.raises(ValueError):
        array_records._reshaped((6,), (1,), (4,))
