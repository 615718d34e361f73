"""tape.jit gives away the regions of array records f can no longer reach (tape/compiled/array_lives.py), on
tape.value_and_grad's own tapes: with arenas.CHECK (a freed region NaN-filled at once, a collection at every record)
the values and gradients are the Python recorder's bit for bit, records held in lists, returned views and the values
reverse steps read stay intact, and a long loop keeps a few regions, not one a step."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from jit_array_programs import cases
from test_jit_arrays import namespace

import tape
from tape.sweeps import arenas

CASES = cases()


@pytest.fixture
def check(monkeypatch):
    monkeypatch.setattr(arenas, "CHECK", True)


def taped(f, *data):
    """f's gradient function, and the tapes tape.value_and_grad recorded it on."""
    tapes = []

    def outer(x):
        tapes.append(x.tape)
        return f(x, *data)
    return tape.value_and_grad(outer), tapes


def same(a, b):
    return np.array_equal(np.asarray(a).view(np.uint64), np.asarray(b).view(np.uint64))


@pytest.mark.parametrize("name", sorted(CASES))
def test_programs_give_regions_away_and_keep_python_s_bits(name, check):
    source, x0, data = CASES[name]
    py, jn = namespace(source, arrays=True)
    vp, gp = tape.value_and_grad(py["f"], argnums=0)(x0, *data)
    grad, tapes = taped(jn["f"], *data)
    vj, gj = grad(x0)
    assert jn["f"]._arrays is True and vj == vp and same(gj, gp)
    if name in ("loop", "filter", "joins", "pads"):  # loops: their steps' records given away
        assert len(tapes[-1]._freed) > 10


LISTED = '''
def f(u, steps):                     # records kept in a list across the loop, read after it
    kept = [u * 1.0]
    for _ in range(steps):
        u = np.sin(u) * 0.5 + u
        kept.append(u * 2.0)
    total = kept[0].sum()
    for v in kept:
        total = total + (v * v).sum()
    return total
'''


def test_records_held_in_a_list_keep_their_values(check):
    _, jn = namespace(LISTED, arrays=True)
    u0 = np.random.default_rng(4).normal(size=1500)
    grad, tapes = taped(jn["f"], 8)
    value, g = grad(u0)
    us = [u0]
    for _ in range(8):
        us.append(np.sin(us[-1]) * 0.5 + us[-1])
    assert jn["f"]._arrays is True and tapes[-1]._freed  # (the sines and products given away)
    assert np.isclose(value, u0.sum() + sum(((2.0 * u) ** 2).sum() for u in [u0 / 2.0, *us[1:]]), rtol=1e-13)
    a = 8.0 * us[-1]  # d/du_8 of (2 u_8)^2; back through u_{k+1} = sin(u_k) / 2 + u_k
    for u in reversed(us[1:-1]):
        a = a * (np.cos(u) * 0.5 + 1.0) + 8.0 * u
    assert np.allclose(g, a * (np.cos(u0) * 0.5 + 1.0) + 2.0 * u0 + 1.0, rtol=1e-12, atol=1e-12)


READS = '''
def f(u, steps):                     # reverse steps that read values: x * x, sin's cos, a division's both sides
    for _ in range(steps):
        s = u * u
        u = np.sin(s) / (1.5 + s) + 0.1 * u
    return (u * u).sum()
'''


def test_values_reverse_steps_read_stay(check):
    py, jn = namespace(READS, arrays=True)
    u0 = np.random.default_rng(5).uniform(-1, 1, size=1200)
    grad, tapes = taped(jn["f"], 6)
    value, g = grad(u0)
    vp, gp = tape.value_and_grad(py["f"], argnums=0)(u0, 6)
    assert value == vp and same(g, gp) and np.isfinite(g).all() and tapes[-1]._freed
    us = [u0]
    for _ in range(6):
        s = us[-1] ** 2
        us.append(np.sin(s) / (1.5 + s) + 0.1 * us[-1])
    a = 2.0 * us[-1]  # by hand: d/du of sin(u^2) / (1.5 + u^2) + u / 10
    for u in reversed(us[:-1]):
        s = u * u
        a = a * ((np.cos(s) * (1.5 + s) - np.sin(s)) / (1.5 + s) ** 2 * 2.0 * u + 0.1)
    assert np.allclose(g, a, rtol=1e-12, atol=1e-13)


VIEW = '''
def f(u, steps):                     # returns a view of a record made after records were given away (and released
    for _ in range(steps):           # after f's last record: u, whose value sin's reverse reads)
        u = 0.5 * (u[2:] + u[:-2]) + np.tanh(u[1:-1])
    return np.exp(np.sin(u) * 3.0)[1::2]     # (exp's reverse reads exp's value)
'''


def test_a_returned_view_keeps_its_region_while_python_records_on(check):
    _, jn = namespace(VIEW, arrays=True)
    u0 = np.random.default_rng(6).normal(size=1600)
    w = np.random.default_rng(7).normal(size=(1600 - 2 * 5) // 2)
    tapes, last = [], []

    def outer(x):
        tapes.append(x.tape)
        y = jn["f"](x, 5)
        last.append(y._view.record)  # f's last record
        s = (y * w).sum()
        del y  # (its record watched: a dropped handle's, a record whose value a reverse step reads kept)
        for k in range(4):
            (x[:1590 - 2 * k] * 2.0 + 1.0).sum()  # Python records that take regions f gave away
        return s
    value, g = tape.value_and_grad(outer)(u0)
    assert any(r < last[-1] < taker for r, taker in tapes[-1]._freed.items())  # (f's regions, taken after f)
    u, us = u0, []
    for _ in range(5):
        us.append(u)
        u = 0.5 * (u[2:] + u[:-2]) + np.tanh(u[1:-1])
    assert jn["f"]._arrays is True and tapes[-1]._freed
    y = np.exp(3.0 * np.sin(u))
    assert np.isclose(value, (y[1::2] * w).sum(), rtol=1e-13)
    a = np.zeros_like(u)
    a[1::2] = w * y[1::2] * 3.0 * np.cos(u[1::2])
    for u in reversed(us):  # the stencil's reverse, by hand
        b = np.zeros_like(u)
        b[2:] += 0.5 * a
        b[:-2] += 0.5 * a
        b[1:-1] += a * (1.0 - np.tanh(u[1:-1]) ** 2)
        a = b
    assert np.allclose(g, a, rtol=1e-12, atol=1e-13)


OUTLIVING = '''
def f(u, steps):                     # views that outlive the records they view, read after a loop of records
    v = (u * 2.0)[::2]
    A = (u[:1024] * 1.5).reshape(32, 32).T
    for _ in range(steps):
        u = np.tanh(u) + 0.5 * u
    return (v * v).sum() + (A[3] * A[:, 5]).sum() + (u * u).sum()
'''


def test_views_keep_the_records_they_view(check):
    _, jn = namespace(OUTLIVING, arrays=True)
    u0 = np.random.default_rng(9).normal(size=1600)
    grad, tapes = taped(jn["f"], 6)
    value, g = grad(u0)
    us = [u0]
    for _ in range(6):
        us.append(np.tanh(us[-1]) + 0.5 * us[-1])
    B = (u0[:1024] * 1.5).reshape(32, 32).T
    assert jn["f"]._arrays is True and tapes[-1]._freed
    assert np.isclose(value, 4.0 * (u0[::2] ** 2).sum() + (B[3] * B[:, 5]).sum() + (us[-1] ** 2).sum(), rtol=1e-13)
    a = 2.0 * us[-1]
    for u in reversed(us[:-1]):
        a = a * (1.0 - np.tanh(u) ** 2 + 0.5)
    a[::2] += 8.0 * u0[::2]
    C = np.zeros((32, 32))  # d/dA of A[3] . A[:, 5], A = 1.5 U^T: row 3 and column 5 of A, back to U's places
    C[3] += B[:, 5]
    C[:, 5] += B[3]
    a[:1024] += 1.5 * C.T.ravel()
    assert np.allclose(g, a, rtol=1e-12, atol=1e-13)


PHASES = '''
def f(u, steps):                     # regions of 1,200 freed, then records of 500 that cannot take them
    for _ in range(steps):
        u = np.sin(u) * 0.5 + u
    v = u[:500] * 1.0
    for _ in range(steps):
        v = np.sin(v) * 0.5 + v
    return v
'''


def test_regions_f_leaves_free_are_as_large_as_they_are(check):
    """Regions f freed and no later record took are the tape's free regions after f, by their true capacity: Python
    records of 1,500 after f (which a region of 1,200 stated larger would take, writing past it into a value the
    reverse reads) leave the Python recorder's bits and the hand gradient."""
    py, jn = namespace(PHASES, arrays=True)
    C = np.linspace(0.5, 1.5, 1500)
    free = []

    def outer(f):
        def g(x):
            y = f(x, 6)
            free.append(sum(len(v) for v in x.tape._free.values()))
            w = (y * y).sum() * C
            return (np.cos(w) * C).sum() + (y * y * y).sum()
        return g
    u0 = np.random.default_rng(3).uniform(-1, 1, 1200)
    vp, gp = tape.value_and_grad(outer(py["f"]))(u0)
    vj, gj = tape.value_and_grad(outer(jn["f"]))(u0)
    assert jn["f"]._arrays is True and free[-1] >= 1 and vj == vp and same(gj, gp)
    us = [u0]
    for _ in range(6):
        us.append(np.sin(us[-1]) * 0.5 + us[-1])
    vs = [us[-1][:500]]
    for _ in range(6):
        vs.append(np.sin(vs[-1]) * 0.5 + vs[-1])
    y = vs[-1]
    w = (y * y).sum() * C
    a = 2.0 * y * (-np.sin(w) * C * C).sum() + 3.0 * y * y  # by hand: d/dy, then back through both loops
    for v in reversed(vs[:-1]):
        a = a * (0.5 * np.cos(v) + 1.0)
    b = np.zeros(1200)
    b[:500] = a
    for u in reversed(us[:-1]):
        b = b * (0.5 * np.cos(u) + 1.0)
    assert np.allclose(gj, b, rtol=1e-11, atol=1e-12)


HEAT = '''
def f(u, steps, c):                  # the periodic heat equation by np.concatenate
    for _ in range(steps):
        u = u + c * (np.concatenate([u[1:], u[:1]]) + np.concatenate([u[-1:], u[:-1]]) - 2.0 * u)
    return 0.5 * (u * u).sum()
'''


def test_a_long_loop_keeps_a_few_regions_as_the_python_recorder():
    py, jn = namespace(HEAT, arrays=True)
    u0 = np.random.default_rng(8).normal(size=2000)
    (vp, gp), (vj, gj) = (tape.value_and_grad(f, argnums=0)(u0, 300, 0.2) for f in (py["f"], jn["f"]))
    assert vj == vp and same(gj, gp)
    (jgrad, jtapes), (pgrad, ptapes) = taped(jn["f"], 300, 0.2), taped(py["f"], 300, 0.2)
    jgrad(u0)
    pgrad(u0)
    ours, theirs = jtapes[-1]._n_arena, ptapes[-1]._n_arena  # arena elements in use
    assert ours <= 3 * theirs and ours < 300 * 7 * 2000 / 50  # (every step kept: 7 records of 2,000 a step)


def test_a_loop_in_an_arena_with_room_takes_freed_regions_at_every_record():
    """f's loop after a big record (the arena has room f does not fill, so a collection comes only every quarter of it):
    its records take the regions freed at the last collection at every record, as the Python recorder's, not only when
    the next collection is due; the gradient is the Python recorder's bits and the hand one."""
    py, jn = namespace(HEAT, arrays=True)
    u0, big = np.random.default_rng(8).normal(size=2000), np.linspace(0.0, 1.0, 300_000)
    grown = []

    def outer(f):
        def g(x):
            s = (x[0] * big).sum()
            before = x.tape._n_arena
            v = f(x, 300, 0.2)
            grown.append(x.tape._n_arena - before)
            return v + s
        return g
    vp, gp = tape.value_and_grad(outer(py["f"]))(u0)
    vj, gj = tape.value_and_grad(outer(jn["f"]))(u0)
    assert jn["f"]._arrays is True and vj == vp and same(gj, gp) and grown[1] <= 1.5 * grown[0]
    by_hand = u0  # the step is A u, A symmetric: the gradient of |A^300 u|^2 / 2 is A^600 u; x[0] * sum(big)'s e_0
    for _ in range(600):
        by_hand = by_hand + 0.2 * (np.roll(by_hand, -1) + np.roll(by_hand, 1) - 2.0 * by_hand)
    by_hand[0] += big.sum()
    assert np.allclose(gj, by_hand, rtol=1e-11, atol=1e-11)


RAISES = '''
import numpy as np
import tape
from tape.sweeps import arenas
arenas.CHECK = True

@tape.jit
def f(u, k):
    kept = []
    for _ in range(5):
        u = np.tanh(u) * 1.5 + u
        kept.append(u)
    return (u[:k] + u).sum() + kept[2].sum()  # k != len(u): shapes that do not broadcast, raised inside f

u0 = np.linspace(-1.0, 1.0, 1100)
for _ in range(3):
    try:
        tape.value_and_grad(f, argnums=0)(u0, 7)
    except ValueError as e:
        assert "broadcast" in str(e), e
    value, grad = tape.value_and_grad(f, argnums=0)(u0, 1100)
    us = [u0]
    for _ in range(5):
        us.append(np.tanh(us[-1]) * 1.5 + us[-1])
    assert np.isclose(value, 2.0 * us[-1].sum() + us[3].sum(), rtol=1e-13), value
print("ok")
'''


def test_records_alive_when_f_raises_do_not_crash_later_calls():
    """f raises with records held (in variables and a list): their lives die with or after the call's state, and later
    calls record and differentiate as ever (a subprocess: a destructor writing into freed memory would crash it)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(RAISES)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_a_small_program_keeps_its_regions():
    """An f whose call wrote fewer than arenas.EARLY elements records later calls without lives (as the Python
    recorder collects nothing below it); its first call, which never filled its arena, gave no region away either
    (the lives' C function never ran): every record kept, the gradient the same."""
    source, x0, data = CASES["mlp"]
    _, jn = namespace(source, arrays=True)
    grad, tapes = taped(jn["f"], *data)
    first, second = grad(x0), grad(x0)
    assert 0 < jn["f"]._written < arenas.EARLY and first[0] == second[0] and same(first[1], second[1])
    rows = [{p.row for p in t._plans} for t in tapes]
    assert rows[0] <= tapes[0]._read and rows[1] <= tapes[1]._read and not tapes[0]._freed
