"""tape-cli: the CLI contract, and that every comparison computes the same thing."""

import json
import math
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import tape
from tape.bench import arrays, baseline, c_reference, cli, engines, programs, sparse
from tape.bench.jit_arrays import JIT_ARRAYS, load, scalar
from tape.function import derivatives


def test_small_run_of_every_workload(tmp_path, capsys):
    out = tmp_path / "result.json"
    assert cli.main(["--size", "300", "--repeat", "2", "--no-compile", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    mix = [*programs.DEFAULT_MIX, *arrays.DEFAULT_ARRAYS]
    for name in mix:
        assert f"\n{name} (size 300" in printed
    assert printed.splitlines()[-1].startswith("tape-bench: done in ") and f"every figure is in {out}" in printed
    result = json.loads(out.read_text())
    assert [w["workload"] for w in result["workloads"]] == mix
    for w in result["workloads"][len(programs.DEFAULT_MIX):]:  # array workloads: checked against hand NumPy
        assert w["gradient_error"] < 1e-12 and w["value_error"] < 1e-12
        assert set(w["median_s"]) >= {"hand-written NumPy", "tape: replayed F.value_and_grad"}
    rdag = result["workloads"][0]
    assert rdag["tape_bytes_per_record"] == 29.0 and rdag["records"] > 300
    assert set(rdag["phases"]) == {"record", "record, every handle kept", "record, tape.jit", "record + gradient",
                                   "record + gradient, tape.jit",
                                   "forward replay", "reverse sweep",
                                   "Function: value", "Function: value_and_grad", "Function: jvp", "Function: hvp"}
    assert all(r["points"] >= 4 for r in rdag["map"].values())
    assert rdag["jit"]["first_call_s"] > 0 and "tape.jit: first call" in printed
    assert [w["workload"] for w in result["workloads"] if w.get("jit")] == list(programs.JITTED)
    seed = result["workloads"][programs.DEFAULT_MIX.index("seed")]
    assert "tape.grad(f)(x)" in seed["phases"] and "tape.grad(f)(x)" in printed
    assert set(result["jacobian"]["seconds"]) >= {"forward, 16 directions per sweep", "reverse, 1 direction per sweep"}
    banded, ba, hessian = result["sparse"].values()
    assert (banded["colors"], hessian["colors"]) == (3, 3) and ba["colors"] >= 15  # 15 inputs per row
    assert banded["dense_estimated"] and hessian["dense_estimated"] and not ba["dense_estimated"]
    assert ba["shape"] == [4000, 1740] and "Sparse vs dense derivatives" in printed
    for r in rdag["phases"].values():
        assert r["min_s"] <= r["median_s"] <= r["max_s"]


@pytest.mark.parametrize("name", sorted(programs.JITTED))
def test_jitted_workloads_record_as_the_python_ones(name):
    plan = programs.PLANS[name](400)
    tj, _, yj = engines.tape_jit_record(name, plan)
    tp, _, yp = engines.tape_record(name, plan)
    n = len(tp)
    assert len(tj) == n > 12 and yj.index == yp.index and tj.n_consts == tp.n_consts
    for a in ("_op", "_in0", "_in1", "_val"):
        assert np.array_equal(getattr(tj, a)[:n], getattr(tp, a)[:n]), a
    assert np.array_equal(tj._consts[:tj.n_consts], tp._consts[:tp.n_consts])


def test_compare_runs_whatever_is_installed(capsys):
    assert cli.main(["rosenbrock", "rdag", "--size", "50", "--repeat", "1", "--no-compile", "--compare"]) == 0
    printed = capsys.readouterr().out
    assert "articles' Node engine — record + gradient" in printed
    assert "plain floats kept in a list (no gradient) — record, every handle kept" in printed
    assert "the same with tape.pace_gc(False) — record, every handle kept" in printed
    assert "plain floats" in printed
    assert cli.main(["seed", "--size", "20", "--repeat", "1", "--no-compile", "--compare"]) == 0
    assert "articles' Node engine, value and gradient — tape.grad(f)(x)" in capsys.readouterr().out


def test_scaling_curve_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "scaling.png"
    assert cli.main(["chain", "--sizes", "1e2,1e3", "--repeat", "1", "--no-compile", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "ns per record as the tape grows" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["nope"], "unknown workload nope"),
    (["--size", "0"], "positive whole numbers"),
    (["--size", "-5"], "positive whole numbers"),
    (["--size", "1.5"], "positive whole numbers"),
    (["--size", "lots"], "not a number"),
    (["rdag", "--size", "1e13"], "GiB"),
    (["rosenbrock", "--size", "1"], "at least 2"),
    (["--plot", "x.png"], "--sizes"),
    (["--sizes", "10,0"], "positive"),
])
def test_bad_arguments_give_one_line_errors(args, message, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_rdag_output_depends_on_every_record():
    t, xs, out = engines.tape_record("rdag", programs.rdag_plan(2000))
    reached = np.zeros(len(t), bool)
    reached[out.index] = True
    for i in range(out.index, -1, -1):
        if reached[i]:
            reached[list(t.record(i).inputs)] = True
    assert reached.all()


@pytest.mark.parametrize("name", programs.DEFAULT_MIX)
def test_engines_compute_the_same_function(name):
    plan = programs.PLANS[name](40)
    t, xs, out = engines.tape_record(name, plan)
    grad = t.gradient(out, xs)
    floats = engines.plain_floats(name, plan)()
    assert floats == pytest.approx(out.value, rel=1e-12)
    nodes = engines.baseline_dynamic(name, plan)()
    np.testing.assert_allclose(nodes, grad, rtol=1e-10, atol=1e-12)


def as_array(gradient) -> np.ndarray:
    """An engine's gradient (floats, tensors, CasADi DM, JAX array) as a flat float array."""
    if hasattr(gradient, "full"):
        return np.asarray(gradient.full(), dtype=float).ravel()
    return np.array([float(g) for g in np.ravel(np.asarray(gradient, dtype=object))])


@pytest.mark.parametrize("engine", [e for e in engines.ENGINES[2:] if e.module], ids=lambda e: e.name)
def test_optional_engines_agree_with_tape(engine):
    if engine.missing():
        pytest.skip(engine.missing())
    for name in engine.workloads:
        plan = programs.PLANS[name](min(20, engine.cap.get(name, 20)))
        t, xs, out = engines.tape_record(name, plan)
        grad = t.gradient(out, xs)
        for factory in (engine.dynamic, engine.compiled):
            if factory is not None:
                np.testing.assert_allclose(as_array(factory(name, plan)()), grad, rtol=1e-9, atol=1e-12)


def test_numpy_rosenbrock_gradient_agrees():
    plan = programs.rosenbrock_plan(30)
    t, xs, out = engines.tape_record("rosenbrock", plan)
    np.testing.assert_allclose(engines.numpy_rosenbrock("rosenbrock", plan)(), t.gradient(out, xs), rtol=1e-12)


def test_baseline_handles_deep_graphs():
    x = baseline.Node(0.5)
    y = x
    for _ in range(50_000):
        y = baseline.FUNCTIONS["sin"](y) + x
    baseline.backward(y)
    assert math.isfinite(x.grad)


def test_c_reference_gives_identical_adjoints(tmp_path):
    c = c_reference.c_reference(tmp_path)
    if c is None:
        pytest.skip("no C compiler")
    t, xs, out = engines.tape_record("rdag", programs.rdag_plan(5000))
    t.backward(out)
    n = len(t)
    numba_reached = t._stamp[:n] == t._gen
    numba_adj = t._adj[:n][numba_reached]
    c_reference.run_c_reverse(c, t, out)
    np.testing.assert_array_equal(t._stamp[:n] == t._gen, numba_reached)
    np.testing.assert_array_equal(t._adj[:n][numba_reached], numba_adj)
    assert isinstance(out, tape.Var)


def test_sparse_rows_compute_the_dense_derivatives():
    n = 300
    x = np.random.default_rng(0).uniform(-1, 1, n)
    F = tape.trace(sparse.tridiagonal, [0.0] * n)
    eye = np.eye(n)[:, :sparse.COLUMNS]
    assert np.array_equal(F.sparse_jacobian(x).toarray()[:, :sparse.COLUMNS], F.jacobian(x, seeds=eye))
    B, y = sparse.bundle_adjustment(3, 10, 2)
    assert np.array_equal(B.sparse_jacobian(y).toarray(), B.jacobian(y, mode="forward"))
    H = tape.trace(sparse.banded, [0.0] * n)
    np.testing.assert_allclose(H.sparse_hessian(x).toarray()[:, :sparse.COLUMNS], derivatives.hessian_columns(H, eye),
                               rtol=1e-14, atol=1e-14)


def test_the_sparse_table_alone_at_the_sizes_asked_for(tmp_path, capsys):
    out = tmp_path / "sparse.json"
    assert cli.main(["sparse", "--sizes", "200,400", "--repeat", "1", "--no-compile", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["workloads"] == [] and "jacobian" not in result and "Sparse vs dense derivatives" in printed
    first = result["sparse_first_use_s"]
    assert list(first) == ["tape.trace's passes", "sparse Jacobian", "sparse Hessian"] and min(first.values()) > 0
    assert "first uses in this process (compile, or load from the cache), before the rows: tape.trace's" in printed
    rows = result["sparse"]
    assert len(rows) == 6 and all(f"n = {n}," in printed for n in (200, 400))
    banded = [r for label, r in rows.items() if label.startswith("banded residual")]
    assert [r["shape"] for r in banded] == [[200, 200], [400, 400]] and {r["colors"] for r in banded} == {3}
    assert all(r["sparse_s"] > 0 and r["gradient_s"] > 0 and r["dense_estimated"] for r in banded)
    with pytest.raises(SystemExit):
        cli.main(["sparse", "--sizes", "200,400", "--plot", str(tmp_path / "p.png")])


FIRST_USE = """
import sys
from numba.core.registry import CPUDispatcher
from tape.bench import sparse
from tape.kernels import twins
import tape
def machine_code():  # the tape kernels' compiled or loaded signatures in this process
    kernels = {id(k): k for name, m in list(sys.modules.items()) if name.startswith("tape.kernels")
               for k in vars(m).values() if isinstance(k, CPUDispatcher)}
    return sum(len(k.overloads) for k in kernels.values())
F, H = tape.trace(sparse.tridiagonal, [0.0] * 400), tape.trace(sparse.banded, [0.0] * 400)  # past twins.SQUARE
if sys.argv[1] == "first":
    assert min(sparse.first_use().values()) > 0 and twins.ENABLED
before = machine_code()
F.jacobian_colors(), H.hessian_colors(), F.sparse_jacobian([0.5] * 400), H.sparse_hessian([0.5] * 400)
print(machine_code() - before)
"""


def test_sparse_rows_time_the_kernels_warm():
    """The table's timings (pattern and coloring first) compile or load no kernel once first_use has run; without
    it they would (a fresh machine's banded row timed a 1-2 s compile)."""
    run = [subprocess.run([sys.executable, "-c", FIRST_USE, side], check=True, capture_output=True, text=True)
           for side in ("first", "not")]
    assert int(run[0].stdout) == 0 < int(run[1].stdout)


STAND_INS = """
import sys
from tape.bench import arrays
from tape.kernels import compiling
from tape.sweeps import compiled, fused_runs, stretches
def stand_ins():  # seconds the stand-ins of compiled kernels have run in this process
    gates = [fused_runs.FORWARD.gate, fused_runs.REVERSE.gate,
             *(s._gate for s in fused_runs.Shaped.made.values() if s._gate is not None)]
    return (compiled.CLOCK.spent + sum(g.clock.spent for g in gates)
            + sum(s.clock.spent for s in stretches.Stretch.made.values()))
compiling.EAGER = sys.argv[1] == "eager"
r = arrays.bench_array(sys.argv[2], int(sys.argv[3]), 2, False, lambda text: None)
print(stand_ins(), min(r["first_call_s"].values()) > 0)
"""


@pytest.mark.parametrize("name, size", [("rosenbrock-array", 40_000), ("stencil", 65_536)])
def test_array_rows_time_the_kernels_not_their_stand_ins(name, size, tmp_path):
    """tape-bench's array rows are steady state: with compiling.EAGER (tape-bench's) the first calls compile or load
    every kernel they use (the fused runs', the driver's tables'), and no stand-in runs, first calls included; without
    it (a program's first calls) the stand-ins run (a fresh machine's rosenbrock-array row read 4.4x hand NumPy, 0.54x
    once compiled). An empty cache: compiled, not loaded. Records of 2^15 elements or more: no small tape's rental of
    its tables (MAKE)."""
    env = {**os.environ, "TAPE_CACHE_DIR": str(tmp_path)}
    run = {side: subprocess.run([sys.executable, "-c", STAND_INS, side, name, str(size)], check=True, env=env,
                                capture_output=True, text=True).stdout.split() for side in ("eager", "not")}
    assert run["eager"] == ["0.0", "True"] and float(run["not"][0]) > 0


def test_named_workloads_run_alone(capsys):
    assert cli.main(["rosenbrock-array", "--size", "1000", "--repeat", "1", "--no-compile"]) == 0
    printed = capsys.readouterr().out
    assert "rosenbrock-array (size 1,000" in printed and "first calls" in printed
    assert "Jacobian of" not in printed and "Sparse vs dense" not in printed


def test_progress_talks_in_a_log(capsys, monkeypatch):
    """Not on a terminal (CI, a log file), tape-bench says each phase once as it starts: a first compile
    never looks like a hang."""
    from tape.bench.timing import Progress

    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    progress = Progress()
    for text in ["measuring Numba compile", "rdag record 1/3", "rdag record 2/3", "rdag replay 1/3"]:
        progress(text)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == ["measuring Numba compile", "rdag record 1/3",
                                                          "rdag replay 1/3"]


def test_the_compile_probe_leaves_its_kernels_for_this_process(tmp_path, monkeypatch):
    """compile_times compiles in a fresh cache; what it compiled is copied into tape's cache (never over
    a file already there), so the benchmark that follows loads it rather than compiling it again."""
    from tape.bench import phases

    ours = tmp_path / "tape-cache"
    (ours / "kernels").mkdir(parents=True)
    (ours / "kernels" / "kept.nbi").write_text("ours")
    monkeypatch.setenv("TAPE_CACHE_DIR", str(ours))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)

    def probe(args, env, **kwargs):  # what a compiling run leaves: index and data files in its cache
        folder = os.path.join(env["NUMBA_CACHE_DIR"], "kernels")
        os.makedirs(folder, exist_ok=True)
        for name in ("_sweeps.reverse_sweep-1.py311.nbi", "_sweeps.reverse_sweep-1.py311.1.nbc", "kept.nbi"):
            with open(os.path.join(folder, name), "w") as f:
                f.write("probe")
        return subprocess.CompletedProcess(args, 0, stdout="0.25 1.5\n")

    monkeypatch.setattr(phases.subprocess, "run", probe)
    assert phases.compile_times() == {"numpy_numba_import_s": 0.25, "first_call_s": 1.5, "cached_load_s": 1.5}
    assert sorted(p.name for p in (ours / "kernels").iterdir()) == [
        "_sweeps.reverse_sweep-1.py311.1.nbc", "_sweeps.reverse_sweep-1.py311.nbi", "kept.nbi"]
    assert (ours / "kernels" / "kept.nbi").read_text() == "ours"


@pytest.mark.parametrize("name", list(JIT_ARRAYS))
def test_jit_array_programs_differentiate_as_central_differences_of_njit(name):
    source, x0, data_of = JIT_ARRAYS[name]
    data = data_of(3)
    plain = numba.njit(load(source, numba.njit))
    total = scalar(tape.jit(load(source, numba.njit)), x0, data)
    value, grad = tape.value_and_grad(total)(x0, *data)
    assert value == pytest.approx(np.sum(plain(x0, *data)), rel=1e-13)
    h, central = 1e-6, np.empty(x0.size)
    for i in range(x0.size):
        up, down = x0.ravel().copy(), x0.ravel().copy()
        up[i] += h
        down[i] -= h
        central[i] = np.sum(plain(up.reshape(x0.shape), *data)) - np.sum(plain(down.reshape(x0.shape), *data))
    central /= 2 * h
    np.testing.assert_allclose(np.ravel(grad), central, rtol=1e-6, atol=1e-7)


def test_jit_arrays_rows_alone(tmp_path, capsys):
    out = tmp_path / "jit.json"
    assert cli.main(["jit-arrays", "--size", "3000", "--repeat", "1", "--no-compile", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["jit_arrays"]
    assert list(rows) == list(JIT_ARRAYS)
    for row in rows.values():
        assert row["records"] >= 1000 and row["replay_ns_per_record"] > 0 and row["first_call_s"] > 0
    text = capsys.readouterr().out
    assert "tape.jit on arrays" in text and "sparse" not in text.lower().split("tape-bench: done")[0]
