"""Fusion changes no bit: every elementwise op (powers of every kind among them) between runs of fused records gives
the same value and derivatives with its Function's runs as without them (NumPy's steps), in every transform, with
the runs by the fused kernels, by their NumPy twins and as rows of the compiled tables (tests/test_array_matrix.py's
paths; a run shape's own kernels and the tables' stretches give the fused kernels' bits there, and would compile
kernels for each shape here), and recorded afresh with the tape's runs fused or not, at random points and at 0,
-0.0, +-inf, NaN, huge, tiny and ties. A fused sum adds by blocks (another order than NumPy's), so
these programs end in a product with a vector instead.
"""

from __future__ import annotations

import numpy as np
import pytest
from sameness import same_bits
from test_array_matrix import _all_paths, _flat

import tape
from tape.records import array_records
from tape.sweeps import fusion

N = 48
W = np.random.default_rng(26).normal(size=N)
UNARY = ("exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "log1p", "expm1", "exp2", "log2", "log10", "cbrt",
         "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "abs", "negative", "floor",
         "rint", "sign")
BINARY = ("arctan2", "hypot", "logaddexp", "fmax", "fmin", "maximum", "minimum", "divide", "power")


def _ops(u, ops):
    """Each op between fused records (its operands made by a run, its result read by the next), each term summed by a
    product with W (no fused sum; a NaN of one op's stays in its term)."""
    total = 0.0
    for k, name in enumerate(ops):
        a = u * 1.25 + 0.0 * k  # (a run: u's zeros stay zeros of their sign)
        y = getattr(np, name)(a, u * 0.75 - 0.5) if name in BINARY else getattr(np, name)(a)
        total = total + (y * u - u / 3.0) @ W
    return total


def _powers(u):
    """Powers of every kind in runs: x ** 2, 1, 0 (fused), a number's, an array's, of a number, and their derivative
    tapes' x ** 1 and x ** (c - 1); np.std's ** 0.5 of its rows."""
    a = u * 1.5 + 0.25
    b = a ** 2 * u - a ** 1.0 + a ** 0.0 * u
    c = (b * 0.5 + 1.0) ** 1.5 * u - (a * a) ** 0.5 + abs(a) ** 3.0 * 0.25
    d = abs(c * 0.25) ** (u * 0.5) + 2.0 ** (a * 0.5) - (-a) ** -1.0 + abs(u) ** -0.5
    e = d.reshape(6, 8) * 0.5 - np.std(c.reshape(6, 8), axis=1, keepdims=True)
    return (e.reshape(-1) * u) @ W + ((u * 2.0) ** 0.0 * u - (u * 3.0) ** 1.0 * 0.5) @ W  # (apart: at 0 and inf too)


PROGRAMS = {"unary, first half": lambda u: _ops(u, UNARY[:13]), "unary, second half": lambda u: _ops(u, UNARY[13:]),
            "binary": lambda u: _ops(u, BINARY), "powers": _powers}
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 5e-324, -2.5e-310, 0.5, 0.5, -0.5, 1.0, -1.0]


def _points(rng):
    """Three points of N numbers: random ones first (the trace's), then two with edge values among them (0, -0.0,
    +-inf, NaN, huge, tiny, ties and the edges of arcsin's, arccosh's domains)."""
    x = rng.uniform(-1.5, 1.5, (3, N))
    x[1, ::2] = np.resize(EDGES, N // 2)
    x[2, 1::3] = np.resize(EDGES[::-1], N // 3)
    x[2, ::3] = np.round(x[2, ::3] * 2.0) / 2.0
    return list(x)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_path_and_transform_gives_the_bits_without_runs(name, monkeypatch):
    f, rng = PROGRAMS[name], np.random.default_rng(5)
    xs, V = _points(rng), rng.normal(size=(3, N))
    monkeypatch.setattr(fusion, "find", lambda *args, **kwargs: [])  # (undone by _all_paths)
    results, reached = _all_paths(monkeypatch, f, xs, V, False, False, ("numpy",))
    others, more = _all_paths(monkeypatch, f, xs, V, False, False, ("fused", "twins", "tables"))
    results.update(others)
    reached.update(more)
    assert "run" in reached["fused"] and "run" not in reached["numpy"]
    base = results["numpy"][0]  # (no dense Hessian there)
    for path, (out, _) in results.items():
        kept = [(what, got) for what, got in out if what != "hessian"]
        assert [what for what, _ in kept] == [what for what, _ in base]
        for (what, got), (_, want) in zip(kept, base, strict=True):
            assert same_bits(got, want), (path, what, np.flatnonzero(~np.isclose(got, want, equal_nan=True)))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_afresh_the_tapes_runs_change_no_bit(name, monkeypatch):
    """tape.value_and_grad, vjp, jvp and an hvp (jvp of grad) recorded afresh, the tape's reverse with its runs fused
    (of arrays of any size) and without."""
    f, rng = PROGRAMS[name], np.random.default_rng(7)
    V = rng.normal(size=N)
    points = _points(rng)
    got, found, find = {}, [], fusion.find
    for fused in (True, False):
        monkeypatch.setattr(fusion, "TAPE_RUNS", 1)
        monkeypatch.setattr(array_records, "SMALL", 1)  # (arrays of N elements as array records)

        def spy(*args, fused=fused, **kwargs):
            runs = find(*args, **kwargs) if fused else []
            found.extend(runs)
            return runs

        monkeypatch.setattr(fusion, "find", spy)
        with np.errstate(all="ignore"):
            got[fused] = [_flat(tape.value_and_grad(f)(x), tape.vjp(f, x)[1](1.5), tape.jvp(f, (x,), (V,)),
                                tape.jvp(tape.grad(f), (x,), (V,))) for x in points]
        monkeypatch.undo()
    assert found and all(map(same_bits, got[True], got[False]))


def test_a_general_power_is_numpys_power():
    """A Function's power of a number or of an array is NumPy's power, bit for bit, in a run's place (its value and
    its partial c * x ** (c - 1))."""
    x, w = np.random.default_rng(3).uniform(0.1, 3.0, (2, 3000))
    F = tape.trace(lambda u: ((u * 1.5) ** 0.7 * 2.0 + u) @ w, x)
    for _ in range(2):
        value, grad = F.value_and_grad(x)
        assert value == ((x * 1.5) ** 0.7 * 2.0 + x) @ w
        assert same_bits(grad, w * 2.0 * (0.7 * np.power(x * 1.5, 0.7 - 1.0)) * 1.5 + w)
