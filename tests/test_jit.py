"""tape.jit: records from Numba-compiled code are the Python recorder's, bit for bit.

One program per group exercises every op of the table (kernels/ops.py) through the same
source run by Python and by tape.jit; each op is then checked on its own records. Whole
programs (RK4, a Monte Carlo pricer with data arrays, a branchy while loop) are compared
record by record, by gradient and by replay; branches name their line; refusals say what.
"""

import hashlib
import math
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import tape
from tape.bench.programs import JIT_PRICER as PRICER
from tape.bench.programs import JIT_RK4 as RK4
from tape.kernels import ops
from tape.kernels.compiling import cache_dir

X0 = [0.3, 0.7, 1.9]  # inside every op's domain but arccosh's (a NaN there, compared by bits too)


def records(t):
    """Everything a tape holds, as comparable arrays (values by their bits, so NaN == NaN)."""
    n = len(t)
    return (t._op[:n].copy(), t._in0[:n].copy(), t._in1[:n].copy(), t._val[:n].view(np.uint64).copy(),
            t._consts[: t.n_consts].view(np.uint64).copy(), list(t._checks))


def run_from_file(source: str, namespace: dict) -> dict:
    """The globals of a module (in sys.modules, as Numba's cache reloads a function's globals by module name) run
    from ``source`` in a file named by its hash in tape's cache folder, written once, with ``namespace`` in them:
    tape.jit(cache=True) of its functions then loads their machine code in the next run (Numba keys its cache on a
    function's file; run from this file's name, they compile again in every run). The cache keys on the source
    alone: a source must always run with the same helpers bound."""
    name = "test_source_" + hashlib.sha256(source.encode()).hexdigest()[:24]
    path = os.path.join(cache_dir(), "test_sources", name + ".py")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(f"{path}.{os.getpid()}", "w") as file:
            file.write(source)
        os.replace(f"{path}.{os.getpid()}", path)  # whole or absent for a process beside this one
    module = sys.modules[name] = types.ModuleType(name)
    module.__dict__.update(namespace, __file__=path)
    exec(compile(source, path, "exec"), module.__dict__)
    return module.__dict__


def both(source: str, x0=X0, data=()):
    """Tapes of f = ``source`` recorded by Python and by tape.jit(cache=True) (the same function object's code)."""
    f = run_from_file(source, {"tape": tape, "math": math, "np": np})["f"]
    tapes = []
    for g in (f, tape.jit(f, cache=True)):
        t = tape.Tape()
        out = g(t.vars(x0), *data)
        tapes.append((t, out))
    return tapes


def program_of_every_op() -> str:
    lines = ["def f(xs):", "    x, y, z = xs[0], xs[1], xs[2]", "    out = [x]"]
    for name in ops.UNARY:
        if name in ("neg", "abs"):
            lines.append(f"    out.append({'-x' if name == 'neg' else 'abs(-x)'})")
        else:
            lines.append(f"    out.append(tape.{name}(x))")
    for s in ops.ARITHMETIC:
        symbol = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "pow": "**"}.get(s.name)
        forms = ([f"x {symbol} y", f"x {symbol} 2.5", f"2.5 {symbol} x", f"x {symbol} 2"] if symbol else
                 [f"tape.{s.name}(x, y)", f"tape.{s.name}(x, 2.5)", f"tape.{s.name}(2.5, x)"])
        lines += [f"    out.append({form})" for form in forms]
    for s in ops.COMPARISONS:
        symbol = ops.SYMBOL[s.name]
        lines += [f"    out.append(tape.where(x {symbol} y, x, y))",
                  f"    out.append(tape.where(x {symbol} 0.5, z, 1.0))",
                  f"    out.append(tape.where(0.5 {symbol} x, 2.0, y))",
                  f"    if y {symbol} x:", "        out.append(x * 3.0)", f"    if z {symbol} 1.9:",
                  "        out.append(y * 3.0)"]
    lines.append("    return out")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def every_op():
    return both(program_of_every_op())


def test_every_op_program_is_recorded_identically(every_op):
    (tp, out_p), (tj, out_j) = every_op
    for a, b in zip(records(tp), records(tj), strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
    assert [v.index for v in out_p] == [v.index for v in out_j]


RECORDED = [op.name for op in ops.OPS if op.kind not in ("leaf",) and op.name != "mul_nz"]  # mul_nz: gradient tapes


@pytest.mark.parametrize("name", RECORDED)
def test_each_op_records_as_python(every_op, name):
    (tp, _), (tj, _) = every_op
    code = ops.OPCODE[name]
    rows = np.flatnonzero(tj._op[: len(tj)] == code)
    assert len(rows), f"the program records no {name}"
    for a, b in zip(records(tp)[:4], records(tj)[:4], strict=True):
        assert np.array_equal(a[rows], b[rows])


def test_math_and_numpy_names_record_the_ops():
    source = ("def f(xs):\n    x = xs[0]\n    return [math.exp(x), np.exp(x), math.pow(x, 2.0), np.maximum(x, xs[1]),"
              " math.atan2(x, 1.5), np.sin(x), math.log1p(x)]\n")
    namespace = {"tape": tape, "math": math, "np": np}
    exec(compile(source, __file__, "exec"), namespace)
    t = tape.Tape()
    tape.jit(namespace["f"])(t.vars(X0))
    names = [ops.OPS[k].name for k in t._op[3:len(t)]]
    assert names == ["exp", "exp", "pow_c", "maximum", "constant", "arctan2", "sin", "log1p"]


WHILE = '''
def f(xs, limit):
    x, k = xs[0], xs[1]
    steps = 0
    while x < limit and steps < 200:
        if x * k > 1.0:
            x = x + tape.sin(x) * 0.1
        else:
            x = x * 1.5 + 0.01
        steps += 1
    return x
'''

PROGRAMS = {"rk4": (RK4, [1.1, 0.4], (50, 0.01)),
            "pricer": (PRICER, [100.0, 0.2, 0.05], (np.random.default_rng(1).standard_normal(200), 100.0)),
            "while": (WHILE, [0.05, 3.0], (20.0,))}


def functions(name):
    source, x0, data = PROGRAMS[name]
    f = run_from_file(source, {"tape": tape, "math": math, "np": np})["f"]
    return f, tape.jit(f, cache=True), x0, data


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_record_identically_and_replay(name):
    f, jf, x0, data = functions(name)
    F, J = tape.trace(f, x0, data=data), tape.trace(jf, x0, data=data)
    tp, tj = tape.Tape(), tape.Tape()
    yp, yj = f(tp.vars(x0), *data), jf(tj.vars(x0), *data)
    for a, b in zip(records(tp), records(tj), strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
    assert len(tj) > 100 and yp.index == yj.index
    gp = tape.grad(f)(x0, *data)
    assert gp == tape.grad(jf)(x0, *data)
    vp, vj = tape.value_and_grad(f)(x0, *data), tape.value_and_grad(jf)(x0, *data)
    assert vp == vj
    assert np.array_equal(F(np.array(x0)), J(np.array(x0)))
    assert np.array_equal(F.gradient(np.array(x0)), J.gradient(np.array(x0)))


def test_growth_inside_numba_keeps_every_record():
    f, jf, x0, data = functions("rk4")
    tp, tj = tape.Tape(capacity=1), tape.Tape(capacity=1)
    f(tp.vars(x0), *data)
    jf(tj.vars(x0), *data)
    for a, b in zip(records(tp), records(tj), strict=True):
        assert np.array_equal(a, b)
    assert tj.capacity >= len(tj) > 1000


def test_a_flipped_branch_names_its_line():
    f, jf, x0, data = functions("while")
    J = tape.trace(jf, x0, data=data)
    line = WHILE.splitlines().index("        if x * k > 1.0:") + 1
    with pytest.raises(tape.BranchChanged, match=rf"{f.__code__.co_filename}:{line}\b"):  # run_from_file's copy
        J(np.array([0.05, 0.5]))
    R = tape.trace(jf, x0, data=data, on_branch_change="retrace")
    Fp = tape.trace(f, [0.05, 0.5], data=data)
    assert R(np.array([0.05, 0.5])) == Fp(np.array([0.05, 0.5]))


def jitted(body: str):
    namespace = {"tape": tape, "math": math, "np": np}
    exec(compile(f"def f(xs, a):\n    x = xs[0]\n{body}\n", __file__, "exec"), namespace)
    return tape.jit(namespace["f"])


@pytest.mark.parametrize("body, first", [
    ("    return float(x)", "tape.jit: a Var is not a float"),
    ("    if x:\n        return x\n    return x", "tape.jit: the truth value of a Var is not defined"),
    ("    a[0] = x\n    return x", "tape.jit: storing a Var into a NumPy array"),
    ("    return math.gamma(x)", "tape.jit: gamma(tape.Var) is not supported on Vars"),
    ("    return {1: x}", "tape.jit: "),
    ("    return sum(v * v for v in xs)", "tape.jit: Numba could not compile f"),  # a generator: UnsupportedError
])
def test_what_cannot_be_recorded_says_so_on_the_first_line(body, first):
    f = jitted(body)
    t = tape.Tape()
    with pytest.raises(tape.JitError) as caught:
        f(t.vars([0.5]), np.zeros(3))
    assert str(caught.value).splitlines()[0].startswith(first)
    assert __file__ in str(caught.value).splitlines()[0]


LEFT_ALIVE = """
import gc, weakref, numba, numpy as np, tape

@numba.njit
def helper(v):
    return float(v) * 2.0

@tape.jit
def through_helper(xs):
    return helper(xs[0]) + xs[1]

@tape.jit
def itself(xs):
    return float(xs[0]) + xs[1]

refs = []
for f in (through_helper, itself, through_helper):  # the second failing call of a helper: Numba's stored error
    t = tape.Tape()
    try:
        f([t.var(1.0), t.var(2.0)])
    except tape.JitError:
        refs.append(weakref.ref(t))
    del t
    try:
        tape.value_and_grad(f)(np.array([1.0, 2.0]))
    except tape.JitError:
        pass
gc.collect()
print(len(refs), sum(r() is not None for r in refs), sum(type(o) is tape.Tape for o in gc.get_objects()))
"""


def test_a_call_that_fails_to_compile_leaves_no_tape_alive():
    """Numba keeps a failed compile's error (of f, and of a numba.njit helper's recompile, kept for the process);
    their tracebacks held the failing call's frames and its tape. In a new process: nothing else holds a tape."""
    out = subprocess.run([sys.executable, "-c", LEFT_ALIVE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", "0", "0"]


def test_calling_without_vars_is_refused_or_computes_the_value():
    f = jitted("    return x")
    assert f([0.5], np.zeros(1)) == 0.5 and f(np.array([0.25]), np.zeros(1)) == 0.25  # numbers: as numba.njit
    with pytest.raises(TypeError, match="tape.jit: a jitted function takes Vars"):
        f(tape.Tape().var(0.5), np.zeros(1))
    with pytest.raises(TypeError, match="needs at least one input Var"):
        tape.grad(f)([], np.zeros(1))


def test_float_accumulation_records_nothing_until_it_meets_a_var():
    (tp, yp), (tj, yj) = both("def f(xs):\n    s = 0.0\n    s = s * 2.0 + 1.0\n    return s + xs[0]\n")
    for a, b in zip(records(tp), records(tj), strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
    assert ops.OPS[tj._op[len(tj) - 1]].name == "add_c" and tj._consts[0] == 1.0
