"""Dead-record elimination with array and call records (tape/analyses/prune.py): random array programs with
dead array and scalar work give, pruned, the records, plans and arena of the same program written
without it, and every method's bits of the unpruned Function."""

from __future__ import annotations

import os

import numpy as np
import pytest
from sameness import same, same_maps

import tape
from tape.function import format

SHAPE = (32, 32)  # 1024 elements: array records
N_PAR = 2
SEEDS = range(6)
UNARY = (np.sin, np.tanh, tape.sigmoid, lambda a: a * 1.5, lambda a: a + 0.25, abs, lambda a: tape.maximum(a, 0.1),
         lambda a: np.cumsum(a, 1) * 0.1, lambda a: np.sort(a, axis=0), lambda a: a[ROWS])  # a scan, a sort, a gather
ROWS = np.arange(SHAPE[0])[::-1] // 2
BINARY = (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: a / (1.0 + b * b),
          lambda a, b: tape.where(a < b, a, b * 0.5), lambda a, b: (a @ b) * 0.05,
          lambda a, b: a + b.sum(axis=0, keepdims=True) * 0.1, lambda a, b: a * b.mean(1)[:, None])


def _step(x):
    """A small Function (with dead work of its own) that the programs call: call records."""
    dead = tape.exp(x[0]) * x[1]  # noqa: F841
    return tape.sin(x) * 0.5 + x[::-1] * 0.25


def callee() -> tape.Function:
    """A Function made where a test needs it (one made at import would keep its tape alive for all the
    tests: see test_var_in_numpy's garbage-collector test)."""
    return tape.trace(_step, np.linspace(-1.0, 1.0, SHAPE[1]))


KINDS = ("live", "live", "dead", "dead", "elem", "dead_elem", "call", "dead_call", "guard", "unchecked",
         "dead_branch")


def program(seed: int, steps: int = 14) -> list[tuple]:
    """Steps (kind, a, b, u, w, c, i, j) over value numbers (0: x, then one per step); "live" and
    "dead" ops (dead ones read anything, live ones only live values), "elem": a live op through one
    element read as a scalar (dead_elem: scalar work nothing reads), "call": the callee on a row
    (twice in a row: the second call reads the first's outputs, which are read as well), "guard": a checked branch on an
    element of an array that feeds nothing else, "unchecked": an array comparison never turned into a bool,
    "dead_branch": a checked branch on live values whose arms compute only dead values."""
    rng = np.random.default_rng(seed)
    live, every, out = [0], [0], []
    for step in range(steps):
        kind = str(rng.choice(KINDS))
        pool = every if kind in ("dead", "dead_elem", "dead_call") else live
        a, b = (int(rng.choice(pool)) for _ in range(2))
        i, j = (int(k) for k in rng.integers(0, SHAPE[0], 2))
        out.append((kind, a, b, int(rng.integers(len(UNARY))), int(rng.integers(len(BINARY))),
                    float(rng.uniform(-0.5, 0.5)), i, j))
        if kind != "unchecked":
            every.append(step + 1)
        if kind in ("live", "elem", "call", "guard"):
            live.append(step + 1)
    return out


def run(steps: list[tuple], x, p, clean: bool, vector: bool, call: tape.Function):
    """The program on VarArray x, params p; clean: without the dead work (a checked branch's comparison
    kept); call: the Function the call steps call."""
    values = [x * p[0] + p[1]]
    for kind, a, b, u, w, c, i, j in steps:
        va, vb = values[a], values[b]
        if clean and kind in ("dead", "dead_elem", "dead_call", "unchecked"):
            values.append(None)
            continue
        if kind in ("live", "dead"):
            y = BINARY[w](UNARY[u](va), vb)
        elif kind in ("elem", "dead_elem"):
            s = va[i, j]  # an elem record, then scalar records
            y = vb * (tape.cos(s * s) if kind == "elem" else tape.sin(s) + s * p[0])
        elif kind in ("call", "dead_call"):
            once = call(vb[i])
            y = va + (call(once) + once) * 2.0  # the second call reads the first's record
        elif kind == "guard":
            g = np.tanh(va)  # read by the checked comparison only (one element of it)
            y = va * vb if g[i, j] > c else va - vb
        elif kind == "dead_branch":
            y = None
            if va.sum() > vb.sum() and not clean:
                y = UNARY[u](va)
            if not clean and y is None:
                y = np.cos(vb) * 3.0
        else:  # unchecked
            y = va < vb + c
        values.append(y)
    outputs = [values[0]] + [v for (kind, *_), v in zip(steps, values[1:], strict=True)
                             if kind in ("live", "elem", "call", "guard")]
    total = sum(o * (k + 1.0) for k, o in enumerate(outputs))
    return total[3, :6] * tape.cos(total[0, 0]) if vector else total.sum()


def functions(seed: int, vector: bool, policy: str = "raise") -> tuple[tape.Function, tape.Function, tape.Function]:
    """(pruned, unpruned, clean) Functions of one random program, traced at one point; repeats not merged
    (cse=False: merging is tests/test_cse.py's)."""
    steps = program(seed)
    rng = np.random.default_rng(seed + 1000)
    x0, p0 = rng.uniform(-1, 1, SHAPE), rng.uniform(0.5, 1, N_PAR)
    call = callee()
    made = [tape.trace(lambda x, p, clean=clean: run(steps, x, p, clean, vector, call), x0, p0, on_branch_change=policy,
                       prune=prune, cse=False) for clean, prune in ((False, True), (False, False), (True, False))]
    return made[0], made[1], made[2]


def points(rng: np.random.Generator) -> list[np.ndarray]:
    """Random points, zeros of both signs, and points holding inf, NaN, huge and tiny numbers."""
    found = [rng.uniform(-1, 1, SHAPE) for _ in range(3)] + [np.zeros(SHAPE), np.full(SHAPE, -0.0)]
    for edges in ([0.0, -0.0, np.inf, -np.inf, np.nan], [1e300, -1e300, 1e-300, -1e-300, 5e-324]):
        x = rng.uniform(-1, 1, SHAPE)
        x.flat[rng.choice(x.size, 40, replace=False)] = np.resize(edges, 40)
        found.append(x)
    return found


@pytest.mark.parametrize("seed", SEEDS)
def test_pruned_is_the_array_program_without_its_dead_work(seed):
    for vector in (False, True):
        F, G, C = functions(seed, vector)
        stats = F.stats()
        assert stats["pruning"] == "done" and G.stats()["pruning"] == "off"
        assert stats["records_recorded"] == len(G) and stats["records_dropped"] == len(G) - len(F) > 0
        assert len(F._plans) < len(G._plans)
        mine, clean = format.arrays(F), format.arrays(C)
        for name in ("op", "in0", "in1", "consts", "input_rows", "param_rows", "output_rows", "check_rows",
                     "check_expected", "plans", "plan_places", "arena"):
            assert np.array_equal(mine[name], clean[name]), name
        assert C.stats()["records_dropped"] == 0
        format.validate({"format_version": np.array(format.FORMAT_VERSION, np.int64), **mine,
                          "on_branch_change": np.array("raise"), "check_finite": np.array(False)},
                         tuple((G.n_inputs, G.n_params, G.n_outputs) for G in F._callees))


# seeds past the second are slow: a 1024-column Jacobian and Hessian each
@pytest.mark.parametrize("seed", [*SEEDS[:2], *(pytest.param(s, marks=pytest.mark.slow) for s in SEEDS[2:])])
def test_every_method_gives_the_same_bits_with_array_records(seed, tmp_path):
    rng = np.random.default_rng(seed)
    xs = points(rng)
    p = rng.uniform(0.5, 1, N_PAR)
    Fs, Gs, _ = functions(seed, vector=False)
    Fv, Gv, _ = functions(seed, vector=True)
    path = os.path.join(tmp_path, "f.npz")
    Fv.save(path)
    Lv = tape.load(path)
    assert len(Lv) == len(Fv) and np.array_equal(format.arrays(Lv)["arena"], format.arrays(Fv)["arena"])
    for k, x in enumerate(xs):
        v, w = rng.normal(size=SHAPE), rng.normal(size=Fv.n_outputs)
        for F, G in ((Fs, Gs), (Fv, Gv), (Lv, Gv)):
            same(F, G, "__call__", x, p)
            same(F, G, "jvp", x, v, p)
            same(F, G, "vjp", x, w if F.n_outputs > 1 else np.ones(1), p)
        same(Fs, Gs, "value_and_grad", x, p)
        same(Fs, Gs, "hvp", x, v, p)
        same(Fs, Gs, "value_grad_hvp", x, v, p)
        same(Fv, Gv, "jacobian", x, p, "reverse")
        if k == 6:  # (inf, NaN) 1024 forward sweeps each
            same(Fv, Gv, "jacobian", x, p, "forward")
            same(Fs, Gs, "hessian", x, p)
    X = np.array(xs[3:7]).reshape(4, -1)
    same_maps(Fs, Gs, Fv, Gv, X, p)


@pytest.mark.parametrize("seed", SEEDS)
def test_array_branch_changes_where_it_did_and_retraces_the_same(seed):
    F, G, _ = functions(seed, vector=False)
    Fr, Gr, _ = functions(seed, vector=False, policy="retrace")
    rng = np.random.default_rng(seed + 7)
    p = rng.uniform(0.5, 1, N_PAR)
    raised = 0
    for _ in range(8):
        x = rng.uniform(-1, 1, SHAPE) * rng.choice([0.1, 1.0, 3.0])
        same(F, G, "__call__", x, p)
        try:
            F(x, p)
        except tape.BranchChanged:
            raised += 1
        same(Fr, Gr, "value_and_grad", x, p)
        assert Fr.retraces == Gr.retraces
        assert Fr.stats()["records_dropped"] == len(Gr) - len(Fr) > 0 and Fr.stats()["pruning"] == "done"
    assert raised or seed not in FLIPPING


FLIPPING = (0, 3)  # programs where some of the 8 points flip a checked branch (so the test can fail)


def test_a_hand_written_array_program_keeps_what_its_output_reads():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(32, 64))

    def f(X):
        dead = np.exp(X @ A)  # matmul, exp, a reduction and scalar work that nothing reads
        (dead.sum(axis=0) * tape.sin(X[0, 0])).sum()
        Y = X * 1.5 + X.sum(axis=1, keepdims=True) * 0.01  # a sum broadcast back
        return (np.sin(Y) * Y[2, 3]).sum()  # an elem read

    x0 = rng.uniform(-1, 1, (64, 32))
    F, G = tape.trace(f, x0), tape.trace(f, x0, prune=False)
    assert not {"array matmul", "array exp"} & set(F.stats()["by_op"]) and {"array matmul"} <= set(G.stats()["by_op"])
    for x in (rng.uniform(-1, 1, x0.shape), np.zeros(x0.shape), np.full(x0.shape, -0.0), x0 * 1e300):
        same(F, G, "value_and_grad", x)
        same(F, G, "hvp", x, x[::-1])
    x = rng.uniform(-1, 1, x0.shape)
    Y = x * 1.5 + x.sum(axis=1, keepdims=True) * 0.01  # the derivative by hand
    dY = np.cos(Y) * Y[2, 3]
    dY[2, 3] += np.sin(Y).sum()
    value, grad = F.value_and_grad(x)
    assert np.isclose(value, (np.sin(Y) * Y[2, 3]).sum(), rtol=1e-13, atol=0)
    assert np.allclose(grad, 1.5 * dY + 0.01 * dY.sum(axis=1, keepdims=True), rtol=1e-12, atol=1e-14)
    h = 1e-6
    e = np.zeros(x0.shape)
    e[2, 3] = h
    assert np.isclose((F(x + e) - F(x - e)) / (2 * h), grad[2, 3], rtol=1e-7)


def test_a_call_record_nothing_reads_is_dropped_with_its_callee(tmp_path):
    dead, call, twice = callee(), callee(), callee()

    def f(X):
        dead(X[0])  # its elem records are read by nothing
        twice(X[2])
        return (X * X).sum() + call(X[1])[3] + twice(X[3])[5]

    x0 = np.linspace(-1, 1, 2048).reshape(64, 32)
    F, G = tape.trace(f, x0), tape.trace(f, x0, prune=False)
    assert F.stats()["by_op"]["array call"] == 2 and G.stats()["by_op"]["array call"] == 4
    assert F._callees == [call, twice] and G._callees == [dead, twice, call]  # slots renumbered in order
    path = os.path.join(tmp_path, "f.npz")
    F.save(path)
    L = tape.load(path)
    assert len(L._callees) == 2 and [len(H) for H in L._callees] == [len(call), len(twice)]
    for x in (x0[::-1].copy(), np.zeros(x0.shape), np.full(x0.shape, np.nan)):
        for H in (F, L):
            same(H, G, "value_and_grad", x)
            same(H, G, "hvp", x, x0)


def test_only_scalar_records_of_no_input_fold_beside_arrays():
    rng = np.random.default_rng(3)
    t = tape.Tape()
    X = t.array(rng.uniform(-1, 1, SHAPE))
    k = t.var(0.5)  # a leaf that is neither input nor param
    K = t.array(np.full(SHAPE, 0.3))  # an array leaf of neither kind: array work on it does not fold
    y = (X * (tape.sin(k) * 2.0) + K * tape.cos(k)).sum() + K[1, 1] * 2.0 + tape.exp(k)
    F, G = t.function([X], y), t.function([X], y, prune=False)
    assert F.stats()["records_folded"] == 4  # sin(k), * 2.0, cos(k), exp(k); not K[1, 1] * 2.0 (an elem)
    assert F.stats()["by_op"]["elem"] == G.stats()["by_op"]["elem"] and F.stats()["pruning"] == "done"
    for x in (rng.uniform(-1, 1, 1024), np.zeros(1024), np.full(1024, np.inf)):  # (t.function: flat points)
        for method, args in (("__call__", (x,)), ("value_and_grad", (x,)), ("hvp", (x, x)), ("jvp", (x, x))):
            same(F, G, method, *args)


def test_an_array_function_with_nothing_dead_is_kept_whole():
    F = tape.trace(lambda X: (np.sin(X) @ X.T).sum(), np.ones(SHAPE))
    assert F.stats()["records_dropped"] == 0 and F.stats()["pruning"] == "done"


def test_dead_records_neither_join_nor_break_a_fused_run():
    def f(X):
        a = X * 2.0 - 1.0
        dead = tape.exp(a) * 3.0  # noqa: F841  a NumPy record inside the run, and a member it would have had
        return (a * a + 0.5).sum()

    rng = np.random.default_rng(4)
    x0 = rng.uniform(-1, 1, 5000)
    F, G = tape.trace(f, x0), tape.trace(f, x0, prune=False)
    runs = [[[int(H._op[r]) for r in run.rows] for run in H._runs_first.values()] for H in (F, G)]
    assert runs[0] == runs[1] and len(runs[0]) == 1 and len(runs[0][0]) == 5  # *, -, *, +, the sum
    for x in (rng.uniform(-1, 1, 5000), np.zeros(5000), np.where(x0 > 0.5, np.nan, x0), x0 * 1e200):
        same(F, G, "value_and_grad", x)
    x = rng.uniform(-1, 1, 5000)
    G(x)
    exp = next(p for p in G._plans if p.name == "exp")  # computed where it is, though inside the run
    assert np.array_equal(G._aval[exp.offset:exp.offset + exp.size], np.exp(x * 2.0 - 1.0))


def test_debug_lines_follow_the_kept_array_records():
    def f(X):
        dead = np.log(X) * 2.0  # noqa: F841
        return np.sqrt(X).sum() + X[3] * 2.0

    with tape.debug_nans():
        F = tape.trace(f, np.ones(2048))
    assert "array log" not in F.stats()["by_op"] and F.stats()["records_dropped"] == 3
    x = np.ones(2048)
    x[5] = -1.0
    with pytest.raises(tape.NonFiniteError) as info, tape.debug_nans():
        F(x)
    line = f"{os.path.basename(__file__)}:{f.__code__.co_firstlineno + 2}"  # the line of the sqrt
    assert "record #1 (array sqrt" in str(info.value) and str(info.value).endswith(line)
