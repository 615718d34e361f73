"""A logsumexp taken into its stretch (tape/sweeps/reduced.py, kernels/stretched.py's REDUCED member): programs
of the mixture's kind (tests/mixture_programs.py) give the rows' bits, NumPy's steps' and the recorder's, forward and
back, through every transform, at edge points of the logsumexp (lines all -inf, NaN lines, ties, inf, huge), and JAX
float64's numbers (tests/mixture_references.json)."""

import json
import os

import numpy as np
import pytest
from mixture_programs import PROGRAMS, K, point
from sameness import edge_points, same, same_bits

import tape
from tape.sweeps import compiled, stretches

with open(os.path.join(os.path.dirname(__file__), "mixture_references.json")) as _file:
    REFERENCES = json.load(_file)


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    monkeypatch.setattr(stretches.Stretch, "PAYBACK", 0.0)  # compiled at a table's first sweep
    monkeypatch.setattr(stretches.Stretch, "made", {})  # (this program's shapes only)


def program(name):
    return lambda u: PROGRAMS[name](u, np, tape.logsumexp)


def _points(name):
    """A random point, edge_points' first, and the logsumexp's edges: every line all -inf (a log scale -inf: every
    element's square inf) or NaN, every line's elements equal (ties: the params alike), equal maxima in every line
    (two components alike), logits all -inf, huge params (squares overflow)."""
    x = point(name, 3)
    lines, nan, ties, two, logits = x.copy(), x.copy(), np.full(len(x), 0.25), x.copy(), x.copy()
    lines[K:2 * K] = -np.inf
    nan[0] = np.nan
    two[1::K], two[2 * K + 1::K] = two[::K], two[2 * K::K]  # (components 0 and 1 alike)
    logits[-K:] = -np.inf
    return [x, *edge_points(x)[:5], lines, nan, ties, two, logits, x * 1e160, np.where(np.arange(len(x)) % 7, x, 1e300)]


def _trace(name, monkeypatch, on, driven=True):
    monkeypatch.setattr(compiled, "ready", lambda s, runs: driven)
    monkeypatch.setattr(stretches, "ON", on)
    return tape.trace(program(name), point(name, 3))


def _with(monkeypatch, on, driven, call):
    monkeypatch.setattr(compiled, "ready", lambda s, runs: driven)
    monkeypatch.setattr(stretches, "ON", on)
    with np.errstate(all="ignore"):
        return call()


def _reduced(back):
    """The set shapes (their kernels made) that took a logsumexp in: (back or forward, whether its operand is skipped
    forward)."""
    return {(shape[0], bool(len(shape) > 3 and shape[3][-2])) for shape, x in stretches.Stretch.made.items()
            if x.address and shape[0] == back and shape[1][-1][0] == stretches.stretched.REDUCED}


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_reduced_stretch_gives_the_rows_numpys_and_the_recorders_bits(name, monkeypatch):
    """Value and gradient bits with the logsumexp in its stretch (forward; back where its operand is read by nothing
    else) are the rows' (stretches off), NumPy's steps' and tape.value_and_grad's (recorded afresh), at every point;
    the mixture leaves its operand unstored forward (computed again back), mixture2d stores it (7 members deep), and
    squares (its operand from a block as large as itself: not layout.again's)."""
    ways = {way: _trace(name, monkeypatch, *way) for way in ((True, True), (False, True), (False, False))}
    afresh = tape.value_and_grad(program(name))
    for x in _points(name):
        got = _with(monkeypatch, True, True, lambda x=x: ways[True, True].value_and_grad(x))
        wants = [_with(monkeypatch, *way, lambda x=x, way=way: ways[way].value_and_grad(x)) for way in ways
                 if way != (True, True)]
        for want in [*wants, _with(monkeypatch, False, False, lambda x=x: afresh(x))]:
            assert all(same_bits(a, b) for a, b in zip(got, want, strict=True)), x[:3]
    assert _reduced(False) == {(False, False), (False, name == "mixture")}  # (storing and skipping kernels alike)
    assert _reduced(True) == ({(True, False)} if name != "crossentropy" else set())  # (its logits held)


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_transform_through_a_reduced_stretch(name, monkeypatch):
    """vjp (weights 0 too: the logsumexp's zero adjoints), jvp, hvp, the gradient as a Function, and the maps give
    the rows' bits."""
    F, G = _trace(name, monkeypatch, True), _trace(name, monkeypatch, False)
    points = _points(name)
    X = np.stack(points[:4])
    for x, v in zip(points, points[1:] + points[:1], strict=True):
        for method, args in (("vjp", (x, 2.5)), ("vjp", (x, 0.0)), ("jvp", (x, v)), ("hvp", (x, v)),
                             ("value_and_grad", (x,))):
            _with(monkeypatch, True, True, lambda: same(F, G, method, *args))  # noqa: B023 (called at once)
    gF, gG = (_with(monkeypatch, on, True, lambda H=H: H.grad_function()) for on, H in ((True, F), (False, G)))
    for x in points[:4]:
        _with(monkeypatch, True, True, lambda x=x: same(gF, gG, "__call__", x))
    for method, args in (("map_value_and_grad", (X,)), ("map_vjp", (X, np.ones(len(X)))), ("map_jvp", (X, X[::-1])),
                         ("map_hvp", (X, X[::-1]))):
        _with(monkeypatch, True, True, lambda: same(F, G, method, *args))  # noqa: B023
    assert _reduced(False)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", PROGRAMS)
def test_a_reduced_stretch_against_jax(name, seed, monkeypatch):
    F = _trace(name, monkeypatch, True)
    want = REFERENCES[f"{name} {seed}"]
    for _ in range(3):  # (the skipping kernel from the third call)
        value, grad = _with(monkeypatch, True, True, lambda: F.value_and_grad(point(name, seed)))
        np.testing.assert_allclose(value, want["value"], rtol=1e-13)
        np.testing.assert_allclose(grad, want["grad"], rtol=1e-11, atol=1e-12)
    assert _reduced(False)
