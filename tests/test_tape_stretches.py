"""A recorded tape's reverse by the compiled tables with back stretches (tape/sweeps/compiled.py's Made.of): where
the caller reads only the inputs' gradients (tape.value_and_grad: a fused sweep), consecutive elementwise rows run as
one pass each, with the rows' bits, on tapes recorded by Python and by tape.jit that recycle their regions
(arenas.CHECK: every freed region filled with NaN); a sweep that is not fused has none and writes every adjoint."""

import numpy as np
import pytest
from sameness import edge_points, same_bits
from test_jit_arrays import central, namespace

import tape
from tape.kernels._array_driver import CALL, KIND, STRETCH
from tape.records import array_records
from tape.sweeps import arenas, compiled, stretches

STEPS = '''
def f(u, m):                         # heat steps (np.pad wrap: m 0; np.concatenate: 1), Burgers' (np.roll: 2),
    for _ in range(6):               # a Huber loss's and a clip's np.where (comparisons and selects: 3)
        if m == 0:
            w = np.pad(u, 1, mode="wrap")
            u = u + 0.2 * (w[2:] + w[:-2] - 2.0 * u)
        elif m == 1:
            u = u + 0.2 * (np.concatenate((u[1:], u[:1])) + np.concatenate((u[-1:], u[:-1])) - 2.0 * u)
        elif m == 3:
            r = u * 1.5 - 1.25
            a = np.abs(r)
            u = u - 0.1 * np.where(a < 0.3, 0.5 * r * r, 0.3 * (a - 0.15)) + np.where(u > 1.0, 0.05 * u - 0.04,
                                                                                      u * u * 0.01)
        else:
            left, right = np.roll(u, 1), np.roll(u, -1)
            u = u - 0.3 * u * (u - left) + 0.1 * (right - 2.0 * u + left)
    return 0.5 * (u * u).sum()
'''
X = np.random.default_rng(24).uniform(0.5, 1.5, 40)


@pytest.fixture(scope="module")
def steps():
    return namespace(STEPS, arrays=True)


@pytest.fixture
def tables(monkeypatch):
    """Every tape's reverse by the tables (kernels ready, FEW 0), stretch kernels made at once, none kept before,
    regions recycled at every record and filled with NaN when freed."""
    monkeypatch.setattr(array_records, "SMALL", 1)
    monkeypatch.setattr(compiled, "FEW", 0)
    monkeypatch.setattr(compiled._gate, "ready", lambda: True)
    monkeypatch.setattr(compiled, "_made", {})
    monkeypatch.setattr(stretches.Stretch, "PAYBACK", 0.0)
    monkeypatch.setattr(arenas, "CHECK", True)


def _rows(f, x, m, monkeypatch):
    """f's value and gradient by the tables without stretches."""
    with monkeypatch.context() as c:
        c.setattr(stretches, "ON", False)
        c.setattr(compiled, "_made", {})
        return tape.value_and_grad(f)(x, m)


@pytest.mark.parametrize("m", range(4), ids=["pad", "concatenate", "roll", "where"])
def test_value_and_grad_sweeps_back_stretches_with_the_rows_bits(steps, m, tables, monkeypatch):
    py, jn = steps
    want = central(lambda v: py["f"](v, m), X)
    for f in (py["f"], jn["f"]):
        for point in edge_points(X):
            rows = _rows(f, point, m, monkeypatch)
            compiled._made.clear()
            g = tape.value_and_grad(f)
            for _ in range(2):  # (the stretch kernels set in the first sweep's tables: the second runs them)
                value, grad = g(point, m)
                assert same_bits(value, rows[0]) and same_bits(grad, rows[1])
            made = [*compiled._made.values()][-1][-1]  # (the last tables made: the second call's are made again where
            # its tape differs from the first's, its regions recycled elsewhere or a constant kept from it; seen in CI)
            heads = np.concatenate([w[0] for kind, w in made.items if kind == compiled.TABLE])
            heads = heads[heads[:, KIND] == STRETCH]
            assert made.fused and len(heads) >= (2 if m == 3 else 5) and (heads[:, CALL] != 0).all()  # (where's
            # steps join in longer stretches)
        assert np.allclose(g(X, m)[1], want, rtol=1e-6, atol=1e-9)


def test_a_sweep_not_fused_writes_every_adjoint(tables):
    """Tape.backward (not fused) after a fused sweep of the same tape and before another: no stretches, the inner
    records' adjoints written (the steps' own adjoints: a heat step is symmetric)."""
    t = tape.Tape()
    u = x = t.array(X)
    inner = []
    for _ in range(6):
        w = np.pad(u, 1, mode="wrap")
        u = u + 0.2 * (w[2:] + w[:-2] - 2.0 * u)
        inner.append(u)
    y = 0.5 * (u * u).sum()
    for fused in (True, False, True, False):
        t._reverse(t._resolve(y), False, fused)
        ((made,),) = compiled._made.values()
        assert made.fused == fused == any((w[0][:, KIND] == STRETCH).any() for kind, w in made.items
                                          if kind == compiled.TABLE)
    adjoint = u.value.copy()
    for k in range(5, -1, -1):
        assert np.allclose(inner[k].grad, adjoint, rtol=1e-13, atol=1e-15)
        adjoint = adjoint + 0.2 * (np.roll(adjoint, -1) + np.roll(adjoint, 1) - 2.0 * adjoint)
    assert np.allclose(x.grad, adjoint, rtol=1e-13, atol=1e-15)


def test_back_stretches_read_a_borrowed_constant_in_place(tables, monkeypatch):
    """A constant the tape reads in place (arenas.BORROWED) among a back stretch's members: its rows read it there,
    as the rows without stretches do, and the gradient is the hand one (c * (1 - tanh(c u)^2) * 2 tanh(c u))."""
    monkeypatch.setattr(arenas, "BORROWED", 10)
    c = np.random.default_rng(25).uniform(0.5, 2.0, 40)

    def f(u):
        v = np.tanh(c * u)
        return ((v * 1.0) * v).sum()

    rows = _rows(lambda u, m: f(u), X, 0, monkeypatch)
    value, grad = tape.value_and_grad(f)(X)
    ((made,),) = compiled._made.values()
    assert made.fused and any((w[0][:, KIND] == STRETCH).any() for kind, w in made.items if kind == compiled.TABLE)
    assert same_bits(value, rows[0]) and same_bits(grad, rows[1])
    v = np.tanh(c * X)
    assert np.allclose(grad, c * (1.0 - v * v) * 2.0 * v, rtol=1e-13, atol=0.0)




LINES = '''
def f(th, c, held):                  # the mixture's (x - mu) * exp(-logs): a column by lines
    mu = th[:8] * 1.0
    d = (c - mu) * np.exp(-th[8:16])
    out = 0.5 * (d * d).sum() + (th[:8] * 2.0).sum()
    if held:
        out = out + (mu * 0.0).sum()  # (mu read to the end: its region kept)
    return out
'''
C = np.random.default_rng(26).normal(size=(4000, 1))


@pytest.fixture(scope="module")
def lines():
    return namespace(LINES, arrays=True)


@pytest.mark.parametrize("held", [True, False], ids=["kept", "given away"])
def test_a_back_stretch_computes_a_member_again_only_from_values_the_tape_holds(lines, held, tables, monkeypatch):
    """c - mu, stored for the product's partial, is computed again in the back stretch from c (one number a line) and
    mu (a line) only where the tape still holds both (tape.jit's keeps its constants), and read where a region was
    given away (the Python recorder's tape gives c's away: filled with NaN, computed from it, the gradient would be
    NaN); either way the rows' bits and the hand gradient, mu read to the end or not."""
    th = np.random.default_rng(27).normal(size=16)
    for f, jitted in ((lines[0]["f"], False), (lines[1]["f"], True)):
        rows = _rows(lambda v, m, f=f: f(v, C, held), th, 0, monkeypatch)
        compiled._made.clear()
        g = tape.value_and_grad(f)
        for _ in range(2):  # (the stretch kernels set in the first sweep's tables: the second runs them)
            value, grad = g(th, C, held)
            assert same_bits(value, rows[0]) and same_bits(grad, rows[1])
        ((made,),) = compiled._made.values()
        heads = np.concatenate([w[0] for kind, w in made.items if kind == compiled.TABLE])
        heads = heads[heads[:, KIND] == STRETCH, CALL].tolist()
        shapes = [x.shape for x in stretches.Stretch.made.values() if x.address in heads]
        again = any(member[4] for shape in shapes for member in shape[1])
        assert shapes and again == jitted
        e = np.exp(-th[8:16])
        d = (C - th[:8]) * e
        by_hand = np.concatenate([-(d * e).sum(0) + 2.0, -(d * d).sum(0)])
        assert np.allclose(grad, by_hand, rtol=1e-12, atol=1e-12)
