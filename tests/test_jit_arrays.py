"""tape.jit on Numba code as Numba users write it: arrays of Vars (issue 31).

Programs the Python recorder runs too (on a small VarArray: RK4 with an array state, an n-body
step with force arrays, an explicit heat equation, every array op) are compared record by record
and by derivative; the idioms only Numba code has (np.empty(n, dtype=xs.dtype), np.zeros((n, 2),
...), np.empty_like, helpers taking and returning arrays, swaps) by value against the same
function on plain numbers (numba's value) and by gradient against central differences and
derivatives by hand. Few distinct jitted functions: each compiles for seconds.
"""

import math
import re
import subprocess
import sys

import numba
import numpy as np
import pytest
from test_jit import records, run_from_file

import tape
from tape.bench.programs import JIT_ARRAY_RK4 as RK4
from tape.bench.programs import JIT_HEAT as HEAT
from tape.bench.programs import JIT_NBODY as NBODY
from tape.kernels import ops


def namespace(source: str, helpers=(), arrays: bool = False) -> tuple[dict, dict]:
    """(the Python namespace, the tape.jit one) of source; ``helpers`` are numba.njit in the jit one, f is
    tape.jit(cache=True, arrays=arrays) there (run_from_file: loaded from the cache in a later run)."""
    py, jn = (run_from_file(source, {"tape": tape, "math": math, "np": np, "numba": numba}) for _ in range(2))
    for name in helpers:
        jn[name] = numba.njit(jn[name])
    jn["f"] = tape.jit(jn["f"], cache=True, arrays=arrays)
    return py, jn


def same_records(tp, tj):
    for a, b in zip(records(tp), records(tj), strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def central(f, x, h=1e-6):
    x = np.asarray(x, float)
    out = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        out.append((f(x + e) - f(x - e)) / (2 * h))
    return np.array(out).reshape(x.shape + np.shape(f(x)))


PROGRAMS = {
    "rk4": (RK4, ("rhs",), [1.1, 0.4], (30, 0.01, np.array([0.7, -0.4]), np.array([-0.3, 0.2]))),
    "nbody": (NBODY, (), [[0.0, 0.0], [1.0, 0.2], [-0.3, 0.9]], (4, 0.01, np.array([1.0, 0.5, 0.8]))),
    "heat": (HEAT, (), [0.0, 0.3, 1.0, 0.6, 0.2, 0.0], (5, 0.25)),
}


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def program(request):
    source, helpers, x0, data = PROGRAMS[request.param]
    py, jn = namespace(source, helpers)
    return request.param, py["f"], jn["f"], np.array(x0), data


def test_array_programs_record_as_python(program):
    name, f, jf, x0, data = program
    tapes = []
    for g in (f, jf):
        t = tape.Tape()
        y = g(t.array(x0), *data)
        tapes.append((t, y))
    (tp, yp), (tj, yj) = tapes
    same_records(tp, tj)
    assert len(tj) > 50 and type(yj) is type(yp)
    if isinstance(yp, tape.VarArray):
        assert np.array_equal(yp._idx, yj._idx) and yj.shape == yp.shape
    else:
        assert yp.index == yj.index


def test_array_programs_differentiate_as_python(program):
    name, f, jf, x0, data = program
    if name == "nbody":
        vp, gp = tape.value_and_grad(f)(x0, *data)
        vj, gj = tape.value_and_grad(jf)(x0, *data)
        assert vp == vj and np.array_equal(gp, gj) and gj.shape == x0.shape
        assert np.allclose(gj, central(lambda x: jf(x, *data), x0), rtol=1e-6, atol=1e-8)
        assert vj == jf(x0, *data)  # on plain numbers: numba's value, bit for bit
    else:
        Jp, Jj = tape.jacobian(f)(x0, *data), tape.jacobian(jf)(x0, *data)
        assert np.array_equal(Jp, Jj) and Jj.shape == x0.shape * 2
        assert np.allclose(Jj, central(lambda x: jf(x, *data), x0).T, rtol=1e-6, atol=1e-8)
        F = tape.trace(jf, x0, data=data)
        assert np.array_equal(F(x0 * 1.1), np.asarray(jf(x0 * 1.1, *data)))  # replay = numba on numbers


def test_heat_equation_by_hand():
    """One explicit step of u_t = u_xx: un[i] = u[i] + r (u[i+1] - 2 u[i] + u[i-1]), the ends kept."""
    _, jn = namespace(HEAT)
    x0 = np.array([0.0, 0.3, 1.0, 0.6, 0.2, 0.0])
    J = tape.jacobian(jn["f"])(x0, 1, 0.25)
    by_hand = np.eye(6)
    for i in range(1, 5):
        by_hand[i, i - 1:i + 2] = [0.25, 0.5, 0.25]
    assert np.array_equal(J, by_hand)


EVERY_OP = [f"np.{ops.UNARY_UFUNCS[name]}(xs)" for name in ops.UNARY_UFUNCS if name != "arccosh"]
EVERY_OP += ["-xs", "abs(xs)", "tape.sigmoid(xs)", "tape.relu(xs - 0.5)"]
for _s in ops.ARITHMETIC:
    _symbol = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "pow": "**"}.get(_s.name)
    if _symbol:
        EVERY_OP += [f"xs {_symbol} ys", f"xs {_symbol} 2.5", f"2.5 {_symbol} xs", f"xs {_symbol} w", f"w {_symbol} xs",
                     f"xs {_symbol} ys[0]", f"ys[1] {_symbol} xs"]
    else:
        EVERY_OP += [f"np.{_s.ufunc}(xs, ys)", f"np.{_s.ufunc}(xs, 0.5)", f"tape.{_s.name}(1.5, xs)",
                     f"np.{_s.ufunc}(w, xs)"]
EVERY_OP += ["xs.sum() + xs.prod() * np.sum(ys) + xs.mean()", "np.dot(xs, ys) + xs @ w", "np.dot(m, xs)",
             "(xs.reshape(2, 2) @ ys.copy().reshape((2, 2))).reshape(4)", "(w @ m) * xs",
             "np.concatenate((xs[:1], w[:1], ys[1:3] * 2.0))", "np.stack((xs, ys), axis=1).sum(axis=1)",
             "np.stack((xs, ys)).prod(axis=0)", "xs.reshape((2, 2)).mean(axis=1).sum() + np.sum(np.concatenate("
             "(xs.reshape((2, 2)), ys.copy().reshape((2, 2))), axis=1), axis=-2).sum()"]
EVERY = ("def f(xs, w, m):\n    ys = xs[::-1]\n    acc = xs * 0.0\n"
         + "".join(f"    acc = acc + ({expr})\n" for expr in EVERY_OP) + "    return acc\n")


@pytest.mark.slow  # a large tape.jit compile
def test_every_array_op_records_as_python():
    py, jn = namespace(EVERY)
    x0, data = np.array([0.3, 0.7, 0.9, 0.45]), (np.array([1.5, -0.5, 2.0, 0.25]), np.arange(16.0).reshape(4, 4) / 7)
    tapes = []
    for g in (py["f"], jn["f"]):
        t = tape.Tape()
        y = g(t.array(x0), *data)
        tapes.append((t, y))
    (tp, yp), (tj, yj) = tapes
    same_records(tp, tj)
    assert np.array_equal(yp._idx, yj._idx)


RESHAPES = """
def f(xs, k):
    a = np.sin(xs.reshape(4, 5))
    b = a.T.reshape(4, 5)  # a transpose's elements: NumPy copies
    c = a[:, 1:].reshape((2, 8))  # a slice of columns: copied
    e = a.T.reshape(5, -1)  # its own shape: a view
    return (b * k).sum() + (c * c).sum() + e[1:3].reshape(-1).sum() + xs[::2].reshape(5, 2)[1:].sum()
"""
WRITTEN = """
def f(xs):
    d = xs[::2].reshape(5, 2)  # a strided vector: a view, as NumPy's
    d[0, 0] = xs[1] * 3.0  # written through: xs[0] is now that
    return (xs * xs).sum() + d.T.reshape(-1)[1]
"""


def test_reshapes_of_views_copy_where_numpy_does():
    """Var arrays not in C order reshape as NumPy does: a copy where it makes one, in the tape's arena (Numba's own
    reshape raised NotImplementedError out of tape.jit at a transpose's, and refused a slice's), else a view; the
    Python recorder's records and gradient. Written through such a view, xs changes as a NumPy array does (the Python
    recorder's views keep their elements: docs/guide.md): NumPy's value, central differences of it."""
    py, jn = namespace(RESHAPES)
    xs, k = np.linspace(-1.0, 1.0, 20), np.arange(20.0).reshape(4, 5)
    tapes = []
    for g in (py["f"], jn["f"]):
        t = tape.Tape()
        tapes.append((t, g(t.array(xs), k)))
    same_records(tapes[0][0], tapes[1][0])
    assert tapes[0][1].index == tapes[1][1].index
    gp, gj = tape.grad(py["f"])(xs, k), tape.grad(jn["f"])(xs, k)
    assert np.array_equal(gp, gj) and np.allclose(gj, central(lambda x: py["f"](x, k), xs), rtol=1e-6, atol=1e-8)
    py, jn = namespace(WRITTEN)
    value, grad = tape.value_and_grad(jn["f"])(xs)
    assert value == pytest.approx(py["f"](xs.copy()), rel=1e-15) and grad[0] == 0.0  # NumPy's; xs[0] written over
    assert np.allclose(grad, central(lambda x: py["f"](x.copy()), xs), rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError):
        tape.grad(tape.jit(lambda xs: xs.reshape(4, 5).T.reshape(3, 7).sum()))(xs)


# elements holding numbers (np.full(..., dtype=xs.dtype)) meet Vars in every path of an op's recorder
MIXED_OPS = ["z * xs", "xs + z", "z - xs", "xs / z", "z ** xs", "np.maximum(z, xs)", "np.exp(z)", "-z", "z * 2.5",
             "d * z", "z * z", "z + xs[0]", "tape.sigmoid(z)"]


def mixed(whole: bool) -> str:
    """f(xs, d) summing MIXED_OPS of a Var array z of numbers and one Var: whole-array ops, or each written
    element by element (the scalar recorders), op after op."""
    body = ["def f(xs, d):", "    z = np.full(len(xs), 0.5, dtype=xs.dtype)", "    z[1] = xs[1]", "    out = xs * 0.0"]
    for expr in MIXED_OPS:
        each = re.sub(r"\b(z|xs|d)\b(?!\[)", r"\1[i]", expr)
        body += [f"    a = {expr}"] if whole else ["    a = np.empty_like(xs)", "    for i in range(len(xs)):",
                                                   f"        a[i] = {each}"]
        body.append("    out = out + a")
    return "\n".join(body + ["    return out", ""])


def test_array_ops_on_numbers_record_as_element_by_element():
    tapes = []
    for whole in (True, False):
        jf = namespace(mixed(whole))[1]["f"]
        t = tape.Tape()
        jf(t.array(np.array([0.3, -0.7, 1.9])), np.array([2.0, -0.0, 0.25]))
        tapes.append(t)
    same_records(*tapes)
    assert len(tapes[0]) > 3 * len(MIXED_OPS)


def test_array_loops_inline_their_recorders():
    """Whole-array arithmetic runs its elements' recorders inline: no call per element (recording.entry), and
    its loops inline where written: no call per op (a Var array returned through memory stalls the caller)."""
    jf = tape.jit(namespace("def f(xs, d):\n    return (d * xs + xs * xs - 2.0 * np.exp(xs)).sum()\n")[0]["f"],
                  cache=False)  # (compiled here, so its IR can be read)
    jf(tape.Tape().array(np.arange(3.0)), np.ones(3))
    ir = jf.dispatcher.inspect_llvm(jf.dispatcher.signatures[0])
    calls = [line for line in ir.splitlines() if "call " in line]
    assert "binary_array" in ir and not [line for line in calls if "_recorders" in line or "binary_array" in line]


# --- whole-array comparisons: np.where, tape.where, .all(), .any(), a branch on one element ------------------

CONDITIONS = '''
def f(xs, w, m):
    ys = xs[::-1]
    grid = xs.reshape((2, 2))
    s = np.where(xs > 0.0, xs, 0.0 * xs).sum() + np.where(xs < ys, xs * ys, 2.0).sum()
    s = s + tape.where(w >= xs, 1.5, xs).sum() + np.where(np.greater(xs, 0.5), w, xs[1]).sum()
    s = s + np.where(grid <= m, grid, xs[:2]).sum() + np.where(2.0 * xs[0] != grid[0], 0.5, grid).sum()
    s = s + np.where(m > 0.3, grid, w[1:3]).sum() + tape.where(w[:2] > 0.0, s, xs[:2]).sum()
    if (xs > -5.0).all():
        s = s + 1.0
    if not (grid == 0.5 * w[:2]).any():
        s = s * 2.0
    if (xs > 0.85).any():
        s = s * xs[3]
    if xs[:1] > ys[:1]:
        s = s - xs[0]
    return s + np.where(xs[0] > xs[1], xs[2], 0.5)
'''
CONDITIONS_DATA = (np.array([1.5, -0.5, 2.0, 0.25]), np.array([[0.2, 0.5], [1.0, 0.1]]))


@pytest.fixture(scope="module")
def conditions():
    py, jn = namespace(CONDITIONS)
    return py["f"], jn["f"]


def test_array_comparisons_record_as_python(conditions):
    """Selects of comparisons broadcast between 1-d and 2-d Var arrays, NumPy arrays, Vars and numbers (and of NumPy
    masks), and every element's comparison checked by .all(), .any() and a one-element branch, named by line."""
    f, jf = conditions
    x0 = np.array([0.3, -0.7, 0.9, 0.45])
    tapes = []
    for g in (f, jf):
        t = tape.Tape()
        tapes.append((t, g(t.array(x0), *CONDITIONS_DATA)))
    (tp, yp), (tj, yj) = tapes
    same_records(tp, tj)
    assert yp.index == yj.index and len(tj._checks) == 4 + 4 + 4 + 1
    vp, gp = tape.value_and_grad(f)(x0, *CONDITIONS_DATA)
    vj, gj = tape.value_and_grad(jf)(x0, *CONDITIONS_DATA)
    assert vp == vj and np.array_equal(gp, gj)
    assert np.allclose(gj, central(lambda x: jf(x, *CONDITIONS_DATA), x0), rtol=1e-6, atol=1e-8)
    assert vj == pytest.approx(jf(x0, *CONDITIONS_DATA), rel=1e-14)  # numba on plain numbers (sums in order)


def test_a_flipped_array_comparison_names_its_line(conditions):
    f, jf = conditions
    x0, flipped, selected = np.array([0.3, -0.7, 0.9, 0.45]), np.array([0.3, -0.7, 0.8, 0.45]), np.array(
        [-0.3, -0.7, 0.9, 0.45])
    F = tape.trace(jf, x0, data=CONDITIONS_DATA)
    assert F(selected) == pytest.approx(jf(selected, *CONDITIONS_DATA), rel=1e-14)  # selects are data: no check
    line = CONDITIONS.splitlines().index("    if (xs > 0.85).any():") + 1
    with pytest.raises(tape.BranchChanged, match=rf"{jf.py_func.__code__.co_filename}:{line}\b"):
        F(flipped)
    R = tape.trace(jf, x0, data=CONDITIONS_DATA, on_branch_change="retrace")
    assert R(flipped) == tape.trace(f, flipped, data=CONDITIONS_DATA)(flipped)


# --- idioms only Numba code has, helpers, swaps -------------------------------------------------------------

IDIOMS = '''
def split(a):                        # a helper taking a Var array and returning a tuple of them
    return a[:2].copy(), a[2:] * 2.0

def norm2(v):
    s = 0.0
    for x in v:
        s = s + x * x
    return s

def f(xs, m):
    n = xs.shape[0]
    u = np.empty(n, dtype=xs.dtype)
    for i in range(n):
        u[i] = xs[i] * xs[i]
    acc = np.zeros((n, 2), dtype=xs.dtype)
    for i in range(n):
        acc[i, 0] += u[i]
        acc[i, 1] += 3.0
    un = np.empty_like(u)
    un[0], un[n - 1] = u[0], u[n - 1]
    for _ in range(2):
        for i in range(1, n - 1):
            un[i] = 0.5 * (u[i - 1] + u[i + 1])
        u, un = un, u
    a, b = split(xs[:4])
    full = np.full(2, 0.5, dtype=xs.dtype) + np.ones_like(a)
    e = np.exp(xs - xs.max())
    sm = e / e.sum()
    grid = xs.reshape((n // 2, 2))
    return (norm2(a) + b.prod() + (full * a).sum() + np.dot(sm, xs) + acc.T.sum() + u.mean()
            + grid[1, 0] * np.dot(m, grid[:, 1].copy()).min() + sum(xs[4:]) + max(xs) + xs.size + len(xs) + xs.ndim
            + acc.ravel()[3] + np.hstack((a, b)).sum() + np.vstack((a, b)).sum(axis=0)[1] + grid.sum(axis=1)[0])
'''


@pytest.fixture(scope="module")
def idioms():
    return namespace(IDIOMS, ("split", "norm2"))[1]["f"]


@pytest.mark.slow  # a large tape.jit compile
def test_numba_idioms_give_numba_s_value_and_the_gradient(idioms):
    x0, m = np.array([0.3, -0.7, 1.9, 0.5, 1.1, 0.2]), np.array([[1.0, 0.5, -2.0], [0.25, 3.0, 1.0]])
    value, grad = tape.value_and_grad(idioms)(x0, m)
    assert value == pytest.approx(idioms(x0, m), rel=1e-14)  # numba on plain numbers (np.sum adds in order)
    assert np.allclose(grad, central(lambda x: idioms(x, m), x0), rtol=1e-6, atol=1e-7)
    assert tape.value_and_grad(idioms)(list(x0), m) == (value, grad.tolist())  # a list of numbers: the same


@pytest.mark.slow  # the idioms fixture: a large tape.jit compile
def test_a_large_array_as_xs_records_at_list_speed(idioms):
    x0 = np.random.default_rng(5).standard_normal(2000)
    m = np.random.default_rng(6).standard_normal((2, 1000))
    value, grad = tape.value_and_grad(idioms)(x0, m)  # the fast path: leaves straight from the array
    listed = tape.value_and_grad(idioms)(x0.tolist(), m)
    assert (value, grad.tolist()) == listed and grad.shape == (2000,)
    F = tape.trace(idioms, x0, data=(m,))  # one array record: an elem record per number reads it
    assert F(x0) == value and np.allclose(F.gradient(x0), grad, rtol=1e-13, atol=0)  # the sweep's own sums


ERRORS = '''
def f(xs, mode):
    u = np.empty(3, dtype=xs.dtype)
    u[0] = xs[0]
    if mode == 0:
        return u[1]
    if mode == 1:
        return xs[7]
    if mode == 2:
        return (xs[:2] + xs).sum()
    if mode == 3:
        return xs[0] if xs > 0.0 else xs[1]
    if mode == 5:
        return np.empty((mode - 6, mode - 7), dtype=xs.dtype).sum()  # (-1, -2): a size of 2 all the same
    if mode == 6:
        return np.zeros(mode - 7, dtype=xs.dtype).sum()
    u[1] = xs[9]
    return u[0]

def g(xs):
    u = np.empty(2, dtype=xs.dtype)
    u[0] = xs[0]
    return u
'''


@pytest.mark.parametrize("mode, error, message", [
    (0, ValueError, "read before anything was written to it"),
    (1, IndexError, "index out of range of a Var array"),
    (2, ValueError, "could not be broadcast together"),
    (3, ValueError, "the truth value of an array comparison with more than one element is ambiguous"),
    (4, IndexError, "index out of range of a Var array"),
    (5, ValueError, "negative dimensions are not allowed"),
    (6, ValueError, "negative dimensions are not allowed"),
])
def test_wrong_element_use_raises_clearly(mode, error, message):
    jf = namespace(ERRORS)[1]["f"]  # tape.jit(cache=True)
    t = tape.Tape()
    with pytest.raises(error, match=message):
        jf(t.array(np.arange(3.0)), mode)
    assert len(t) == 3  # nothing recorded by the failed call


def test_returning_elements_never_written_is_refused():
    jg = tape.jit(namespace(ERRORS)[0]["g"])
    with pytest.raises(ValueError, match="f returns a Var array with elements never written"):
        jg(tape.Tape().array(np.arange(3.0)))


@pytest.mark.parametrize("body, first", [
    ("    return xs[xs[0]]", "tape.jit: index a Var array with integers, slices or integer arrays, not with"),
    ("    a = np.zeros(3)\n    a[0] = xs[0]\n    return xs[0]", "tape.jit: storing a Var into a NumPy array"),
    ("    a = np.zeros(3)\n    a[:] = xs\n    return xs[0]", "tape.jit: storing a Var into a NumPy array"),
    ("    return np.all(xs > 0.0)", "tape.jit: all(tape.ArrayCondition(gt, tape.VarArray(1d, C), float64)) is not "),
    ("    return (xs > 0.0).sum()", "tape.jit: tape.ArrayCondition has no attribute 'sum'"),
    ("    return np.zeros((2, 2, 2), dtype=xs.dtype).sum()", "tape.jit: Var arrays are 1-d or 2-d"),
    ("    return np.zeros(8, dtype=xs.dtype).reshape((2, 2, 2)).sum()", "tape.jit: Var arrays are 1-d or 2-d"),
])
def test_what_arrays_cannot_do_says_so_on_the_first_line(body, first):
    jf = tape.jit(namespace(f"def f(xs):\n{body}\n")[0]["f"])
    with pytest.raises(tape.JitError) as caught:
        jf(tape.Tape().array(np.arange(3.0)))
    line = str(caught.value).splitlines()[0]
    assert line.startswith(first) and jf.py_func.__code__.co_filename in line  # f's file: the copy run_from_file ran


def test_reductions_of_no_elements_have_numpys_values():
    """sum (0) and prod (1) of an empty Var array, of all elements and along an axis of length 0: NumPy's values on
    floats, and the derivatives central differences give."""
    src = ("def f(xs):\n    e, z = xs[:0], xs.reshape((2, 2))[:, :0]\n"
           "    return ((xs * e.sum()).sum() + 2.0 * e.prod() * xs[0]\n"
           "            + (z.sum(axis=1) * 3.0 + z.prod(axis=1) * xs[:2]).sum())\n")
    py, jn = namespace(src)
    x0 = np.array([0.3, 0.7, 0.9, 0.45])
    value, grad = tape.value_and_grad(jn["f"])(x0)
    assert value == pytest.approx(py["f"](x0), rel=1e-15) and value != 0.0
    assert np.allclose(grad, central(py["f"], x0), atol=1e-8)



GATHERS = """
import numpy as np, tape
def f(xs, m):
    y = xs[m] * 2.0
    z = xs[:500].reshape((25, 20))[m[:7] % 25] * y[0]
    return y.sum() + z.sum()
x0, m = np.random.default_rng(3).normal(size=500), np.arange(5, 495, 3)
t = tape.Tape()
xs = t.array(x0)
y = tape.jit(f)(xs, m)  # its first call: the arena spills
print(y.value, *t.gradient(y, xs))
xs = np.random.default_rng(4).normal(size=2048)
value, grad = tape.value_and_grad(tape.jit(f, arrays=True))(xs, m)
print(value, *grad)
"""


def test_an_integer_array_index_copies_into_the_arena():
    """xs[m] is NumPy's copy, a temporary: a Var array must not borrow it. Borrowed, a first call whose arena spilled
    read it after it was freed: garbage rows and values (9e257 where -7.33 was right), and under arrays=True (Var
    arrays where array records fall back) a crash; a subprocess. The gradient by hand: 2 at each gathered place, as
    often as gathered, and the second term's."""
    run = subprocess.run([sys.executable, "-c", GATHERS], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    m = np.arange(5, 495, 3)
    for line, x0 in zip(run.stdout.split("\n"), (np.random.default_rng(3).normal(size=500),
                                                  np.random.default_rng(4).normal(size=2048)), strict=False):
        value, *grad = map(float, line.split())
        r, y0 = m[:7] % 25, 2.0 * x0[m]
        head = x0[:500].reshape(25, 20)
        want = np.zeros(x0.size)
        np.add.at(want, m, 2.0)
        np.add.at(want[:500].reshape(25, 20), r, y0[0])
        want[m[0]] += 2.0 * head[r].sum()
        assert np.isclose(value, y0.sum() + (head[r] * y0[0]).sum(), rtol=1e-13)
        assert np.allclose(grad, want, rtol=1e-13, atol=0)
