"""tape.jit compiles f as users write it (tape/compiled/read_through.py): a global or closure object's attributes
(a SimpleNamespace of functions, properties giving modules) read as constants, plain Python functions as helpers, a
closure passed to a plain helper inlined; tape.logsumexp of array records (whole, along an axis, keepdims). The
records are the Python recorder's bit for bit; gradients against hand-derived ones and central differences."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from test_jit import run_from_file
from test_jit_array_records import same_tapes
from test_jit_arrays import same_records

import tape
from tape.compiled import jit_cache

NAMESPACE = """
import types
NS = types.SimpleNamespace(act=tape.sigmoid, xp=np, scale=0.5, w=np.linspace(-1.0, 1.0, 1500))

class Engine:
    xp = property(lambda self: np)
    nn = property(lambda self: NS)

E = Engine()

def f(x):
    y = NS.act(x * NS.w) + E.xp.tanh(x) * NS.scale
    return E.nn.xp.exp(y).sum()
"""

HELPERS = """
def loop(n, body, carry):
    for t in range(n):
        carry = body(t, carry)
    return carry

def scaled(u, c):
    return c * u + 1.0

OPS = types.SimpleNamespace(loop=loop, roll=np.roll)

def f(u):
    w = np.tanh(u)

    def step(_, v):
        return v - 0.1 * w * (v - OPS.roll(v, 1))

    v = OPS.loop(3, step, scaled(u, 0.5))
    return 0.5 * (v * v).sum()
"""

LOGSUMEXP = """
def f(x, axis, keep):
    A = x.reshape(50, 30)
    if axis == 9:
        return tape.logsumexp(A) + tape.logsumexp(x)
    if keep:
        return (A - tape.logsumexp(A, axis=axis, keepdims=True)).sum() * 0.5 + tape.logsumexp(A, axis=-1).sum()
    return (tape.logsumexp(A, axis=axis) * 1.5).sum()
"""


def pair(source, extra=None):
    """(f run by Python, tape.jit(f)) of ``source``."""
    f = run_from_file(source, {"tape": tape, "math": math, "np": np, "types": types, **(extra or {})})["f"]
    return f, tape.jit(f, cache=True)


def test_an_objects_attributes_are_constants():
    f, jf = pair(NAMESPACE)
    x0 = np.random.default_rng(1).normal(size=1500)
    same_tapes(f, jf, x0, ())
    v, g = tape.value_and_grad(jf)(x0)
    w = f.__globals__["NS"].w
    s = 1.0 / (1.0 + np.exp(-x0 * w))
    y = s + 0.5 * np.tanh(x0)
    hand = np.exp(y) * (s * (1.0 - s) * w + 0.5 * (1.0 - np.tanh(x0) ** 2))  # d/dx sum exp(y)
    assert np.isclose(v, np.exp(y).sum(), rtol=1e-14) and np.allclose(g, hand, rtol=1e-13, atol=0.0)


def test_a_closure_passed_to_a_plain_helper_is_inlined():
    f, jf = pair(HELPERS)
    x0 = np.random.default_rng(2).normal(size=1200)
    same_tapes(f, jf, x0, ())
    k = np.arange(0, 1200, 97)
    assert np.allclose(tape.grad(jf)(x0)[k], some_central(f_np, x0, k), rtol=1e-6, atol=1e-8)


def some_central(f, x, k, h=1e-5):
    """Central differences of f at x along the coordinates k."""
    steps = (np.eye(1, x.size, j)[0] * h for j in k)
    return np.array([(f(x + e) - f(x - e)) / (2 * h) for e in steps])


def f_np(u):
    """HELPERS' f on NumPy arrays (its gradient's central differences)."""
    w, v = np.tanh(u), 0.5 * u + 1.0
    for _ in range(3):
        v = v - 0.1 * w * (v - np.roll(v, 1))
    return 0.5 * (v * v).sum()


@pytest.mark.parametrize("axis, keep", [(9, False), (0, False), (1, False), (-2, False), (0, True), (1, True)])
def test_logsumexp_of_array_records_as_python(axis, keep):
    f, jf = pair(LOGSUMEXP)
    x0 = np.random.default_rng(3).normal(size=1500)
    x0[:30] = 0.25  # a row of ties
    x0[30:35] = 700.0  # exp overflows unshifted
    same_tapes(f, jf, x0, (axis, keep))
    g = tape.grad(jf)(x0, axis, keep)
    want = tape.grad(f)(x0, axis, keep)
    assert np.array_equal(g, want)
    A = x0.reshape(50, 30)

    def softmax(a, ax):
        e = np.exp(a - a.max(axis=ax, keepdims=True))
        return e / e.sum(axis=ax, keepdims=True)
    if axis == 9:
        hand = softmax(A, None).ravel() + softmax(x0, None)
    elif keep:
        hand = (0.5 - 0.5 * A.shape[axis] * softmax(A, axis) + softmax(A, 1)).ravel()
    else:
        hand = 1.5 * softmax(A, axis).ravel()
    assert np.allclose(g, hand, rtol=1e-13, atol=1e-15)
    small, k = np.random.default_rng(4).normal(size=1500), np.arange(0, 1500, 131)
    numeric = some_central(lambda y: _lse_np(y, axis, keep), small, k)
    assert np.allclose(tape.grad(jf)(small, axis, keep)[k], numeric, rtol=1e-6, atol=1e-7)


def _lse_np(x, axis, keep):
    """LOGSUMEXP's f on NumPy arrays (central differences)."""
    def lse(a, ax=None, keepdims=False):
        m = np.max(a, axis=ax, keepdims=True)
        out = np.log(np.exp(a - m).sum(axis=ax, keepdims=True)) + m
        return out if keepdims else np.squeeze(out, axis=ax)
    A = x.reshape(50, 30)
    if axis == 9:
        return lse(A) + lse(x)
    if keep:
        return (A - lse(A, axis, True)).sum() * 0.5 + lse(A, -1).sum()
    return (lse(A, axis) * 1.5).sum()


def test_the_cache_keys_on_what_is_read_through():
    """A cached f compiles again where a value it read through an object (or a plain helper's code) changed."""
    f, _ = pair(HELPERS)
    g, _ = pair(NAMESPACE)

    def key(fn):
        return jit_cache.frozen(fn.__code__, fn.__globals__, set())
    before, ns = key(g), g.__globals__["NS"]
    ns.scale = 0.25
    assert key(g) != before
    ns.scale = 0.5
    assert key(g) == before
    ns.w = ns.w.copy()
    ns.w[7] += 1.0
    assert key(g) != before
    ns.w[7] -= 1.0
    assert key(g) == before
    helper, ops = key(f), f.__globals__["OPS"]
    ops.loop = f.__globals__["scaled"]  # another plain function read through OPS
    assert key(f) != helper
    ops.loop = f.__globals__["loop"]
    assert key(f) == helper


REFUSED = """
NS = types.SimpleNamespace(xp=np, bad=tape.trace)

def helper(ns, x):
    return x

def f(x):
    return helper(NS, x).sum()

def g(x):
    return x.sum() + NS.nothing

def h(x):
    return NS.bad(x)
"""


def test_what_cannot_be_read_through_is_a_jit_error():
    """An object passed on whole, or an attribute it lacks: tape.JitError naming the line, no crash."""
    module = run_from_file(REFUSED, {"tape": tape, "np": np, "types": types})
    with pytest.raises(tape.JitError, match=r"f uses the object NS itself .* at .*test_source_\w+.py:8"):
        tape.value_and_grad(tape.jit(module["f"]))(np.ones(1500))
    with pytest.raises(tape.JitError, match=r"f reads NS.nothing, which SimpleNamespace NS lacks at .*py:11"):
        tape.value_and_grad(tape.jit(module["g"]))(np.ones(1500))
    with pytest.raises(tape.JitError, match=r"f reads NS.bad, <function trace .*, which Numba does not type .*py:14"):
        tape.value_and_grad(tape.jit(module["h"]))(np.ones(1500))


BRANCHY = """
def f(xs):
    def g(v):
        if v > 0.0:
            return v * 2.0
        return -v
    return g(xs[0]) + max(xs[1], xs[0])
"""


@pytest.mark.parametrize("x0", [[1.0, 2.0], [-1.0, 2.0], [3.0, 2.0]])
def test_an_inlined_closures_branches_name_their_lines(x0):
    """A closure's checked branches (inlined by Numba's InlineClosureLikes) carry its own file:line, as the Python
    recorder's (BranchLines again after the inlining)."""
    f = run_from_file(BRANCHY, {"tape": tape, "np": np})["f"]
    tapes = []
    for fn in (f, tape.jit(f, cache=True)):
        t = tape.Tape()
        fn(t.vars(x0))
        tapes.append(t)
    assert [c[2] for c in tapes[1]._checks][0].endswith(".py:4")
    same_records(*tapes)


GENERATORS = """
def f(th, n):
    A, B, C = (th[k * n:(k + 1) * n].reshape(20, 20) for k in range(3))
    xs = list(th[k] * th[k + 1] for k in range(6) if k != 1)
    return (A @ B + C).sum() + xs[0] + xs[3]
"""


def test_a_generator_unpacked_or_listed_records_as_python():
    """A generator expression (one ``for``, an ``if`` too) unpacked or passed to list: compiled as the list it gives
    (read_through.listed), records as Python's; passed to sum it stays refused (Python records between its items)."""
    f, jf = pair(GENERATORS)
    x0 = np.random.default_rng(6).normal(size=1500)
    same_tapes(f, jf, x0, (400,))
    A, B, C = (x0[k * 400:(k + 1) * 400].reshape(20, 20) for k in range(3))
    grad = tape.grad(jf)(x0, 400)
    want = np.zeros(1500)
    want[:400] = (np.ones((20, 20)) @ B.T).ravel()
    want[400:800] = (A.T @ np.ones((20, 20))).ravel()
    want[800:1200] = 1.0
    want[[0, 1, 4, 5]] += [x0[1], x0[0], x0[5], x0[4]]
    assert np.allclose(grad, want, rtol=1e-14, atol=1e-14)
    _, summed = pair(GENERATORS.replace("list(", "sum(").replace(" + xs[0] + xs[3]", " + xs"))
    with pytest.raises(tape.JitError, match="yield"):
        tape.grad(summed)(x0, 400)


def test_only_a_generator_of_one_for_is_listed():
    """listed() rewrites a generator expression's bytecode; anything else it leaves (None)."""
    from tape.compiled.read_through import listed

    def outer(a):
        return (x for x in a), (x + y for x in a for y in a), [x for x in a]
    one, two, comprehension = (c for c in outer.__code__.co_consts if hasattr(c, "co_code"))
    made = listed(one)
    assert made is not None and not made.co_flags & 0x20 and len(made.co_code) == len(one.co_code)
    assert types.FunctionType(made, {})(iter([3, 4])) == [3, 4]  # the rewritten code, run by CPython
    assert listed(two) is None and listed(comprehension) is None
