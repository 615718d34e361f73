"""Recording afresh recycles regions (tape/sweeps/arenas.py): the numbers stay those of a tape that keeps them all.

Each program's value and gradient by tape.value_and_grad are compared bit for bit with the same call on a
tape that recycles nothing, while the recycling tape collects at every record and fills each region it frees
with NaN (arenas.CHECK): a value read after its region was given away, or an adjoint that meets another
record's, shows up as a NaN or a changed bit."""

import numpy as np
import pytest
from test_array_records import STEP_PROGRAMS
from test_layout import _calling, _gru, _heat, _lstm

import tape
from tape.arrays.varray import wrap_view
from tape.errors import TapeError
from tape.kernels.array_ops import ACONSTANT, INPUT
from tape.kernels.ops import ARRAY_BASE
from tape.records import array_records
from tape.sweeps import arenas, driver, fusion
from tape.sweeps.driver import whole


@pytest.fixture
def arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)
    monkeypatch.setattr(fusion, "TAPE_RUNS", 1)  # runs of small arrays fused too


def _late(x, p):
    """Arrays made first, read last (their handles live through the loop)."""
    first, second = np.exp(x * 0.3), x[::2] * p
    u = x
    for _ in range(6):
        u = np.tanh(u * p + 0.1) * 1.5
    return (u * first).sum() + (second * u[1::2]).sum() + first[5] * second[2]


def _condition(x, p):
    """A comparison kept while the arrays it compares are dropped."""
    c = (x * p) > 0.8
    u = x
    for _ in range(5):
        u = u * 0.9 + np.sin(u)
    return tape.where(c, u, u * u).sum()


def _nested(x, p):
    """A gradient recorded as records inside f (tape/symbolic/nest.py), after and before loops."""
    u = x
    for _ in range(4):
        u = np.cos(u) * p + 0.5
    g = tape.grad(lambda v: (np.sin(v) * v).sum())(u)
    for _ in range(4):
        g = g * 0.5 + np.cos(g)
    return (g * x).sum()


def _rewinding(x, p):
    """Scratch records rewound inside f."""
    t = x.tape
    u = x * 1.0
    for _ in range(3):
        u = np.tanh(u) + 0.1
    mark = len(t)
    for _ in range(3):
        (np.exp(u) * p).sum()
    t.rewind(mark)
    assert t.n_arrays == np.count_nonzero(t._op[:mark] >= ARRAY_BASE)
    for _ in range(3):
        u = u * np.exp(u * 0.1) + p
    return (u * u).sum()


def _padded(x, p):
    u = x
    for _ in range(5):
        w = np.pad(u, 1, mode="wrap")
        u = u + 0.2 * (w[2:] + w[:-2] - 2.0 * u) * p + np.pad(u, 2)[2:-2] * 0.01
    return (u * u).sum()


ZEROS = np.zeros(600)


def _weights(x, p):
    """A NumPy array read at every step, changed in place once between steps, one no reverse step reads (ZEROS), and
    a temporary one a step."""
    w = np.linspace(-1.0, 1.0, len(x))
    w[::3] = 0.0
    u = x
    for k in range(6):
        u = np.tanh(u * w) + p * np.cos(np.arange(len(x)) * 0.1 * k) + ZEROS
        if k == 2:
            w[::3] = -0.0
    return (u * u).sum()


PROGRAMS = {**STEP_PROGRAMS, "heat": _heat, "gru": _gru, "late": _late, "condition": _condition,
            "nested": _nested, "rewinding": _rewinding, "padded": _padded, "calling": _calling, "weights": _weights}


def _afresh(f, x, p, recycle, monkeypatch, check=True):
    with monkeypatch.context() as m:
        m.setattr(arenas, "CHECK", check)
        if not recycle:
            m.setattr(arenas.Arenas, "_recycle", lambda self, traced=False: None)
        seen = []
        value, grad = tape.value_and_grad(lambda v, q: f(seen.append(v.tape) or v, q))(x, p)
    return value, grad, seen[0]


@pytest.mark.parametrize("check", [True, False], ids=["checked", "as used"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_recycled_tapes_give_the_same_bits(program, check, arrays, monkeypatch):
    f = PROGRAMS[program]
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    for point, p in ((x, 0.7), (x[::-1] - 0.3, 1.3)):
        value, grad, t = _afresh(f, point, p, True, monkeypatch, check)
        want_value, want_grad, kept = _afresh(f, point, p, False, monkeypatch)
        assert value == want_value and np.array_equal(grad, want_grad)
        assert not kept._freed
        if program not in STEP_PROGRAMS and check:
            assert t._freed, "nothing recycled: the test tests nothing"


def test_handles_kept_past_the_call_keep_their_values(arrays, monkeypatch):
    """Arrays f leaves in a list, and aux, read after the call: the values a tape keeping everything has."""
    x = np.random.default_rng(9).uniform(0.2, 1.5, 300)

    def f(v, kept):
        u = v
        for k in range(8):
            u = np.tanh(u * 1.1) + 0.1
            if k % 3 == 0:
                kept.append(u[::2])
        return (u * u).sum(), u[:5]

    got = []
    for recycle in (True, False):
        with monkeypatch.context() as m:
            m.setattr(arenas, "CHECK", True)
            if not recycle:
                m.setattr(arenas.Arenas, "_recycle", lambda self, traced=False: None)
            kept: list = []
            (value, aux), grad = tape.value_and_grad(f, has_aux=True)(x, kept)
            got.append([value, aux, grad, *[k.value for k in kept]])
    for a, b in zip(*got, strict=True):
        assert np.array_equal(a, b)


def test_a_loop_records_in_regions_bounded_by_its_state(arrays):
    """Steps whose reverse reads no values: the same value arena for 20 steps as for 80."""
    def smoothed(u, steps, seen):
        seen.append(u.tape)
        for _ in range(steps):
            u = u + 0.2 * (np.concatenate([u[1:], u[:1]]) - u)
        return (u * u).sum()

    x = np.random.default_rng(10).uniform(size=600)
    sizes = []
    for steps in (20, 80):
        seen: list = []
        tape.value_and_grad(smoothed)(x, steps, seen)
        sizes.append(len(seen[0]._aval))
    assert sizes[0] == sizes[1] < 30 * 600


def test_a_function_of_a_recycled_tape_is_refused(arrays):
    def f(v):
        u = v
        for _ in range(40):
            u = u * 0.5 + 1.0
        v.tape.function(v, u.sum())
        return u.sum()

    with pytest.raises(TapeError, match="tape.trace"):
        tape.value_and_grad(f)(np.ones(600))


def _traced(f, x, p, recycle, monkeypatch):
    """F traced from f at x (on a tape recycling, filling what it frees with NaN, or one keeping all) and its tape."""
    with monkeypatch.context() as m:
        m.setattr(arenas, "CHECK", True)
        if not recycle:
            m.setattr(arenas.Arenas, "_recycle", lambda self, traced=False: None)
        seen = []
        F = tape.trace(lambda v: f(seen.append(v.tape) or v, p), x)
    return F, seen[0]


@pytest.mark.parametrize("program", PROGRAMS)
def test_functions_traced_on_recycling_tapes_give_the_same_bits(program, arrays, monkeypatch, tmp_path):
    """tape.trace's tape gives away what the Function recomputes: values, gradients, tangents, Hessian-vector
    products and a saved file's replay are a tape keeping everything's, bit for bit."""
    f = PROGRAMS[program]
    x = np.random.default_rng(11).uniform(0.2, 1.5, 600)
    v = np.random.default_rng(12).normal(size=600)
    got = []
    for recycle in (True, False):
        F, t = _traced(f, x, 0.7, recycle, monkeypatch)
        assert bool(t._freed) == recycle or program in STEP_PROGRAMS, "nothing recycled: the test tests nothing"
        F.save(tmp_path / "F.npz")
        G = tape.load(tmp_path / "F.npz")
        got.append([*F.value_and_grad(x), *F.value_and_grad(x[::-1] - 0.3), F.jvp(x, v), F.hvp(x, v),
                    *G.value_and_grad(x)])
    for a, b in zip(*got, strict=True):
        assert np.array_equal(a, b)


def _neighbours(u, pad):
    if pad:  # a gather of 2 more elements than the state, and 0-d constants each step (traced: recorded each time)
        w = np.pad(u, 1, mode="wrap")
        return w[2:] + w[:-2]
    return np.concatenate([u[1:], u[:1]]) + np.concatenate([u[-1:], u[:-1]])


@pytest.mark.parametrize("pad", [False, True], ids=["concatenate", "pad"])
def test_a_traced_loop_records_in_regions_bounded_by_its_state(pad, arrays, monkeypatch):
    """Tracing a stencil of n = 10^4: the tape's value arena the same for 20 steps as for 80, at most 12 states
    (no spare arenas of earlier tapes: their sizes would be its), and the Function's arenas (shared by liveness,
    tape/sweeps/layout.py) at most 12 states each and a few numbers a step (its 0-d constants keep regions of
    their own)."""
    monkeypatch.setattr(arenas, "_SPARE", [])
    monkeypatch.setattr(arenas, "SPARE_BYTES", 0)
    def smoothed(u, steps, seen):
        seen.append(u.tape)
        for _ in range(steps):
            u = u + 0.2 * (_neighbours(u, pad) - 2.0 * u)
        return (u * u).sum()

    n = 10_000
    x = np.random.default_rng(10).uniform(size=n)
    tapes, arenas_ = [], []
    for steps in (20, 80):
        seen: list = []
        F = tape.trace(lambda v, steps=steps, seen=seen: smoothed(v, steps, seen), x)
        tapes.append(len(seen[0]._aval))
        arenas_.append(len(F._aval) + len(F._aadj))
        assert np.array_equal(F.value_and_grad(x)[1], tape.value_and_grad(smoothed)(x, steps, [])[1])
    assert tapes[0] == tapes[1] <= 12 * n
    assert arenas_[0] <= 2 * 12 * n and arenas_[1] - arenas_[0] <= 8 * 60


def test_a_traced_tape_reuses_regions_beside_the_constants_it_keeps(monkeypatch):
    """Tracing a GRU of bench/array_programs.py's sizes (its data xs[t], 3 constants a step, kept: 152 states): a
    collection that frees a quarter of what is not kept is used, not grown past (its arena 384 -> 192 states)."""
    monkeypatch.setattr(arenas, "_SPARE", [])
    xs = np.random.default_rng(2).normal(scale=0.5, size=(3, 50, 64, 32))

    def gru(th, seen):
        seen.append(th.tape)
        Uz, Ur, Un = (th[k * 1024:(k + 1) * 1024].reshape(32, 32) for k in range(3))
        h = np.zeros((64, 32)) + th[:32] * 0.0
        for t in range(50):
            z, r = tape.sigmoid(xs[0, t] + h @ Uz), tape.sigmoid(xs[1, t] + h @ Ur)
            h = (1.0 - z) * np.tanh(xs[2, t] + (r * h) @ Un) + z * h
        return 0.5 * (h * h).sum()

    th, seen = np.random.default_rng(3).normal(scale=0.3, size=3 * 1024), []
    F = tape.trace(lambda v: gru(v, seen), th)
    kept = sum(p.size for p in seen[0]._plans if p.code in (ACONSTANT, INPUT))
    assert 150 * 2048 < kept and len(seen[0]._aval) < 1.5 * kept
    assert np.array_equal(F.value_and_grad(th)[1], tape.value_and_grad(lambda v: gru(v, []))(th)[1])


def test_a_traced_tape_keeps_its_constants(arrays, monkeypatch):
    """Data arrays (xs[t]) read once per step, and a constant a handle held (np.pad's filling, assigned into),
    keep their regions on a traced tape: the Function replays with them."""
    xs = np.random.default_rng(13).normal(size=(30, 600))

    def f(u, p):
        for t in range(30):
            u = np.tanh(np.pad(u, {0: (1, 1)}, constant_values=p)[:-2] * 0.5 + xs[t])
        return (u * u).sum()

    x = np.random.default_rng(14).uniform(size=600)
    F, t = _traced(f, x, 0.5, True, monkeypatch)
    assert t._freed
    assert np.array_equal(F.value_and_grad(x)[1], _traced(f, x, 0.5, False, monkeypatch)[0].value_and_grad(x)[1])


def test_a_traced_tape_never_gives_a_constants_region_away(arrays):
    """Not even one a handle held and dropped (the Function made from the tape replays with it)."""
    t = tape.Tape()
    t._recycle(traced=True)
    x = t.array(np.ones(50))
    c = array_records.constant(t, np.full(50, 2.0))
    held = wrap_view(t, c)
    y = (np.exp(x) * held).sum()
    del held
    t._collect(())
    assert t._freed and c.record not in t._freed  # exp(x) freed: the collection ran
    assert t.function(x, y)(np.zeros(50)) == 100.0


def test_a_functions_bytes_count_its_places(arrays):
    """F.nbytes counts each gather's index once per array (np.pad 'wrap' shares one over a loop's steps)."""
    def f(u):
        for _ in range(10):
            w = np.pad(u, 1, mode="wrap")
            u = u + 0.2 * (w[2:] + w[:-2] - 2.0 * u)
        return (u * u).sum()

    F = tape.trace(f, np.ones(2000))
    places = {id(p.places): p.places.nbytes for p in F._plans}
    assert sum(places.values()) == 2002 * 8
    arenas_ = F._aval.nbytes + F._aadj.nbytes  # (the adjoint arena made here: a Function makes it at first use)
    assert F.nbytes >= sum(places.values()) + arenas_


def test_a_recording_collects_before_its_arena_is_full(monkeypatch):
    """An LSTM-like loop (a gate matrix per step, four values a step read back): the value arena's used part stays
    within a quarter of what the reverse reads, rather than growing past dead gate matrices until the arena is full
    (collecting only then: 1.5x); a collection comes once a quarter of the used part is recorded anew, not at every
    record."""
    collect, collected = arenas.Arenas._collect, []
    monkeypatch.setattr(arenas.Arenas, "_collect", lambda self, inputs: collected.append(1) or collect(self, inputs))

    def f(v, seen):
        seen.append(v.tape)
        return _lstm(v, 80)

    seen: list = []
    tape.value_and_grad(f)(np.random.default_rng(13).normal(scale=0.1, size=4096 + 64 * 256), seen)
    t = seen[0]
    read = sum(t._plan(r).size for r in t._read)
    assert 80 * 4 * 4096 < read and t._n_arena <= 1.25 * read
    assert len(collected) <= 40  # (22; at every record past the first: 397)


@pytest.mark.parametrize("check", [True, False], ids=["checked", "as used"])
def test_a_numpy_array_read_at_every_step_is_one_constant_while_it_stays_the_same(check, arrays, monkeypatch):
    """_weights' w: one constant record for its first three steps, one more after it changed (-0.0 apart from 0.0);
    ZEROS, which no reverse step reads, again once its region was given away (checked: at every record), even where
    the region holds its numbers again."""
    x = np.random.default_rng(14).uniform(0.2, 1.5, 600)
    t = _afresh(_weights, x, 0.7, True, monkeypatch, check)[2]
    constants = [p for p in t._plans if p.code == ACONSTANT and p.shape == x.shape]
    assert len([p for p in constants if p.row in t._read]) == 2
    zeros = [p for p in constants if p.row in t._freed]
    if check:
        assert len(zeros) == 2 * 6  # (and np.cos's, a new array each step)
        driver.region(t._aval, zeros[0])[...] = 0.0
        assert not t._same(whole(zeros[0].row, zeros[0]), ZEROS)
