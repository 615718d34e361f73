"""tape-bench runs end to end on a small size and reports what it promises."""

import json
import shutil

import numpy as np
import pytest

import tape
from tape import bench


def test_tape_bench_small_run(tmp_path, capsys):
    out = tmp_path / "result.json"
    assert bench.main(["rdag", "chain", "--size", "3000", "--repeat", "2", "--no-compile",
                       "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "rdag:" in printed and "chain:" in printed and "reverse sweep" in printed
    result = json.loads(out.read_text())
    rdag = result["workloads"][0]
    assert rdag["bytes_per_record"] == 29.0 and rdag["records"] > 3000
    assert set(rdag["ns_per_record"]) >= {"record (tape)", "tape: forward replay", "tape: reverse sweep",
                                        "Function: value F(x)", "Function: value_and_grad"}


def test_unknown_workload_is_an_error():
    with pytest.raises(SystemExit):
        bench.main(["nope"])


def test_rdag_output_reaches_every_record():
    plan = bench.rdag_plan(2000)
    t, out = bench.record_rdag_tape(plan)
    t.backward(out)
    assert np.all(t._stamp[: len(t)] == t._gen)


def test_floats_and_tape_compute_the_same_dag():
    plan = bench.rdag_plan(2000)
    t, out = bench.record_rdag_tape(plan)
    assert out.value == bench.record_rdag_floats(plan)


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_c_reference_gives_identical_adjoints(tmp_path):
    fn = bench.c_reference(tmp_path)
    assert fn is not None
    t, out = bench.record_rdag_tape(bench.rdag_plan(5000))
    t.backward(out)
    numba_adj = t._adj[: len(t)].copy()
    bench.run_c_reverse(fn, t, out)
    np.testing.assert_array_equal(t._adj[: len(t)], numba_adj)
    assert isinstance(out, tape.Var)
