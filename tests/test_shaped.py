"""A run shape's own kernels (kernels/codegen/shaped.py) give the interpreted fused kernels' bits, and NumPy's steps'
where the run's adds are in their order; they stand in for nothing until their Gate opens."""

import numpy as np
import pytest
from test_fused_numpy import EDGE_PROGRAMS, EDGES, PROGRAMS, kept_fused

import tape
from tape.kernels import compiling, shaped
from tape.kernels._sweeps import fused_reverse
from tape.sweeps import driver, fused_runs

RNG = np.random.default_rng(5)


def _two_inputs(u):  # views of two inputs lagged in one run, its last member read outside and summed
    v = u * 1.5
    w = v[2:] * u[:-2] + v[1:-1] - u[2:] * v[:-2] - (w0 := u[1:-1] - 2.0) / (w0 * w0 + 1.0)
    return (w * w).sum() + w[100] + np.sum(w)


def _ops(u):  # every fusible op, a member read twice, one view on both sides, a number on the left, a general pow
    a = u[1:] - u[:-1]
    b = (a * a + 2.0) ** 0.5
    c = -(b / (1.0 + u[1:] * u[1:])) ** 2
    return ((tape.sqrt(c * c + 1.0) / b - 3.0 / b) * a + abs(a) ** 3.0).sum()


def _filter(u, passes=10):
    for _ in range(passes):
        u = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
    return 0.5 * (u * u).sum()


def _line_of(n, passes):  # a filter on a record of n elements (an input is an array from 1,024 elements)
    return lambda u: _filter(u[:n] * 1.5, passes) + 0.5 * (u * u).sum()


def _chain(u):  # views lagged 0, 2, 4 on a line of 3: no element read by all three
    v = u[:7] * 1.5
    w = v[:3] + 2.0 * v[2:5] - v[4:7]
    return (w * w).sum() + 0.5 * (u * u).sum()


def _partial(u):  # a line that does not cover its input (u's last element): added to, not assigned
    y = u[:-2] * 3.0 + u[1:-1]
    return (y * y).sum()


def _read_after(u):  # the line's adjoint already holds an add when its run's reverse comes: added to
    v = u * 1.5
    y = 0.25 * v[:-2] + 0.5 * v[1:-1] + 0.25 * v[2:]
    return (y * y).sum() + (v * v[::-1]).sum()


OWN = {
    "views of two inputs, lagged, at block edges": (_two_inputs, RNG.normal(size=3 * 512 + 5)),
    "views lagged past their line's length": (_chain, RNG.normal(size=1100)),
    "a line short of its input": (_partial, RNG.normal(size=1030)),
    "a line read after its run": (_read_after, RNG.normal(size=1030)),
    **{f"a 3-tap filter on {n} elements": (_line_of(n, 2), RNG.normal(size=1600)) for n in (5, 514, 1026)},
    "every fusible op": (_ops, RNG.normal(size=2 * 512 + 11)),
    "a 3-tap filter, 10 passes": (_filter, RNG.normal(size=5000)),
}
CASES = {**{name: (f, x) for name, (f, x) in PROGRAMS.items()},
         **{name: (f, np.random.default_rng(7).normal(size=n)) for name, (f, n, _) in EDGE_PROGRAMS.items()}, **OWN}


def _points(x):
    scale, edges, reversed_edges = (np.resize(a, x.size).reshape(x.shape) for a in
                                    (np.random.default_rng(8).uniform(0.5, 9.0, x.size), EDGES, EDGES[::-1]))
    return [x, x * scale, edges, np.where(np.abs(x) > 1.0, reversed_edges, x * 1e-300)]


def _by(monkeypatch, path, f, x):
    """Values and gradients at _points(x), a Function's fused runs run by their shape's kernels ("shaped"), by the
    interpreted kernels ("kernels"), or by NumPy's steps (no runs); the shapes' kernels called."""
    kept_fused(monkeypatch)
    monkeypatch.setattr(fused_runs, "SHAPED", path == "shaped")
    monkeypatch.setattr(fused_runs.Shaped, "eager", True)
    for tiered in (fused_runs.FORWARD, fused_runs.REVERSE):
        monkeypatch.setattr(tiered.gate, "ready", lambda: True)
    called = []
    monkeypatch.setattr(compiling.Gate, "call", lambda self, kernel, *a: called.append(kernel.__name__) or kernel(*a))
    with np.errstate(all="ignore"):
        F = tape.trace(f, x)
        if path == "numpy":
            F._runs_first, F._runs_last = {}, {}
        out = [np.concatenate([[v], np.ravel(g)]) for v, g in (F.value_and_grad(p) for p in _points(x))]
    return out, F, called


@pytest.mark.parametrize("program", sorted(CASES))
def test_a_shapes_kernels_give_the_fused_kernels_bits(monkeypatch, program):
    """NaN for NaN (a NaN's sign is IEEE's choice: LLVM may make g * -1.0 a negation in one kernel, not the other);
    and NumPy's steps' gradient where every run adds in their order (a fused sum adds by blocks). A run whose adds
    are not (views far apart, rows apart) has no shape: the interpreted kernels run it."""
    f, x = CASES[program]
    got, F, called = _by(monkeypatch, "shaped", f, x)
    ordered = all(run.ordered and run.twinned for run in F._runs_first.values())  # (pow: C's, not NumPy's loop)
    assert ({"forward", "reverse"} <= set(called)) == any(run.shaped for run in F._runs_first.values())
    for path in ["kernels"] + (["numpy"] if ordered else []):
        for a, b in zip(_by(monkeypatch, path, f, x)[0], got, strict=True):
            if path == "numpy":
                a, b = a[1:], b[1:]
            bits = [np.where(np.isnan(c), np.nan, c).tobytes() for c in (a, b)]  # (-0.0 is not 0.0)
            assert bits[0] == bits[1], (path, np.flatnonzero((a != b) & ~(np.isnan(a) & np.isnan(b))))


def test_one_kernel_a_shape_whatever_the_length(monkeypatch):
    kept_fused(monkeypatch)
    monkeypatch.setattr(fused_runs.Shaped, "made", {})
    for n in (3000, 7001):
        tape.trace(OWN["a 3-tap filter, 10 passes"][0], RNG.normal(size=n)).value_and_grad(RNG.normal(size=n))
    assert len(fused_runs.Shaped.made) == 2  # a pass, and the last (its dot joins it)


def test_a_shape_waits_for_its_payback(monkeypatch, tmp_path):
    """A fresh shape's source lands in the cache dir; the interpreted kernels stand in until they have run PAYBACK
    seconds (LOAD where the shape's kernels are cached), and the shape's kernels are called from then on."""
    monkeypatch.setenv("TAPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiling, "EAGER", False)
    monkeypatch.setattr(fused_runs.Shaped, "made", {})
    monkeypatch.setattr(fused_runs.Shaped, "eager", False)
    monkeypatch.setattr(shaped, "_made", {})
    called = []
    monkeypatch.setattr(compiling.Gate, "call", lambda self, kernel, *a: called.append(kernel.__name__))
    monkeypatch.setattr(fused_runs, "FORWARD", lambda *a: 0.0)  # (the stand-ins: their bits are the test above's)
    monkeypatch.setattr(fused_runs, "REVERSE", lambda *a: None)
    x = RNG.normal(size=4000)
    F = tape.trace(lambda u: (u[1:] * u[:-1] - 0.5 * u[1:]).sum(), x)
    F.value_and_grad(x)
    assert not called and len(list((tmp_path / "shaped").glob("tape_shaped_*.py"))) == 1
    (made,) = fused_runs.Shaped.made.values()
    made.gate.clock.spent = fused_runs.Shaped.PAYBACK
    F.value_and_grad(x)
    assert called == ["forward", "reverse"]


def test_a_shapes_file_edited_is_written_again(monkeypatch, tmp_path):
    """A shape's source in the cache dir that is not what the generator writes (edited, cut short) is written again."""
    monkeypatch.setenv("TAPE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(shaped, "_made", {})
    monkeypatch.setattr(fused_runs.Shaped, "made", {})
    x = RNG.normal(size=4000)
    tape.trace(lambda u: (u[1:] * u[:-1] - 0.5 * u[1:]).sum(), x).value_and_grad(x)
    (shape,) = fused_runs.Shaped.made
    shaped.kernels(shape)
    (path,) = (tmp_path / "shaped").glob("tape_shaped_*.py")
    text = path.read_text()
    path.write_text(text.replace("return", "return -1.0 *", 1))
    monkeypatch.setattr(shaped, "_made", {})
    shaped.kernels(shape)
    assert path.read_text() == text


def _garbage(size):
    return np.resize(np.concatenate([EDGES, RNG.normal(size=31)]), size)


@pytest.mark.parametrize("program", sorted(OWN))
def test_a_pulled_reverse_adds_as_the_views_loops_and_assigns_a_stale_line(monkeypatch, program):
    """A shape's reverse, its views on one line pulled (kernels/shaped.py), adds to any adjoints there as the
    interpreted kernel does, bit for bit; where fresh, it assigns its line's region whole (garbage there before,
    zeros in the interpreted kernel's), and writes nothing else: each run's kernel called on one arena."""
    kept_fused(monkeypatch)
    monkeypatch.setattr(fused_runs.Shaped, "eager", True)
    f, x = OWN[program]
    F = tape.trace(f, x)
    F.value_and_grad(x)
    lines = 0
    for run in F._runs_first.values():
        if run.shaped is None:
            continue
        seed, line = 1.5 if run.total >= 0 else 0.0, run.line(F)
        args = (run.adj_live, seed, *run.rows_cols, F._aval)
        for fresh in (False, True)[:1 + (line >= 0)]:
            want = _garbage(F._aadj.size)
            got = want.copy()
            if fresh:
                k = int(F._in0[run.inputs[line]])  # (its adjoint region: layout.adjoints')
                at, size = driver.origin(F, F._aadj, k), F._plans[k].size
                want[at:at + size], got[at:at + size] = 0.0, np.nan
            with np.errstate(all="ignore"):
                fused_reverse(*run.program, run.need, *args, want)
                run.shaped.kernels.reverse(*run.program[5:], *args, got, fresh)
            assert np.array_equal(np.where(np.isnan(want), np.nan, want).view(np.int64),
                                  np.where(np.isnan(got), np.nan, got).view(np.int64)), (fresh, np.flatnonzero(
                                      (want != got) & ~(np.isnan(want) & np.isnan(got))))
        lines += line >= 0
    if "filter" in program or "lagged past" in program or "short" in program:
        assert (lines > 0) == ("short" not in program)  # (a line short of its input is added to)
