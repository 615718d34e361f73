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
    del arrays["input_tree"], arrays["input_keys"]  # new in version 5: x0's structure
    assert len({ARRAY_KIND[code] for code in F._op if code >= ARRAY_BASE}) >= 8  # many kinds of array record
    assert not np.isin(arrays["op"], [255]).any()
    G = tape.load(write(tmp_path / "v3.npz", arrays))
    x = np.cos(np.arange(2000.0))
    assert G(x) == F(x)
    np.testing.assert_array_equal(G.gradient(x), F.gradient(x))
    arrays["op"][np.flatnonzero(arrays["op"] >= 64)[1]] = 64 + len(v3)
    assert_rejected(write(tmp_path / "bad.npz", arrays), "unknown opcode")


# -- the structure of the inputs and params (issue 29: a Function traced on a dict forgot it) --------

Pair = __import__("collections").namedtuple("Pair", "u v")


def tree_f(x, p):
    s = (x["w"] * x["w"]).sum() * x["b"][0] + x["b"][1][0] * np.tanh(x["b"][1][1]["z"]).sum()
    return s * p["scale"] + x["n"][3] * p["k"][1] - x["n"][10] + x["pair"].u * x["pair"].v


X0 = {"w": np.array([[1.0, 2.0], [3.0, -1.0]]), "b": (0.5, [1.5, {"z": np.array([0.1, 0.2, 0.3])}]),
      "n": {3: 0.7, 10: 1.0}, "pair": Pair(2.0, -1.0)}
P0 = {"scale": 1.5, "k": [np.array([1.0, 2.0]), 4.0]}


def round_trip(F, tmp_path, name="t.npz"):
    F.save(tmp_path / name)
    return tape.load(tmp_path / name)


def leaves_equal(a, b):
    """Two results in one structure (b: a namedtuple of a comes back as a tuple), the same bits leaf by leaf."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b)
        return all(leaves_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        assert type(b) is (list if isinstance(a, list) else tuple) and len(a) == len(b)
        return all(leaves_equal(u, v) for u, v in zip(a, b, strict=True))
    assert np.shape(a) == np.shape(b)
    return np.array_equal(a, b)


def test_a_function_keeps_its_input_and_param_structures_in_its_file(tmp_path):
    F = tape.trace(tree_f, X0, params=P0)
    G = round_trip(F, tmp_path)
    x = {"w": np.array([[0.5, -2.0], [1.0, 3.0]]), "b": (1.5, [0.25, {"z": np.array([1.0, -1.0, 0.5])}]),
         "n": {3: 2.0, 10: -1.0}, "pair": Pair(0.5, 3.0)}
    p = {"scale": -0.5, "k": [np.array([0.0, 3.0]), 1.0]}
    assert G(x) == F(x) and G(x, params=p) == F(x, params=p)
    grad = G.gradient(x, params=p)
    assert leaves_equal(F.gradient(x, params=p), grad)
    # by hand: d/dw = 2 w b0 scale; d/dn = (k[1], -1); d/dpair = (v, u)
    np.testing.assert_allclose(grad["w"], 2 * x["w"] * 1.5 * -0.5, rtol=1e-15)
    assert grad["n"] == {3: 1.0, 10: -1.0} and grad["pair"] == (3.0, 0.5)
    assert leaves_equal(F.hessian(x, params=p), G.hessian(x, params=p))
    assert leaves_equal(F.jacobian(x, params=p), G.jacobian(x, params=p))
    with pytest.raises(ValueError, match="structure of the x0 traced"):
        G({"w": x["w"]})


def test_flat_array_and_nested_calls_keep_their_structures(tmp_path):
    A = tape.trace(lambda X: (X * X).sum(), np.ones((2, 3)))  # an array x0: its shape (as before)
    assert round_trip(A, tmp_path, "a.npz").gradient(np.ones((2, 3))).shape == (2, 3)
    L = tape.trace(lambda v: v[0] * v[1], (1.0, 2.0))  # a flat tuple: a vector
    np.testing.assert_array_equal(round_trip(L, tmp_path, "l.npz").gradient((3.0, 4.0)), [4.0, 3.0])
    E = tape.trace(lambda d: d["a"] * 2.0 + d["b"].sum(), {"a": 1.0, "b": np.zeros(0)})  # an empty leaf
    assert round_trip(E, tmp_path, "e.npz").gradient({"a": 1.0, "b": np.zeros(0)})["a"] == 2.0
    inner = tape.trace(lambda d: d["u"] * d["v"], {"u": 1.0, "v": 2.0})
    outer = tape.trace(lambda x: inner({"u": x[0], "v": x[1]}) + x[0], [1.0, 2.0])  # a call record
    H = round_trip(outer, tmp_path, "o.npz")
    assert list(H._callees[0]._layout.spec) == ["u", "v"] and H._callees[0]({"u": 3.0, "v": 4.0}) == 12.0
    np.testing.assert_array_equal(H.gradient([3.0, 4.0]), [5.0, 3.0])


def test_a_key_a_file_cannot_hold_is_named_at_save(tmp_path):
    F = tape.trace(lambda d: d[("a", 1)] * 2.0, {("a", 1): 1.0})
    with pytest.raises(TypeError, match=r"dict key \('a', 1\) of type tuple; a file holds str and int keys"):
        F.save(tmp_path / "k.npz")


def test_files_without_a_structure_still_load(tmp_path):
    F = tape.trace(tree_f, X0, params=P0)
    arrays = arrays_of(_saved_path(F, tmp_path))
    for name in ("input_tree", "input_keys", "param_tree", "param_keys"):
        del arrays[name]
    G = tape.load(write(tmp_path / "old.npz", arrays))  # as a version-5 file written before the structure
    flat = np.concatenate([np.ravel(leaf) for leaf in (0.5, 1.5, X0["b"][1][1]["z"], 0.7, 1.0, 2.0, -1.0, X0["w"])])
    assert G(flat) == F(X0)


def _saved_path(F, tmp_path):
    F.save(tmp_path / "s.npz")
    return tmp_path / "s.npz"


def tree_cases(a):
    """(overrides, expected message) for crafted structures: each must be refused before anything runs."""
    t, k = a["input_tree"], a["input_keys"]
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    deep = np.array([2, 1] * 100_000 + [0], np.int64)  # 100,000 nested lists around one number
    return [
        ({"input_tree": t.astype(np.int32)}, "'input_tree' must be int64"),
        ({"input_tree": t.reshape(1, -1)}, "1-D each"),
        ({"input_keys": np.zeros(len(k), np.int64)}, "'input_keys' str"),
        ({"input_tree": i64(9)}, "unknown kind 9"),
        ({"input_tree": t[:-1]}, "ends where"),
        ({"input_tree": i64(2, 10**12, 0)}, "a count of 1000000000000"),
        ({"input_tree": i64(4, -1)}, "a count of -1"),
        ({"input_tree": deep}, "nested deeper than 64 levels"),
        ({"input_tree": i64(4, 2, 0, 0, 0, 0)}, r"leaves hold 2 numbers, the Function has \d+ inputs"),
        ({"input_tree": i64(1, 2, 10**9, 10**9)}, "leaves hold more than"),
        ({"input_tree": i64(1, 1, -3)}, r"shape \(-3,\)"),
        ({"input_tree": i64(1, 40, *range(40))}, "40 dimensions"),
        ({"input_tree": i64(2, 1, 5, 3)}, "flat list of numbers inside"),
        ({"input_tree": i64(5, 10**15)}, "flat list of 1000000000000000 numbers"),
        ({"input_tree": np.concatenate([t, [0]])}, "1 tokens and 0 keys left over"),
        ({"input_keys": np.concatenate([k, ["extra"]])}, "0 tokens and 1 keys left over"),
        ({"input_keys": k[::-1].copy()}, "not distinct keys of one kind in sorted order"),
        ({"input_keys": np.array([k[0]] * len(k))}, "not distinct"),
        ({"input_tree": _key_kind(t, 7)}, "key of kind 7"),
        ({"input_tree": _key_kind(t, 1)}, "int key .* is not an integer"),
        ({"input_keys": np.zeros(0, "<U1")}, "key 0 of 0"),
    ]


def _key_kind(tokens, kind):
    """tokens with the first key's kind (right after the top dict's 4, n) set to kind."""
    tokens = tokens.copy()
    assert tokens[0] == 4
    tokens[2] = kind
    return tokens


def test_crafted_structures_are_refused_before_anything_runs(tmp_path, monkeypatch):
    F = tape.trace(lambda d: (d["w"] * d["w"]).sum() + d["x"], {"w": np.ones((2, 3)), "x": 1.0})
    good = arrays_of(_saved_path(F, tmp_path))
    assert good["input_tree"].tolist() == [4, 2, 0, 1, 2, 2, 3, 0, 0] and good["input_keys"].tolist() == ["w", "x"]
    called = []
    monkeypatch.setattr(function, "Function", lambda *a, **k: called.append(1))
    for n, (overrides, match) in enumerate(tree_cases(good)):
        assert_rejected(write(tmp_path / f"tree{n}.npz", good, **overrides), match)
    lone = {name: v for name, v in good.items() if name != "input_keys"}
    assert_rejected(write(tmp_path / "lone.npz", lone), "come together")
    v4 = {name: v for name, v in good.items()}
    v4["format_version"] = np.array(4, np.int64)
    assert_rejected(write(tmp_path / "v4.npz", v4), "format version 4")
    flat = tape.trace(lambda X: (X * X).sum(), np.ones((2, 3)))  # an array spec of another shape
    arrays = arrays_of(_saved_path(flat, tmp_path))
    assert_rejected(write(tmp_path / "shape.npz", arrays, input_tree=np.array([1, 2, 3, 2], np.int64)),
                    r"an array of shape \(3, 2\), the Function's inputs have shape \(2, 3\)")
    inner = tape.trace(lambda d: d["u"] * d["v"], {"u": 1.0, "v": 2.0})
    outer = arrays_of(_saved_path(tape.trace(lambda x: inner({"u": x[0], "v": x[1]}), [1.0, 2.0]), tmp_path))
    assert_rejected(write(tmp_path / "callee.npz", outer, **{"callee0.input_keys": np.array(["v", "u"])}),
                    "callee 0: inputs' structure")
    assert not called


# -- bounded loading: zip bombs are refused before anything is decompressed (issue 29) -----------------

def _deflated_zip(members):
    """A zip of (name, raw deflate data, declared size), written by hand: zipfile cannot write a
    member whose declared size is not what it compressed (CRCs 0: nothing is decompressed)."""
    import struct

    body, directory = io.BytesIO(), io.BytesIO()
    for name, data, size in members:
        offset, raw = body.tell(), name.encode()
        body.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 33, 0, len(data), size, len(raw), 0))
        body.write(raw + data)
        directory.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 33, 0, len(data), size,
                                    len(raw), 0, 0, 0, 0, 0, offset) + raw)
    start, table = body.tell(), directory.getvalue()
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(table), start, 0)
    return body.getvalue() + table + end


def _npy(array):
    out = io.BytesIO()
    np.lib.format.write_array(out, array, allow_pickle=False)
    return out.getvalue()


def _deflate(data):
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def zip_bomb(path, good, claimed_values):
    """good's members, honestly deflated, but 'val' declares claimed_values float64 zeros (about
    1000 to 1 in deflate, from one compressed MiB of zeros repeated: a full flush makes the blocks
    independent)."""
    import zlib

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (claimed_values,)})
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = c.compress(header.getvalue()) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(2**20)) + c.flush(zlib.Z_FULL_FLUSH)
    size = len(header.getvalue()) + claimed_values * 8
    data = start + block * (size // 2**20) + c.compress(bytes(size % 2**20)) + c.flush()
    members = [(f"{name}.npy", _deflate(_npy(a)), len(_npy(a))) for name, a in good.items() if name != "val"]
    path.write_bytes(_deflated_zip(members + [("val.npy", data, size)]))
    return path


LIMITED_LOAD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2**30 + 2**29, 2**30 + 2**29))  # 1.5 GiB: the bomb claims more
resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
import tape
try:
    tape.load(sys.argv[1])
except tape.TapeFormatError as exc:
    print("refused:", exc)
"""


def test_a_zip_bomb_is_refused_before_it_is_decompressed(saved, tmp_path):
    """A 1.9 MB file whose 'val' member declares 1.9 GB of zeros (under the 2 GiB budget): refused
    by its ratio, in a process that could not hold what it claims and may run a minute at most."""
    import subprocess
    import sys

    _, path = saved
    bomb = zip_bomb(tmp_path / "bomb.npz", arrays_of(path), 237_000_000)
    assert bomb.stat().st_size < 2_500_000
    done = subprocess.run([sys.executable, "-c", LIMITED_LOAD, str(bomb)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused:" in done.stdout and "member val.npy declares" in done.stdout
    assert "more than 100 to 1" in done.stdout, done.stdout


def test_a_highly_compressible_honest_file_needs_max_bytes(tmp_path):
    """A real tape saved compressed (np.savez_compressed: tape's own files are not), whose arena of
    zeros deflates about 1000 to 1: refused by default, read with an explicit max_bytes."""
    F = tape.trace(lambda X: (X * X).sum(), np.zeros(300_000))
    from tape.function import format as file_format

    with open(tmp_path / "z.npz", "wb") as fh:
        np.savez_compressed(fh, **file_format.members(F))
    assert_rejected(tmp_path / "z.npz", r"member arena.npy declares \d+ bytes compressed into \d+")
    G = tape.load(tmp_path / "z.npz", max_bytes=2**31)
    x = np.linspace(-1.0, 1.0, 300_000)
    np.testing.assert_array_equal(G.gradient(x), 2.0 * x)
    F.save(tmp_path / "plain.npz")  # F.save: uncompressed, loads by default
    assert tape.load(tmp_path / "plain.npz")(x) == F(x)


def test_members_sharing_their_compressed_data_are_refused(saved, tmp_path):
    """Two directory entries pointing at one member's data (the overlapping zip bomb)."""
    import zipfile

    _, path = saved
    blob = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        start = z.start_dir
    assert sum(info.compress_size for info in infos) <= start
    # double the count of entries in the end record and repeat the directory: every member twice
    table = blob[start:blob.rindex(b"PK\x05\x06")]
    end = bytearray(blob[blob.rindex(b"PK\x05\x06"):])
    end[8:10] = end[10:12] = (2 * len(infos)).to_bytes(2, "little")
    end[12:16] = (2 * len(table)).to_bytes(4, "little")
    (tmp_path / "twice.npz").write_bytes(blob[:start] + table + table + bytes(end))
    assert_rejected(tmp_path / "twice.npz", r"compressed data \(\d+ bytes\) overlap")
