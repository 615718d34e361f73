"""tape.jit: a small x0 (under 1,024 elements) packed into one array record, as the Python recorder packs a small
VarArray where an op makes 1,024 elements or more: params meeting data (a mixture, a logistic regression, a softmax
classifier; tape/compiled/packing.py).

f first runs on an array of Vars; a Var array of 1,024 elements or more (or f not typing with an array of Vars) makes
it run on one pack record of the params, from then on. Each program against JAX float64 (its value and a projection of
its gradient, by /work/notes/s24/C/packed_programs.py), the Python recorder and central differences; the tape.trace
Function replays the recorded bits. An f that makes no such array keeps the Python recorder's scalar records.
"""

import numpy as np
import pytest
from test_jit import run_from_file
from test_jit_arrays import namespace, same_records

import tape

MIXTURE = """
def f(th, x):
    k = th.shape[0] // 3
    mu, logs, logits = th[:k], th[k:2 * k], th[2 * k:]
    logw = logits - logsumexp(logits)
    z = (x - mu) * np.exp(-logs)
    return logsumexp(logw - 0.5 * z * z - logs, axis=1).sum()
"""

LOGISTIC = """
def f(w, X, y):
    d = X.shape[1]
    z = X @ w[:d] + w[d]
    return np.logaddexp(0.0, z).mean() - (y * z).mean() + 0.5e-3 * (w[:d] * w[:d]).sum()
"""

SOFTMAX = """
def f(th, X, Y):
    W, b = th[:40].reshape(8, 5), th[40:]
    logits = X @ W + b
    return (logsumexp(logits, axis=1) - (logits * Y).sum(1)).mean() + 0.5e-3 * (W * W).sum()
"""

JAX = {"MIXTURE": (-617.2202194064246, 152.31700709034314), "LOGISTIC": (0.7056884945693475, -0.04004702153474252),
       "SOFTMAX": (1.6647983089256142, -0.20290340741371013)}  # value, r @ gradient (packed_programs.py)


def inputs():
    rng = np.random.default_rng(26)
    mixture = (np.concatenate([rng.normal(size=6), rng.normal(scale=0.1, size=6), rng.normal(size=6)]),
               (2.0 * rng.normal(size=(400, 1)),))
    logistic = (rng.normal(scale=0.1, size=9), (rng.normal(size=(3000, 8)), (rng.uniform(size=3000) < 0.5) * 1.0))
    softmax = (rng.normal(scale=0.1, size=45), (rng.normal(size=(300, 8)), np.eye(5)[rng.integers(0, 5, 300)]))
    return {"MIXTURE": mixture, "LOGISTIC": logistic, "SOFTMAX": softmax}, rng.normal(size=45)


def programs(source):
    return namespace("from tape import logsumexp\n" + source, arrays=True)


@pytest.mark.parametrize("name", sorted(JAX))
def test_small_params_meeting_data_are_packed_into_one_array_record(name):
    py, jn = programs(globals()[name])
    cases, r = inputs()
    x0, data = cases[name]
    r = r[:x0.size]
    value, grad = tape.value_and_grad(jn["f"])(x0, *data)
    assert jn["f"]._arrays is True and jn["f"]._packs  # one pack record, then array records
    jax_value, jax_projection = JAX[name]
    assert abs(value - jax_value) <= 1e-13 * abs(jax_value)
    assert abs(grad @ r - jax_projection) <= 1e-12 * np.abs(grad).sum()
    want_value, want = tape.value_and_grad(py["f"])(x0, *data)  # packed where ops meet the data
    assert abs(value - want_value) <= 1e-14 * abs(want_value) and np.allclose(grad, want, rtol=1e-13, atol=1e-15)
    d = r / np.linalg.norm(r)
    h = 1e-6
    at = [tape.value_and_grad(py["f"])(x0 + s * h * d, *data)[0] for s in (1, -1)]  # (numba has no logsumexp)
    slope = (at[0] - at[1]) / (2 * h)
    assert abs(slope - grad @ d) <= 1e-6 * max(1.0, abs(slope))
    scalar = []  # calls of the scalar driver (an instance's _record: JitFunction's, counted)
    jn["f"]._record = lambda *args: scalar.append(1) or type(jn["f"])._record(jn["f"], *args)
    again = tape.value_and_grad(jn["f"])(x0, *data)
    assert again[0] == value and np.array_equal(again[1], grad) and not scalar  # packed, not tried on scalars again
    F = tape.trace(jn["f"], x0, data=data)
    assert F.value_and_grad(x0)[0] == value and np.array_equal(F.value_and_grad(x0)[1], grad)
    t = tape.Tape()
    jn["f"](t.array(x0), *data)
    assert t.n_arrays >= 5 and len(t) < 4 * x0.size + t.n_arrays  # array records, not one record an element


def test_a_packed_record_reads_edge_values_as_python():
    py, jn = programs(LOGISTIC)
    (x0, data), _ = inputs()[0]["LOGISTIC"], None
    x0 = x0.copy()
    x0[0], x0[1], x0[2] = -0.0, 1e300, np.nan
    (value, grad), (want_value, want) = (tape.value_and_grad(g)(x0, *data) for g in (jn["f"], py["f"]))
    assert np.isnan(value) and np.isnan(want_value)
    assert np.array_equal(np.isnan(grad), np.isnan(want))


SCALAR = """
def f(xs, a):
    y = np.tanh(xs * a + 1.0)
    return (y * y).sum() + np.dot(a, xs)
"""

WRITTEN = """
def f(xs, n):
    a = np.zeros(n, dtype=xs.dtype)
    for i in range(n):
        a[i] = xs[i % len(xs)] * i
    return (a * a).sum()
"""


def test_small_arrays_keep_the_python_recorder_s_scalar_records():
    py, jn = programs(SCALAR)
    x0, a = np.array([0.5, -1.0, 2.0]), np.array([0.3, 0.1, -0.7])
    tapes = []
    for g in (py["f"], jn["f"]):
        t = tape.Tape()
        tapes.append((t, g(t.array(x0), a)))
    same_records(tapes[0][0], tapes[1][0])
    assert tapes[1][0].n_arrays == 0 and not jn["f"]._packs


def test_an_f_that_takes_no_array_record_records_scalar_records_when_it_would_be_packed():
    jf = programs(WRITTEN)[1]["f"]
    x0 = np.array([0.5, -1.0, 2.0])
    value, grad = tape.value_and_grad(jf)(x0, 1500)  # a Var array of 1,500 elements, written by element
    assert jf._arrays is False and jf._packs
    assert value == jf(x0, 1500)  # numba.njit's value on floats
    by_hand = np.zeros(3)
    for i in range(1500):
        by_hand[i % 3] += 2 * x0[i % 3] * i * i
    assert np.allclose(grad, by_hand, rtol=1e-14)


def test_a_program_neither_form_takes_is_refused():
    jf = programs("""
def f(th, x):
    return logsumexp(th, axis=(0, 1, 2)) * x.sum()
""")[1]["f"]
    with pytest.raises((tape.JitError, ValueError)):
        tape.value_and_grad(jf)(np.ones(4), np.ones(2000))


def test_an_f_refused_on_an_array_of_vars_is_packed_at_its_first_call():
    jf = programs(SOFTMAX)[1]["f"]
    x0, data = inputs()[0]["SOFTMAX"]
    t = tape.Tape()
    y = jf(t.array(x0), *data)  # logsumexp along an axis: no array of Vars takes it
    assert jf._arrays is True and t.n_arrays > 5
    assert abs(y.value - JAX["SOFTMAX"][0]) <= 1e-13 * abs(JAX["SOFTMAX"][0])


DOCS = """
@tape.jit
def rnn(th, seq):                    # h starts as NumPy zeros and becomes an array record: carried
    W = th.reshape(32, 32)
    h = np.zeros(seq.shape[1:])
    for t in range(seq.shape[0]):
        h = np.tanh(h @ W + seq[t])
    return (h * h).sum()

th0, seq = 0.1 * np.random.default_rng(3).normal(size=1024), np.random.default_rng(4).normal(size=(3, 2, 32))
value, grad = tape.value_and_grad(rnn)(th0, seq)
W, hs = th0.reshape(32, 32), [np.zeros((2, 32))]
for x in seq:                        # by hand: forward, then back through the three steps
    hs.append(np.tanh(hs[-1] @ W + x))
g, gW = 2 * hs[-1], np.zeros((32, 32))
for t in range(3, 0, -1):
    ga = g * (1 - hs[t] ** 2)
    gW, g = gW + hs[t - 1].T @ ga, ga @ W.T
assert np.isclose(value, (hs[-1] ** 2).sum()) and np.allclose(grad, gW.ravel(), rtol=1e-13, atol=1e-15)

@tape.jit
def logistic(w, X, y):               # 9 params meeting 3,000 rows: packed into one array record
    z = X @ w[:8] + w[8]
    return np.logaddexp(0.0, z).mean() - (y * z).mean()

rng = np.random.default_rng(5)
X, y, w0 = rng.normal(size=(3000, 8)), (rng.uniform(size=3000) < 0.5) * 1.0, 0.1 * rng.normal(size=9)
value, grad = tape.value_and_grad(logistic)(w0, X, y)
z = X @ w0[:8] + w0[8]
gz = (1 / (1 + np.exp(-z)) - y) / 3000   # by hand: d/dz of the mean log-loss
assert np.allclose(grad, np.append(X.T @ gz, gz.sum()), rtol=1e-12, atol=1e-16)
"""  # the example proposed for docs/jit.md (/work/notes/s25/C/docs.md), hand-derived gradients


def test_the_docs_example_runs():
    ns = run_from_file(DOCS, {"tape": tape, "np": np})
    assert ns["rnn"]._arrays is True and ns["logistic"]._packs  # carried into array records; packed
