"""tape.jit: a loop variable that starts as a NumPy array and becomes an array record or an array of Vars (``h =
np.zeros(...)``, then ``h = step(t, h)``: an RNN, a time stepper; tape/compiled/carries.py).

Each program runs through the Python recorder and tape.jit on the same source: value and gradient equal bit for bit,
against JAX float64 (its value and a projection of its gradient, computed by /work/notes/s24/C/carry_programs.py) and
central differences along a direction; on arrays of Vars the records are the Python recorder's, bit for bit.
"""

import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
from test_jit_arrays import namespace, same_records

import tape
from tape.compiled import var_lists
from tape.compiled.numba_internals import TypingError

RNN = """
def f(th, seq):
    W, b = th[:1024].reshape(32, 32), th[1024:]
    h = 0.5 * seq[0]
    for t in range(1, seq.shape[0]):
        h = np.tanh(h @ W + seq[t] + b)
    return (h * h).sum()
"""

LSTM = """
def loop(n, body, carry):
    for t in range(n):
        carry = body(t, carry)
    return carry

def f(th, seq):
    W, b = th[:1024].reshape(32, 32), th[1024:]
    def step(t, carry):
        h, c = carry
        c = 0.5 * c + np.tanh(h @ W + seq[t])
        return np.tanh(c) * b, c
    h, c = loop(seq.shape[0], step, (np.zeros((4, 32)), np.ones((4, 32)) * 0.25))
    return (h * c).sum()
"""

JAX = {"RNN": (69.56373858950526, 64.6051641534839), "LSTM": (18.864353048152548, -15.544435074900255)}  # value,
# r @ gradient: JAX float64 on the same source (/work/notes/s24/C/carry_programs.py)


def inputs():
    rng = np.random.default_rng(24)
    th = np.concatenate([rng.normal(scale=0.2, size=1024), rng.normal(size=32)])
    return th, rng.normal(size=(5, 4, 32)), rng.normal(size=th.size)


@pytest.mark.parametrize("name", ["RNN", "LSTM"])
def test_a_numpy_start_carried_into_array_records(name):
    py, jn = namespace(globals()[name], arrays=True)
    th, seq, r = inputs()
    value, grad = tape.value_and_grad(jn["f"])(th, seq)
    assert jn["f"]._arrays is True  # array records, not one record an element
    want_value, want = tape.value_and_grad(py["f"])(th, seq)
    assert value == want_value and np.array_equal(grad, want)  # the Python recorder's bits
    jax_value, jax_projection = JAX[name]
    assert abs(value - jax_value) <= 1e-13 * abs(jax_value)
    assert abs(grad @ r - jax_projection) <= 1e-12 * np.abs(grad).sum()
    h = 1e-6
    d = r / np.linalg.norm(r)
    slope = (jn["f"](th + h * d, seq) - jn["f"](th - h * d, seq)) / (2 * h)
    assert abs(slope - grad @ d) <= 1e-6 * max(1.0, abs(slope))
    F = tape.trace(jn["f"], th, data=(seq,))
    assert F.value_and_grad(th)[0] == value and np.array_equal(F.value_and_grad(th)[1], grad)


SMALL = """
def f(xs, seq):
    W = xs.reshape(4, 4)
    carry = (np.zeros((3, 4)), seq[0] * 0.5)
    for t in range(1, seq.shape[0]):
        h, c = carry
        carry = (np.tanh(h @ W + c), c * 0.5 + h)
    h = seq[0] + 1.0
    for t in range(2):
        h = h * xs[t]
    return (carry[0] * carry[1]).sum() + h.sum()
"""


def test_a_numpy_start_carried_into_arrays_of_vars_records_as_python():
    py, jn = namespace(SMALL)
    rng = np.random.default_rng(5)
    x0, seq = rng.normal(scale=0.5, size=16), rng.normal(size=(4, 3, 4))
    tapes = []
    for g in (py["f"], jn["f"]):
        t = tape.Tape()
        tapes.append((t, g(t.array(x0), seq)))
    (tp, yp), (tj, yj) = tapes
    same_records(tp, tj)
    assert len(tj) > 100 and repr(yp) == repr(yj)
    _, grad = tape.value_and_grad(jn["f"])(x0, seq)
    _, want = tape.value_and_grad(py["f"])(x0, seq)
    assert np.array_equal(grad, want) and np.abs(grad).min() > 0.0


@pytest.mark.parametrize("start, why", [
    ("0.0", "Cannot unify"),  # a number becoming an array: Numba's refusal, not a carry
    ("np.zeros((2, 2, 2))", "3d"),  # three axes: no array record holds it
])
def test_what_cannot_be_carried_is_refused(start, why):
    source = textwrap.dedent(f"""
    def f(th):
        h = {start}
        for t in range(2):
            h = h + th.reshape(32, 32)
        return h.sum()
    """)
    jf = namespace(source, arrays=True)[1]["f"]
    with pytest.raises(tape.JitError, match=why):
        tape.value_and_grad(jf)(np.ones(1024))


def test_a_carry_of_another_shape_raises_as_python():
    source = textwrap.dedent("""
    def f(th):
        h = np.zeros((3, 4))
        for t in range(2):
            h = h @ th.reshape(32, 32)
        return h.sum()
    """)
    py, jn = namespace(source, arrays=True)
    for g in (py["f"], jn["f"]):
        with pytest.raises(ValueError, match="matmul"):
            tape.value_and_grad(g)(np.ones(1024))


INLINED = """
import sys
import numpy as np
import tape

def loop(n, body, carry):
    for t in range(n):
        carry = body(t, carry)
    return carry

def f(xs):
    def step(t, h):
        return h * xs[t] + 1.0
    return loop(2, step, np.ones(3) * 0.5).sum()

jf = tape.jit(f, cache=False)
for g in (jf, f):
    value, grad = tape.value_and_grad(g)([0.5, 3.0])
    print(value, *grad)
"""


def test_a_carry_of_a_closure_inlined_again_is_carried_once(tmp_path):
    """The carry's name holds the inlined loop's id, which Numba counts up at every compile (loop_v14_carry, then
    loop_v15_carry): s24's retry carried each new name, typed again without end (a subprocess: a hang fails)."""
    script = tmp_path / "inlined.py"
    script.write_text(INLINED)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    jitted, python = out.stdout.splitlines()
    # h = 0.5 -> 0.5 x0 + 1 -> (0.5 x0 + 1) x1 + 1, three elements: 3 * 4.75; gradient (1.5 x1, 3 (0.5 x0 + 1))
    assert jitted == python and list(map(float, jitted.split())) == [3 * 4.75, 4.5, 3.75]


def test_typing_retries_are_bounded_across_nested_compiles():
    """Each retry types f again from bytecode: RETRIES at most in one outermost compile, nested compiles included,
    then a TypingError that names the variable (a name that changes at each compile retried forever, unbounded)."""
    calls = []

    def state():
        return types.SimpleNamespace(func_ir=None, status=types.SimpleNamespace(fail_reason=None),
                                     func_id=types.SimpleNamespace(func_name="f"), setdefault=dict().setdefault)

    def failing(k):  # a new name at each call (its 100th not a carry: a retry without end fails, not hangs)
        calls.append(k)
        unify = "Cannot unify" if len(calls) < 100 else "Cannot type"
        raise TypingError(f"{unify} array(float64, 2d, C) and tape.ArrayRecord(2d) for 'h{len(calls)}.2'")

    nested = state()
    outer = iter(range(5))

    def outer_core():  # a callee typed again 5 times, then (from the second outer compile) at once
        var_lists.retrying(lambda: failing("inner") if next(outer, None) is not None else None, nested)
        failing("outer")

    with pytest.raises(TypingError, match=f"typed again {var_lists.RETRIES} times, the last for the loop variable 'h"):
        var_lists.retrying(outer_core, state())
    assert len(calls) == var_lists.RETRIES + 1 and calls.count("inner") == 5
    calls.clear()
    with pytest.raises(TypingError, match="typed again"):  # the count starts again with the next outermost compile
        var_lists.retrying(lambda: failing("again"), state())
    assert len(calls) == var_lists.RETRIES + 1
