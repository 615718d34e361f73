"""A small tape's reverse sweep (below compiled.FEW array records, no fused run: value_and_grad of an MLP in a loop)
by the tables kept for its structure (compiled.tape_reverse's Made): made once the structure's sweeps by NumPy's steps
have run MAKE seconds, then taken by the loop's later calls, with NumPy's steps' bits (errors too, under debug_nans);
driver._elems_back's few elem records sent one by one as np.add.at adds them."""

import itertools
import math
import threading
import types
import warnings

import numpy as np
import pytest
from sameness import edge_points, same_bits
from test_tables_reuse import DIFFER

import tape
from tape.function.array_replay import has_nan
from tape.records import array_records
from tape.sweeps import compiled, driver, fusion

RNG = np.random.default_rng(16)
D = RNG.normal(size=(5, 6))
PROGRAMS = {  # below FEW array records
    "mlp": lambda x: ((np.tanh(D @ x[:24].reshape(6, 4) + x[:4]) @ x[4:8] - 1.0) ** 2).mean(),
    "elems": lambda x: (np.tanh(x) * x).sum() + x[0] * 1e16 + x[0] + x[0],  # 4 elem records, one
    # element read thrice (its adjoint summed in their order back)
    "many elems": lambda x: sum(x[k] * x[k + 1] for k in range(8)) + np.exp(x).sum() / x[2],
    "where": lambda x: np.where(x > 1.0, np.log(x - 1.0), x * x).sum() + x @ x,  # NaN on the side not taken
    "sums": lambda x: (np.exp(x[:24].reshape(4, 6)).sum(0) ** 2).sum() + np.sqrt(x).max(),
}
X = RNG.uniform(0.2, 1.5, 80)  # (past Tape.array's 64 scalar leaves: elem records read it)


@pytest.fixture
def small(monkeypatch):
    """Array records for small arrays, kernels ready, tables made at a structure's second tape (MAKE 0), none kept
    before; counts of the tables made and of the tables' sweeps."""
    monkeypatch.setattr(array_records, "SMALL", 1)
    monkeypatch.setattr(compiled._gate, "ready", lambda: True)
    monkeypatch.setattr(compiled, "_made", {})
    monkeypatch.setattr(compiled, "MAKE", 0.0)
    counts = {"made": 0, "swept": 0}
    of, reverse = compiled.Made.of, compiled.reverse

    def made(cls, *args):
        counts["made"] += 1
        return of(*args)

    def swept(*args, **kwargs):
        counts["swept"] += 1
        return reverse(*args, **kwargs)

    monkeypatch.setattr(compiled.Made, "of", classmethod(made))
    monkeypatch.setattr(compiled, "reverse", swept)
    return counts


def _call(g, x, nans=False):
    """g(x)'s value and gradient, or its error's text (debug_nans)."""
    try:
        with np.errstate(all="ignore"):
            if not nans:
                return g(x)
            with tape.debug_nans():
                return g(x)
    except tape.NonFiniteError as error:
        return str(error)


def _same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
    else:
        assert same_bits(a[0], b[0]) and same_bits(a[1], b[1])


def _steps(f, x, monkeypatch, nans=False):
    """f's value and gradient by NumPy's steps (no tables made nor kept)."""
    with monkeypatch.context() as m:
        m.setattr(compiled, "MAKE", math.inf)
        m.setattr(compiled._gate, "ready", lambda: False)  # (a tape with a big record takes the tables at once)
        m.setattr(compiled, "_made", {})
        return _call(tape.value_and_grad(f), x, nans)


@pytest.mark.parametrize("nans", [False, True])
@pytest.mark.parametrize("name", PROGRAMS)
def test_a_loops_later_calls_take_the_tables_with_numpys_bits(name, nans, small, monkeypatch):
    f = PROGRAMS[name]
    for point in edge_points(X):
        want = _steps(f, point, monkeypatch, nans)
        compiled._made.clear()
        g = tape.value_and_grad(f)
        made = []
        for call in range(4):  # NumPy's steps, the tables made, then taken
            small.update(made=0, swept=0)
            _same(_call(g, point, nans), want)
            made.append(small["made"])
            if not isinstance(want, str) and call >= 2:
                assert small["made"] == 0 and small["swept"], (call, small)
        assert sum(made) == 1 or isinstance(want, str) and sum(made) <= 1  # (made at the second sweep: the second
        # call's, or the first's own checked one where its unchecked products left a NaN; none where f raised)


def test_the_tables_are_made_once_numpys_steps_have_run_make_seconds(small, monkeypatch):
    """A ski rental: each steps' sweep timed 1 s (a fake clock), MAKE 2.5: the fourth tape makes them."""
    clock = itertools.count()
    monkeypatch.setattr(compiled, "time", types.SimpleNamespace(perf_counter=lambda: float(next(clock))))
    monkeypatch.setattr(compiled, "MAKE", 2.5)
    g = tape.value_and_grad(PROGRAMS["mlp"])
    made = []
    for _ in range(6):
        g(X)
        made.append((small["made"], small["swept"] > 0))
        entry = next(iter(compiled._made.values()))[-1]
        assert entry.items is not None or entry.spent == len(made)
    assert made == [(0, False)] * 3 + [(1, True)] * 3


def test_a_structure_that_changes_makes_its_own(small, monkeypatch):
    """Two structures of one key, alternated: each one's second tape in a row makes its tables, kept beside the
    other's (compiled.SHARING) and never made again; every call its own bits."""
    fs = DIFFER["op"]
    want = [_steps(f, X, monkeypatch) for f in fs]
    made = []
    for k in (0, 0, 0, 1, 1, 1, 0, 1, 1):
        small.update(made=0)
        _same(tape.value_and_grad(fs[k])(X), want[k])
        made.append(small["made"])
        assert len(compiled._made) == 1
    assert made == [0, 1, 0, 0, 1, 0, 0, 0, 0]


def test_a_tape_with_a_big_record_is_not_small(small, monkeypatch):
    """A tape with a record of fusion.TAPE_RUNS elements or more (here all of them) takes the tables at its first
    sweep, with back stretches where its caller reads only the inputs' gradients (fused), the bits of NumPy's steps
    (before, a few records' tape with fused runs kept NumPy's steps: tape.jit's mixture then took 1 ms more a call)."""
    monkeypatch.setattr(fusion, "TAPE_RUNS", 1)
    monkeypatch.setattr(compiled, "TAPE_RUNS", 1)
    f = PROGRAMS["mlp"]
    want = _steps(f, X, monkeypatch)
    g = tape.value_and_grad(f)
    made, swept = [], []
    for _ in range(5):
        _same(g(X), want)
        made.append(small["made"])
        swept.append(small["swept"])
    assert swept[0] > 0 and min(np.diff(swept)) > 0  # (the tables at every sweep, the first too)
    assert made[0] == 1 and made[1] <= 2 and made[1:] == [made[1]] * 4  # (the first tape's, a renewed one's)
    assert all(made.fused for kept in compiled._made.values() for made in kept)


def test_cold_kernels_keep_numpys_steps(small, monkeypatch):
    monkeypatch.setattr(compiled._gate, "ready", lambda: False)
    g = tape.value_and_grad(PROGRAMS["mlp"])
    for _ in range(3):
        g(X)
    assert small["swept"] == 0 and not compiled._made


def test_threads_make_and_take_at_once(small, monkeypatch):
    """Tapes of three structures (two of one key) swept by 4 threads at once, one structure kept (MADE 1): each call
    its own bits."""
    monkeypatch.setattr(compiled, "MADE", 1)
    fs = [*DIFFER["op"], PROGRAMS["mlp"]]
    want = [_steps(f, X, monkeypatch) for f in fs]
    wrong = []

    def calls(k):
        gs = [tape.value_and_grad(f) for f in fs]
        for i in range(40):
            j = (i // 3 + k) % 3  # three calls in a row: made and taken
            got = gs[j](X)
            wrong.extend([] if same_bits(got[0], want[j][0]) and same_bits(got[1], want[j][1]) else [(k, i)])

    threads = [threading.Thread(target=calls, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong and len(compiled._made) == 1 and small["swept"]


@pytest.mark.parametrize("name", ["elems", "many elems"])
def test_few_elem_records_send_as_np_add_at(name, monkeypatch):
    """driver._elems_back one by one (up to ONE_BY_ONE elem records) and by np.add.at: the same bits, at the edge
    points (NaN, inf, zero and -0.0 adjoints; an element read by two elem records)."""
    monkeypatch.setattr(array_records, "SMALL", 1)
    monkeypatch.setattr(compiled, "FEW", 10 ** 12)
    monkeypatch.setattr(compiled, "MAKE", math.inf)
    sent, few = [], driver.ONE_BY_ONE
    back = driver._elems_back
    monkeypatch.setattr(driver, "_elems_back", lambda s, rows, *a: sent.append(len(rows)) or back(s, rows, *a))
    for point in edge_points(X):
        got = []
        for one_by_one in (few, 0):
            monkeypatch.setattr(driver, "ONE_BY_ONE", one_by_one)
            with np.errstate(all="ignore"):
                got.append(tape.value_and_grad(PROGRAMS[name])(point))
        _same(*got)
    assert max(sent) > 1 and 1 < min(sent) <= few


def test_has_nan_of_any_shape():
    for a in (np.zeros((0, 3)), np.ones((2, 3)), np.array(1.0), np.array([[np.inf, -np.inf]])):
        assert not has_nan(a)
    for a in (np.array(np.nan), np.array([[1.0, 2.0], [np.nan, 3.0]]), np.full((2, 2, 2), -np.nan)):
        assert has_nan(a)


@pytest.mark.parametrize("make", [math.inf, 0.0])
def test_the_reverse_sweep_warns_of_nothing(make, small, monkeypatch):
    """NumPy's steps and the tables, at inf, NaN and huge points: no floating-point warning (driver.quietly)."""
    monkeypatch.setattr(compiled, "MAKE", make)
    g = tape.value_and_grad(PROGRAMS["where"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for point in edge_points(X)[3:]:
            for _ in range(3):
                g(point)
