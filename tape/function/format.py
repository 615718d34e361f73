"""The file format of a Function: a versioned .npz of plain arrays, and its validation.

``Function.save`` writes it; ``tape.load`` reads it with ``allow_pickle=False`` and
checks everything before any kernel sees it: array names, dtypes and shapes, the
version, known opcodes, every input index below its own record, constant slots
inside the pool, leaves without inputs, selects after a comparison, and the
input/param/output/check rows in range.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Callable
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from tape.errors import TapeFormatError
from tape.function import array_replay, structure
from tape.kernels.array_ops import INPUT, IS_ARRAY_OP, V3_OPCODES
from tape.kernels.ops import (
    ELEM,
    HAS_INPUT,
    IS_ARRAY,
    IS_COMPARISON,
    IS_LEAF,
    IS_UNARY,
    LEAF,
    OPS,
    SELECT,
    TWO_RECORDS,
    USES_POOL,
)
from tape.records.storage import MAX_RECORDS, NO_INPUT
from tape.sweeps import plans as _plans

# 2 added the Function's options, 3 array records, 4 moved them (ARRAY_BASE 64 -> 96), 5 the Functions that call
# records call (each a version-5 file of its own, its members named "callee{k}.<name>"); all load
FORMAT_VERSION = 5
MAX_DEPTH = 16  # levels of callees a file may nest
MAX_BYTES = 2**31  # what tape.load reads by default: ~10^8 records; raise it with load(..., max_bytes=)
# By default a member may also declare at most MAX_RATIO bytes per byte it takes in the file (and 4 KiB more),
# as zip-bomb defences bound it: F.save stores its members uncompressed (ratio 1), while deflate reaches
# about 1000 (a 325 KiB crafted file took a minute and 2.6 GB to read). An explicit max_bytes lifts it.
MAX_RATIO = 100

_SPEC = {  # name: (dtype kind check, ndim)
    "format_version": (np.int64, 0), "op": (np.uint8, 1), "in0": (np.uint32, 1), "in1": (np.uint32, 1),
    "val": (np.float64, 1), "consts": (np.float64, 1), "input_rows": (np.int64, 1),
    "param_rows": (np.int64, 1), "output_rows": (np.int64, 1), "scalar_output": (np.bool_, 0),
    "check_rows": (np.int64, 1), "check_expected": (np.bool_, 1), "check_where": (np.str_, 1),
}
_OPTIONS = {"on_branch_change": (np.str_, 0), "check_finite": (np.bool_, 0)}  # since version 2
_ARRAYS = {"plans": (np.int64, 2), "plan_places": (np.int64, 1), "arena": (np.float64, 1),
           "input_shape": (np.int64, 1)}  # since version 3: array records (tape/sweeps/plans.py)
_SHAPES = {"output_shape": (np.int64, 1)}  # since version 4: the shape f returned its outputs in
# optional (version 5): the pytree structures of the inputs and params traced (tape/function/structure.py)
_STRUCTURE = {name for pair in structure.MEMBERS.values() for name in pair}


def _spec(version: int) -> dict[str, tuple[type, int]]:
    return {**_SPEC, **(_OPTIONS if version >= 2 else {}), **(_ARRAYS if version >= 3 else {}),
            **(_SHAPES if version >= 4 else {})}


def no_arrays(n_inputs: int) -> dict[str, np.ndarray]:
    """The array-record arrays of a Function without array records (and of files before version 3)."""
    return {"plans": np.zeros((0, _plans.WIDTH), np.int64), "plan_places": np.zeros(0, np.int64),
            "arena": np.zeros(0), "input_shape": np.array([n_inputs], np.int64)}


class Saved(NamedTuple):
    """A validated file's arrays and plans, and those of the Functions its call records call."""

    arrays: dict[str, np.ndarray]
    plans: list
    callees: list[Saved]
    layouts: tuple = (None, None)  # the structures of the inputs and params, where the file has them


def read(path: str | os.PathLike | BinaryIO, max_bytes: int | None = None) -> Saved:
    """The arrays of a file written by ``write``, validated, its plans and its callees; anything
    malformed raises ``TapeFormatError`` (naming the first bad record where there is one). Before
    any array is read, what the file's headers claim is checked against the members' sizes and
    ``max_bytes`` (None: MAX_BYTES, and at most MAX_RATIO times each member's compressed size)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            _check_compression(npz.zip, path, max_bytes is None)
            members = npz.zip.namelist()
            if len(members) != len(set(members)):
                raise TapeFormatError(f"{path}: a member appears twice in the file")
            names = set(npz.files)
            if len(members) != len(names):
                raise TapeFormatError(f"{path}: a member is not a .npy array")
            _check_names(names, path, "", 0)
            budget = MAX_BYTES if max_bytes is None else max_bytes
            claimed = sum(_claimed_bytes(npz.zip, f"{name}.npy", path) for name in names)
            if claimed > budget:
                raise TapeFormatError(f"{path}: its arrays claim {claimed} bytes, more than max_bytes={budget}; "
                                      f"pass a larger max_bytes to tape.load for a tape that big")
            arrays = {name: npz[name] for name in names}
            if not all(isinstance(array, np.ndarray) for array in arrays.values()):
                raise TapeFormatError(f"{path}: a member is not a NumPy array")
    except (TapeFormatError, FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as exc:  # zip, npy-header and decoding errors of every kind a hostile file can cause
        raise TapeFormatError(f"{path}: unreadable tape file ({type(exc).__name__}: {exc})") from None
    return _parse(arrays, path, "")


def _split(names: set[str]) -> tuple[set[str], dict[int, set[str]]]:
    """A file's own member names, and by k the names under "callee{k}." (version 5's callees)."""
    own: set[str] = set()
    groups: dict[int, set[str]] = {}
    for name in names:
        head, dot, rest = name.partition(".")
        k = head.removeprefix("callee")
        if dot and k.isdigit() and head == f"callee{int(k)}":
            groups.setdefault(int(k), set()).add(rest)
        else:
            own.add(name)
    return own, groups


def _check_names(names: set[str], path: object, where: str, depth: int) -> None:
    own, groups = _split(names)
    own -= _STRUCTURE  # optional; decoded and checked with the rest (_parse)
    spec = _spec(4 if set(_SHAPES) <= own else 3 if set(_ARRAYS) <= own else 2 if set(_OPTIONS) <= own else 1)
    if own != set(spec):
        missing, extra = sorted(set(spec) - own), sorted(own - set(spec))
        raise TapeFormatError(f"{path}{where}: not a tape file (missing {missing}, unexpected {extra})")
    if sorted(groups) != list(range(len(groups))) or depth + bool(groups) > MAX_DEPTH:
        raise TapeFormatError(f"{path}{where}: callees {sorted(groups)[:10]} are not numbered 0, 1, ... (or nest past "
                              f"{MAX_DEPTH} levels)")
    for k in sorted(groups):
        _check_names(groups[k], path, f"{where} callee {k}", depth + 1)


def _parse(flat: dict[str, np.ndarray], path: object, where: str) -> Saved:
    """Validate the arrays of one Function (its callees first) named as in a file; see read."""
    own, groups = _split(set(flat))
    arrays = {name: flat[name] for name in own}
    version = arrays["format_version"]
    if (groups or where) and (version.dtype != np.int64 or version.ndim != 0 or int(version) < 5):
        raise TapeFormatError(f"{path}{where}: callees in a file of format version {version!r}, or a callee of it "
                              "(version 5 has them)")
    callees = [_parse({rest: flat[f"callee{k}.{rest}"] for rest in groups[k]}, path, f"{where} callee {k}")
               for k in sorted(groups)]
    _upgrade(arrays)
    trees = {name: arrays.pop(name) for name in _STRUCTURE & set(arrays)}
    try:
        plans = validate(arrays, tuple(_sizes(c) for c in callees))
        layouts: tuple = (None, None)
        if trees:
            if int(arrays["format_version"]) < 5:
                raise TapeFormatError(f"the members {sorted(trees)} in a file of format version "
                                      f"{int(arrays['format_version'])} (version 5 has them)")
            n_in, n_par, _ = _sizes(Saved(arrays, plans, []))
            layouts = (structure.decode(trees, "input", n_in, tuple(arrays["input_shape"].tolist())),
                       structure.decode(trees, "param", n_par, None))
    except TapeFormatError as exc:
        if not where:
            raise
        raise TapeFormatError(f"{path}{where}: {exc}") from None
    if int(arrays.pop("format_version")) < 3:
        arrays.update(no_arrays(len(arrays["input_rows"])))
    return Saved(arrays, plans, callees, layouts)


def _sizes(c: Saved) -> tuple[int, int, int]:
    """(inputs, params, outputs) of a validated Function's arrays."""
    a, plans = c.arrays, c.plans
    params = sum(plans[int(a["in0"][r])].size if IS_ARRAY[a["op"][r]] else 1 for r in a["param_rows"].tolist())
    return math.prod(a["input_shape"].tolist()), params, math.prod(a["output_shape"].tolist())


def build(cls: Callable[..., Any], saved: Saved, on_branch_change: str | None = None) -> Any:
    """A Function (of class cls) from a file's arrays, its callees first; a saved "retrace" is "raise"
    (a loaded Function has no Python function), on_branch_change overrides the saved policy."""
    arrays = dict(saved.arrays)
    policy = str(arrays.pop("on_branch_change", "raise"))
    check_finite = bool(arrays.pop("check_finite", False))
    F = cls(arrays, on_branch_change or ("raise" if policy == "retrace" else policy), plans=saved.plans,
            callees=[build(cls, c) for c in saved.callees])
    F.check_finite = check_finite
    F._layout, F._param_layout = saved.layouts
    return F


def _upgrade(a: dict[str, np.ndarray]) -> None:
    """A version-3 file's array opcodes (in ``op`` and the plans) as today's, by name; an opcode
    version 3 did not know becomes 255, which validate rejects. Malformed arrays are left to it."""
    version, op, plans = a["format_version"], a["op"], a.get("plans")
    if version.dtype != np.int64 or version.ndim != 0 or int(version) != 3 or op.dtype != np.uint8:
        return
    a["op"] = V3_OPCODES[op]
    if plans is not None and plans.dtype == np.int64 and plans.ndim == 2 and plans.shape[1] > 0:
        plans = plans.copy()
        known = (plans[:, 0] >= 0) & (plans[:, 0] < 256)
        plans[known, 0] = V3_OPCODES[plans[known, 0]]
        a["plans"] = plans


def _check_compression(archive: zipfile.ZipFile, path: object, default: bool) -> None:
    """Members whose compressed data overlap (one stretch of the file read as many members) are
    refused; under the default budget, so is a member declaring more than MAX_RATIO times its
    compressed size, before anything is decompressed."""
    infos = archive.infolist()
    packed, end = sum(info.compress_size for info in infos), getattr(archive, "start_dir", None)
    if end is not None and packed > end:
        raise TapeFormatError(f"{path}: its members' compressed data ({packed} bytes) overlap: the file's data "
                              f"ends at byte {end}")
    for info in infos:
        if default and info.file_size > MAX_RATIO * info.compress_size + 4096:
            raise TapeFormatError(f"{path}: member {info.filename} declares {info.file_size} bytes compressed into "
                                  f"{info.compress_size} (more than {MAX_RATIO} to 1, as a zip bomb does; tape "
                                  "saves uncompressed); pass max_bytes to tape.load to read it anyway")


def _claimed_bytes(archive: zipfile.ZipFile, member: str, path: object) -> int:
    """The bytes a member's .npy header claims, checked against what the member can hold."""
    with archive.open(member) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise TapeFormatError(f"{path}: {member} has .npy format version {version}, not 1.0 or 2.0")
    count = int(np.prod(shape, dtype=object))
    claimed = count * dtype.itemsize
    if claimed > archive.getinfo(member).file_size:
        raise TapeFormatError(f"{path}: {member} claims shape {shape} ({claimed} bytes) in a member of "
                              f"{archive.getinfo(member).file_size} bytes")
    return claimed


def arrays(F: Any) -> dict[str, np.ndarray]:
    """The named arrays of F's records (a Function, duck-typed), as its file holds them."""
    plans, arena = array_replay.recorded(F)
    return {
        "op": F._op, "in0": F._in0, "in1": F._in1, "val": F._val, "consts": F._consts,
        "input_rows": F._input_rows, "param_rows": F._param_rows, "output_rows": F._output_rows,
        "scalar_output": np.array(F._scalar), "check_rows": F._check_rows,
        "check_expected": F._check_expected, "check_where": F._check_where,
        **dict(zip(("plans", "plan_places"), _plans.encode(plans), strict=True)),
        "arena": arena, "input_shape": np.array(F._input_shape, np.int64),
        "output_shape": np.array(F._output_shape, np.int64),
    }


def save(F: Any, path: str | os.PathLike | BinaryIO) -> None:
    """F's file (see members) at path, or into an open binary file."""
    if not isinstance(path, (str, os.PathLike)):
        write(path, F)
        return
    with open(path, "wb") as fh:
        write(fh, F)


def members(F: Any, prefix: str = "") -> dict[str, np.ndarray]:
    """The named arrays of F's file (a Function, duck-typed): its arrays with the format version and its
    options, and those of each Function its call records call under "callee{k}.". The source lines
    of checked branches keep their file's name and the line, not the machine's folders."""
    own = arrays(F)
    where = np.array([_short(w) for w in own["check_where"].tolist()], dtype=np.str_)
    found = {**own, "check_where": where if len(where) else np.zeros(0, "<U1"),
             "format_version": np.array(FORMAT_VERSION, np.int64), "on_branch_change": np.array(F.on_branch_change),
             "check_finite": np.array(F.check_finite)}
    found.update(structure.encode(F._layout, "input"))
    found.update(structure.encode(F._param_layout, "param"))
    found = {prefix + name: array for name, array in found.items()}
    for k, G in enumerate(F._callees):
        if getattr(G, "refuses_save", None):
            raise TypeError(G.refuses_save)
        found.update(members(G, f"{prefix}callee{k}."))
    return found


def write(file: BinaryIO, F: Any) -> None:
    """Write a Function's file (see members) as an .npz, no pickle."""
    np.savez(file, allow_pickle=False, **members(F))


def _short(where: str) -> str:
    """'/home/me/project/fit.py:12' -> 'fit.py:12'."""
    file, _, line = where.rpartition(":")
    return f"{os.path.basename(file)}:{line}" if file else where


def validate(a: dict[str, np.ndarray], callees: tuple[tuple[int, int, int], ...] = (), plans: list | None = None
             ) -> list:
    """Raise TapeFormatError unless the arrays form a well-formed tape of their format version;
    return its plans (tape/sweeps/plans.py), decoded and checked (callees, plans: see _plans.decode; a file has
    neither)."""
    version = a["format_version"]
    if version.dtype != np.int64 or version.ndim != 0 or not 1 <= int(version) <= FORMAT_VERSION:
        shown = version.item() if version.size == 1 else version.shape
        raise TapeFormatError(f"tape format version {shown!r} ({version.dtype}); this tape reads 1 to "
                              f"{FORMAT_VERSION}")
    spec = _spec(int(version))
    if set(a) != set(spec):
        raise TapeFormatError(f"format version {int(version)} has the arrays {sorted(spec)}, not {sorted(a)}")
    for name, (dtype, ndim) in spec.items():
        arr = a[name]
        if np.dtype(dtype).kind == "U":
            ok = arr.dtype.kind == "U"
        else:
            ok = arr.dtype == np.dtype(dtype)
        if not ok or arr.ndim != ndim:
            raise TapeFormatError(f"array {name!r} must be {np.dtype(dtype).name} with {ndim} dimension(s), "
                                  f"got {arr.dtype} with shape {arr.shape}")
    op, in0, in1 = a["op"], a["in0"], a["in1"]
    n = len(op)
    if not 0 < n <= MAX_RECORDS or not len(in0) == len(in1) == len(a["val"]) == n:
        raise TapeFormatError(f"record arrays disagree in length: op {n}, in0 {len(in0)}, in1 {len(in1)}, "
                              f"val {len(a['val'])}")
    _first_bad((op >= len(OPS)) & ~(IS_ARRAY_OP[op] & (int(version) >= 3)), "unknown opcode", op)
    rows = np.arange(n, dtype=np.uint32)  # n < 2**32; uint32 against uint32: no temporaries of int64
    no_inputs = IS_LEAF[op] & (op != ELEM)  # elem records are checked with the plans
    _first_bad(no_inputs & ((in0 != NO_INPUT) | (in1 != NO_INPUT)), "leaf with inputs", op)
    _first_bad(HAS_INPUT[op] & (in0 >= rows), "first input not before its record", op)
    _first_bad(TWO_RECORDS[op] & (in1 >= rows), "second input not before its record", op)
    _first_bad(USES_POOL[op] & (in1 >= len(a["consts"])), "constant slot out of range", op)
    _first_bad(IS_UNARY[op] & (in1 != NO_INPUT), "unary op with a second input", op)
    previous_is_comparison = np.concatenate([[False], IS_COMPARISON[op[:-1]]])
    _first_bad((op == SELECT) & ~previous_is_comparison, "select not preceded by a comparison", op)
    for name, need_leaf in (("input_rows", True), ("param_rows", True), ("output_rows", False),
                            ("check_rows", False)):
        r = a[name]
        if np.any((r < 0) | (r >= n)):
            raise TapeFormatError(f"{name} holds a record outside 0..{n - 1}")
        if need_leaf and np.any((op[r] != LEAF) & (op[r] != INPUT)):
            raise TapeFormatError(f"{name} must name leaf records")
    if np.bincount(np.concatenate([a["input_rows"], a["param_rows"]]), minlength=1).max() > 1:  # rows < n, checked
        raise TapeFormatError("input_rows and param_rows must be distinct records")
    if len(a["output_rows"]) == 0:
        raise TapeFormatError("a tape file needs at least one output")
    if np.any(~IS_COMPARISON[op[a["check_rows"]]]):
        raise TapeFormatError("check_rows must name comparison records")
    if not len(a["check_rows"]) == len(a["check_expected"]) == len(a["check_where"]):
        raise TapeFormatError("check arrays disagree in length")
    if "on_branch_change" in a and str(a["on_branch_change"]) not in ("raise", "retrace", "ignore"):
        raise TapeFormatError(f"unknown on_branch_change {str(a['on_branch_change'])!r}")
    if bool(a["scalar_output"]) and len(a["output_rows"]) != 1:
        raise TapeFormatError("a scalar-output tape has exactly one output")
    arrays = a if int(version) >= 3 else no_arrays(len(a["input_rows"]))
    plans = _plans.decode(arrays["plans"], arrays["plan_places"], op, in0, in1, callees, plans)  # checks every plan
    if len(arrays["arena"]) != (plans[-1].offset + plans[-1].size if plans else 0):
        raise TapeFormatError(f"the arena holds {len(arrays['arena'])} numbers, not what the plans need")
    if bool(a["scalar_output"]) and IS_ARRAY[op[a["output_rows"][0]]]:
        raise TapeFormatError("a scalar output is a scalar record")
    sizes = [plans[int(in0[r])].size if IS_ARRAY[op[r]] else 1 for r in a["input_rows"].tolist()]
    if any(IS_ARRAY[op[r]] and op[r] != INPUT for r in a["input_rows"].tolist() + a["param_rows"].tolist()):
        raise TapeFormatError("array inputs and params must be array input records")
    shape = arrays["input_shape"]
    if np.any(shape < 0) or math.prod(shape.tolist()) != sum(sizes):
        raise TapeFormatError(f"input_shape {shape.tolist()} does not hold the {sum(sizes)} inputs")
    if "output_shape" in a:
        shape = a["output_shape"]
        outputs = sum(plans[int(in0[r])].size if IS_ARRAY[op[r]] else 1 for r in a["output_rows"].tolist())
        if np.any(shape < 0) or math.prod(shape.tolist()) != outputs or (len(shape) == 0) != bool(a["scalar_output"]):
            raise TapeFormatError(f"output_shape {shape.tolist()} does not hold the {outputs} outputs")
    return plans


def _first_bad(bad: np.ndarray, what: str, op: np.ndarray) -> None:
    if np.any(bad):
        row = int(np.argmax(bad))
        name = OPS[op[row]].name if op[row] < len(OPS) else f"opcode {op[row]}"
        raise TapeFormatError(f"record {row} ({name}): {what}")
