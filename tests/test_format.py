"""save/load round trips, and hostile or broken files never reach a kernel."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

import tape
from tape.function import function
from tape.function.format import FORMAT_VERSION
from tape.kernels.array_ops import ARRAY_KIND, IS_ARRAY_OP, NAME, V3_ARRAY_OPS
from tape.kernels.ops import ARRAY_BASE, OPCODE, OPS

RNG = np.random.default_rng(11)


def f(x, p):
    y = tape.sin(x[0]) * x[1] + p[0] / (1.0 + x[2] * x[2])
    if x[0] > 0.0:
        y = y + tape.exp(x[2])
    return tape.where(x[1] > 0.0, y, -y) + 2.0 ** x[0]


@pytest.fixture
def saved(tmp_path):
    F = tape.trace(f, [0.5, 1.0, -0.2], params=[3.0])
    path = tmp_path / "f.npz"
    F.save(path)
    return F, path


def test_round_trip(saved):
    F, path = saved
    G = tape.load(path)
    assert (G.n_inputs, G.n_outputs, G.n_params, len(G)) == (F.n_inputs, F.n_outputs, F.n_params, len(F))
    for _ in range(50):
        x = RNG.uniform(0.1, 2, 3)
        p = RNG.uniform(-1, 1, 1)
        assert G(x, params=p) == F(x, params=p)
        np.testing.assert_array_equal(G.gradient(x, params=p), F.gradient(x, params=p))
    with pytest.raises(tape.BranchChanged) as info:
        G([-1.0, 1.0, 0.0])
    assert info.value.where.endswith(f"test_format.py:{f.__code__.co_firstlineno + 2}")


def arrays_of(path):
    with np.load(path, allow_pickle=False) as npz:
        return {k: npz[k].copy() for k in npz.files}


def write(path, arrays, **overrides):
    data = dict(arrays, **overrides)
    with open(path, "wb") as fh:
        np.savez(fh, **data)
    return path


def assert_rejected(path, match=None):
    with pytest.raises(tape.TapeFormatError, match=match):
        tape.load(path)


def test_truncated_files(saved, tmp_path):
    _, path = saved
    blob = path.read_bytes()
    for cut in list(range(0, 200, 7)) + list(range(200, len(blob), max(1, len(blob) // 60))):
        broken = tmp_path / "cut.npz"
        broken.write_bytes(blob[:cut])
        assert_rejected(broken)


def test_flipped_bytes_are_rejected_or_harmless(saved, tmp_path):
    _, path = saved
    blob = bytearray(path.read_bytes())
    rejected = loaded = 0
    for k in range(300):
        corrupt = bytearray(blob)
        pos = int(RNG.integers(len(corrupt)))
        corrupt[pos] ^= 1 << int(RNG.integers(8))
        target = tmp_path / f"flip{k}.npz"
        target.write_bytes(bytes(corrupt))
        try:
            G = tape.load(target)
        except tape.TapeFormatError:
            rejected += 1
            continue
        loaded += 1  # a flip that left a valid tape (say, in a value): replays without crashing
        G.value_and_grad([0.5, 1.0, -0.2])
    assert rejected > 0


def test_not_a_zip_and_missing_file(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_text("this is not a tape")
    assert_rejected(junk, "unreadable")
    with pytest.raises(FileNotFoundError):
        tape.load(tmp_path / "nope.npz")


def structural_cases(a):
    """(description, overrides, expected message) for systematically broken tapes."""
    n = len(a["op"])
    op, in0, in1 = a["op"], a["in0"], a["in1"]
    first_binary = int(np.flatnonzero(in1 != tape.NO_INPUT)[0])
    first_op = int(np.flatnonzero(in0 != tape.NO_INPUT)[0])
    leaf = int(np.flatnonzero(op == 0)[0])

    def put(arr, i, v):
        arr = arr.copy()
        arr[i] = v
        return arr

    select_row = int(np.flatnonzero(op == OPCODE["select"])[0])
    return [
        ("unknown opcode", {"op": put(op, first_op, 250)}, f"record {first_op} .*unknown opcode"),
        ("forward-pointing first input", {"in0": put(in0, first_op, first_op)}, f"record {first_op} .*first input"),
        ("second input past the end", {"in1": put(in1, first_binary, n + 5)}, f"record {first_binary} "),
        ("leaf with an input", {"in0": put(in0, leaf, 0)}, f"record {leaf} .*leaf with inputs"),
        ("select without its comparison", {"op": put(op, select_row - 1, OPCODE["add"])},
         f"record {select_row} .*select"),
        ("input row out of range", {"input_rows": np.array([0, 1, n], np.int64)}, "input_rows"),
        ("negative output row", {"output_rows": np.array([-1], np.int64)}, "output_rows"),
        ("input that is not a leaf", {"input_rows": np.array([0, 1, first_op], np.int64)}, "leaf"),
        ("check on a non-comparison", {"check_rows": np.array([first_op], np.int64)}, "comparison"),
        ("input is also a param", {"param_rows": a["input_rows"][:1]}, "distinct"),
        ("op as int16", {"op": op.astype(np.int16)}, "'op' must be uint8"),
        ("indices as int64", {"in0": in0.astype(np.int64)}, "'in0' must be uint32"),
        ("values as float32", {"val": a["val"].astype(np.float32)}, "'val' must be float64"),
        ("short value array", {"val": a["val"][:-1]}, "disagree in length"),
        ("2-D op array", {"op": op.reshape(1, -1)}, "dimension"),
        ("future format version", {"format_version": np.array(FORMAT_VERSION + 1, np.int64)},
         f"version {FORMAT_VERSION + 1}"),
        ("checks of unequal length", {"check_expected": np.zeros(0, bool)}, "check arrays"),
        ("scalar flag with two outputs", {"output_rows": np.array([n - 1, n - 1], np.int64)}, "scalar-output"),
        ("no outputs", {"output_rows": np.zeros(0, np.int64), "scalar_output": np.array(False)}, "at least one"),
        ("empty tape", {k: a[k][:0] for k in ("op", "in0", "in1", "val")}, "length"),
    ]


def test_structurally_broken_tapes(saved, tmp_path):
    _, path = saved
    good = arrays_of(path)
    for k, (what, overrides, match) in enumerate(structural_cases(good)):
        broken = write(tmp_path / f"case{k}.npz", good, **overrides)
        with pytest.raises(tape.TapeFormatError, match=match):
            tape.load(broken)
        assert what


def test_missing_extra_and_pickled_arrays(saved, tmp_path):
    _, path = saved
    good = arrays_of(path)
    missing = {k: v for k, v in good.items() if k != "consts"}
    assert_rejected(write(tmp_path / "missing.npz", missing), "missing \\['consts'\\]")
    assert_rejected(write(tmp_path / "extra.npz", good, payload=np.zeros(3)), "unexpected \\['payload'\\]")
    pickled = io.BytesIO()
    np.savez(pickled, **dict(good, val=np.array([object()] * len(good["val"]), dtype=object)))
    (tmp_path / "pickle.npz").write_bytes(pickled.getvalue())
    assert_rejected(tmp_path / "pickle.npz")


def test_validation_runs_before_any_kernel(saved, tmp_path, monkeypatch):
    _, path = saved
    good = arrays_of(path)
    broken = write(tmp_path / "b.npz", good, in0=np.full_like(good["in0"], 10**9))
    called = []
    monkeypatch.setattr(function, "Function", lambda *a, **k: called.append(1))
    assert_rejected(broken)
    assert not called


def test_save_then_load_preserves_nan_and_inf_constants(tmp_path):
    F = tape.trace(lambda x: tape.maximum(x[0], -math.inf) + x[0] * math.nan, [1.0])
    F.save(tmp_path / "g.npz")
    G = tape.load(tmp_path / "g.npz")
    assert math.isnan(G([2.0])) and math.isnan(F([2.0]))


def test_version_3_files_with_array_records_load(tmp_path):
    """Version 3 put array opcode k at 64 + k (ARRAY_BASE was 64): such a file, written here from a
    version-4 one, loads by name and gives the same numbers; an opcode version 3 lacked is rejected."""
    def g(x):
        y = np.exp(-x) * np.sin(x) + x ** 2 - np.maximum(x, 0.5) / (1.0 + x * x)
        z = tape.where(x > 0.2, y, np.sqrt(np.abs(x)))
        return (z @ z) + tape.logsumexp(z) + z.max() + np.tanh(z).sum()

    F = tape.trace(g, np.linspace(-1.0, 2.0, 2000))  # array records: 2000 elements
    F.save(tmp_path / "v4.npz")
    arrays = arrays_of(tmp_path / "v4.npz")
    # version 3's array table: input, constant, its unary ops (all below opcode 64), its 7 binary ops, the rest
    v3 = ["input", "constant", *(op.name for op in OPS[:64] if op.kind == "unary"), "add", "sub", "mul", "div", "pow",
          "maximum", "minimum", "lt", "le", "eq", "ne", "select", "sum", "matmul", "logsumexp", "gather", "pack", "all",
          "any", "max", "min"]
    assert V3_ARRAY_OPS == tuple(v3)
    to_v3 = np.arange(256)
    for code in np.flatnonzero(IS_ARRAY_OP):
        name = NAME[code].removeprefix("array ")
        to_v3[code] = 64 + v3.index(name) if name in v3 else 255
    arrays["op"] = to_v3[arrays["op"]].astype(np.uint8)
    arrays["plans"][:, 0] = to_v3[arrays["plans"][:, 0]]
    arrays["format_version"] = np.array(3, np.int64)
    del arrays["output_shape"]  # new in version 4
    assert len({ARRAY_KIND[code] for code in F._op if code >= ARRAY_BASE}) >= 8  # many kinds of array record
    assert not np.isin(arrays["op"], [255]).any()
    G = tape.load(write(tmp_path / "v3.npz", arrays))
    x = np.cos(np.arange(2000.0))
    assert G(x) == F(x)
    np.testing.assert_array_equal(G.gradient(x), F.gradient(x))
    arrays["op"][np.flatnonzero(arrays["op"] >= 64)[1]] = 64 + len(v3)
    assert_rejected(write(tmp_path / "bad.npz", arrays), "unknown opcode")
