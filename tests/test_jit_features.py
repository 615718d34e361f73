"""tape.jit beyond single programs: recursion, helpers, max/min, iteration, numbers through tape.*,
threads, the cache across processes, tapes that must not mix.

Every recording is compared with the Python recorder's on the same source, records and checked
branches (with their file:line) bit for bit.
"""

import math
import os
import shutil
import subprocess
import sys
import textwrap
import threading

import numba
import numpy as np
import pytest
from test_jit import functions, records, run_from_file

import tape
from tape.kernels import ops


def same_records(tp, tj):
    for a, b in zip(records(tp), records(tj), strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def namespace(source: str) -> dict:
    ns = {"tape": tape, "math": math, "np": np, "numba": numba}
    exec(compile(source, __file__, "exec"), ns)
    return ns


def both(source: str, x0=(0.3, 0.7, 1.9), data=(), wrap=None):
    """(Python's tape, its output, tape.jit's tape, its output) of f = source; ``wrap``: names
    rebound in the jit namespace only (helpers as numba.njit or tape.jit, recursion); without it, f is
    tape.jit(cache=True) from run_from_file's copy of the source (loaded from the cache in a later run)."""
    if wrap:
        py, jn = namespace(source), namespace(source)
    else:
        py, jn = (run_from_file(source, {"tape": tape, "math": math, "np": np, "numba": numba}) for _ in range(2))
    for name, how in (wrap or {}).items():
        jn[name] = how(jn[name])
    jf = jn["f"] if isinstance(jn["f"], tape.JitFunction) else tape.jit(jn["f"], cache=not wrap)
    tp, tj = tape.Tape(), tape.Tape()
    yp = py["f"](tp.vars(list(x0)), *data)
    yj = jf(tj.vars(list(x0)), *data)
    return tp, yp, tj, yj


def value(v):
    return v.value if isinstance(v, tape.Var) else v


def line_of(source: str, text: str) -> str:
    return f"{__file__}:{source.splitlines().index(text) + 1}"


# --- recursion -----------------------------------------------------------------------------

DET = '''
def f(m, n):
    if n == 1:
        return m[0]
    total = 0.0
    for j in range(n):
        sub = [m[r * n + c] for r in range(1, n) for c in range(n) if c != j]
        if m[j] > 0.0:
            term = m[j] * f(sub, n - 1)
        else:
            term = -((-m[j]) * f(sub, n - 1))
        total = total + term if j % 2 == 0 else total - term
    return total
'''


def test_a_recursive_determinant_records_as_python():
    x0 = np.random.default_rng(3).standard_normal(16).tolist()
    tp, yp, tj, yj = both(DET, x0, (4,), wrap={"f": tape.jit})
    same_records(tp, tj)
    assert len(tj._checks) > 10 and yp.index == yj.index
    assert yj.value == pytest.approx(np.linalg.det(np.array(x0).reshape(4, 4)))
    assert {where for _, _, where in tj._checks} == {line_of(DET, "        if m[j] > 0.0:")}
    jf = namespace(DET)
    jf["f"] = tape.jit(jf["f"])
    assert tape.grad(jf["f"])(x0, 4) == tape.grad(namespace(DET)["f"])(x0, 4)


DET_ARRAY = '''
def f(m):
    n = m.shape[0]
    if n == 1:
        return m[0, 0]
    total = m[0, 0] * 0.0
    for j in range(n):
        sub = np.empty((n - 1, n - 1), dtype=m.dtype)
        for r in range(1, n):
            for c in range(n - 1):
                sub[r - 1, c] = m[r, c if c < j else c + 1]
        total = total + (1.0 if j % 2 == 0 else -1.0) * m[0, j] * f(sub)
    return total
'''


def test_a_recursive_function_of_plain_numbers_gives_its_value():
    """Called with a float array, a jitted f that calls itself on sub-matrices computes as numba.njit would."""
    x0 = np.random.default_rng(4).standard_normal((4, 4))
    jf, nf = namespace(DET_ARRAY), namespace(DET_ARRAY)
    jf["f"], nf["f"] = tape.jit(jf["f"]), numba.njit(nf["f"])
    assert jf["f"](x0) == nf["f"](x0) == pytest.approx(np.linalg.det(x0))
    assert tape.value_and_grad(jf["f"])(x0)[0] == pytest.approx(np.linalg.det(x0))


def test_cache_on_a_recursive_function_is_refused_clearly():
    f = namespace(DET)["f"]
    with pytest.raises(tape.JitError, match=r"^tape\.jit\(cache=True\) refuses f, which calls itself"):
        tape.jit(f, cache=True)
    tape.jit(f)  # without the cache it compiles (on first call)


# --- helpers -------------------------------------------------------------------------------

HELPER = '''
def helper(a, b):
    if a > b:
        return [a * b, b]
    return [a - tape.exp(b), max(a, b)]

def f(xs):
    p, q = helper(xs[0], xs[1]), helper(xs[2], 1.0)
    return p[0] + p[1] * q[0] + q[1]
'''


@pytest.mark.parametrize("how", [numba.njit, tape.jit], ids=["numba.njit", "tape.jit"])
def test_a_helper_taking_and_returning_vars_records_its_own_lines(how):
    tp, yp, tj, yj = both(HELPER, wrap={"helper": how})
    same_records(tp, tj)
    lines = {where for _, _, where in tj._checks}
    assert lines == {line_of(HELPER, "    if a > b:"), line_of(HELPER, "    return [a - tape.exp(b), max(a, b)]")}


# --- max and min -----------------------------------------------------------------------------

MINMAX = [
    "max(x, y) + min(x, y)",
    "max(y, x) * min(z, x)",
    "max(x, 2.0) + min(0.5, y) + max(2, z)",  # a number: both give 4.5, not a Var
    "max(x, 0.1) + min(0.5, y) * max(2, z)",
    "max(z, y,\n               x) - min(x, y, z, 0.1)",
    "max(x, x) + min(1.0, 2.5)",
    "max(xs) - min([z, y, x])",  # one sequence: the inputs, a list
    "max([x * x, y, z]) + min(xs)",
    "max((x, y)) + min((y, y))",  # a tuple; a tie keeps the first, as Python does
    "max(xs[1:]) * min(xs[::-2])",  # slices of the inputs
]


@pytest.mark.parametrize("expr", MINMAX)
def test_builtin_max_min_record_python_s_checked_comparison(expr):
    source = f"def f(xs):\n    x, y, z = xs[0], xs[1], xs[2]\n    return {expr}\n"
    tp, yp, tj, yj = both(source)
    same_records(tp, tj)
    assert len(tj._checks) == len(tp._checks) >= 1
    assert value(yj) == value(yp)


def test_max_of_a_sequence_of_numbers_and_of_nothing():
    tp, yp, tj, yj = both("def f(xs):\n    return max([1.0, 2.5]) + xs[0]\n")
    same_records(tp, tj)
    with pytest.raises(ValueError, match="max"):
        tape.jit(namespace("def f(xs):\n    return max(xs[1:1])\n")["f"])(tape.Tape().vars([1.0, 2.0]))


def test_max_of_numbers_records_nothing():
    tp, yp, tj, yj = both("def f(xs):\n    return max(1.0, 2.5) * min(3, 4)\n")
    assert len(tj) == 3 and not tj._checks and yj == yp == 7.5


@pytest.mark.parametrize("expr", ["max(xs[0], xs[1])", "max(xs)"])
def test_a_flipped_max_names_its_line(expr):
    source = f"def f(xs):\n    return {expr} * 2.0\n"
    J = tape.trace(tape.jit(namespace(source)["f"]), [0.3, 0.7])
    assert J(np.array([0.4, 0.9])) == 1.8
    with pytest.raises(tape.BranchChanged, match=rf"{line_of(source, f'    return {expr} * 2.0')}\b"):
        J(np.array([0.9, 0.4]))


# --- iteration over the inputs, sum ------------------------------------------------------------


@pytest.mark.parametrize("body", [
    "s = 0.0\n    for v in xs:\n        s = s * v + 1.0\n    return s",
    "s = xs[0]\n    for i, v in enumerate(xs):\n        s = s + v * i\n    return s",
    "return [v * w for v, w in zip(xs, xs)]",
    "return sum(xs) + sum([v * v for v in xs], 1.5)",
    "n = 0\n    for v in xs:\n        if v > 0.5:\n            n += 1\n    return n",
])
def test_iterating_over_the_inputs(body):
    tp, yp, tj, yj = both(f"def f(xs):\n    {body}\n")
    same_records(tp, tj)
    if isinstance(yp, list):
        assert [v.index for v in yp] == [v.index for v in yj]
    else:
        assert (yp.index, yp.value) == (yj.index, yj.value) if isinstance(yp, tape.Var) else yp == yj
        assert isinstance(yj, tape.Var) == isinstance(yp, tape.Var)


# --- tape.* of plain numbers ---------------------------------------------------------------------


@pytest.mark.slow  # a large tape.jit compile
def test_tape_functions_of_numbers_give_floats_and_record_nothing():
    names = [n for n in ops.UNARY if hasattr(tape, n)]
    binary = [s.name for s in ops.ARITHMETIC if not s.operator]
    calls = [f"tape.{n}(0.3)" for n in names] + [f"tape.{n}(2)" for n in names]
    calls += [f"tape.{n}(0.3, 0.7)" for n in binary] + [f"tape.{n}(2, 0.7)" for n in binary]
    source = "def f(xs):\n    return [" + ", ".join(calls) + "]\n"
    tp, yp, tj, yj = both(source)
    assert len(tp) == len(tj) == 3
    assert all(type(v) is float for v in yj)
    assert np.array_equal(np.array(yp, float).view(np.uint64), np.array(yj).view(np.uint64))


PLAIN = np.array([0.0, -0.0, 0.5, -1.5, 3.0, 1e-300, 1e300, -1e300, np.inf, -np.inf, np.nan, 0.25, -0.75, 2.5, 9.0,
                  -40.0, 700.0, 0.99])  # (18: a 2 x 9 or 3 x 6 block)


@pytest.mark.slow  # a large tape.jit compile
def test_tape_functions_of_numpy_arrays_in_a_jitted_f_called_with_plain_numbers():
    """tape.<name> of a NumPy array in f (called with plain numbers: numba's values) gives tape.<name>'s of it outside
    (the array rule's), element by element as the number's (within an ulp or two for transcendental ones), in its
    shape; binary ones broadcast arrays and numbers; logsumexp of all elements or along an axis of a 1-d or 2-d array,
    keepdims too, and softmax, log_softmax, clip and softplus made of them."""
    names = [n for n in ops.UNARY if hasattr(tape, n)]
    binary = [s.name for s in ops.ARITHMETIC if not s.operator]
    calls = [f"tape.{n}(a)" for n in names] + [f"tape.{n}(a, b)" for n in binary]
    calls += [f"tape.{n}(0.7, a)" for n in binary] + [f"tape.{n}(a, c)" for n in binary]
    calls += ["tape.logsumexp(a)", "tape.logsumexp(a, 1)", "tape.logsumexp(a, 0, keepdims=True)",
              "tape.logsumexp(a[0])", "tape.logsumexp(a[0], -1, keepdims=True)", "tape.softmax(a)",
              "tape.log_softmax(a, 0)", "tape.clip(a, -0.5, 0.5)", "tape.softplus(a)"]
    source = "def f(x, a, b, c):\n    return (" + ", ".join(calls) + ",)\n"
    scope = {"tape": tape, "np": np}
    exec(source, scope)
    a, b, c = PLAIN.reshape(2, 9), PLAIN[::-1].reshape(2, 9), PLAIN[:9] * 0.5
    with np.errstate(all="ignore"):
        want = scope["f"](None, a, b, c)
        got = tape.jit(scope["f"])(np.zeros(1), a, b, c)
    assert len(got) == len(want) == len(calls)
    for call, g, w in zip(calls, got, want, strict=True):
        assert np.shape(g) == np.shape(w), call
        assert np.allclose(g, w, rtol=1e-15, atol=0, equal_nan=True), (call, g, w)


def test_a_number_from_tape_functions_meets_vars_as_in_python():
    tp, yp, tj, yj = both("def f(xs):\n    c = tape.exp(0.5) + tape.maximum(1.0, 2.0)\n    return xs[0] * c - c\n")
    same_records(tp, tj)


# --- threads -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["while", "pricer"])
def test_threads_record_separate_jitted_tapes_at_once(name):
    f, jf, x0, data = functions(name)
    points = [[v * (1.0 + 0.05 * k) for v in x0] for k in range(4)]
    vg = tape.value_and_grad(jf)
    expected = [vg(p, *data) for p in points]
    alone = []
    for p in points:
        t = tape.Tape(capacity=1)  # grown inside Numba, in every thread
        jf(t.vars(p), *data)
        alone.append(records(t))
    got: dict = {}
    barrier = threading.Barrier(4)

    def work(k):
        barrier.wait()
        mine = tape.value_and_grad(jf)
        for _ in range(20):
            got.setdefault(k, []).append(mine(points[k], *data))
            t = tape.Tape(capacity=1)
            jf(t.vars(points[k]), *data)
            got.setdefault(("records", k), []).append(records(t))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k in range(4):
        assert got[k] == [expected[k]] * 20
        for rec in got[("records", k)]:
            for a, b in zip(rec, alone[k], strict=True):
                assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


# --- the cache across processes ----------------------------------------------------------------

CACHED = '''
import os, sys, time
import numpy as np
import tape

def f(xs, steps):
    x, k = xs[0], xs[1]
    for i in range(steps):
        if x * k > 1.0:
            x = x + tape.sin(x) * STEP
        else:
            x = x * 1.5 + 0.01
    return x

STEP = float(os.environ.get("STEP", "0.1"))  # a global: Numba freezes its value into f's machine code
start = time.perf_counter()
jf = tape.jit(f, cache=True)
t = tape.Tape()
jf(t.vars([0.05, 3.0]), 40)
took = time.perf_counter() - start
n = len(t)
stats = (jf.dispatcher.stats, jf._drive.stats)  # f and its driver (which links f in)
hits, misses = (sum(sum(getattr(s, k).values()) for s in stats) for k in ("cache_hits", "cache_misses"))
np.savez(sys.argv[1], op=t._op[:n], in0=t._in0[:n], in1=t._in1[:n], val=t._val[:n], consts=t._consts[:t.n_consts],
         rows=[r for r, _, _ in t._checks], outs=[o for _, o, _ in t._checks])
print(hits, misses, repr(took), sorted({w for _, _, w in t._checks}), jf.dispatcher._cache._cache_path)
'''


@pytest.mark.slow  # fresh processes: one compiles a tape.jit program, one loads it, two compile it changed
def test_cache_true_reloads_in_a_fresh_process(tmp_path):
    script = tmp_path / "cached_program.py"
    script.write_text(textwrap.dedent(CACHED))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    runs = []
    try:
        for k in range(4):
            if k == 2:  # an edit of the same size: only the file's stamp and f's code tell
                script.write_text(textwrap.dedent(CACHED).replace("x * 1.5 + 0.01", "x * 1.5 + 0.02"))
            out = subprocess.run([sys.executable, str(script), str(tmp_path / f"r{k}.npz")], capture_output=True,
                                 text=True, env=env if k < 3 else {**env, "STEP": "0.3"}, timeout=300)
            assert out.returncode == 0, out.stderr
            hits, misses, took, rest = out.stdout.split(maxsplit=3)
            runs.append((int(hits), int(misses), float(took), rest))
            print(f"process {k + 1}: {float(took):.2f} s to compile (or load) and record; cache hits {hits}")
    finally:
        for line in (r[3] for r in runs):
            shutil.rmtree(line.rsplit(" ", 1)[-1], ignore_errors=True)  # this test's entry in the cache only
    (h1, m1, _, rest1), (h2, m2, _, rest2), (h3, m3, _, _), (h4, m4, _, _) = runs
    assert (h1, m1) == (0, 2) and (h2, m2) == (1, 0), "the second process did not load the driver, f inside"
    assert (h3, m3) == (0, 2), "the edited f was loaded from the cache"
    assert (h4, m4) == (0, 2), "f was loaded from the cache with another value of a global it reads"
    assert rest1 == rest2 and f"{script}:9" in rest2  # the branch's file:line, from the cached code
    first, second, edited, stepped = (np.load(tmp_path / f"r{k}.npz") for k in range(4))
    assert len(first["op"]) > 100 and len(first["rows"]) == 40
    for key in first.files:
        assert np.array_equal(first[key].view(np.uint8), second[key].view(np.uint8)), key
    assert 0.02 in edited["consts"] and 0.02 not in first["consts"]
    assert 0.3 in stepped["consts"] and 0.3 not in edited["consts"] and 0.1 in edited["consts"]


EDITED_HELPER, CALLER = "import numba\n\n@numba.njit\ndef g(v):\n    return v * 0.5\n", '''
import sys, tape
sys.path.insert(0, sys.argv[1])
import helper

@tape.jit(cache=True)
def f(xs):
    return helper.g(xs[0])

print(tape.grad(f)([1.0])[0], sum(f._drive.stats.cache_hits.values()), f.dispatcher._cache._cache_path)
'''


@pytest.mark.slow  # three fresh processes
def test_cache_true_sees_an_edit_of_a_jitted_helper_in_another_file(tmp_path):
    """Numba keys a cached f on f's own file: f calling an edited helper of another module would load the old code."""
    (tmp_path / "helper.py").write_text(EDITED_HELPER)
    (tmp_path / "caller.py").write_text(CALLER)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    runs = []
    try:
        for k in range(3):
            if k == 2:
                (tmp_path / "helper.py").write_text(EDITED_HELPER.replace("0.5", "0.7"))
            out = subprocess.run([sys.executable, str(tmp_path / "caller.py"), str(tmp_path)], capture_output=True,
                                 text=True, env=env, timeout=300)
            assert out.returncode == 0, out.stderr
            runs.append(out.stdout.split())
    finally:
        for run in runs:
            shutil.rmtree(run[-1], ignore_errors=True)
    assert [run[:2] for run in runs] == [["0.5", "0"], ["0.5", "1"], ["0.7", "0"]]


# --- tapes that must not mix ---------------------------------------------------------------------


def test_vars_of_two_tapes_are_refused_clearly():
    jf = tape.jit(namespace("def f(xs):\n    return xs[0] + xs[1]\n")["f"])
    t1, t2 = tape.Tape(), tape.Tape()
    a, b = t1.vars([1.0])[0], t2.vars([2.0])[0]
    with pytest.raises(tape.ForeignHandleError, match=r"^tape\.jit: cannot combine Vars of different tapes: xs\[1\]"):
        jf([a, b])
    assert len(t1) == len(t2) == 1
    y = jf([a, t1.vars([3.0])[0]])
    with pytest.raises(tape.ForeignHandleError, match="different tapes"):
        y + b  # a jitted result is a Var of its tape, checked as any


# --- checked branches kept as arrays until read ------------------------------------------------

BRANCHY = ("def f(xs):\n    x = xs[0]\n    if x > 0.5:\n        x = x * 2.0\n    if xs[1] < x:\n        x = x - 1.0\n"
           "    return x\n")


def test_jit_checks_are_read_in_order_with_python_ones():
    py, jn = namespace(BRANCHY)["f"], tape.jit(namespace(BRANCHY)["f"])
    tapes = []
    for g in (py, jn):
        t = tape.Tape()
        xs = t.vars([0.3, 0.7])
        if xs[0] > 0.1:  # a Python check before, between and after the jitted ones
            g(xs)
        if xs[1] > 0.1:
            g([xs[1], xs[0]])
        if xs[0] < xs[1]:
            tapes.append(t)
    tp, tj = tapes
    assert tj._jit_checks == () and len(tj._checks) == 7  # the jitted calls' checks became tuples when read
    same_records(tp, tj)
    assert [row for row, _, _ in tj._checks] == sorted(row for row, _, _ in tj._checks)


def test_jit_checks_stay_arrays_until_read():
    jf = tape.jit(namespace(BRANCHY)["f"])
    t = tape.Tape()
    xs = t.vars([0.3, 0.7])
    for _ in range(3):
        jf(xs)
    assert len(t._jit_checks) == 3 and "_checks" in t.__dict__ and t.__dict__["_checks"] == []
    F = t.function(xs, jf(xs))
    assert len(t._checks) == 8 and F.stats()["comparisons_checked"] == 8
    with pytest.raises(tape.BranchChanged, match=line_of(BRANCHY, "    if x > 0.5:")):
        F(np.array([0.9, 0.7]))


@pytest.mark.parametrize("cut", [0, 2, 3, 6, 9, 12, 20])
def test_a_rewind_keeps_the_checks_below_it_without_reading_them(cut):
    py, jn = namespace(BRANCHY)["f"], tape.jit(namespace(BRANCHY)["f"])
    tapes = []
    for g in (py, jn):
        t = tape.Tape()
        xs = t.vars([0.9, 0.7])
        for _ in range(3):
            g(xs)
        t.rewind(min(cut, len(t)))
        tapes.append(t)
    tp, tj = tapes
    assert tj.__dict__["_checks"] == []  # still arrays after the rewind
    assert len(tp._checks) == len([row for chunk in tj._jit_checks for row in chunk.rows]) < 7
    same_records(tp, tj)


# --- tape.value_and_grad of a jitted f: no Python handle per input --------------------------------

UNUSED = "def f(xs, w):\n    s = xs[0] * w[0]\n    if xs[1] > 0.5:\n        s = s + tape.sin(xs[1])\n    return s\n"


GROUPED = ("def f(xs, w):\n    u = xs[0] * xs[1] + tape.sin(xs[0])\n    v = tape.log1p(u) * w[0]\n"
           "    return tape.hypot(v, xs[0]) * xs[2] + v * v\n")  # grouped ops between plain ones: fresh_reverse_from


@pytest.mark.parametrize("source", [UNUSED, GROUPED])
@pytest.mark.parametrize("x", [[0.3, 0.7, 1.9], [0.3, 0.2, -0.0], [1e300, 0.7, math.inf], [math.nan, 0.9, 0.0]])
def test_value_and_grad_of_a_jitted_f_is_the_python_recorder_s(x, source):
    """The fast path's reverse sweep writes no stamps (Storage._gradient_and_clear): the general path's bits."""
    py, jn = namespace(source)["f"], tape.jit(namespace(source)["f"])
    w = np.array([2.5])
    vg = tape.value_and_grad(jn)
    for _ in range(3):  # the fast path (a list of floats, an array), on the tape of its last call
        value, grads = vg(list(x), w)
        general = tape.value_and_grad(jn)(tuple(x), w)  # a tuple: the general path, Python handles
        python = tape.value_and_grad(py)(list(x), w)
        for other in (general, python, vg(np.array(x), w)):
            assert np.array_equal(np.array([value, *grads]), np.array([other[0], *other[1]]), equal_nan=True)
        assert type(grads) is list and (source == GROUPED or grads[2] == 0.0)  # UNUSED's xs[2] unused


def test_value_and_grad_of_a_jitted_f_takes_what_the_general_path_takes():
    vg = tape.value_and_grad(tape.jit(namespace("def f(xs):\n    return xs[0] * xs[1]\n")["f"]))
    assert vg([3, 2**70]) == (3.0 * 2.0**70, [2.0**70, 3.0])
    with pytest.raises(TypeError, match="got bool"):
        vg([1.0, True])
    with pytest.raises(TypeError, match="argument 0"):
        vg([1.0, "2"])


def test_value_and_grad_of_a_jitted_f_returning_a_number_or_a_sequence():
    vg = tape.value_and_grad(tape.jit(namespace("def f(xs):\n    return 2.5\n")["f"]))
    assert vg([1.0, 2.0]) == (2.5, [0.0, 0.0])
    vg = tape.value_and_grad(tape.jit(namespace("def f(xs):\n    return [xs[0], xs[1]]\n")["f"]))
    with pytest.raises(TypeError, match="sequence"):
        vg([1.0, 2.0])


def test_value_and_grad_of_a_jitted_f_records_on_the_tape_of_its_last_call(monkeypatch):
    from tape.compiled import jit_gradients
    made = []

    class Counted(tape.Tape):
        def __init__(self, *args, **kwargs):
            made.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(jit_gradients, "Tape", Counted)
    vg = tape.value_and_grad(tape.jit(namespace(UNUSED)["f"]))
    results = [vg([0.3, 0.7, 1.9], np.array([2.5])) for _ in range(4)]
    assert len(made) == 1 and all(r == results[0] for r in results)
