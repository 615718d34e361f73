"""Common-subexpression elimination (tape/analyses/cse.py): random programs with repeated subexpressions give,
merged, the records of the same program written with each subexpression once; values and tangents keep
the bits of the unmerged Function, reverse derivatives agree with it to rounding."""

from __future__ import annotations

import os

import numpy as np
import pytest
from sameness import bits

import tape
from tape.function import format as file_format

N_IN, N_PAR = 4, 2
SEEDS = range(12)
# one record each; constants whose bits differ (0.0, -0.0) must not merge
OPS = (
    ("sin", 1, tape.sin), ("exp", 1, lambda a: tape.exp(a * 0.5)), ("neg", 1, lambda a: -a), ("abs", 1, abs),
    ("tanh", 1, tape.tanh), ("mul_c", 1, lambda a: a * 1.5), ("mul_0", 1, lambda a: a * 0.0),
    ("mul_-0", 1, lambda a: a * -0.0), ("add_0", 1, lambda a: a + 0.0), ("add_-0", 1, lambda a: a - 0.0),
    ("rsub_c", 1, lambda a: 2.0 - a), ("add", 2, lambda a, b: a + b), ("mul", 2, lambda a, b: a * b),
    ("sub", 2, lambda a, b: a - b), ("div", 2, lambda a, b: a / b), ("pow_c", 1, lambda a: a ** 2.0),
)
COMMUTATIVE = ("add", "mul")


def program(seed: int, steps: int = 40) -> list[tuple]:
    """Steps (op number, operand value numbers): new ops on random values, exact repeats of an earlier
    step, and repeats with a commutative op's operands swapped, which are not merged (value numbers:
    inputs, params, steps)."""
    rng = np.random.default_rng(seed)
    out: list[tuple] = []
    for step in range(steps):
        kind = rng.choice(["new", "new", "repeat", "swap"]) if out else "new"
        if kind == "new":
            k = int(rng.integers(len(OPS)))
            operands = tuple(int(rng.integers(N_IN + N_PAR + step)) for _ in range(OPS[k][1]))
            out.append((k, *operands))
        else:
            k, *operands = out[int(rng.integers(len(out)))]
            if kind == "swap" and OPS[k][0] in COMMUTATIVE:
                operands = operands[::-1]
            out.append((k, *operands))
    return out


def run(steps: list[tuple], x, p, once: bool, vector: bool):
    """The program on Vars; once: each subexpression computed once (a Python dict of what was computed)."""
    values, same, seen = [*x, *p], list(range(N_IN + N_PAR)), {}
    for k, *operands in steps:
        fn = OPS[k][2]
        key = tuple(same[v] for v in operands)
        key = (k, *key)
        if once and key in seen:
            same.append(seen[key])
            values.append(values[seen[key]])
            continue
        seen.setdefault(key, len(values))
        same.append(len(values))
        values.append(fn(*(values[v] for v in operands)))
    outputs = values[N_IN + N_PAR:]
    if vector:
        return outputs
    return sum(o * (k + 1.0) for k, o in enumerate(outputs))


def functions(seed: int, vector: bool) -> tuple[tape.Function, tape.Function, tape.Function]:
    """(merged, unmerged, written once) Functions of one random program, traced at one point."""
    steps = program(seed)
    rng = np.random.default_rng(seed + 1000)
    x0, p0 = rng.uniform(0.5, 1.5, N_IN), rng.uniform(0.5, 1.5, N_PAR)
    return tuple(tape.trace(lambda x, p, once=once: run(steps, x, p, once, vector), x0, p0, prune=prune)
                 for once, prune in ((False, True), (False, False), (True, False)))  # type: ignore[return-value]


def points(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    edges = [np.zeros(N_IN), np.full(N_IN, -0.0), np.array([np.inf, -np.inf, np.nan, 1.0]),
             np.array([1e300, -1e-300, 5e-324, -0.0]), np.array([2.0, 2.0, -2.0, 2.0])]
    return [rng.uniform(-2, 2, N_IN) for _ in range(8)] + edges


@pytest.mark.parametrize("seed", SEEDS)
def test_merged_is_the_program_written_once(seed):
    F, G, C = functions(seed, vector=True)
    assert C.stats()["records_merged"] == 0  # the reference really has no repeat left
    assert F.stats()["records_merged"] > 0 and F.stats()["records_merged"] == len(G) - len(F)
    for name in ("op", "in0", "in1", "val", "consts", "input_rows", "param_rows", "output_rows"):
        assert np.array_equal(file_format.arrays(F)[name], file_format.arrays(C)[name]), name
    Fs, _, Cs = functions(seed, vector=False)
    for name in ("op", "in0", "in1", "consts", "output_rows"):
        assert np.array_equal(file_format.arrays(Fs)[name], file_format.arrays(Cs)[name]), name


@pytest.mark.parametrize("seed", SEEDS)
def test_values_and_tangents_keep_their_bits(seed):
    Fv, Gv, _ = functions(seed, vector=True)
    Fs, Gs, _ = functions(seed, vector=False)
    rng = np.random.default_rng(seed + 5)
    p = rng.uniform(-2, 2, N_PAR)
    for x in points(seed):
        v = rng.normal(size=N_IN)
        for F, G in ((Fv, Gv), (Fs, Gs)):
            assert bits(F(x, p)) == bits(G(x, p))
            assert bits(F.jvp(x, v, p)) == bits(G.jvp(x, v, p))
            assert bits(F.jacobian(x, p, "forward")) == bits(G.jacobian(x, p, "forward"))
    X = np.array(points(seed)[:8])
    assert bits(Fv.map(X, p)) == bits(Gv.map(X, p))
    assert bits(Fv.map_jvp(X, X[::-1], p)) == bits(Gv.map_jvp(X, X[::-1], p))
    assert bits(Fs.grad_function()(X[0], p)) == bits(Fs.value_and_grad(X[0], p)[1])


def close(a, b) -> None:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * scale)


@pytest.mark.parametrize("seed", SEEDS)
def test_reverse_derivatives_agree_to_rounding(seed):
    Fv, Gv, _ = functions(seed, vector=True)
    Fs, Gs, _ = functions(seed, vector=False)
    rng = np.random.default_rng(seed + 9)
    p = rng.uniform(0.5, 1.5, N_PAR)
    for _ in range(8):
        x, v = rng.uniform(0.5, 1.5, N_IN), rng.normal(size=N_IN)
        w = rng.normal(size=Fv.n_outputs)
        close(Fs.value_and_grad(x, p)[1], Gs.value_and_grad(x, p)[1])
        close(Fs.hvp(x, v, p), Gs.hvp(x, v, p))
        close(Fs.hessian(x, p), Gs.hessian(x, p))
        close(Fv.vjp(x, w, p), Gv.vjp(x, w, p))
        close(Fv.jacobian(x, p, "reverse"), Gv.jacobian(x, p, "forward"))
        h = 1e-6  # and against central differences of the merged Function's own values
        grad = Fs.value_and_grad(x, p)[1]
        for i in range(N_IN):
            e = np.zeros(N_IN)
            e[i] = h
            fd = (Fs(x + e, p) - Fs(x - e, p)) / (2 * h)
            assert abs(grad[i] - fd) <= 1e-5 * max(1.0, abs(fd))


def test_stats_count_what_was_merged():
    def f(x):
        a = tape.sin(x[0]) * x[1]
        b = x[1] * tape.sin(x[0])  # sin again; the product in the other order is a record of its own
        return a + b + tape.sin(x[0])

    F, G = tape.trace(f, [0.3, 0.7]), tape.trace(f, [0.3, 0.7], prune=False)
    s = F.stats()
    assert (s["records_merged"], s["records_dropped"], len(G), len(F)) == (2, 2, 9, 7)
    assert G.stats()["records_merged"] == 0 and G.stats()["pruning"] == "off"
    assert F([0.3, 0.7]) == G([0.3, 0.7]) == 2 * np.sin(0.3) * 0.7 + np.sin(0.3)


def test_inputs_params_and_leaves_of_equal_value_stay_apart():
    F = tape.trace(lambda x, p: x[0] * p[0] + x[1] * p[1], [2.0, 2.0], [3.0, 3.0])
    assert F.stats()["records_merged"] == 0
    value, grad = F.value_and_grad([2.0, 5.0], [3.0, 7.0])
    assert value == 41.0 and grad.tolist() == [3.0, 7.0]


def test_comparisons_and_selects_are_not_merged():
    def f(x):
        a = tape.where(x[0] < x[1], x[0], x[1])
        b = tape.where(x[0] < x[1], x[0], x[1])
        if x[0] > 0.0:
            a = a * 2.0
        if x[0] > 0.0:  # the same comparison, checked twice: both stay, each with its line
            b = b * 3.0
        return a + b

    F, G = tape.trace(f, [1.0, 2.0]), tape.trace(f, [1.0, 2.0], prune=False)
    assert F.stats()["comparisons_checked"] == G.stats()["comparisons_checked"] == 2
    assert F.stats()["by_op"]["select"] == 2 and F.stats()["records_merged"] == 0
    for x in ([1.0, 2.0], [3.0, 2.0], [0.5, 0.5]):
        assert bits(F.value_and_grad(x)) == bits(G.value_and_grad(x))
    with pytest.raises(tape.BranchChanged) as info:
        F([-1.0, 2.0])
    assert f"{os.path.basename(__file__)}:" in info.value.where


def test_constants_merge_by_their_bits():
    t = tape.Tape()
    x, k = t.var(1.0), t.vars([0.0, -0.0, 0.0, np.nan])  # leaves neither input nor param: folded to constants
    y = (x + tape.sin(k[0])) * (x + tape.sin(k[2])) + (x + tape.sin(k[1])) * (x + tape.sin(k[3]))
    F, G = t.function([x], y), t.function([x], y, prune=False)
    assert F.stats()["records_folded"] == 4 and F.stats()["records_merged"] == 2  # sin(0.0) twice, its x + once
    for point in ([1.0], [-0.0], [0.0]):
        assert bits(F(point)) == bits(G(point))
    assert np.isnan(F([1.0]))


def test_the_users_exponential_decay_is_recorded_once_per_loop():
    t0, k0 = np.linspace(0.0, 1.0, 50), 0.7

    def f(x):  # a * exp(-k * t), written as a loop: -k is recomputed at every t
        a, k = x[0], x[1]
        return sum(a * tape.exp(-k * float(ti)) for ti in t0)

    F, G = tape.trace(f, [2.0, k0]), tape.trace(f, [2.0, k0], prune=False)
    assert len(G) - len(F) == F.stats()["records_merged"] == 49  # one -k, not 50
    value, grad = F.value_and_grad([2.0, k0])
    expected = 2.0 * np.exp(-k0 * t0)
    assert abs(value - expected.sum()) <= 1e-12 * expected.sum()
    assert np.allclose(grad, [np.exp(-k0 * t0).sum(), -(t0 * expected).sum()], rtol=1e-13)


def test_repeats_of_an_input_read_by_many_records_are_found():
    # x[0] * c for 40 constants fills the window of x[0] (kernels/cse.py): the rest go to the second table
    cs = np.linspace(0.5, 2.0, 40).tolist()

    def f(x):
        first = [x[0] * c for c in cs]
        again = [x[0] * c for c in cs[::-1]]
        return sum(first) + sum(again) * x[1]

    F, G = tape.trace(f, [0.3, 0.7]), tape.trace(f, [0.3, 0.7], cse=False)
    assert F.stats()["records_merged"] == 40 and len(G) - len(F) == 40
    for x in ([0.3, 0.7], [-0.0, 2.0], [np.inf, 1.0]):
        assert bits(F(x)) == bits(G(x))


def test_the_pass_is_linear_and_terminates_on_a_long_chain_of_repeats():
    n = 20000

    def f(x):
        y = x[0]
        for _ in range(n):
            y = tape.sin(x[0]) + y  # sin(x0) every time: one record, and n additions
        return y

    F = tape.trace(f, [0.5])
    assert len(F) == n + 2 and F.stats()["records_merged"] == n - 1
    assert abs(F([0.5]) - (0.5 + n * np.sin(0.5))) < 1e-6


def array_program(x, once: bool):
    """Array records (32 x 32) with scalar work on their elements repeated between them (once: not)."""
    y = np.tanh(x) * 1.5
    s = y[3, 4]
    ss = s * s
    u = tape.cos(ss)
    z = np.sin(y) + y * 0.5  # elementwise records: a fused run
    v = u if once else tape.cos(s * s)  # the same scalar work again, between array records
    w = np.exp(z * 0.1) * v + z * u
    return (w * w).sum() + tape.sin(ss if once else s * s) * z[1, 2]


def test_scalar_repeats_beside_array_records_merge_to_the_program_written_once():
    x0 = np.linspace(-1.0, 1.0, 1024).reshape(32, 32)
    F = tape.trace(lambda x: array_program(x, False), x0)
    G = tape.trace(lambda x: array_program(x, False), x0, cse=False)
    C = tape.trace(lambda x: array_program(x, True), x0)  # (its two packs of u merge too)
    assert F.stats()["records_merged"] == C.stats()["records_merged"] + 3 and F.stats()["pruning"] == "done"
    for k in ("op", "in0", "in1", "plans", "plan_places", "arena"):
        assert np.array_equal(file_format.arrays(F)[k], file_format.arrays(C)[k]), k
    rng = np.random.default_rng(4)
    for x in [rng.uniform(-2, 2, (32, 32)) for _ in range(3)] + [np.zeros((32, 32)), np.full((32, 32), np.inf)]:
        v = rng.normal(size=(32, 32))
        with np.errstate(all="ignore"):
            assert bits(F(x)) == bits(C(x)) and bits(F.jvp(x, v)) == bits(C.jvp(x, v))
            assert bits(F.value_and_grad(x)) == bits(C.value_and_grad(x))
            np.testing.assert_allclose(F(x), G(x), rtol=1e-14)  # (fused runs may differ: see below)
            close(F.value_and_grad(x)[1], G.value_and_grad(x)[1])


ARRAY_UNARY = (np.sin, np.tanh, tape.sigmoid, lambda a: a * 1.5, lambda a: a + 0.25, abs, np.exp,
               lambda a: tape.maximum(a, 0.1))
ARRAY_BINARY = (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: a / (1.0 + b * b),
                lambda a, b: (a @ b) * 0.05, lambda a, b: a + b.sum(axis=0, keepdims=True) * 0.1,
                lambda a, b: a * b.mean(1)[:, None], lambda a, b: tape.where(a < b, a, b * 0.5))


def array_steps(seed: int, steps: int = 16) -> list[tuple]:
    """Steps (unary, binary, a, b) over value numbers (0: x), a third of them repeats of an earlier step."""
    rng = np.random.default_rng(seed)
    out: list[tuple] = []
    for step in range(steps):
        if out and rng.random() < 0.35:
            out.append(out[int(rng.integers(len(out)))])
        else:
            out.append((int(rng.integers(len(ARRAY_UNARY))), int(rng.integers(len(ARRAY_BINARY))),
                        int(rng.integers(step + 1)), int(rng.integers(step + 1))))
    return out


def run_arrays(steps, x, once: bool, vector: bool):
    values, seen = [x], {}
    for step in steps:
        u, w, a, b = step
        key = (u, w, a, b)  # (a repeat reads the same value numbers; written once, it is the first's value)
        if once and key in seen:
            values.append(values[seen[key]])
            continue
        seen.setdefault(key, len(values))
        values.append(ARRAY_BINARY[w](ARRAY_UNARY[u](values[a]), values[b]) * 0.5)
    sums = [(v * v).mean() for v in values[1:]]
    return sums if vector else sum(s * (k + 1.0) for k, s in enumerate(sums))


@pytest.mark.parametrize("seed", range(6))
def test_repeated_array_records_merge_to_the_program_written_once(seed):
    steps = array_steps(seed)
    x0 = np.random.default_rng(seed).uniform(-1, 1, (32, 32))
    made = {}
    for vector in (False, True):
        made[vector] = [tape.trace(lambda x, once=once, vector=vector: run_arrays(steps, x, once, vector), x0, cse=cse)
                        for once, cse in ((False, True), (False, False), (True, True))]
    F, G, C = made[False]
    repeats = len(steps) - len(set(steps))
    assert repeats == 0 or F.stats()["records_merged"] > C.stats()["records_merged"]
    for k in ("op", "in0", "in1", "plans", "plan_places", "arena"):  # the program written once, merged alike
        assert np.array_equal(file_format.arrays(F)[k], file_format.arrays(C)[k]), k
    rng = np.random.default_rng(seed + 50)
    edges = np.resize([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, 1e-300, 5e-324], 40)
    for k in range(4):
        x = rng.uniform(-1.5, 1.5, (32, 32))
        if k == 3:
            x.flat[rng.choice(x.size, 40, replace=False)] = edges
        v = rng.normal(size=(32, 32))
        with np.errstate(all="ignore"):
            for M, N, W in (made[False], made[True]):
                assert bits(M(x)) == bits(W(x)) and bits(M.jvp(x, v)) == bits(W.jvp(x, v))  # written once
                # against cse=False to rounding: a merge can change the fused runs (tape/sweeps/fusion.py: a run's
                # ops in Numba, a record alone in NumPy, whose exp, sin, ... differ in the last bits)
                np.testing.assert_allclose(M(x), N(x), rtol=1e-13, atol=1e-300)
                np.testing.assert_allclose(M.jvp(x, v), N.jvp(x, v), rtol=1e-12, atol=1e-12)
            if k < 3:
                close(F.value_and_grad(x)[1], G.value_and_grad(x)[1])
                close(made[True][0].vjp(x, np.ones(len(steps))), made[True][1].vjp(x, np.ones(len(steps))))


def packed_program(x, once: bool):
    """Scalar repeats that packs read (small arrays of scalar records meeting an array record), 0-d constants read
    as immediates, and constants of several elements."""
    s, t = x[0] * x[1], x[2] + 1.0
    first = tape.sin(s) * np.arange(4.0) + t  # 4 scalar records
    again = (first if once else tape.sin(s) * np.arange(4.0) + t) * 2.0
    y = x.reshape(256, 4) * first + again * np.array([1.0, 2.0, 3.0, 4.0]) + x.reshape(256, 4) * 0.5
    return (y * np.exp(y * 0.01) + np.ones(4) * 0.25).sum()


def stencil(u, once: bool):
    """Heat steps by np.pad and np.concatenate (gathers and joins; the repeat: a step's neighbours twice)."""
    for _ in range(4):
        w = np.pad(u, 1, mode="wrap")
        v = w if once else np.pad(u, 1, mode="wrap")
        u = u + 0.2 * (w[2:] + v[:-2] - 2.0 * u)
        u = u + 0.1 * (np.concatenate([u[1:], u[:1]]) - u)
    return (u * u).sum()


DATA = np.random.default_rng(6).normal(size=(32, 32))


def constants(x, once: bool):
    """One NumPy array read twice: two constant records alike (written once: one), a gather between them."""
    X = x.reshape(32, 32)
    C = np.asarray(DATA)
    return (X @ C).sum() + X[[2, 0]].sum() + ((X * 2.0 @ C if once else X * 2.0 @ np.array(DATA)) * 0.5).sum()


def immediates(x, once: bool):
    """x * 0.5 twice, each with a 0-d constant record of its own: alike (written once: one)."""
    y = x * 0.5
    return (y * (y if once else x * 0.5)).sum()


PROGRAMS = {
    "immediates": (immediates, np.linspace(-1.0, 1.0, 1024)),
    "constants": (constants, np.linspace(-1.0, 1.0, 1024)),
    "stencil": (stencil, np.random.default_rng(5).normal(size=2048)),
    "packs": (packed_program, np.linspace(-1.0, 1.0, 1024)),
    "scalars beside arrays": (array_program, np.linspace(-1.0, 1.0, 1024).reshape(32, 32)),
    **{f"array steps {seed}": (lambda x, once, seed=seed: run_arrays(array_steps(seed), x, once, False),
                               np.random.default_rng(seed).uniform(-1, 1, (32, 32))) for seed in range(4)},
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_rounds_give_the_in_order_merge(name, monkeypatch):
    """cse's rounds (a Numba call and NumPy over the plan table each, _rounds) give the arrays and plans of the merge
    in order, array record by array record (ROUNDS 0: the in-order loop), with plans field for field."""
    from tape.analyses import cse as module

    f, x0 = PROGRAMS[name]
    passes = []
    monkeypatch.setattr(module, "_firsts", lambda *args, real=module._firsts: passes.append(1) or real(*args))
    made = [tape.trace(lambda x, once=once: f(x, once), x0) for once in (False, True)]
    assert passes and len(passes) <= 2 * module.ROUNDS
    monkeypatch.setattr(module, "ROUNDS", 0)
    in_order = [tape.trace(lambda x, once=once: f(x, once), x0) for once in (False, True)]
    for F, G in zip(made, in_order, strict=True):
        A, B = file_format.arrays(F), file_format.arrays(G)
        assert A.keys() == B.keys() and F.stats() == G.stats()
        for k in A:
            assert np.array_equal(A[k], B[k]) and A[k].dtype == B[k].dtype, k


def _weights(taps: int) -> list[float]:
    """A symmetric filter's weights (1, 2, 2, 1 for 4 taps): equal weights send one contribution record to two
    slices."""
    return [1.0 + min(j, taps - 1 - j) for j in range(taps)]


def _filter_matrix(n: int, taps: int) -> np.ndarray:
    """The matrix of y[i] = sum_j w[j] * u[i + j] (the slices' filter below), built apart from tape."""
    return sum(w * np.eye(n - taps + 1, n, j) for j, w in enumerate(_weights(taps)))


@pytest.mark.parametrize("in_order", [False, True])
@pytest.mark.parametrize("taps", [2, 3, 4, 5, 6])
def test_joins_of_zeros_read_in_other_shapes_stay_apart(taps, in_order, monkeypatch):
    """A gradient recorded as records adds overlapping slices' contributions by joins of zeros read from a 0-d
    constant in a shape (Emit.full: stride 0): zeros(1), g, zeros(2) and zeros(2), g, zeros(1), one g sent to two
    slices (equal weights), read the same records but are not alike. They merged (the key kept a 0-d constant's
    number, not the shape it is read in): grad_function and jvp(grad) of a filter of 4 or more taps were 25-33% off,
    silently. Exact references from the filter's matrix A: gradient 2 A^T A x, Hessian-vector product 2 A^T A v;
    both merges (rounds, and in order)."""
    from tape.analyses import cse as module

    if in_order:
        monkeypatch.setattr(module, "ROUNDS", 0)
    n = 1100  # (array records: SMALL elements or more)
    rng = np.random.default_rng(taps)
    x, v = rng.normal(size=n), rng.normal(size=n)

    def f(u):
        y = sum(w * u[j:n - taps + 1 + j] for j, w in enumerate(_weights(taps)))
        return (y * y).sum()

    A = _filter_matrix(n, taps)
    gradient, hvp = 2.0 * A.T @ (A @ x), 2.0 * A.T @ (A @ v)
    scale = np.abs(gradient).max()
    assert np.abs(tape.trace(f, x).grad_function()(x) - gradient).max() <= 1e-12 * scale
    got = tape.jvp(tape.grad(f), (x,), (v,))
    assert np.abs(np.asarray(got[0]) - gradient).max() <= 1e-12 * scale
    assert np.abs(np.asarray(got[1]) - hvp).max() <= 1e-12 * np.abs(hvp).max()
