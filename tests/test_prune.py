"""Dead-record elimination (tape/analyses/prune.py): random programs with dead work give, pruned, the records of
the same program written without it, and every method's bits of the unpruned Function."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from sameness import bits, same, same_maps

import tape
from tape.function import format

N_IN, N_PAR = 5, 2
SEEDS = range(12)
UNARY = (tape.sin, tape.tanh, tape.exp, lambda a: a * 1.5, lambda a: a + 0.25, lambda a: 2.0 - a, abs)
BINARY = (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: a / (1.0 + b * b),
          lambda a, b: tape.where(a < b, a, b * 0.5))


def program(seed: int, steps: int = 30) -> list[tuple]:
    """Steps (kind, operands...): "live" and "dead" ops (dead ones read anything, live ones only live
    values); "guard": a checked branch on a record that feeds nothing else, whose arms are live ops;
    "unchecked": a comparison never turned into a bool; "dead_branch": a checked branch on live
    values whose arms compute only dead values. Inputs 3 and 4 are read by dead ops only (p1: see folded)."""
    rng = np.random.default_rng(seed)
    live = [0, 1, 2, N_IN, N_IN + 1]  # value numbers: 0..N_IN-1 inputs, N_IN.. params, then one per step
    every = list(range(N_IN + N_PAR))
    steps_out: list[tuple] = []
    for step in range(steps):
        kind = rng.choice(["live", "live", "dead", "dead", "guard", "unchecked", "dead_branch"])
        a, b = (int(rng.choice(live)) for _ in range(2))
        if kind == "dead":
            a, b = (int(rng.choice(every)) for _ in range(2))
        u, w = int(rng.integers(len(UNARY))), int(rng.integers(len(BINARY)))
        steps_out.append((kind, a, b, u, w, float(rng.uniform(-0.5, 0.5))))
        if kind != "unchecked":  # a comparison's value is a Condition, which no op reads
            every.append(N_IN + N_PAR + step)
        if kind in ("live", "guard"):
            live.append(N_IN + N_PAR + step)
    return steps_out


def run(steps: list[tuple], x, p, clean: bool, vector: bool):
    """The program on Vars x, params p; clean: without the dead work (a checked branch's comparison kept)."""
    values = [*x, *p]
    for kind, a, b, u, w, c in steps:
        va, vb = values[a], values[b]
        if kind == "live":
            y = BINARY[w](UNARY[u](va), vb)
        elif kind == "guard":
            g = UNARY[u](va)  # read by the checked comparison only
            y = va * vb if g > c else va - vb
        elif kind == "dead_branch":
            y = None
            if va > vb and not clean:
                y = UNARY[u](va)
            if not clean and y is None:
                y = tape.cos(vb) * 3.0
        elif clean:
            y = None
        elif kind == "unchecked":
            y = va < vb + c
        else:
            y = BINARY[w](UNARY[u](va), vb)
        values.append(y)
    outputs = [v for (kind, *_), v in zip(steps, values[N_IN + N_PAR:], strict=True) if kind in ("live", "guard")]
    outputs = [values[0], *outputs]  # every live value: the clean program has no dead record
    if vector:
        return outputs
    return sum(o * (k + 1.0) for k, o in enumerate(outputs))


def functions(seed: int, vector: bool, policy: str = "raise", cse: bool = False
              ) -> tuple[tape.Function, tape.Function, tape.Function]:
    """(pruned, unpruned, clean) Functions of one random program, traced at one point; repeated
    subexpressions merged only with cse (tests/test_cse.py: merged adjoints add in another order)."""
    steps = program(seed)
    rng = np.random.default_rng(seed + 1000)
    x0, p0 = rng.uniform(-1, 1, N_IN), rng.uniform(-1, 1, N_PAR)
    made = [tape.trace(lambda x, p, clean=clean: run(steps, x, p, clean, vector), x0, p0, on_branch_change=policy,
                       prune=prune, cse=cse) for clean, prune in ((False, True), (False, False), (True, False))]
    return made[0], made[1], made[2]


def folded(seed: int) -> tuple[tape.Function, tape.Function, tape.Function, tape.Function]:
    """(folded and pruned, as recorded) Functions of one tape of the program, scalar and vector, where
    p1 is a leaf that is neither input nor param (it keeps its recorded value: what reads only it folds)."""
    rng = np.random.default_rng(seed + 1000)
    t = tape.Tape()
    x, p = t.vars(rng.uniform(-1, 1, N_IN)), t.vars(rng.uniform(-1, 1, N_PAR))
    steps = program(seed)
    vector, scalar = run(steps, x, p, False, True), run(steps, x, p, False, False)
    return (t.function(x, scalar, params=p[:1], cse=False), t.function(x, scalar, params=p[:1], prune=False),
            t.function(x, vector, params=p[:1], cse=False), t.function(x, vector, params=p[:1], prune=False))


@pytest.mark.parametrize("seed", SEEDS)
def test_records_of_no_input_fold_to_the_same_bits(seed):
    Fs, Gs, Fv, Gv = folded(seed)
    assert Fs.stats()["records_folded"] > 0 and Gv.stats()["records_folded"] == 0
    assert Fs.stats()["records_dropped"] == len(Gs) - len(Fs) > 0
    rng = np.random.default_rng(seed)
    p = rng.uniform(-1, 1, 1)
    for x in [rng.uniform(-1, 1, N_IN) for _ in range(8)] + [np.zeros(N_IN), np.full(N_IN, np.inf)]:
        v = rng.normal(size=N_IN)
        for method, args in (("__call__", (x, p)), ("jvp", (x, v, p)), ("jacobian", (x, p)),
                             ("vjp", (x, np.ones(Fv.n_outputs), p))):
            same(Fv, Gv, method, *args)
        for method, args in (("__call__", (x, p)), ("value_and_grad", (x, p)), ("hvp", (x, v, p)),
                             ("hessian", (x, p)), ("value_grad_hvp", (x, v, p))):
            same(Fs, Gs, method, *args)
    same(Fs.grad_function(), Gs.grad_function(), "__call__", x, p)


@pytest.mark.parametrize("seed", SEEDS)
def test_pruned_is_the_program_without_its_dead_work(seed):
    F, G, C = functions(seed, vector=True)
    stats = F.stats()
    assert stats["pruning"] == "done" and G.stats()["pruning"] == "off"
    assert stats["records_recorded"] == len(G) and stats["records_dropped"] == len(G) - len(F)
    assert len(F) < len(G)
    for name in ("op", "in0", "in1", "consts", "input_rows", "param_rows", "output_rows", "check_rows",
                 "check_expected"):
        assert np.array_equal(format.arrays(F)[name], format.arrays(C)[name]), name
    assert F.stats()["comparisons_checked"] == G.stats()["comparisons_checked"]
    arrays = format.arrays(F)
    format.validate({"format_version": np.array(format.FORMAT_VERSION, np.int64), **arrays,
                      "on_branch_change": np.array("raise"), "check_finite": np.array(False)})
    assert C.stats()["records_dropped"] == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_every_method_gives_the_same_bits(seed, tmp_path):
    rng = np.random.default_rng(seed)
    points = [rng.uniform(-1, 1, N_IN) for _ in range(6)] + [np.zeros(N_IN), np.full(N_IN, -0.0),
                                                             np.array([1e300, -1e-300, 0.5, np.inf, np.nan])]
    p = rng.uniform(-1, 1, N_PAR)
    Fs, Gs, _ = functions(seed, vector=False)
    Fv, Gv, _ = functions(seed, vector=True)
    Mv = functions(seed, vector=True, cse=True)[0]  # also merged: values and tangents keep their bits
    path = os.path.join(tmp_path, "f.npz")
    Fv.save(path)
    Lv = tape.load(path)
    assert Lv.stats()["records"] == len(Fv)
    for x in points:
        v, w = rng.normal(size=N_IN), rng.normal(size=Fv.n_outputs)
        same(Mv, Gv, "__call__", x, p)
        same(Mv, Gv, "jvp", x, v, p)
        same(Mv, Gv, "jacobian", x, p, "forward")
        for F, G in ((Fs, Gs), (Fv, Gv), (Lv, Gv)):
            same(F, G, "__call__", x, p)
            same(F, G, "jvp", x, v, p)
            same(F, G, "vjp", x, w if F.n_outputs > 1 else np.ones(1), p)
            same(F, G, "jacobian", x, p)
            same(F, G, "jacobian", x, p, "reverse")
            same(F, G, "jacobian", x, p, "forward")
        for method, args in (("value_and_grad", (x, p)), ("hvp", (x, v, p)), ("hessian", (x, p)),
                             ("value_grad_hvp", (x, v, p))):
            same(Fs, Gs, method, *args)
    X = np.array(points[:6])
    same_maps(Fs, Gs, Fv, Gv, X, p)
    dF, dG = Fs.grad_function(), Gs.grad_function()
    assert len(dF) <= len(dG)
    for x in points:
        same(dF, dG, "__call__", np.concatenate([x]), p)


@pytest.mark.parametrize("seed", SEEDS)
def test_branch_changes_where_it_did_and_retraces_the_same(seed):
    F, G, _ = functions(seed, vector=False)
    Fr, Gr, _ = functions(seed, vector=False, policy="retrace")
    rng = np.random.default_rng(seed + 7)
    p = rng.uniform(-1, 1, N_PAR)
    raised = 0
    for _ in range(40):
        x = rng.uniform(-1, 1, N_IN)
        outcome = []
        for H in (F, G):
            try:
                outcome.append(bits(H(x, p)))
            except tape.BranchChanged as exc:
                outcome.append(exc.where)
                assert os.path.basename(__file__) in exc.where
        assert outcome[0] == outcome[1]
        raised += isinstance(outcome[0], str)
        same(Fr, Gr, "value_and_grad", x, p)
        assert Fr.retraces == Gr.retraces
        assert Fr.stats()["records_dropped"] == len(Gr) - len(Fr)
    assert raised or seed not in FLIPPING


FLIPPING = (0, 1, 2, 3)  # programs where some of the 40 points flip a checked branch (so the test can fail)


def test_a_checked_comparison_keeps_the_records_it_reads():
    def f(x):
        g = tape.exp(x[1]) * 2.0  # feeds the comparison only
        if g > 3.0:
            return x[0] * 2.0
        return x[0] * 3.0

    F = tape.trace(f, [1.0, 1.0])
    assert len(F) == len(tape.trace(f, [1.0, 1.0], prune=False)) == 6  # 2 inputs, exp, *2, >3, x0*2
    assert F([1.0, 1.0]) == 2.0
    with pytest.raises(tape.BranchChanged) as info:
        F([1.0, -1.0])
    assert f"{os.path.basename(__file__)}:" in info.value.where


def test_unused_inputs_and_params_stay_in_order():
    def f(x, p):
        dead = tape.sin(x[0]) * p[0] + x[2]  # noqa: F841
        return x[1] * p[1]

    F = tape.trace(f, [1.0, 2.0, 3.0], [4.0, 5.0])
    assert F.n_inputs == 3 and F.n_params == 2 and len(F) == 6
    assert np.array_equal(F._input_rows, [0, 1, 2]) and np.array_equal(F._param_rows, [3, 4])
    value, grad = F.value_and_grad([1.0, 2.0, 3.0], [7.0, 9.0])
    assert value == 18.0 and grad.tolist() == [0.0, 9.0, 0.0]


def test_debug_lines_follow_the_kept_records():
    def f(x):
        dead = tape.exp(x[0])  # noqa: F841
        return tape.log(x[0])

    with tape.debug_nans():
        F = tape.trace(f, [1.0])
    assert len(F) == 2
    with pytest.raises(tape.NonFiniteError) as info, tape.debug_nans():
        F([-1.0])
    assert "return tape.log(x[0])" in str(info.value) or f"{os.path.basename(__file__)}:" in str(info.value)


def test_array_records_are_pruned_too():
    def f(x):
        dead = tape.exp(x) * 2.0  # noqa: F841
        return (x * x).sum()

    F = tape.trace(f, np.ones(5000))  # (small arrays are recorded as scalar records; tests/test_prune_arrays.py)
    assert F.stats()["pruning"] == "done" and F.stats()["records_dropped"] == 3  # exp, its 2.0, the product


def test_a_loaded_function_says_it_was_not_pruned_again():
    F = tape.trace(lambda x: x[0] * 2.0 + tape.sin(x[1]) * 0.0, [1.0, 2.0])
    buffer = io.BytesIO()
    F.save(buffer)
    buffer.seek(0)
    L = tape.load(buffer)
    assert L.stats()["records_dropped"] == 0 and "loaded" in L.stats()["pruning"]
    assert bits(L([3.0, 4.0])) == bits(F([3.0, 4.0]))


def test_a_select_on_an_input_of_constant_arms_is_not_folded():
    t = tape.Tape()
    x, k = t.var(1.0), t.var(0.5)  # k: a leaf neither input nor param
    y = tape.where(x < 0.0, tape.sin(k), tape.cos(k)) * 2.0 + x
    F, G = t.function([x], y), t.function([x], y, prune=False)
    assert F.stats()["records_folded"] == 2  # sin(k), cos(k); the select reads x's comparison
    for point in ([-1.0], [1.0], [0.0], [-0.0]):
        same(F, G, "value_and_grad", point)
    assert F([-1.0]) == 2.0 * np.sin(0.5) - 1.0 and F([1.0]) == 2.0 * np.cos(0.5) + 1.0
