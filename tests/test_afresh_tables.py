"""A tape's reverse sweep by the compiled tables (tape/sweeps/compiled.py's tape_reverse: tape.value_and_grad recorded
afresh, its regions recycled, its fused runs kept or dissolved into rows): NumPy's steps' gradients bit for bit (NaN
for NaN), at edge values; below FEW array records, and before the kernels are ready, NumPy's steps run."""

import math

import numpy as np
import pytest
from test_array_driver import EDGES, MOVES, RNG, arrays  # noqa: F401 (arrays: the fixture)
from test_driven_broadcasts import LAYOUTS, _program
from test_driven_logsumexp import LINES
from test_driven_selects import LAYOUTS as SELECTS
from test_driven_selects import _program as _selected
from test_recycling import PROGRAMS as LOOPS

import tape
from tape.sweeps import compiled

pytestmark = pytest.mark.usefixtures("arrays")

PROGRAMS = {**{f"loop {name}": (f, 600, (0.7,)) for name, f in LOOPS.items()},
            **{f"move {name}": (f, 960, ()) for name, (f, _) in MOVES.items()},
            **{f"logsumexp {name}": (f, 2400, ()) for name, (f, _) in LINES.items()},
            **{f"broadcast {name}": (_program("mul", name), 8000, ()) for name in LAYOUTS},
            **{f"select {name}": (_selected(name, True), 96, ()) for name in SELECTS}}


def _points(size):
    x = RNG.uniform(0.2, 1.5, size)
    return [x, np.resize(EDGES, size), np.resize(EDGES[::-1], size), np.where(x > 1.0, 0.0, -0.0),
            np.where(x > 1.3, np.inf, x), np.where(x > 1.4, np.nan, x), x * 1e300]


def _sweeps(monkeypatch, tables):
    """The tables from every array record (kernels ready), or NumPy's steps; a list that counts the tables run."""
    ran = []
    reverse = compiled.reverse
    monkeypatch.setattr(compiled, "FEW", 0 if tables else 10 ** 12)
    monkeypatch.setattr(compiled, "MAKE", math.inf)  # (steps: a small tape neither makes tables nor takes kept ones)
    if not tables:
        monkeypatch.setattr(compiled, "_made", {})
    monkeypatch.setattr(compiled._gate, "ready", lambda: True)
    monkeypatch.setattr(compiled, "reverse", lambda *args, **kwargs: ran.append(1) or reverse(*args, **kwargs))
    return ran


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_tables_give_numpys_steps_gradients(program, monkeypatch):
    f, size, args = PROGRAMS[program]
    g = tape.value_and_grad(f)
    for point in _points(size):
        with np.errstate(all="ignore"):
            _sweeps(monkeypatch, False)
            want = g(point, *args)
            ran = _sweeps(monkeypatch, True)
            got = g(point, *args)
        assert ran
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(a, b, equal_nan=True), np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))


def test_few_array_records_stay_numpys(monkeypatch):
    ran = _sweeps(monkeypatch, True)
    monkeypatch.setattr(compiled, "FEW", 50)
    x = RNG.uniform(size=100)
    tape.value_and_grad(lambda v: (np.tanh(v) * v).sum())(x)
    assert not ran
    tape.value_and_grad(lambda v: sum((np.tanh(v * k) * v).sum() for k in range(20)))(x)
    assert ran


def _passes(monkeypatch, tables):
    ran = _sweeps(monkeypatch, tables)
    t = tape.Tape()
    X = t.array(RNG.uniform(0.5, 1.5, 200))
    h = np.tanh(X * 0.5)
    y = (h * h).sum() + (h * X).sum()
    grads = [t.gradient(y, X)]
    for _ in range(3):
        t.backward(y, accumulate=True)
        grads.append(X.grad)
    t.backward(y)
    assert bool(ran) == tables
    return [*grads, X.grad]


def test_accumulated_passes_add_up_on_array_leaves_only(monkeypatch):
    """Tape.backward(accumulate=True) by the tables: a leaf's adjoint adds up over passes, an inner record's does
    not (the stamp rule's ``keep``), as by NumPy's steps, bit for bit."""
    state = RNG.bit_generator.state
    want = _passes(monkeypatch, False)
    RNG.bit_generator.state = state
    got = _passes(monkeypatch, True)
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    assert np.allclose(want[2], 3 * want[0], rtol=1e-14) and np.array_equal(want[-1], want[0])
