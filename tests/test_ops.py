"""Every primitive: value and derivative vs independent references, at random and edge points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import BINARY, COMPLEX, DERIVATIVE, OPS_ON_HANDLES, UNARY, VALUE, complex_step, domain_of

import tape
from tape.kernels.ops import GROUPED_PAIRS, OPCODE, OPS

RNG = np.random.default_rng(20261130)
EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-300, -1e-300, 5e-324, 1e300, -1e300,
        math.inf, -math.inf, math.nan]


def domain(name: str, n: int) -> np.ndarray:
    """Random points where op ``name`` is smooth (kinks tested separately)."""
    if domain_of(name):
        return RNG.uniform(*domain_of(name), n)
    if name in ("log", "sqrt"):
        return np.exp(RNG.uniform(-8, 8, n))
    if name == "tan":
        return RNG.uniform(-1.4, 1.4, n)
    if name in ("exp", "sigmoid", "tanh"):
        return RNG.uniform(-30, 30, n)
    return RNG.uniform(-10, 10, n) + np.where(RNG.random(n) < 0.5, 0.3, -0.3)


def binary_points(name: str, n: int) -> list[tuple[float, float]]:
    a, b = domain(name, n), domain(name, n)
    if name == "pow":
        a, b = np.exp(RNG.uniform(-3, 3, n)), RNG.uniform(-4, 4, n)
    if name == "div":
        b = np.where(np.abs(b) < 0.1, 0.7, b)
    return list(zip(a.tolist(), b.tolist(), strict=True))


# tanh' = 1 - y^2, sigmoid' = y(1 - y) (as JAX and PyTorch compute them) and expm1' = y + 1 are
# exact to an absolute ~1e-16; relative accuracy fades where y rounds to +-1 (expm1: to -1, below -10).
ABS_TOL = {"tanh": 1e-15, "sigmoid": 1e-15, "expm1": 1e-15, "lgamma": 1e-13}  # digamma crosses 0 near 1.46
VALUE_ABS = {"lgamma": 1e-14}  # Python's lgamma is its own, not the C library's: a few ulp apart near its zeros


def tape_partials(name: str, args: tuple[float, ...]) -> tuple[float, np.ndarray]:
    """Value and gradient of op ``name`` at ``args`` through the tape."""
    t = tape.Tape()
    xs = [t.var(a) for a in args]
    y = OPS_ON_HANDLES[name](*xs)
    assert len(t) == len(args) + 1, "one op must record exactly one row"
    return y.value, t.gradient(y, xs)


def central(name: str, args: tuple[float, ...], which: int) -> float:
    h = 1e-6 * max(1.0, abs(args[which]))
    up, down = list(args), list(args)
    up[which] += h
    down[which] -= h
    return (VALUE[name](*up) - VALUE[name](*down)) / (up[which] - down[which])


def test_every_table_op_is_tested():
    covered = set(OPS_ON_HANDLES) | {f"{n}_c" for n in BINARY} | {"leaf"}
    # comparisons, select and constant rows: tests/test_branches.py; elem: tests/test_array_records.py;
    # stop_gradient (its slope is 0 where differences see 1): tests/test_var_in_numpy.py
    tabled = {op.name for op in OPS if op.kind not in ("compare", "compare_c", "select")
              and op.name not in ("constant", "elem", "stop_gradient")}
    extra_const = {"rsub_c", "rdiv_c", "rpow_c", "sub_c"}
    assert tabled - covered <= extra_const, tabled - covered


@pytest.mark.parametrize("name", BINARY + UNARY)
def test_random_points_vs_references(name):
    arity = 2 if name in BINARY else 1
    points = binary_points(name, 60) if arity == 2 else [(a,) for a in domain(name, 60).tolist()]
    for args in points:
        value, grads = tape_partials(name, args)
        assert value == pytest.approx(VALUE[name](*args), rel=1e-14, abs=VALUE_ABS.get(name, 0)), args
        for which in range(arity):
            tol = ABS_TOL.get(name, 1e-300)
            formula = DERIVATIVE[name][which](*args)
            assert grads[which] == pytest.approx(formula, rel=1e-12, abs=tol), (args, which)
            fd = central(name, args, which)
            assert grads[which] == pytest.approx(fd, rel=1e-5, abs=1e-7), (args, which)
            if name in COMPLEX:
                cs = complex_step(COMPLEX[name], args, which)
                assert grads[which] == pytest.approx(cs, rel=1e-12, abs=tol), (args, which)


@pytest.mark.parametrize("name", BINARY)
def test_constant_operand_on_either_side(name):
    """Var op c and c op Var record one row and match the two-Var gradient."""
    fn = OPS_ON_HANDLES[name]
    for a, c in binary_points(name, 30):
        for var_first in (True, False):
            if name == "pow" and not var_first:
                a, c = c, a  # c ** x needs a positive base
            t = tape.Tape()
            x = t.var(a)
            y = fn(x, c) if var_first else fn(c, x)
            # a const op; without one (arctan2, ..., mul_nz), a constant record and the op
            assert (len(t), t.n_consts) == ((3, 0) if name in (*GROUPED_PAIRS, "mul_nz") else (2, 1))
            args = (a, c) if var_first else (c, a)
            which = 0 if var_first else 1
            assert y.value == pytest.approx(VALUE[name](*args), rel=1e-14, abs=0)
            g = t.gradient(y, x)
            assert g == pytest.approx(DERIVATIVE[name][which](*args), rel=1e-12, abs=1e-300)


def test_constants_do_not_pollute_the_gradient():
    t = tape.Tape()
    x = t.var(3.0)
    y = 2.0 * x - 1 + x / 4 + 2 ** x + x**3 + np.float64(0.5) * x + np.int32(2) * x
    grads = t.gradient(y, [x])
    expected = 2 + 0.25 + math.log(2) * 8 + 27 + 0.5 + 2
    assert grads[0] == pytest.approx(expected, rel=1e-14)
    # only the leaf and op records: no row per constant
    assert len(t) == 1 + 12
    assert all(OPS[k].kind in ("leaf", "const", "binary") for k in t._op[: len(t)])


def test_constant_only_arithmetic_is_not_recorded():
    t = tape.Tape()
    t.var(1.0)
    assert tape.exp(0.0) == 1.0 and tape.maximum(2, 3.5) == 3.5 and tape.sigmoid(0) == 0.5
    assert tape.log(0.0) == -math.inf and math.isnan(tape.sqrt(-1.0))
    assert len(t) == 1


def test_subtracting_a_constant_is_exact_addition():
    t = tape.Tape()
    x = t.var(0.1)
    y = x - 0.3
    assert OPS[t._op[y.index]].name == "add_c" and t._consts[0] == -0.3
    assert y.value == 0.1 - 0.3


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("a", EDGE)
def test_unary_edge_values(name, a):
    """Huge, tiny, zero, inf, NaN: IEEE values, no crash; derivatives where defined."""
    value, grads = tape_partials(name, (a,))
    ref = VALUE[name](a)
    assert value == pytest.approx(ref, rel=1e-14, abs=VALUE_ABS.get(name, 0), nan_ok=True)
    if math.isnan(a):
        # (-x)' = -1 everywhere; floor, ceil, trunc, rint and sign have slope 0 everywhere
        assert math.isnan(grads[0]) or name in ("neg", "floor", "ceil", "trunc", "rint", "sign")
        return
    formula = DERIVATIVE[name][0](a)
    if math.isfinite(formula) and math.isfinite(ref) and a != 0.0:
        assert grads[0] == pytest.approx(formula, rel=1e-12, abs=ABS_TOL.get(name, 1e-300)), grads[0]


@pytest.mark.parametrize("name", BINARY)
def test_binary_edge_values(name):
    for a in EDGE:
        for b in EDGE:
            value, grads = tape_partials(name, (a, b))
            ref = VALUE[name](a, b)
            if name == "pow" and a == -math.inf and b == 0.5:
                ref = math.inf  # C99 pow(-inf, y > 0 not an odd integer) = +inf; NumPy says NaN
            assert (math.isnan(value) and math.isnan(ref)) or value == pytest.approx(ref, rel=1e-14, abs=0)
            if math.isnan(a) or math.isnan(b):  # pow(1, nan) = pow(nan, 0) = hypot(inf, nan) = 1 in IEEE;
                assert math.isnan(value) or name in ("pow", "hypot", "fmax", "fmin", "mul_nz")  # mul_nz(0, nan) = 0
            for which in range(2):
                formula = DERIVATIVE[name][which](a, b)
                smooth = all(math.isfinite(v) and v != 0 for v in (a, b, ref, formula))
                if smooth and a != b:
                    assert grads[which] == pytest.approx(formula, rel=1e-12), (a, b, which)


# The documented kink conventions (docs/design.md "Conventions at kinks"), one row each.
KINKS = [
    ("abs'(0) = 0", lambda x: abs(x), 0.0, 0.0),
    ("abs'(-0.0) = 0", lambda x: abs(x), -0.0, 0.0),
    ("relu'(0) = 0", tape.relu, 0.0, 0.0),
    ("maximum tie: 1/2 to each side", lambda x: tape.maximum(x, 2.0), 2.0, 0.5),
    ("minimum tie: 1/2 to each side", lambda x: tape.minimum(2.0, x), 2.0, 0.5),
    ("maximum(x, x) = x has slope 1", lambda x: tape.maximum(x, x), 1.5, 1.0),
    ("sqrt'(0) = +inf", tape.sqrt, 0.0, math.inf),
    ("log(0) = -inf, log'(0) = +inf", tape.log, 0.0, math.inf),
    ("x**0 at 0: slope 0", lambda x: x**0, 0.0, 0.0),
    ("x**1 at 0: slope 1", lambda x: x**1, 0.0, 1.0),
    ("x**2 at 0: slope 0", lambda x: x**2, 0.0, 0.0),
    ("x**3 at 0: slope 0", lambda x: x**3, 0.0, 0.0),
    ("x**-1 at 0: slope -inf", lambda x: x**-1, 0.0, -math.inf),
    ("x**-2 at 0: slope -inf", lambda x: x**-2, 0.0, -math.inf),
    ("x**0.5 at 0: slope +inf", lambda x: x**0.5, 0.0, math.inf),
    ("x**1.5 at 0: slope 0", lambda x: x**1.5, 0.0, 0.0),
    ("x**0.5 at -1: NaN", lambda x: x**0.5, -1.0, math.nan),
    ("x**2 at -3: exact -6", lambda x: x**2, -3.0, -6.0),
    ("x**y in y at x = 0: 0", lambda y: 0.0**y, 2.0, 0.0),
]


@pytest.mark.parametrize("label, fn, x, slope", KINKS, ids=[k[0] for k in KINKS])
def test_kink_conventions(label, fn, x, slope):
    t = tape.Tape()
    v = t.var(x)
    g = t.gradient(fn(v), v)
    assert (math.isnan(g) and math.isnan(slope)) or g == slope, (label, g)


def test_an_exactly_zero_adjoint_propagates_nothing():
    """0 * inf partials stay out of the gradient, in the tape and in a Function alike."""
    def f(v):
        return tape.sqrt(v[0]) * 0.0 + tape.log(v[1]) * 0.0 + v[1]

    t = tape.Tape()
    xs = t.vars([0.0, 0.0])
    assert list(t.gradient(f(xs), xs)) == [0.0, 1.0]
    assert list(tape.trace(f, [1.0, 1.0]).gradient([0.0, 0.0])) == [0.0, 1.0]
    # nonzero adjoints, inf and NaN included, still propagate as IEEE says
    t = tape.Tape()
    x = t.var(0.0)
    assert t.gradient(tape.sqrt(x) * math.inf, x) == math.inf
    assert math.isnan(t.gradient(tape.sqrt(x) * math.nan, x))


def test_pow_of_two_vars_at_zero_base():
    t = tape.Tape()
    a, b = t.var(0.0), t.var(3.0)
    y = a**b
    assert y.value == 0.0
    assert list(t.gradient(y, [a, b])) == [0.0, 0.0]


def test_log_of_zero_value():
    t = tape.Tape()
    x = t.var(0.0)
    y = tape.log(x)
    assert y.value == -math.inf


def test_division_by_zero_is_ieee():
    t = tape.Tape()
    x, z = t.var(1.0), t.var(0.0)
    assert (x / z).value == math.inf and (-x / z).value == -math.inf
    assert math.isnan((z / z).value) and (x / 0.0).value == math.inf and (1.0 / z).value == math.inf


def test_overflow_is_ieee():
    t = tape.Tape()
    x = t.var(1000.0)
    assert tape.exp(x).value == math.inf and (x**200).value == math.inf and (10.0**x).value == math.inf
    assert tape.sigmoid(-x).value == 0.0 and tape.sigmoid(x).value == 1.0


def test_recorded_values_equal_replayed_values_bit_for_bit():
    """Recording (Python math) and forward replay (Numba) evaluate the same expressions."""
    t = tape.Tape()
    xs = t.vars(RNG.uniform(-3, 3, 8))
    live = list(xs)
    names = list(OPS_ON_HANDLES)
    for _ in range(3000):
        name = names[RNG.integers(len(names))]
        x = live[RNG.integers(len(live))]
        if name in BINARY:
            other = live[RNG.integers(len(live))] if RNG.random() < 0.7 else float(RNG.uniform(-2, 2))
            y = OPS_ON_HANDLES[name](x, other) if RNG.random() < 0.5 else OPS_ON_HANDLES[name](other, x)
        else:
            y = OPS_ON_HANDLES[name](x)
        if math.isfinite(y.value) and abs(y.value) < 1e6:
            live.append(y)
    recorded = t._val[: len(t)].copy()
    t.forward(xs, [x.value for x in xs])
    np.testing.assert_array_equal(t._val[: len(t)], recorded)


def test_opcodes_fit_uint8_and_names_are_unique():
    assert len(OPS) < 256 and len(OPCODE) == len(OPS)


EULER = 0.5772156649015329
RARE_KINKS = [  # the kink table's rows for the rarer ops (docs/design.md): (op, x, value, slope)
    (tape.floor, -0.0, -0.0, 0.0), (tape.ceil, -0.5, -0.0, 0.0), (tape.rint, 2.5, 2.0, 0.0),
    (tape.rint, -0.5, -0.0, 0.0), (tape.trunc, -1.7, -1.0, 0.0), (tape.sign, 0.0, 0.0, 0.0),
    (tape.floor, math.nan, math.nan, 0.0), (tape.floor, 1e300, 1e300, 0.0), (tape.cbrt, 0.0, 0.0, math.inf),
    (tape.cbrt, -0.0, -0.0, math.inf), (tape.cbrt, -27.0, -3.0, 1 / 27),
    (tape.arcsin, 1.0, math.pi / 2, math.inf), (tape.arccos, -1.0, math.pi, -math.inf),
    (tape.arccosh, 1.0, 0.0, math.inf), (tape.arctanh, 1.0, math.inf, math.inf), (tape.arcsin, 1.5, math.nan, math.nan),
    (tape.log1p, -1.0, -math.inf, math.inf), (tape.log2, 0.0, -math.inf, math.inf),
    (tape.log10, 0.0, -math.inf, math.inf), (tape.lgamma, 0.0, math.inf, math.nan),
    (tape.lgamma, -2.0, math.inf, math.nan), (tape.lgamma, 1.0, 0.0, -EULER),
    (tape.lgamma, 0.5, 0.5 * math.log(math.pi), -EULER - 2 * math.log(2)),
]


def _same(p: float, q: float) -> bool:
    """Equal to rounding, with the same sign (of zeros too), or both NaN."""
    if math.isnan(p) or math.isnan(q):
        return math.isnan(p) and math.isnan(q)
    return p == pytest.approx(q, rel=1e-15) and math.copysign(1, p) == math.copysign(1, q)


@pytest.mark.parametrize("fn, x, value, slope", RARE_KINKS, ids=[f"{k[0].__name__}({k[1]})" for k in RARE_KINKS])
def test_kink_conventions_of_the_rarer_ops(fn, x, value, slope):
    t = tape.Tape()
    v = t.var(x)
    y = fn(v)
    g = t.gradient(y, v)
    assert _same(y.value, value) and _same(g, slope), (y.value, g)
    F = tape.trace(lambda w: fn(w[0]), [x])  # the replayed sweeps: the same numbers
    assert _same(F([x]), value) and _same(F.gradient([x])[0], slope)


INF, NAN, PI = math.inf, math.nan, math.pi
PAIR_KINKS = [  # docs/design.md's kink rows of arctan2, hypot, logaddexp, fmax, fmin: (op, a, b, value, da, db)
    (tape.arctan2, 0.0, 0.0, 0.0, 0.0, 0.0), (tape.arctan2, 0.0, -1.0, PI, -1.0, 0.0),
    (tape.arctan2, INF, 1.0, PI / 2, 0.0, 0.0), (tape.arctan2, INF, INF, PI / 4, 0.0, 0.0),
    (tape.arctan2, 1e300, 1e300, PI / 4, 5e-301, -5e-301), (tape.arctan2, 1e-300, -1e-300, 3 * PI / 4, -5e299, -5e299),
    (tape.arctan2, NAN, 1.0, NAN, NAN, NAN),
    (tape.hypot, 0.0, 0.0, 0.0, 0.0, 0.0), (tape.hypot, -0.0, 0.0, 0.0, 0.0, 0.0),
    (tape.hypot, 3.0, -4.0, 5.0, 0.6, -0.8), (tape.hypot, 1.5e308, 1.5e308, INF, 0.5**0.5, 0.5**0.5),
    (tape.hypot, 1e300, -1e300, 2**0.5 * 1e300, 0.5**0.5, -(0.5**0.5)), (tape.hypot, 5e-324, 0.0, 5e-324, 1.0, 0.0),
    (tape.hypot, -INF, 2.0, INF, -1.0, 0.0), (tape.hypot, INF, INF, INF, NAN, NAN),
    (tape.hypot, INF, NAN, INF, NAN, NAN),
    (tape.logaddexp, -INF, -INF, -INF, 0.5, 0.5), (tape.logaddexp, INF, INF, INF, 0.5, 0.5),
    (tape.logaddexp, 2.0, 2.0, 2.0 + math.log(2.0), 0.5, 0.5), (tape.logaddexp, INF, 1.0, INF, 1.0, 0.0),
    (tape.logaddexp, -INF, 1.0, 1.0, 0.0, 1.0), (tape.logaddexp, 1000.0, 0.0, 1000.0, 1.0, 0.0),
    (tape.logaddexp, NAN, 1.0, NAN, NAN, NAN),
    (tape.fmax, 2.0, 2.0, 2.0, 0.5, 0.5), (tape.fmax, NAN, 1.0, 1.0, 0.0, 1.0), (tape.fmax, 1.0, NAN, 1.0, 1.0, 0.0),
    (tape.fmax, NAN, NAN, NAN, NAN, NAN), (tape.fmin, 2.0, 2.0, 2.0, 0.5, 0.5), (tape.fmin, NAN, 1.0, 1.0, 0.0, 1.0),
    (tape.fmin, -INF, 1.0, -INF, 1.0, 0.0), (tape.fmin, 1.0, NAN, 1.0, 1.0, 0.0),
]


@pytest.mark.parametrize("fn, a, b, value, da, db", PAIR_KINKS, ids=[f"{k[0].__name__}{k[1:3]}" for k in PAIR_KINKS])
def test_kink_conventions_of_the_binary_ops(fn, a, b, value, da, db):
    t = tape.Tape()
    x, y = t.var(a), t.var(b)
    z = fn(x, y)
    grads = t.gradient(z, [x, y])
    assert _same(z.value, value) and _same(grads[0], da) and _same(grads[1], db), (z.value, grads)
    assert _same(z.value, VALUE[fn.__name__](a, b))  # NumPy's value
    F = tape.trace(lambda w: fn(w[0], w[1]), [0.5, 0.25])  # the replayed sweeps and a VarArray: the same numbers
    assert _same(F([a, b]), value) and all(map(_same, F.gradient([a, b]), (da, db)))
    X = tape.Tape().array(np.array([a, b]))
    W = fn(X[0:1], X[1:2]).sum()
    W.backward()
    assert all(map(_same, X.grad, (da, db)))


PLAIN_EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-300, -1e-300, 1e300, -1e300, np.inf, -np.inf, np.nan,
                        710.0, -745.5, 2.0 ** -1074])


def _plain_points(n=1105, seed=3):
    """Edge values and random ones (more than array_records.small(): a VarArray of them is an array record)."""
    rng = np.random.default_rng(seed)
    return np.concatenate([PLAIN_EDGES, rng.normal(size=n // 2) * 3.0, rng.uniform(-1.0, 1.0, n - n // 2)])


def _bits(a):
    a = np.asarray(a, np.float64)
    return np.where(np.isnan(a), np.nan, a).view(np.int64)


@pytest.mark.parametrize("name", [n for n in UNARY if hasattr(tape, n)])
def test_a_unary_function_of_a_numpy_array_gives_a_varrays_values(name):
    """tape.<name> of a NumPy array (as tape.exp of a float, recording nothing) gives the values a VarArray of the same
    numbers records, bit for bit (its array rule's), in the array's shape; ints and bools count as NumPy's do."""
    x = _plain_points()
    t = tape.Tape()
    t.var(1.0)
    got = getattr(tape, name)(x.reshape(2, -1))
    assert len(t) == 1 and type(got) is np.ndarray and got.shape == (2, len(x) // 2)
    F = tape.trace(lambda X: getattr(tape, name)(X), x)
    assert np.array_equal(_bits(got.ravel()), _bits(F(x)))
    fn = getattr(tape, name)
    assert np.array_equal(_bits(fn(np.arange(-3, 4))), _bits(fn(np.arange(-3.0, 4.0))))


@pytest.mark.parametrize("name", ["maximum", "minimum", "arctan2", "hypot", "logaddexp", "fmax", "fmin"])
def test_a_binary_function_of_numpy_arrays_gives_a_varrays_values(name):
    """tape.<name> of NumPy arrays, or of one and a number, broadcast as NumPy does: a VarArray's values, bit for
    bit."""
    x = _plain_points()
    y = np.roll(x, 5)[::-1].copy()
    fn = getattr(tape, name)
    F = tape.trace(lambda X: fn(X[:len(x)], X[len(x):]), np.concatenate([x, y]))
    assert np.array_equal(_bits(fn(x, y)), _bits(F(np.concatenate([x, y]))))
    G = tape.trace(lambda X: fn(0.75, X), x)
    assert np.array_equal(_bits(fn(0.75, x)), _bits(G(x))) and fn(x[:6].reshape(2, 3), x[6:9]).shape == (2, 3)
    with pytest.raises(TypeError, match=f"tape.{name} expects"):
        fn(x, "a")


def test_composed_functions_of_numpy_arrays():
    """logsumexp over any axes (scipy's numbers; -inf over an empty axis), softmax, log_softmax, softplus and clip of a
    NumPy array: NumPy arrays (a float for a whole reduction), recording nothing; a complex or object array raises."""
    sp = pytest.importorskip("scipy.special")
    a = np.random.default_rng(5).normal(size=(3, 4, 5)) * 40.0
    for axis in (None, 0, 1, -1, (0, 2), (0, 1, 2)):
        for keepdims in (False, True):
            got, want = tape.logsumexp(a, axis, keepdims), sp.logsumexp(a, axis, keepdims=keepdims)
            assert np.shape(got) == np.shape(want) and np.allclose(got, want, rtol=1e-14, atol=0)
    assert type(tape.logsumexp(a)) is np.float64 and tape.logsumexp(np.array([-np.inf, -np.inf])) == -np.inf
    assert np.array_equal(tape.logsumexp(np.zeros((0, 3)), 0), np.full(3, -np.inf))
    assert np.allclose(tape.softmax(a), sp.softmax(a, -1), rtol=1e-13, atol=0)
    assert np.allclose(tape.log_softmax(a, 0), sp.log_softmax(a, 0), rtol=1e-13, atol=1e-13)
    x = _plain_points()
    with np.errstate(invalid="ignore"):  # (NumPy's own warns at NaN)
        assert np.allclose(tape.softplus(x), np.logaddexp(x, 0.0), rtol=1e-15, equal_nan=True)
    assert np.array_equal(tape.clip(x, -0.5, 0.5), np.clip(x, -0.5, 0.5), equal_nan=True)
    for bad in (np.ones(3, complex), np.array([1.0, "a"], object)):
        with pytest.raises(TypeError, match="tape.exp expects"):
            tape.exp(bad)
        with pytest.raises(TypeError, match="tape.logsumexp expects"):
            tape.logsumexp(bad)
