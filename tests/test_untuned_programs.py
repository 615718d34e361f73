"""Array programs of kinds users write that no one here tuned to (bench/user_programs.py at test sizes:
tests/untuned_programs.py): every transform, afresh and replayed, against JAX float64 (tests/untuned_references.json,
written by tests/untuned_references.py) at the program's point, a moved one, all zeros (ties in the pooling, kinks of
ReLU at 0) and a large one; the references against central differences of the hand-derived NumPy value and the hand
gradients against them, as bench/array_programs.py times them. Both forms: array records, and scalar records."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import numpy as np
import pytest
from untuned_programs import SIZES, directions, points, program

import tape

with open(os.path.join(os.path.dirname(__file__), "untuned_references.json")) as _file:
    JAX = json.load(_file)


def _loop(n, body, carry):
    for t in range(n):
        carry = body(t, carry)
    return carry


NS = SimpleNamespace(xp=np, nn=SimpleNamespace(sigmoid=tape.sigmoid, logsumexp=tape.logsumexp, loop=_loop))


def _close(got, want, what):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-9, atol=1e-11, err_msg=what)


@pytest.mark.parametrize("name", sorted(SIZES))
def test_every_transform_against_jax(name, form):
    x0, f, _, _ = program(name, NS)
    V = directions(len(x0))
    at = points(x0)
    F = tape.trace(f, x0)
    H = F.grad_function()
    for where, x in at.items():
        ref = JAX[f"{name} {where}"]
        value, grad, hvp = ref["value"], np.array(ref["grad"]), np.array(ref["hvp"])
        for what, (v, g) in (("afresh", tape.value_and_grad(f)(x)), ("replayed", F.value_and_grad(x)),
                             ("value_grad_hvp", F.value_grad_hvp(x, V[0])[:2])):
            _close(v, value, f"{where} {what} value")
            _close(g, grad, f"{where} {what} gradient")
        _close(tape.grad(f)(x), grad, f"{where} grad")
        _close(tape.vjp(f, x)[1](1.5)[0], 1.5 * grad, f"{where} vjp afresh")
        _close(F.vjp(x, [1.5]), 1.5 * grad, f"{where} vjp")
        _close(tape.jvp(f, (x,), (V[1],))[1], grad @ V[1], f"{where} jvp afresh")
        _close(F.jvp(x, V[1]), grad @ V[1], f"{where} jvp")
        _close(F.hvp(x, V[0]), hvp, f"{where} hvp")
        _close(F.value_grad_hvp(x, V[0])[2], hvp, f"{where} value_grad_hvp")
        _close(H(x), grad, f"{where} grad_function")
        _close(H.jvp(x, V[0]), hvp, f"{where} grad_function jvp")
    X = np.stack(list(at.values()))
    values, grads = F.map_value_and_grad(X)
    _close(values, [JAX[f"{name} {where}"]["value"] for where in at], "map values")
    _close(grads, [JAX[f"{name} {where}"]["grad"] for where in at], "map gradients")
    _close(F.map_hvp(X, np.tile(V[0], (len(X), 1))), [JAX[f"{name} {where}"]["hvp"] for where in at], "map_hvp")


@pytest.mark.parametrize("name", sorted(SIZES))
def test_references_and_hand_gradients(name):
    """JAX's gradient against central differences of the hand value, and the hand gradient against JAX's."""
    x0, _, hand, _ = program(name, NS)
    V, h = directions(len(x0)), 1e-6
    for where, x in points(x0).items():
        ref = JAX[f"{name} {where}"]
        with np.errstate(all="ignore"):  # (Burgers' large point overflows: inf and NaN, as JAX's)
            value, grad = hand(x)
        _close(value, ref["value"], f"{where} hand value")
        _close(grad, ref["grad"], f"{where} hand gradient")
        if where in ("own", "moved"):  # (smooth there)
            central = [(hand(x + h * v)[0] - hand(x - h * v)[0]) / (2 * h) for v in V]
            np.testing.assert_allclose(central, V @ np.array(ref["grad"]), rtol=1e-5, atol=1e-7)


def test_logaddexp_gradient_tape_at_a_tie(form):
    """logaddexp's partial as records (the gradient tape's) at a tie of numbers has its slope: d2/dz2 logaddexp(0, z)
    = s (1 - s) = 1/4 at 0 (s the logistic sigmoid), and of logaddexp(z, z / 2) s (1 - s) / 4 = 1/16 (the logistic
    regression at zero weights: found here, its second derivative was 0 by a constant 1/2)."""
    z = np.zeros(1200)
    for f, want in ((lambda u: np.logaddexp(0.0, u).sum(), 0.25), (lambda u: np.logaddexp(u, u * 0.5).sum(), 0.0625)):
        H = tape.trace(f, z + 0.3).grad_function()
        assert np.array_equal(H(z), np.full(1200, 0.5 if want == 0.25 else 0.75))
        assert np.array_equal(H.jvp(z, np.ones(1200)), np.full(1200, want))


@pytest.mark.parametrize("name", ["conv1d", "burgers"])
def test_replayed_by_the_compiled_tables_and_stretches_against_jax(name, monkeypatch):
    """Replayed by the compiled tables with every stretch's kernel (tape/sweeps/stretches.py: the convolution's taps,
    a 3-d space's lines, one pass forward and back) at once, as a long run replays, against JAX."""
    from tape.records import array_records
    from tape.sweeps import compiled, stretches
    monkeypatch.setattr(array_records, "SMALL", 1)
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    monkeypatch.setattr(stretches.Stretch, "PAYBACK", 0.0)
    monkeypatch.setattr(stretches.Stretch, "made", {})
    x0, f, _, _ = program(name, NS)
    F = tape.trace(f, x0)
    for where, x in points(x0).items():
        ref = JAX[f"{name} {where}"]
        for _ in range(2):  # (the first call makes the tables and the stretches' kernels)
            with np.errstate(all="ignore"):
                v, g = F.value_and_grad(x)
            _close(v, ref["value"], f"{where} value")
            _close(g, ref["grad"], f"{where} gradient")
    made = [x for x in stretches.Stretch.made.values() if x.address]
    assert made and (name != "conv1d" or any(stretches.AT in {j for m in x.shape[1] for j in m[2]} for x in made))
