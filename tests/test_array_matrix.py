"""Every transform on random array programs (tests/array_programs.py), on every replay path, at many calls.

A Function's replay switches its fast paths on only once Gates open (a kernel cached or paid back): here each is
forced, one path a Function (``PATHS``): NumPy's steps without fused runs, fused runs by NumPy's twins, by the
interpreted kernels, by their shape's own kernels, the compiled tables row by row, and with their stretches (whose
forward leaves values a back stretch computes again unstored from the third call). On each, one Function is called
again and again at new points by every transform: value_and_grad, the value, gradient, vjp, the maps, a save/load
round trip, then jvp, hvp, value_grad_hvp, map_jvp, map_hvp (these put it back on its recorded layout), value_and_grad
again, and its grad_function (itself replayed on the path) with its jvp and vjp; small programs also jacobian,
hessian (on two paths: DENSE), sparse_jacobian and sparse_hessian. Checked:
- the kernels' paths give the same bits, NaN for NaN (docs/design.md: the tables are NumPy's steps', a run's bits the
  same fused or as rows, stretches the rows'), at random and edge points; a call after the second-order ones gives
  the bits of the first calls; maps the single calls'; a loaded Function the saved one's;
- NumPy's steps (no runs) and tape.value_and_grad recorded afresh (its reverse by NumPy's steps and by the tables)
  agree with them to rounding (a fused sum adds by blocks);
- against independent references: NumPy's value, JAX float64's derivatives projected on seeded directions
  (tests/array_references.json, written by tests/array_references.py), central differences of the value for the
  gradient and of the gradient for the Hessian's products.
"""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest
from array_programs import CASES, constants, directions, point, program, run
from sameness import edge_points, same_bits
from test_stretches import PROGRAMS as STRETCHES

import tape
from tape.records import array_records
from tape.sweeps import compiled, fused_runs, stretches

PATHS = ("numpy", "twins", "fused", "shaped", "tables", "stretches")
KERNELS = PATHS[1:]  # the paths that promise one another's bits
DENSE = ("fused", "stretches")  # the paths that take the dense Hessian: its columns are hvp's sweeps after hvp's
# values (derivatives.hessian), whose bits every path checks (hvp, value_grad_hvp, map_hvp); n of them were 45% of
# seed 0's small program on all six
with open(os.path.join(os.path.dirname(__file__), "array_references.json")) as _file:
    JAX = json.load(_file)
FAST = [case for case in CASES if case[0] < 2]  # the rest: marked slow


def _name(case):
    seed, vector, large = case
    return f"seed{seed}-{'vector' if vector else 'scalar'}-{'large' if large else 'small'}"


def lse(a, axis, keepdims):
    """A logsumexp: tape's on handles, NumPy's formula on arrays."""
    if isinstance(a, np.ndarray):
        top = a.max(axis, keepdims=True)
        return top + np.log(np.exp(a - top).sum(axis, keepdims=True))
    return tape.logsumexp(a, axis=axis, keepdims=keepdims)


def _program(seed, vector, large):
    prog = program(seed)
    return lambda u: run(prog, u, np, lse, vector, large)


def _path(monkeypatch, path, large):
    """Replay on ``path`` from now on (every Gate forced), small arrays array records too where not ``large``."""
    monkeypatch.setattr(array_records, "SMALL", array_records.SMALL if large else 1)
    monkeypatch.setattr(compiled, "ready", lambda s, runs: path in ("tables", "stretches"))
    monkeypatch.setattr(stretches, "ON", path == "stretches")
    monkeypatch.setattr(stretches.Stretch, "PAYBACK", 0.0)
    monkeypatch.setattr(fused_runs, "SHAPED", path == "shaped")
    monkeypatch.setattr(fused_runs.Shaped, "eager", True)
    monkeypatch.setattr(fused_runs.Shaped, "made", {})
    for tiered in (fused_runs.FORWARD, fused_runs.REVERSE):
        monkeypatch.setattr(tiered.gate, "ready", lambda: path != "twins")


def _flat(*parts):
    """Numbers, arrays and tuples of them as one flat vector."""
    return np.concatenate([_flat(*p) if isinstance(p, tuple) else np.ravel(np.asarray(p, np.float64)) for p in parts])


def _transforms(F, f, xs, V, vector, large, dense=True):
    """Every transform of F at the points xs, in order, flat: a list of (name, numbers); the dense Hessian where
    ``dense``."""
    out = []
    n = len(xs[0])
    w = np.cos(np.arange(F.n_outputs) * 1.3) if vector else None
    first = []
    for x in [*xs, xs[0], xs[1]]:  # (the skipping forward from the third call)
        got = F.vjp(x, w) if vector else _flat(*F.value_and_grad(x))
        out.append(("first order", _flat(got)))
        first.append(out[-1][1])
    out.append(("value", _flat(F(xs[1]))))
    if not vector:
        out.append(("gradient", _flat(F.gradient(xs[2]))))
    X = np.stack(xs[:3])
    out.append(("map", _flat(F.map_vjp(X, np.tile(w, (3, 1))) if vector else F.map_value_and_grad(X))))
    buffer = io.BytesIO()
    F.save(buffer)
    G = tape.load(io.BytesIO(buffer.getvalue()))
    out += [("loaded", _flat(G.vjp(x, w) if vector else G.value_and_grad(x))) for x in xs[:3]]
    out.append(("jvp", _flat(F.jvp(xs[1], V[0]))))
    if not vector:
        out.append(("hvp", _flat(F.hvp(xs[1], V[0]))))
        out.append(("value_grad_hvp", _flat(*F.value_grad_hvp(xs[2], V[1]))))
        out.append(("map_hvp", _flat(F.map_hvp(X[[1, 2, 0]], V[:3]))))
    out.append(("map_jvp", _flat(F.map_jvp(X[[1, 2, 0]], V[:3]))))
    out.append(("after", _flat(F.vjp(xs[1], w) if vector else F.value_and_grad(xs[1]))))
    if not vector:
        H = F.grad_function()
        for x in [*xs, xs[0]]:
            out.append(("grad_function", _flat(H(x))))
        out.append(("grad_function jvp", _flat(H.jvp(xs[1], V[0]))))
        out.append(("grad_function vjp", _flat(H.vjp(xs[2], V[1]))))
        out.append(("grad_function value", _flat(F.grad_function(value=True)(xs[1]))))
    else:
        out.append(("jvp_function", _flat(F.jvp_function()((xs[1], V[0])))))
        out.append(("vjp_function", _flat(F.vjp_function()((xs[1], w)))))
    if not large:
        out.append(("jacobian", _flat(F.jacobian(xs[1]))))
        out.append(("sparse_jacobian", _flat(F.sparse_jacobian(xs[1]).toarray())))
        if not vector:
            if dense:
                out.append(("hessian", _flat(F.hessian(xs[1]))))
            out.append(("sparse_hessian", _flat(F.sparse_hessian(xs[1]).toarray())))
    assert n == F.n_inputs
    return out, first


def _spied(monkeypatch):
    """A list noting each compiled table's sweep and each fused run's forward from now on."""
    ran: list[str] = []

    def spy(name, call):
        return lambda *args: ran.append(name) or call(*args)

    monkeypatch.setattr(compiled, "forward", spy("table forward", compiled.forward))
    monkeypatch.setattr(compiled, "reverse", spy("table reverse", compiled.reverse))
    monkeypatch.setattr(fused_runs.Run, "forward", spy("run", fused_runs.Run.forward))
    return ran


def _all_paths(monkeypatch, f, xs, V, vector, large, paths=PATHS):
    """Each path's transforms, and what each reached: compiled tables run, stretch kernels set (forward, back,
    forward skipping), fused runs and their shapes' kernels called."""
    results, reached = {}, {}
    for path in paths:
        _path(monkeypatch, path, large)
        monkeypatch.setattr(stretches.Stretch, "made", {})
        ran = _spied(monkeypatch)
        with np.errstate(all="ignore"):
            F = tape.trace(f, xs[0])
            if path == "numpy":
                F._runs_first, F._runs_last = {}, {}
            results[path] = _transforms(F, f, xs, V, vector, large, path in DENSE)
        made = [x.shape for x in stretches.Stretch.made.values() if x.address]
        ran += ["stretch back" if shape[0] else "stretch skipping" if len(shape) == 4 else "stretch forward"
                for shape in made]
        ran += ["shaped" for x in fused_runs.Shaped.made.values() if x.kernels is not None and
                x.kernels.forward.overloads]
        reached[path] = set(ran)
    monkeypatch.undo()
    return results, reached


def _check_paths(results, exact):
    """The kernels' paths' bits (``exact``; else to rounding) and NumPy's steps' to rounding; a transform's calls of
    the first order give the first calls' bits."""
    base, first = results["fused"]
    for path, (out, again) in results.items():
        kept = [(name, got) for name, got in base if path in DENSE or name != "hessian"]
        assert [name for name, _ in out] == [name for name, _ in kept]
        for (name, got), (_, want) in zip(out, kept, strict=True):
            if path in KERNELS and exact:
                assert same_bits(got, want), (path, name, np.flatnonzero(~np.isclose(got, want, equal_nan=True))[:5])
            else:
                np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, err_msg=f"{path} {name}")
        assert same_bits(again[3], again[0]) and same_bits(again[4], again[1]), path
        named = dict(out[::-1])  # (a name's first)
        assert same_bits(named["after"], again[1]), path
        loaded = [got for name, got in out if name == "loaded"]  # (NumPy's steps': the runs stripped, found again)
        assert path == "numpy" or all(same_bits(got, again[k]) for k, got in enumerate(loaded)), path
        n = len(again[0]) - 1
        if "gradient" in named:  # (a number's program: value_and_grad's first calls; the map's are the same bits)
            assert same_bits(named["value"], again[1][0]) and same_bits(named["gradient"], again[2][1:]), path
            assert same_bits(named["map"], np.concatenate([[x[0] for x in again[:3]], *(x[1:] for x in again[:3])]))
        else:
            assert same_bits(named["map"], np.concatenate(again[:3])), path
        if "jvp_function" in named:
            np.testing.assert_allclose(named["jvp_function"], named["jvp"], rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(named["vjp_function"], again[1], rtol=1e-10, atol=1e-10)
        else:
            np.testing.assert_allclose(named["grad_function value"], again[1], rtol=1e-10, atol=1e-10)
            assert n == len(named["hvp"])


def _references(case, xs, results):
    """Against NumPy's value, JAX float64 (points 1, 2) and central differences (point 1)."""
    seed, vector, large = case
    f, V = _program(*case), directions(seed, large)
    out = dict(results["fused"][0][::-1])  # (a name's first result)
    firsts = results["fused"][1]
    for k in (1, 2):
        ref = JAX[f"{seed} {int(vector)} {int(large)} {k}"]
        np.testing.assert_allclose(f(xs[k]), ref["value"], rtol=1e-10, atol=1e-10)
        if not vector:
            value, grad = firsts[k][0], firsts[k][1:]
            np.testing.assert_allclose(value, ref["value"], rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(V @ grad, ref["grad"], rtol=1e-9, atol=1e-9)
    x, h = xs[1], 1e-6
    central = np.array([(f(x + h * v).sum() - f(x - h * v).sum()) / (2 * h) for v in V])
    ref = JAX[f"{seed} {int(vector)} {int(large)} 1"]
    np.testing.assert_allclose(central, ref["grad"], rtol=1e-5, atol=1e-5)  # (the reference itself)
    assert same_bits(out["map_jvp"][:len(out["jvp"])], out["jvp"])  # (the maps' first point: jvp's and hvp's)
    with np.errstate(all="ignore"):
        afresh = _flat(tape.jvp(f, (x,), (V[0],))[1])  # (recorded afresh: forward mode on the tape)
    np.testing.assert_allclose(afresh, out["jvp"], rtol=1e-10, atol=1e-10)
    if not large:
        np.testing.assert_allclose(out["sparse_jacobian"], out["jacobian"], rtol=1e-10, atol=1e-10)
        if vector:
            np.testing.assert_allclose(out["jacobian"].reshape(-1, len(x)) @ V[0], ref["jvp"], rtol=1e-9, atol=1e-9)
    if not large and not vector:
        n = len(x)
        np.testing.assert_allclose(_flat(tape.hessian(f)(x)), out["hessian"], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(out["sparse_hessian"], out["hessian"], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(V @ out["hessian"].reshape(n, n) @ V[0], ref["hvp"], rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(V @ out["jacobian"], ref["grad"], rtol=1e-9, atol=1e-9)
    if vector:
        np.testing.assert_allclose(out["jvp"], ref["jvp"], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(out["jvp_function"], ref["jvp"], rtol=1e-9, atol=1e-9)
    else:
        np.testing.assert_allclose(out["jvp"], ref["grad"][0], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(V @ out["hvp"], ref["hvp"], rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(V @ out["grad_function jvp"], ref["hvp"], rtol=1e-8, atol=1e-8)
        assert same_bits(out["map_hvp"][:len(out["hvp"])], out["hvp"])
        g = tape.value_and_grad(lambda u: f(u))
        central = (g(x + h * V[0])[1] - g(x - h * V[0])[1]) / (2 * h)
        np.testing.assert_allclose(V @ central, ref["hvp"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out["grad_function"], firsts[0][1:], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", FAST + [pytest.param(c, marks=pytest.mark.slow) for c in CASES if c not in FAST],
                         ids=_name)
def test_every_transform_on_every_path(case, monkeypatch):
    seed, vector, large = case
    xs = [point(seed, k, large) for k in range(3)]
    results, reached = _all_paths(monkeypatch, _program(*case), xs, directions(seed, large), vector, large)
    assert {"table forward", "table reverse", "stretch forward", "stretch back"} <= reached["stretches"]
    assert "shaped" in reached["shaped"] or "run" not in reached["fused"]
    _check_paths(results, True)
    _references(case, xs, results)


def _edges(x):
    """sameness's edge points, and ties (x in steps of a half; every element equal)."""
    return [*edge_points(x), np.round(x * 2.0) / 2.0, np.full_like(x, 0.75)]


def _edge_paths(monkeypatch, case, x0, points):
    """value_and_grad (a vector program's vjp) at every point, twice over, on each path; afresh too (its reverse by
    NumPy's steps, then by the tables)."""
    f, (_, vector, large) = _program(*case), case
    out = {}
    for path in PATHS:
        _path(monkeypatch, path, large)
        monkeypatch.setattr(stretches.Stretch, "made", {})
        with np.errstate(all="ignore"):
            F = tape.trace(f, x0)
            if path == "numpy":
                F._runs_first, F._runs_last = {}, {}
            w = np.cos(np.arange(F.n_outputs) * 1.3)
            out[path] = [_flat(F.vjp(p, w) if vector else F.value_and_grad(p)) for p in points + points]
    monkeypatch.setattr(compiled._gate, "ready", lambda: True)
    g = tape.vjp if vector else tape.value_and_grad(f)
    for name, few in (("afresh", 10 ** 12), ("afresh tables", 0)):
        monkeypatch.setattr(compiled, "FEW", few)
        monkeypatch.setattr(compiled, "_made", {})
        with np.errstate(all="ignore"):
            out[name] = [_flat(g(f, p)[1](w) if vector else g(p)) for p in points]
    monkeypatch.undo()
    return out


@pytest.mark.parametrize("case", FAST + [pytest.param(c, marks=pytest.mark.slow) for c in CASES if c not in FAST],
                         ids=_name)
def test_edge_points_on_every_path(case, monkeypatch):
    """At 0, -0, +-inf, nan, huge, tiny, ties: the kernels' paths' bits NaN for NaN, at every call; afresh the same by
    NumPy's steps and by the tables; NumPy's steps and afresh against the kernels' where finite, to rounding (at points
    of moderate numbers)."""
    seed, vector, large = case
    points = _edges(point(seed, 1, large))
    out = _edge_paths(monkeypatch, case, point(seed, 0, large), points)
    base = out["fused"]
    for path, got in out.items():
        for k, (a, b) in enumerate(zip(got, base, strict=False)):
            if path in KERNELS or path == "afresh tables":
                want = out["afresh"][k] if path == "afresh tables" else b
                assert same_bits(a, want), (path, k % len(points), np.flatnonzero(~np.isclose(a, want,
                                                                                              equal_nan=True))[:5])
            elif np.abs(points[k % len(points)]).max(initial=0.0, where=np.isfinite(points[k % len(points)])) < 100:
                fine = np.isfinite(a) & np.isfinite(b)  # (at huge numbers a sum's order moves small terms a lot)
                np.testing.assert_allclose(a[fine], b[fine], rtol=1e-9, atol=1e-9, err_msg=f"{path} {k}")


STRETCHED = ("again", "again, held", "mixture, k 9", "heat, pad", "filtered", "lines", "summed, rest 3")


@pytest.mark.parametrize("name", STRETCHED)
def test_every_transform_where_a_back_stretch_computes_values_again(name, monkeypatch):
    """tests/test_stretches.py's programs (a forward that leaves values unstored, a back stretch computing them again:
    "again"), 300 elements, as array records: every transform on every path, the bits of the kernels' paths, against
    central differences of the value (gradients) and of the gradient (Hessian products, grad_function's jvp)."""
    f, rng = STRETCHES[name], np.random.default_rng(11)
    xs = [rng.normal(size=300) for _ in range(3)]
    V = rng.normal(size=(4, 300))
    results, reached = _all_paths(monkeypatch, f, xs, V, False, False)
    _check_paths(results, True)
    if name == "again":
        assert "stretch skipping" in reached["stretches"]
    out, firsts = dict(results["fused"][0][::-1]), results["fused"][1]
    x, h = xs[1], 1e-6
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(V @ firsts[1][1:], [(f(x + h * v) - f(x - h * v)) / (2 * h) for v in V],
                                   rtol=1e-6, atol=1e-6)
        g = tape.value_and_grad(f)
        central = (g(x + h * V[0])[1] - g(x - h * V[0])[1]) / (2 * h)
    for got in (out["hvp"], out["grad_function jvp"], out["map_hvp"][:300]):
        np.testing.assert_allclose(got, central, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", FAST, ids=_name)
def test_second_order_first_then_replays(case, monkeypatch):
    """The transforms in another order on the stretches' path (a Function on its recorded layout from its first call,
    the skipping forward after the tangents): the same bits as _transforms' order on the fused runs' path."""
    seed, vector, large = case
    xs, V = [point(seed, k, large) for k in range(3)], directions(seed, large)
    results, _ = _all_paths(monkeypatch, _program(*case), xs, V, vector, large, ("fused",))
    named, first = dict(results["fused"][0][::-1]), results["fused"][1]
    _path(monkeypatch, "stretches", large)
    with np.errstate(all="ignore"):
        F = tape.trace(_program(*case), xs[0])
        w = np.cos(np.arange(F.n_outputs) * 1.3) if vector else None
        second = (lambda: F.jvp(xs[1], V[0])) if vector else (lambda: F.hvp(xs[1], V[0]))
        assert same_bits(second(), named["jvp" if vector else "hvp"])
        for k, x in enumerate([*xs, xs[0], xs[1]]):
            assert same_bits(_flat(F.vjp(x, w) if vector else F.value_and_grad(x)), first[k]), k
        assert same_bits(second(), named["jvp" if vector else "hvp"])
        assert same_bits(_flat(F.vjp(xs[2], w) if vector else F.value_and_grad(xs[2])), first[2])
        if not vector:
            assert same_bits(_flat(F.grad_function()(xs[0])), named["grad_function"])


@pytest.mark.parametrize("case", [c for c in FAST if not c[1]], ids=_name)
def test_params_change_between_calls(case, monkeypatch):
    """The constants block as params, changed at every call: each kernels' path the same bits, NumPy's steps and
    tape.value_and_grad recorded afresh at those params to rounding; at the constants themselves, JAX's gradient."""
    seed, _, large = case
    prog, xs, V = program(seed), [point(seed, k, large) for k in range(3)], directions(seed, large)
    ps = [constants(large) * (1.0 + 0.1 * k) for k in range(3)]
    calls = [(xs[1], ps[0]), (xs[0], ps[1]), (xs[2], ps[2]), (xs[1], ps[0]), (xs[2], ps[1])]

    def f(u, p):
        return run(prog, u, np, lse, False, large, p)

    got = {}
    for path in PATHS:
        _path(monkeypatch, path, large)
        with np.errstate(all="ignore"):
            F = tape.trace(f, xs[0], params=ps[1])
            if path == "numpy":
                F._runs_first, F._runs_last = {}, {}
            got[path] = [_flat(F.value_and_grad(x, params=p)) for x, p in calls]
    for path, out in got.items():
        for a, b in zip(out, got["fused"], strict=True):
            if path in KERNELS:
                assert same_bits(a, b), path
            else:
                np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9, err_msg=path)
    for (x, p), a in zip(calls, got["fused"], strict=True):
        np.testing.assert_allclose(_flat(tape.value_and_grad(lambda u, p=p: f(u, p))(x)), a, rtol=1e-9, atol=1e-9)
    ref = JAX[f"{seed} 0 {int(large)} 1"]
    np.testing.assert_allclose(V @ got["fused"][0][1:], ref["grad"], rtol=1e-9, atol=1e-9)
