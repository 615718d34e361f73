"""bench/array_programs.py's --jit column: tape.jit(f, arrays=True) of a program, checked as its other columns."""

import importlib.util
from types import SimpleNamespace

import numpy as np

import tape


def _programs():
    spec = importlib.util.spec_from_file_location("array_programs", "bench/array_programs.py")
    programs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(programs)
    programs.nn = SimpleNamespace(sigmoid=tape.sigmoid, logsumexp=tape.logsumexp, loop=programs.loop)
    return programs


def _refused(th):  # a number that becomes an array in a loop: Numba's typing, as a JitError
    h = 0.0
    for _ in range(2):
        h = h + th
    return h.sum()


def test_jit_column_writes_array_records_or_says_it_cannot(capsys):
    programs = _programs()
    x, f, hand, _ = programs.heat(1100, 3)  # its loop: looped's, which Numba compiles
    rows, got = {}, {}
    extra = programs.jitted(tape, "heat", f, x, rows, got)
    value, grad = got["jit"]
    want_value, want = hand(x)
    assert extra["jit arrays"] == 1.0 and extra["jit first"] > 0 and set(rows) == {"jit"}
    assert abs(value - want_value) <= 1e-12 * abs(want_value) and np.max(np.abs(grad - want)) <= 1e-12
    assert np.array_equal(rows["jit"]()[1], grad) and "array records" in programs.jit_column({"jit": 1.0, **extra})
    x, f, hand, _ = programs.heat(1100, 3, pad=True)  # np.pad's 'wrap': one gather record (s21)
    rows, got = {}, {}
    assert programs.jitted(tape, "heat-pad", f, x, rows, got)["jit arrays"] == 1.0
    want_value, want = hand(x)
    assert abs(got["jit"][0] - want_value) <= 1e-12 * abs(want_value) and np.max(np.abs(got["jit"][1] - want)) <= 1e-12
    x, f, hand, _ = programs.gru(2, 2, 2)  # a carry from np.zeros that becomes Vars (tape/compiled/carries.py)
    rows, got = {}, {}
    assert programs.jitted(tape, "gru", f, x, rows, got)["jit arrays"] == 0.0  # (12 params: scalar records)
    want_value, want = hand(x)
    assert abs(got["jit"][0] - want_value) <= 1e-12 * abs(want_value) and np.max(np.abs(got["jit"][1] - want)) <= 1e-12
    assert programs.jitted(tape, "refused", _refused, np.ones(3), rows, got) == {}
    assert "Cannot unify" in capsys.readouterr().err
    assert programs.jit_column({}) == "  tape.jit: not compiled"
