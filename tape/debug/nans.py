"""Where did the NaN come from: ``tape.debug_nans()`` and ``Function.check_finite``.

Inside ``with tape.debug_nans():`` new tapes keep the source line of every
record, and each forward replay and reverse sweep looks for the first record
whose value (forward order) or adjoint (reverse order) is not finite although
everything it was computed from is; ``tape.NonFiniteError`` reports that record,
its op, its inputs' values and the line that recorded it. Outside the context
recording pays one attribute test per record and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from types import FrameType

import numpy as np

from tape.errors import BranchChanged, NonFiniteError
from tape.kernels.array_ops import IS_ARRAY_LEAF, NAME
from tape.kernels.ops import IS_LEAF, OPS, SYMBOL, USES_POOL


class _State(threading.local):
    depth = 0  # nesting of tape.debug_nans() in this thread; a class default: reading it is ~8x
    # cheaper than getattr with a default, which raised and caught AttributeError on every call


_state = _State()


def active() -> bool:
    """Whether this thread is inside ``tape.debug_nans()``."""
    return _state.depth > 0


@contextlib.contextmanager
def debug_nans():
    """Record source lines and stop at the first non-finite value or adjoint (this thread)."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1


def caller() -> str:
    """file:line of the user code that is recording (the first frame outside this package)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tape/, above tape/debug/


def describe(rec, lines: dict[int, str] | None, row: int) -> str:
    shown = [f"#{j} of shape {rec.shapes[j]}" if j in rec.shapes else f"#{j} = {float(rec.val[j])!r}"
             for j in rec.inputs(row)]
    inputs = ", ".join(shown)
    constant = rec.constant(row)
    if constant is not None:
        inputs += f", constant {constant!r}"
    where = (lines or {}).get(row, "unknown (recorded outside tape.debug_nans())")
    return f"record #{row} ({NAME[rec.op[row]]}, inputs {inputs or 'none'}) recorded at {where}"


def _element(region: np.ndarray) -> str:
    """Where in an array record's region the first inf/NaN is, for the message."""
    k = np.unravel_index(int(np.argmax(~np.isfinite(region))), region.shape)
    return f"element {tuple(int(i) for i in k)} of "


def check(rec, lines: dict[int, str] | None, n: int, adjoints: bool | np.ndarray = False,
          tangents: np.ndarray | None = None, what: str = "adjoint") -> None:
    """Raise NonFiniteError at the first record whose value turned non-finite (forward order), then
    at the first tangent (columns of ``tangents``, forward order), then at the first adjoint
    (reverse order: the last adjoints, or the columns of an array of them, called ``what``)."""
    _first_in_forward_order(rec, lines, rec.val[:n, None], "value", rec.array_values)
    if tangents is not None:
        _first_in_forward_order(rec, lines, tangents[:n], "tangent")
    if adjoints is False:
        return
    grads = rec.adjoints(np.arange(n)) if adjoints is True else adjoints[:n]
    grads = grads.reshape(n, -1)
    finite = np.isfinite(grads).all(axis=1)
    regions = rec.array_adjoints if adjoints is True else {}
    for row, region in regions.items():
        finite[row] = bool(np.isfinite(region).all())
    bad = np.flatnonzero(~finite)
    if len(bad):
        row = int(bad[-1])  # the reverse sweep reaches the highest index first
        users = [i for i in range(row + 1, n) if row in rec.inputs(i) and finite[i]]
        source = f"; it came through {describe(rec, lines, users[0])}" if users else ""
        values = regions[row].reshape(-1) if row in regions else grads[row]
        value = values[~np.isfinite(values)][0]
        at = _element(regions[row]) if row in regions else ""
        raise NonFiniteError(f"{what} {float(value)!r} first appears at {at}{describe(rec, lines, row)}{source}",
                             row)


def _first_in_forward_order(rec, lines: dict[int, str] | None, columns: np.ndarray, what: str,
                            regions: dict[int, np.ndarray] | None = None) -> None:
    """The first non-leaf record whose entry turned non-finite although its inputs' are finite
    (an array record's entry: its region, given in ``regions``)."""
    finite = np.isfinite(columns).all(axis=1)
    for row, region in (regions or {}).items():
        finite[row] = bool(np.isfinite(region).all())
    for row in np.flatnonzero(~finite).tolist():
        if all(finite[j] for j in rec.inputs(row)) and not IS_LEAF[rec.op[row]] and not IS_ARRAY_LEAF[rec.op[row]]:
            if regions and row in regions:
                value = regions[row][~np.isfinite(regions[row])][0]
                at = _element(regions[row])
            else:
                value, at = columns[row][~np.isfinite(columns[row])][0], ""
            raise NonFiniteError(f"{what} {float(value)!r} first appears at {at}{describe(rec, lines, row)}", row)


def branch_changed(op, in0, in1, consts, row: int, expected: bool, where: str, extra: str = "") -> BranchChanged:
    """The error for a checked comparison (record ``row``) that now comes out differently."""
    kind = OPS[op[row]]
    rhs = f"{float(consts[in1[row]])!r}" if USES_POOL[op[row]] else f"#{in1[row]}"
    described = f"#{in0[row]} {SYMBOL[kind.name.removesuffix('_c')]} {rhs}"
    return BranchChanged(
        f"comparison {described} at record #{row}, recorded at {where}, was {expected} when traced and is "
        f"{not expected} at this input: the tape holds the other branch. Use tape.where() for a branch-free "
        f"select, or on_branch_change='retrace'.{extra}", int(row), where)
