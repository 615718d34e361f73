"""A Function called on Vars: one call record, and every sweep through it against the program inlined.

Bit for bit where the arithmetic is the same: values always (the call replays the
same records in the same order), and gradients, tangents and second order of a
chain x_{k+1} = F(x_k) whose states are used only by the next call (then F's
sweeps sum each adjoint in the inlined program's order). Where an input of F is
also used outside it, the inlined reverse sweep sums all its contributions in
one order while the call sums F's part first: equal to a few ulp (rtol 1e-12).
Independent reference: central differences of the inlined program's values.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import tape
from tape.function import derivatives

RNG = np.random.default_rng(15)


def step(x):
    """A leapfrog step of a pendulum with a nonlinear twist (3 states: q, p, and a parameter-like s)."""
    q, p, s = x[0], x[1], x[2]
    p = p - 0.05 * tape.sin(q) * s
    q = q + 0.1 * p
    p = p - 0.05 * tape.sin(q) * s
    return [q, p, s * tape.exp(-0.01 * q * q)]


def chain(F, x, n):
    for _ in range(n):
        x = F(x)
    return x


def loss_of(x):
    return x[0] * x[1] + tape.tanh(x[2]) * x[0]


def central(f, x, h=1e-6):
    x = np.asarray(x, float)
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


@pytest.fixture(scope="module")
def F():
    return tape.trace(step, np.array([0.3, -0.2, 1.1]), cse=False)  # (a merged F adds adjoints in another order)


@pytest.fixture(scope="module")
def pair(F):
    """(with calls, inlined) Functions of one chain of 5 steps; the inlined one not merged (cse=False), as
    a call keeps its own copy of the sin(q) that the step before it also computed."""
    called = tape.trace(lambda x: loss_of(chain(F, x, 5)), np.array([0.3, -0.2, 1.1]), cse=False)
    inlined = tape.trace(lambda x: loss_of(chain(step, x, 5)), np.array([0.3, -0.2, 1.1]), cse=False)
    return called, inlined


def points(n=6):
    edge = [np.array([0.0, -0.0, 1.0]), np.array([1e-300, 1e10, -1e-8]), np.array([np.pi, 0.0, 0.0])]
    return edge + [RNG.uniform(-2, 2, 3) for _ in range(n)]


def test_the_call_is_one_record_and_the_outputs_are_elem_records(F):
    t = tape.Tape()
    x = t.vars([0.3, -0.2, 1.1])
    before = len(t)
    y = F(x)
    stats = [t.record(i).op for i in range(before, len(t))]
    assert stats == ["array pack", "array call", "elem", "elem", "elem"]
    z = F(y)  # the outputs of a call go straight into the next: no pack
    assert [t.record(i).op for i in range(before + 5, len(t))] == ["array call", "elem", "elem", "elem"]
    assert isinstance(z, tape.VarArray) and z.shape == (3,)
    np.testing.assert_array_equal(z.value, chain(F, np.array([0.3, -0.2, 1.1]), 2))


def test_every_sweep_equals_the_inlined_program_bit_for_bit(pair):
    called, inlined = pair
    assert len(called) < len(inlined) / 2
    for x in points():
        v = RNG.normal(size=3)
        assert called(x) == inlined(x)
        for method, args in (("value_and_grad", ()), ("gradient", ()), ("vjp", (1.7,)), ("jvp", (v,)),
                             ("hvp", (v,)), ("hessian", ()), ("jacobian", ()), ("value_grad_hvp", (v,))):
            got, want = getattr(called, method)(x, *args), getattr(inlined, method)(x, *args)
            for a, b in zip(np.atleast_1d(np.asarray(got, dtype=object)), np.atleast_1d(np.asarray(want, dtype=object)),
                            strict=True):
                np.testing.assert_array_equal(np.asarray(a, float), np.asarray(b, float), err_msg=f"{method} at {x}")


def test_the_maps_equal_the_inlined_program(pair):
    called, inlined = pair
    X, V, W = RNG.uniform(-2, 2, (9, 3)), RNG.normal(size=(9, 3)), RNG.normal(size=(9, 1))
    np.testing.assert_array_equal(called.map(X), inlined.map(X))
    for a, b in zip(called.map_value_and_grad(X), inlined.map_value_and_grad(X), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(called.map_jvp(X, V), inlined.map_jvp(X, V))
    np.testing.assert_array_equal(called.map_vjp(X, W), inlined.map_vjp(X, W))
    np.testing.assert_array_equal(called.map_hvp(X, V), inlined.map_hvp(X, V))


def test_derivatives_agree_with_central_differences(pair):
    called, inlined = pair
    for x in [RNG.uniform(-1.5, 1.5, 3) for _ in range(5)]:
        np.testing.assert_allclose(called.gradient(x), central(inlined, x), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(called.hessian(x), central(lambda z: inlined.gradient(z), x).T,
                                   rtol=1e-5, atol=1e-7)


def twice_used(F):
    """F's inputs also used outside it, a call's outputs mixed with other records, and a vector output."""
    def f(x):
        y = F([x[0] * x[1], x[1], tape.sin(x[2])])
        z = F([y[0] + x[0], y[1] * y[2], x[2]])
        return [z[0] * x[0] + y[1], tape.exp(z[2]) - x[1] * z[1]]
    return f


def test_mixed_uses_agree_to_a_few_ulp(F):
    called = tape.trace(twice_used(F), np.array([0.3, -0.2, 1.1]))
    inlined = tape.trace(twice_used(step), np.array([0.3, -0.2, 1.1]))
    for x in points():
        v, w = RNG.normal(size=3), RNG.normal(size=2)
        np.testing.assert_array_equal(called(x), inlined(x))
        np.testing.assert_allclose(called.vjp(x, w), inlined.vjp(x, w), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(called.jvp(x, v), inlined.jvp(x, v), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(called.jacobian(x), inlined.jacobian(x), rtol=1e-12, atol=1e-300)
    sc, si = (tape.trace(lambda x, f=f: f(x)[0] * f(x)[1], np.array([0.3, -0.2, 1.1]))
              for f in (twice_used(F), twice_used(step)))
    for x in [RNG.uniform(-1, 1, 3) for _ in range(5)]:
        v = RNG.normal(size=3)
        np.testing.assert_allclose(sc.hvp(x, v), si.hvp(x, v), rtol=1e-11, atol=1e-14)
        np.testing.assert_allclose(sc.hessian(x), central(lambda z: si.gradient(z), x).T, rtol=1e-5, atol=1e-7)


def test_live_tape_sweeps_through_a_call(F):
    t = tape.Tape()
    x = t.vars([0.4, 0.1, -0.7])
    L = loss_of(chain(F, x, 4))
    t2 = tape.Tape()
    x2 = t2.vars([0.4, 0.1, -0.7])
    L2 = loss_of(chain(step, x2, 4))
    assert L.value == L2.value
    np.testing.assert_array_equal(t.gradient(L, x), t2.gradient(L2, x2))
    L.backward()
    L2.backward()
    assert [v.grad for v in x] == [v.grad for v in x2]
    v = np.array([0.3, -1.0, 2.0])
    np.testing.assert_array_equal(t.hvp(L, x, v), t2.hvp(L2, x2, v))
    np.testing.assert_array_equal(t.jvp(L, x, v), t2.jvp(L2, x2, v))
    np.testing.assert_array_equal(t.hessian(L, x), t2.hessian(L2, x2))
    t.forward(x, [1.0, 2.0, 3.0])  # a replay of the live tape at new leaf values
    t2.forward(x2, [1.0, 2.0, 3.0])
    assert L.value == L2.value
    G = t.function(x, L)
    np.testing.assert_array_equal(G.gradient([0.1, 0.2, 0.3]), t2.function(x2, L2).gradient([0.1, 0.2, 0.3]))


def test_grad_and_transforms_of_code_calling_F(F):
    f = lambda x: loss_of(chain(F, x, 3))  # noqa: E731
    g = lambda x: loss_of(chain(step, x, 3))  # noqa: E731
    x = [0.2, 0.5, -0.3]
    assert tape.grad(f)(x) == tape.grad(g)(x)
    assert tape.value_and_grad(f)(x) == tape.value_and_grad(g)(x)
    # the transforms' traces merge the inlined steps' repeated sin(q) (tape/analyses/cse.py), which a call cannot:
    # the adjoints add in another order
    np.testing.assert_allclose(tape.hessian(f)(np.array(x)), tape.hessian(g)(np.array(x)), rtol=1e-14)
    np.testing.assert_allclose(tape.jacobian(lambda z: chain(F, z, 2))(np.array(x)),
                               tape.jacobian(lambda z: chain(step, z, 2))(np.array(x)), rtol=1e-14)


def test_nested_calls(F):
    G = tape.trace(lambda x: chain(F, x, 3), np.array([0.3, -0.2, 1.1]), cse=False)  # call records inside G
    H = tape.trace(lambda x: loss_of(chain(G, x, 2)), np.array([0.3, -0.2, 1.1]), cse=False)
    inlined = tape.trace(lambda x: loss_of(chain(step, x, 6)), np.array([0.3, -0.2, 1.1]), cse=False)
    for x in points(3):
        v = RNG.normal(size=3)
        assert H(x) == inlined(x)
        np.testing.assert_array_equal(H.gradient(x), inlined.gradient(x))
        np.testing.assert_array_equal(H.jvp(x, v), inlined.jvp(x, v))
        np.testing.assert_array_equal(H.hvp(x, v), inlined.hvp(x, v))
    X = RNG.uniform(-1, 1, (4, 3))
    np.testing.assert_array_equal(H.map_value_and_grad(X)[1], inlined.map_value_and_grad(X)[1])


def test_params_big_arrays_and_array_outputs():
    w0 = np.linspace(-1, 1, 1500)
    P = tape.trace(lambda w, c: [tape.sin(w * c[0]).sum(), (w * w).sum() * c[1]], w0, params=np.array([2.0, 0.5]))
    Q = tape.trace(lambda w: tape.tanh(w) * 1.5, w0)  # 1500 outputs: a view of the call record
    def called(w):
        o = P(Q(w), np.array([2.0, 0.5]))
        return o[0] * o[1]
    def inlined(w):
        u = tape.tanh(w) * 1.5
        return tape.sin(u * 2.0).sum() * ((u * u).sum() * 0.5)
    A, B = tape.trace(called, w0), tape.trace(inlined, w0)
    w = RNG.normal(size=1500)
    assert A(w) == B(w)
    np.testing.assert_array_equal(A.gradient(w), B.gradient(w))
    v = RNG.normal(size=1500)
    np.testing.assert_array_equal(A.jvp(w, v), B.jvp(w, v))
    np.testing.assert_allclose(A.hvp(w, v), B.hvp(w, v), rtol=1e-10, atol=1e-12)
    t = tape.Tape()
    out = P(t.array(w0), [3.0, -1.0])  # params given as numbers: a constant array record beside the call
    np.testing.assert_array_equal(out.value, P(w0, [3.0, -1.0]))


def test_a_shared_Function_in_threads(F):
    Gs = [tape.trace(lambda x, k=k: loss_of(chain(F, x, k)), np.array([0.3, -0.2, 1.1])) for k in (2, 3, 4, 5)]
    X = RNG.uniform(-1, 1, (40, 3))
    want = [[G.value_and_grad(x)[1] for x in X] for G in Gs]
    got: dict[int, list] = {}

    def work(k):
        got[k] = [Gs[k].value_and_grad(x)[1] for x in X]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k in range(4):
        np.testing.assert_array_equal(np.array(got[k]), np.array(want[k]))


def branchy(x):
    if x[0] > 0:
        return [x[0] * x[1], x[1] + 1.0]
    return [x[0] - x[1], x[1] * 2.0]


def test_a_branch_inside_F_is_checked_by_F():
    F = tape.trace(branchy, [0.5, 0.7])
    G = tape.trace(lambda x: F(x)[0] * 2.0, [0.5, 0.7])
    assert G([0.1, 3.0]) == 2 * (0.1 * 3.0)
    for method, args in (("__call__", ()), ("gradient", ()), ("jvp", ([1.0, 0.0],)), ("hvp", ([1.0, 0.0],))):
        with pytest.raises(tape.BranchChanged, match="inside the call of") as info:
            getattr(G, method)([-0.5, 0.7], *args)
        assert info.value.where.endswith(f"test_call_records.py:{branchy.__code__.co_firstlineno + 1}")
    F.on_branch_change = "retrace"  # F's policy decides: it records the other branch
    assert G([-0.5, 0.7]) == 2 * (-0.5 - 0.7)
    assert G.gradient([-0.5, 0.7]).tolist() == [2.0, -2.0]


def test_refusals():
    t = tape.Tape()
    a, b = t.vars([1.0, 2.0])
    H = t.function([a, b], [a * b, a + b])
    with pytest.raises(tape.TapeError, match="made from this tape"):
        H([a, b])
    s = tape.Tape()
    c = s.var(1.0)
    with pytest.raises(tape.ForeignHandleError, match="different tapes"):
        H([a, c])
    with pytest.raises(ValueError, match="takes 2 inputs"):
        H([c, c, c])
    M = tape.trace(lambda m: (m * m).sum(), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"shape \(2, 3\), got a VarArray of shape \(3, 2\)"):
        M(s.array(np.ones((3, 2))))
    assert M(s.array(np.ones(6))).value == 6.0  # flat, as F(np.ones(6)) takes
    with pytest.raises(TypeError, match="params are numbers"):
        tape.trace(lambda x, p: x[0] * p[0], [1.0], params=[2.0])([c], [c])

    def rec(x):
        return [x[0] * 2.0, x[1]] if x[0] > 0 else K(x)

    K = tape.trace(rec, [1.0, 1.0], on_branch_change="retrace")
    with pytest.raises(tape.TapeError, match="recursion"):
        K([-1.0, 1.0])


def test_save_and_load_keep_the_called_Functions_inside_the_file(F, tmp_path):
    G = tape.trace(lambda x: chain(F, x, 3), np.array([0.3, -0.2, 1.1]))
    F.on_branch_change = "ignore"  # each called Function keeps its own options in the file
    try:
        H = tape.trace(lambda x: loss_of(chain(G, x, 2)) + F(x)[0], np.array([0.3, -0.2, 1.1]))
        H.save(tmp_path / "h.npz")
        K = tape.load(tmp_path / "h.npz")
    finally:
        F.on_branch_change = "raise"
    assert len(K._callees) == 2 and K._callees[1].on_branch_change == "ignore"
    assert K._callees[0]._callees[0].on_branch_change == "ignore"  # F inside G, saved again there
    for x in points(3):
        v = RNG.normal(size=3)
        assert K(x) == H(x)
        np.testing.assert_array_equal(K.gradient(x), H.gradient(x))
        np.testing.assert_array_equal(K.hvp(x, v), H.hvp(x, v))
    names = set(np.load(tmp_path / "h.npz").files)
    assert {"callee0.op", "callee0.callee0.op", "callee1.op"} <= names and int(np.load(tmp_path / "h.npz")[
        "format_version"]) == 5


def _resaved(src, dst, edit):
    a = dict(np.load(src))
    edit(a)
    np.savez(dst, **a)
    return dst


def test_broken_callees_in_a_file_are_refused(F, tmp_path):
    H = tape.trace(lambda x: loss_of(chain(F, x, 2)), np.array([0.3, -0.2, 1.1]))
    H.save(tmp_path / "h.npz")
    P = tape.trace(lambda x: x[0] * x[1], np.array([1.0, 2.0]))
    other = {f"callee0.{k}": v for k, v in np.load(_save(P, tmp_path / "p.npz")).items()}

    def drop(a):
        for k in [k for k in a if k.startswith("callee0.")]:
            del a[k]

    cases = [
        ("a callee's bad record", lambda a: a.__setitem__("callee0.in0", np.full_like(a["callee0.in0"], 10**6)),
         "callee 0: record"),
        ("no callee for the call record", drop, "names a Function, and this tape holds none"),
        ("a callee of other sizes", lambda a: (drop(a), a.update(other)), "cannot read"),
        ("a gap in the numbering", lambda a: a.update({"callee2." + k[8:]: a[k] for k in list(a) if
                                                       k.startswith("callee0.")}), "numbered"),
        ("callees in a version-4 file", lambda a: a.__setitem__("format_version", np.array(4, np.int64)),
         "format version"),
        ("a callee missing an array", lambda a: a.pop("callee0.consts"), "callee 0: not a tape file"),
        ("a callee of version 3", lambda a: (a.__setitem__("callee0.format_version", np.array(3, np.int64)),
                                              a.pop("callee0.output_shape")), "callee 0: callees in a file"),
    ]
    for k, (what, edit, match) in enumerate(cases):
        with pytest.raises(tape.TapeFormatError, match=match):
            tape.load(_resaved(tmp_path / "h.npz", tmp_path / f"case{k}.npz", edit))
        assert what


def _save(F, path):
    F.save(path)
    return path


def test_a_crafted_file_with_a_call_record_is_refused(tmp_path):
    code = f"""
import numpy as np, tape
from tape.kernels.array_ops import ARRAY_OPCODE
F = tape.trace(lambda w: tape.sin(w).sum(), np.zeros(2000))
F.save({str(tmp_path / 'f.npz')!r})
a = dict(np.load({str(tmp_path / 'f.npz')!r}))
row = int(a["plans"][1, 1])
a["op"][row] = ARRAY_OPCODE["call"]
a["plans"][1, 0] = ARRAY_OPCODE["call"]
np.savez({str(tmp_path / 'g.npz')!r}, **a)
try:
    tape.load({str(tmp_path / 'g.npz')!r})
except tape.TapeFormatError as exc:
    print("refused:", exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "refused:" in out.stdout and "holds none" in out.stdout


def vdp_rk4(y, h=0.01):
    f = lambda y: [y[1], (1.0 - y[0] * y[0]) * y[1] - y[0]]  # noqa: E731
    k1 = f(y)
    k2 = f([y[i] + 0.5 * h * k1[i] for i in range(2)])
    k3 = f([y[i] + 0.5 * h * k2[i] for i in range(2)])
    k4 = f([y[i] + h * k3[i] for i in range(2)])
    return [y[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) for i in range(2)]


@pytest.mark.parametrize("every", [1, 10])
def test_a_checkpointed_loop_equals_the_plain_one_bit_for_bit(every):
    """300 RK4 steps: a step (or 10) recorded once and called on Vars, against the loop inline."""
    F = tape.trace(lambda y: chain(vdp_rk4, y, every), np.array([2.0, 0.0]))
    tapes = []
    for step, n in ((F, 300 // every), (vdp_rk4, 300)):
        t = tape.Tape()
        x = t.vars([2.0, 0.5])
        y = chain(step, x, n)
        L = y[0] * y[1]
        tapes.append((t, x, L, t.gradient(L, x)))
    (tc, xc, Lc, gc), (ti, xi, Li, gi) = tapes
    assert Lc.value == Li.value
    np.testing.assert_array_equal(gc, gi)
    assert len(tc) < len(ti) / 10 and tc.nbytes < ti.nbytes
    v = np.array([0.7, -1.3])
    np.testing.assert_array_equal(tc.hvp(Lc, xc, v), ti.hvp(Li, xi, v))
    Gc, Gi = tc.function(xc, Lc), ti.function(xi, Li)
    for x in ([2.0, 0.5], [-1.0, 3.0], [0.0, -0.0]):
        assert Gc.value_and_grad(x)[0] == Gi.value_and_grad(x)[0]
        np.testing.assert_array_equal(Gc.value_and_grad(x)[1], Gi.value_and_grad(x)[1])
    np.testing.assert_allclose(gc, central(lambda z: Gi(z), [2.0, 0.5]), rtol=1e-6)


def test_inf_nan_and_structural_zeros_pass_through_a_call():
    inner = lambda x: [tape.sqrt(tape.relu(x[0])), x[1] * x[0]]  # noqa: E731
    S = tape.trace(inner, [1.0, 1.0])
    outer = (lambda g: lambda x: g(x)[0] * 0.0 + g(x)[1],  # a zero adjoint: sqrt'(0) = inf must not turn it NaN
             lambda g: lambda x: tape.where(x[0] > 0, g(x)[0], x[1]),  # the unselected side is never visited
             lambda g: lambda x: g(x)[0] + g(x)[1])
    for make in outer:
        A, B = tape.trace(make(S), [1.0, 1.0]), tape.trace(make(inner), [1.0, 1.0])
        for x in ([-1.0, 2.0], [0.0, 2.0], [-0.0, 1.0], [np.inf, 1.0], [np.nan, 1.0], [1e308, 1e308],
                  [5e-324, -5e-324], [0.0, np.inf]):
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(A(x), B(x))
                np.testing.assert_array_equal(A.gradient(x), B.gradient(x))
                np.testing.assert_array_equal(A.hvp(x, [1.0, 1.0]), B.hvp(x, [1.0, 1.0]))
                np.testing.assert_array_equal(A.jvp(x, [1.0, -1.0]), B.jvp(x, [1.0, -1.0]))
        assert not np.any(np.isnan(A.gradient([-1.0, 2.0])))


def test_structured_and_scalar_calls_pictures_and_checks():
    D = tape.trace(lambda d: d["a"] * tape.sin(d["b"]).sum(), {"a": 1.0, "b": np.zeros(3)})
    t = tape.Tape()
    a, b = t.var(2.0), t.array([0.1, 0.2, 0.3])
    y = D({"b": b, "a": a})  # x0's structure, dict keys in sorted order
    assert type(y) is tape.Var and y.value == 2.0 * tape.sin(t.array([0.1, 0.2, 0.3])).sum().value
    y.backward()
    np.testing.assert_array_equal(b.grad, 2.0 * np.cos([0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match="structure of the x0 traced"):
        D({"a": b, "b": a})
    S = tape.trace(lambda x: x * x + 1.0, 0.5)
    G = tape.trace(lambda x: S(x) * S(x * 2.0), 0.5)
    assert "array call" in G.table() and G.stats()["by_op"]["array call"] == 2 and "array call" in G.to_dot()
    with tape.debug_nans():
        assert G.gradient(0.3) == tape.grad(lambda x: (x * x + 1.0) * ((x * 2.0) * (x * 2.0) + 1.0))(0.3)
    Lg = tape.trace(lambda x: tape.log(x), 1.0)
    H = tape.trace(lambda x: Lg(x) * 2.0, 1.0)
    H.check_finite = True
    with pytest.raises(tape.NonFiniteError, match="inside the call of"):
        H(-1.0)
    t.clear()
    assert t._callees == []  # a cleared tape lets go of the Functions it called


@pytest.mark.parametrize("big", [False, True], ids=["scalar records", "array records"])
def test_the_weighted_second_order_of_a_vector_Function(big):
    """What a call record asks of F in second order: (Jᵀ w, H(w·F) v + Jᵀ ẇ), against central
    differences of F.vjp along v plus F.vjp of ẇ."""
    n = 1100 if big else 3
    x0 = np.linspace(-0.5, 0.7, n)
    F = tape.trace(lambda x: [tape.sin(x * x[::-1]).sum() * x[0], (tape.exp(0.3 * x) * x).sum(), x[1] * x[2]], x0)
    assert bool(F._plans) == big
    for _ in range(3):
        x, v, w, wd = RNG.uniform(-1, 1, n), RNG.normal(size=n), RNG.normal(size=3), RNG.normal(size=3)
        c, cd = derivatives.weighted_second(F, x, None, w, v, wd)
        np.testing.assert_array_equal(c, F.vjp(x, w))
        h = 1e-6
        want = (F.vjp(x + h * v, w) - F.vjp(x - h * v, w)) / (2 * h) + F.vjp(x, wd)
        np.testing.assert_allclose(cd, want, rtol=1e-6, atol=1e-6)


def test_a_call_reads_the_previous_call_only_when_given_its_outputs_in_order(F):
    for arrange in (lambda y: y, lambda y: [y[0], y[1], y[2]], lambda y: y[::-1], lambda y: [y[1], y[0], y[2]],
                    lambda y: [y[0], y[0], y[2]]):
        t = tape.Tape()
        x = t.vars([0.3, -0.2, 1.1])
        z = F(arrange(F(x)))
        t2 = tape.Tape()
        x2 = t2.vars([0.3, -0.2, 1.1])
        z2 = step(arrange(step(x2)))
        np.testing.assert_array_equal(z.value, [v.value for v in z2])
        L, L2 = loss_of(z), loss_of(z2)
        np.testing.assert_array_equal(t.gradient(L, x), t2.gradient(L2, x2))
