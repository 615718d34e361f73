"""A Function's arenas laid out by liveness (tape/sweeps/layout.py): regions shared, numbers unchanged.

Every test compares a Function on shared regions with the same Function on its recorded layout
(layout.compact made to give the plans back), bit for bit, after filling the regions of the shared
arenas that hold no constant with NaN before every call: a value or adjoint read after another
record took its region, or before it was written, shows up as a NaN or a changed bit."""

import io
import pickle
import tracemalloc

import numpy as np
import pytest
from test_array_records import STEP_PROGRAMS

import tape
from tape.arrays.varray import VarArray
from tape.function import array_replay
from tape.kernels.array_ops import ACONSTANT, INPUT
from tape.records import array_records
from tape.sweeps import arenas, compiled, driver, fused_runs, fusion, layout, plans


@pytest.fixture
def arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def _heat(u, p):
    for _ in range(12):
        u = u + 0.2 * p * (np.concatenate([u[1:], u[:1]]) + np.concatenate([u[-1:], u[:-1]]) - 2.0 * u)
    return 0.5 * (u * u).sum()


def _gru(x, p):
    h = np.tanh(x[:40].reshape(8, 5))
    U = x[40:65].reshape(5, 5) * p
    for t in range(6):
        z = tape.sigmoid(h @ U + x[t])
        h = (1.0 - z) * np.tanh(h @ U.T) + z * h
    return (h * h).sum()


def _shrinking(u, p):
    for _ in range(8):
        u = 0.25 * u[:-2] + 0.5 * u[1:-1] * p + 0.25 * np.exp(u[2:] * 0.1)
    return (u ** 2).sum() + u[3] * u[5]


def _elements(u, p):
    for k in range(6):
        y = np.exp(u * 0.1) + p
        u = np.tanh(u[::-1] * 0.5) * 0.9
        u = u * (y[3] - y[k])  # y's last readers are elem records
    return (u * u).sum()


def _calling(x, p):
    inner = tape.trace(lambda v: (np.tanh(v) * v[::-1]).sum() * 2.0, np.ones(20))
    return sum(inner(x[k:k + 20] * p) for k in (0, 20, 40)) + _heat(x[:60], p)


DATA = np.random.default_rng(4).normal(size=(300, 10)), np.linspace(-1.0, 1.0, 300), np.linspace(0.5, 2.0, 300)


def _data(x, p):
    """Three constants: a matrix only a matmul reads (no adjoint reaches it), a vector a fused run reads, a vector
    an elem record reads."""
    X, Y, Z = DATA
    r = X @ x[:10] * p - Y
    return (r * r).sum() + _constant(x, Z)[3] * x[0]


def _constant(x, values):
    """values as a constant array record on x's tape."""
    t = x._live_tape()
    return VarArray(t._segment(), None, array_records.constant(t, values))


XS = np.random.default_rng(5).normal(size=(12, 600))


def _data_steps(u, p):
    """A GRU-like loop that reads data xs[t] at each step (constants: a traced tape keeps them)."""
    for t in range(12):
        z = tape.sigmoid(u * p + XS[t])
        u = (1.0 - z) * np.tanh(u + XS[t][::-1]) + z * u
    return (u * u).sum()


def _lstm(v, steps=40):
    """An LSTM-like loop of a 64 x 64 state: a gate matrix a step, four values a step its reverse reads."""
    u, W = v[:4096].reshape(64, 64), v[4096:].reshape(64, 256)
    for _ in range(steps):
        g = u @ W
        a, b, c = tape.sigmoid(g[:, :64]), tape.sigmoid(g[:, 64:128]), np.tanh(g[:, 128:192])
        u = a * c + b * u
    return (u * u).sum()


PROGRAMS = {**STEP_PROGRAMS, "heat": _heat, "gru": _gru, "shrinking": _shrinking, "elements": _elements,
            "calling": _calling, "data": _data, "data steps": _data_steps}
POINTS = [(0.7, 1), (1.3, 2), (0.5, 3)]


def rowed(F):
    """F's fused runs whose members run as rows (found again, less those F keeps: compiled.kept's others)."""
    runs = fusion.find(F, set(F._output_rows.tolist()), (F._input_rows, F._param_rows, F._check_rows))
    return [run for run in runs if run.rows[0] not in F._runs_first]


def _recorded(s, runs, outputs, kept, rowed):
    return s._plans, len(s._aval) + 1, None, len(s._aval) + 1


def _poison(F):
    """NaN in every region of F's shared arenas but its constants' and inputs'."""
    F._aadj[:] = np.nan
    for p in F._plans:
        if p.code not in (ACONSTANT, INPUT):
            driver.region(F._aval, p)[...] = np.nan


def _calls(F, x, poison):
    got = []
    for param, seed in POINTS:
        point = x * np.random.default_rng(seed).uniform(0.8, 1.2, x.shape)
        if poison and F._recorded is not None:
            _poison(F)
        got += [*F.value_and_grad(point, params=param)]
        if poison and F._recorded is not None:
            _poison(F)
        got.append(F(point, params=param))
    return got


def _both_layouts(f, monkeypatch):
    """f traced at x on its shared regions (F) and on its recorded layout (G)."""
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    F = tape.trace(f, x, params=0.7)
    with monkeypatch.context() as m:
        m.setattr(layout, "laid", _recorded)
        G = tape.trace(f, x, params=0.7)
    return x, F, G


@pytest.mark.parametrize("program", PROGRAMS)
def test_shared_regions_give_the_recorded_layouts_numbers(program, arrays, monkeypatch):
    """Values and gradients on shared regions (poisoned between calls) are the recorded layout's, bit for bit;
    so are the checked (unfused) sweeps, a saved and loaded copy, a pickled one, and the second order
    after which the Function is back on its recorded layout."""
    x, F, G = _both_layouts(PROGRAMS[program], monkeypatch)
    assert G._recorded is None
    life = layout.lifetimes(F, list(F._runs_first.values()), F._output_rows,
                            np.concatenate([F._input_rows, F._param_rows]), rowed(F))
    _, offset, size = plans.regions(F._plans)
    assert layout.sharing(offset, size, life[:, :2]) == [] == layout.sharing(driver.starts(F, True), size, life[:, 2:])
    want = _calls(G, x, False)
    buffer = io.BytesIO()
    F.save(buffer)
    buffer.seek(0)
    copies = [F, tape.load(buffer), pickle.loads(pickle.dumps(F))]
    for H in copies:
        assert all(np.array_equal(a, b) for a, b in zip(_calls(H, x, True), want, strict=True))
    F.check_finite = G.check_finite = True
    assert all(np.array_equal(a, b) for a, b in zip(_calls(F, x, True), _calls(G, x, False), strict=True))
    v = np.linspace(-1.0, 1.0, len(x))
    assert np.array_equal(F.hvp(x, v, params=0.7), G.hvp(x, v, params=0.7))
    assert F._recorded is None and len(F._aval) == len(G._aval)
    assert all(np.array_equal(a, b) for a, b in zip(_calls(F, x, False), _calls(G, x, False), strict=True))


def test_loops_need_the_regions_of_a_few_steps(arrays):
    """A loop whose reverse reads no values (the heat equation) needs the same regions for 20 steps as for 80;
    a layout that shares regions wrongly is caught by the check."""
    def heat(steps):
        def f(u):
            for _ in range(steps):
                u = u + 0.2 * (np.concatenate([u[1:], u[:1]]) + np.concatenate([u[-1:], u[:-1]]) - 2.0 * u)
            return 0.5 * (u * u).sum()
        return tape.trace(f, np.linspace(0.0, 1.0, 500))
    short, long = heat(20), heat(80)
    def spread(F):  # the arena but the constants (each step records its 0-d ones, which live for good)
        return len(F._aval) - sum(p.size for p in F._plans if p.code == ACONSTANT)
    assert spread(short) == spread(long) < 20 * 500
    assert len(array_replay.recorded(long)[1]) > 80 * 5 * 500
    life = layout.lifetimes(long, list(long._runs_first.values()), long._output_rows, long._input_rows)
    assert layout.sharing(np.zeros(len(life), np.int64), plans.regions(long._plans)[2], life[:, :2])  # (all at 0)


@pytest.mark.parametrize("program", ["heat", "gru", "shrinking"])
def test_the_compiled_tables_follow_a_function_back_to_its_recorded_layout(program, arrays, monkeypatch):
    """The rows of the compiled tables a Function keeps (compiled.all_rows) are those of its layout: swept by the
    tables on shared regions, then put back on its recorded layout by its second order, it gives the recorded
    layout's numbers, bit for bit."""
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    x, F, G = _both_layouts(PROGRAMS[program], monkeypatch)
    assert F._recorded is not None
    want = _calls(G, x, False)
    assert all(np.array_equal(a, b) for a, b in zip(_calls(F, x, True), want, strict=True))
    F.hvp(x, np.linspace(-1.0, 1.0, len(x)), params=0.7)
    assert F._recorded is None
    assert all(np.array_equal(a, b) for a, b in zip(_calls(F, x, False), want, strict=True))


def _same(a, b) -> bool:
    if isinstance(a, tuple) and a and isinstance(a[0], np.ndarray):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


def _moved_by_run(runs, before, after, in0, back=None):
    """fusion.moved as a loop over the runs (the reference)."""
    old = np.array([p.offset for p in before], np.int64)
    new = np.array([p.offset for p in after], np.int64)
    back = new if back is None else back
    plan = in0.astype(np.int64)
    out = []
    for run in runs:
        ext = run.program[6].copy()
        ext[:len(run.reads), 0] += new[plan[run.reads]] - old[plan[run.reads]]
        ext[:len(run.reads), 4] = ext[:len(run.reads), 0] + back[plan[run.reads]] - new[plan[run.reads]]
        live = np.where(run.live >= 0, new[plan[run.members]], -1)
        total = run.total >= 0
        out.append(run._replace(program=(*run.program[:6], ext), live=live, total_at=int(new[plan[run.total]]) if
                                total else -1, adj_live=np.where(run.live >= 0, back[plan[run.members]], -1),
                                adj_total=int(back[plan[run.total]]) if total else -1))
    return out


def _in_own_adjoints(F, run):
    """run as find gives it on F's shared regions with its adjoint places F's own (layout.adjoints'), by the loop."""
    return _moved_by_run([run], F._plans, F._plans, F._in0, F._back_at)[0]


MOVED = []


@pytest.mark.parametrize("program", PROGRAMS)
def test_runs_moved_to_the_shared_regions_are_the_runs_found_there(program, arrays, monkeypatch):
    """A Function's runs, found on its recorded layout and moved to its shared regions (fusion.moved, not a second
    find), are field for field those that find gives on the shared regions; moved back, those that the loop over the
    runs moves back. (Every run kept fused: not rows, compiled.kept.)"""
    monkeypatch.setattr(compiled, "kept", lambda s, runs: runs)
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    F = tape.trace(PROGRAMS[program], x, params=0.7)
    found = fusion.find(F, set(F._output_rows.tolist()), (F._input_rows, F._param_rows, F._check_rows))
    runs = list(F._runs_first.values())
    assert len(found) == len(runs)
    for a, b in zip(found, runs, strict=True):
        a = _in_own_adjoints(F, a) if F._recorded is not None else a
        assert all(_same(getattr(a, name), getattr(b, name)) for name in fused_runs.Run._fields), (a, b)
    if F._recorded is not None:  # (and back to the recorded layout, by the loop too)
        plans = array_replay.recorded(F)[0]
        got, want = fusion.moved(runs, F._plans, plans, F._in0), _moved_by_run(runs, F._plans, plans, F._in0)
        assert all(np.array_equal(run.program[6][:, 0], run.program[6][:, 4]) for run in got)
        for a, b in zip(got, want, strict=True):
            assert all(_same(getattr(a, name), getattr(b, name)) for name in fused_runs.Run._fields), (a, b)
            assert type(a.total_at) is int and a.program[6].flags.writeable and a.live.flags.writeable
    MOVED.append(F._recorded is not None and len(runs))

    if len(MOVED) == len(PROGRAMS):
        assert sum(MOVED) >= 10  # runs moved, in several programs


def _adjoint_regions(F):
    """Each plan of F and where its adjoint region starts (layout.adjoints', or its value's offset)."""
    return list(zip(F._plans, driver.starts(F, True).tolist(), strict=True))


def test_the_adjoint_arena_ends_before_the_constants_no_adjoint_reaches(arrays):
    """A constant that no sweep sends an adjoint to (a data matrix a matmul reads, a small vector a product reads)
    lies past the end of the adjoint arena; a constant a fused run reads (its kernels send to every view) or an elem
    record reads keeps its adjoint region inside it, as do an output and every other record. (Their numbers: the test
    above, program "data".)"""
    F = tape.trace(_data, np.linspace(0.5, 1.5, 600), params=0.7)
    X, Y, Z = ([p for p in F._plans if p.code == ACONSTANT and p.shape == a.shape and
                np.array_equal(driver.region(F._aval, p), a)][0] for a in DATA)
    assert any(Y.row in run.reads.tolist() for run in F._runs_first.values())
    assert all((start >= len(F._aadj)) == (p is X) for p, start in _adjoint_regions(F))
    assert all(start + p.size <= len(F._aadj) for p, start in _adjoint_regions(F) if p is not X)
    H = tape.trace(lambda x, p: (x @ DATA[0].T * p).sum(), np.linspace(0.5, 1.5, 10), params=0.7)
    assert len(H._aadj) <= len(H._aval) - DATA[0].size
    assert [p.shape for p, start in _adjoint_regions(H) if start >= len(H._aadj)] == [DATA[0].T.shape]
    out = tape.trace(lambda x, p: _constant(x, DATA[1]), np.linspace(0.5, 1.5, 10), params=0.7)  # an output
    assert all(start + p.size <= len(out._aadj) for p, start in _adjoint_regions(out))
    assert np.array_equal(out.vjp(np.ones(10), DATA[1], params=0.7), np.zeros(10))
    numbers = tape.trace(lambda x, p: (x * DATA[1][:layout.SMALL] * p).sum(), np.ones(layout.SMALL), params=0.7)
    assert [p.shape for p, start in _adjoint_regions(numbers) if start >= len(numbers._aadj)] == [(layout.SMALL,)]


def test_a_functions_adjoint_arena_is_made_at_its_first_reverse_sweep(arrays):
    """tape.trace makes none (F.nbytes counts none); the first gradient makes it as long as the layout says, and
    F.nbytes then counts it; a pickled copy made before makes its own. (Its numbers, poisoned:
    test_shared_regions_give_the_recorded_layouts_numbers.)"""
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    F = tape.trace(_gru, x, params=0.7)
    adjoints = layout.laid(F, list(F._runs_first.values()), F._output_rows,
                           np.concatenate([F._input_rows, F._param_rows]), rowed(F))[3]
    assert F._adjoints == adjoints and "_aadj" not in vars(F)
    copy, before = pickle.loads(pickle.dumps(F)), F.nbytes
    got = F.value_and_grad(x, params=0.7)
    assert len(F._adjoints) == adjoints and F.nbytes == before + 8 * adjoints
    assert all(np.array_equal(a, b) for a, b in zip(got, copy.value_and_grad(x, params=0.7), strict=True))
    assert len(copy._aadj) == adjoints and copy._aadj is not F._aadj


def test_tracing_peaks_below_the_functions_two_arenas(monkeypatch):
    """An LSTM-like loop (its reverse reads 4 values a step) traced: tape.trace's peak (tracemalloc, after one
    untimed trace) stays below twice the value arena of the Function it makes (9.6 MB of 11.4; 15.2 when it made
    the value and adjoint arenas, then as long, beside its tape's arena; the adjoint arena is 0.56 MB now)."""
    monkeypatch.setattr(arenas, "_SPARE", [])
    y = np.random.default_rng(13).normal(scale=0.1, size=4096 + 64 * 256)
    tape.trace(_lstm, y).value_and_grad(y)
    arenas._SPARE.clear()
    tracemalloc.start()
    try:
        F = tape.trace(_lstm, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * F._aval.nbytes
    assert F._aval.nbytes > 40 * 4 * 4096 * 8  # (the values its reverse reads: the test tests something)


def test_regions_of_whole_pages_start_apart_in_a_page(arrays, monkeypatch):
    """Regions whose length is within layout.NEAR of whole 4 KB pages (Burgers' 4,096 elements) are staggered, so that
    no two of them start at nearly the same place of a page (4K aliasing: a pass storing to one while reading another
    waited on every load): each starts at least NEAR from the one before it; other lengths are laid end to end as they
    are; the numbers are the recorded layout's."""
    def f(u):
        for _ in range(6):
            u = u - 0.3 * u * (u - np.roll(u, 1)) + 0.1 * (np.roll(u, -1) - 2.0 * u + np.roll(u, 1))
        return 0.5 * (u * u).sum()

    x = np.random.default_rng(9).uniform(0.5, 1.5, 4096)
    F = tape.trace(f, x)
    starts = np.array(sorted({p.offset for p in F._plans if p.size == 4096}))
    assert len(starts) >= 4
    step = np.diff(starts) % layout.PAGE  # (where each starts in a page, against the one before it in the arena)
    assert np.minimum(step, layout.PAGE - step).min() >= layout.NEAR
    assert np.array_equal(layout.staggered(np.array([100, 4096, 4097, 4095, 5000, 100_000, 511])),
                          [100, 4096 + 64, 4097 + 63, 4095 + 65, 5000, 100_000, 511])
    with monkeypatch.context() as m:
        m.setattr(layout, "laid", _recorded)
        G = tape.trace(f, x)
    assert all(np.array_equal(a, b) for a, b in zip(F.value_and_grad(x), G.value_and_grad(x), strict=True))


@pytest.mark.parametrize("seed", range(6))
def test_place_gives_records_living_at_once_apart_regions(seed):
    """place(), compact's rule on any lifetimes (a value's, or an adjoint's for a layout of its own): regions overlap
    only between plans whose lifetimes never meet (times inclusive, ties drawn often), an alone plan's overlaps none,
    regions holding only bare plans lie past the arena's first end, and plans one after another share one region."""
    rng = np.random.default_rng(seed)
    n = 300
    size = rng.choice([0, 1, 3, 8, 9, 100, 600, 4096], n)
    born = rng.integers(0, 40, n)
    dies = born + rng.integers(-1, 12, n)  # (-1: an adjoint that never lives: alone, or place refuses)
    alone, bare = (rng.random(n) < 0.1) | (dies < born), rng.random(n) < 0.2
    offsets, end, first = layout.place(size, born, dies, alone, bare)
    lo, hi = offsets, offsets + size
    overlap = (lo[:, None] < hi[None, :]) & (lo[None, :] < hi[:, None]) & (size[:, None] > 0) & (size[None, :] > 0)
    np.fill_diagonal(overlap, False)
    meet = (born[:, None] <= dies[None, :]) & (born[None, :] <= dies[:, None])
    assert not (overlap & meet).any()
    assert not (overlap & (alone[:, None] | alone[None, :])).any()
    assert overlap.any()  # (shared: the test sees some)
    held = size > 0  # (a plan of no elements may lie past the end: no room)
    assert hi[held].max() == end and (hi[held & ~bare] <= first).all() and first < end
    others = overlap & ~(bare[:, None] & bare[None, :])  # a region with a plan that is not bare lies before first
    assert (hi[others.any(1)] <= first).all()
    chain = layout.place(np.full(50, 64), np.arange(50) * 2, np.arange(50) * 2 + 1, np.zeros(50, bool),
                         np.zeros(50, bool))
    assert chain[1:] == (64, 64) and (chain[0] == 0).all()
    with pytest.raises(ValueError, match="never lives"):
        layout.place(size, born, dies, dies < born - 1, bare)


def _vector(u, p):
    for _ in range(5):
        u = np.tanh(u * p) * u[::-1] + 0.5 * u
    return u[::3] * u[1::3]


def test_adjoints_of_their_own_seed_an_array_output(arrays, monkeypatch):
    """An array output's adjoint (the cotangent, seeded before the sweep) and the inputs' (read after it) on adjoints
    laid out apart (layout.adjoints), the adjoint arena poisoned with NaN before each call, by NumPy's steps and by the
    compiled tables: F.vjp's numbers are the recorded layout's, bit for bit."""
    x = np.random.default_rng(9).uniform(0.2, 1.5, 600)
    F = tape.trace(_vector, x, params=0.7)
    with monkeypatch.context() as m:
        m.setattr(layout, "laid", _recorded)
        G = tape.trace(_vector, x, params=0.7)
    assert F._back_at is not None and G._back_at is None and F._adjoints < len(F._aval)
    for ready in (False, True):
        monkeypatch.setattr(compiled, "ready", lambda s, runs, ready=ready: ready)
        for seed in range(2):
            w = np.random.default_rng(seed).normal(size=200)
            F._aadj[:] = np.nan
            got, want = F.vjp(x * (1.0 + 0.1 * seed), w), G.vjp(x * (1.0 + 0.1 * seed), w)
            assert np.array_equal(got, want) and np.isfinite(got).all()
