"""ArrayCondition: an elementwise comparison of arrays of records, not yet recorded.

It is data for ``tape.where`` (recorded as comparison and select records), or
checked branches when turned into Python or NumPy booleans (``bool``, ``.all()``,
``.any()``, ``np.asarray``): the outcomes are recorded with the check that a
replay re-evaluates. Small arrays record a scalar comparison per element; array
records record one comparison record, and their check is one scalar record
saying whether every outcome is as it was.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from tape.arrays.operands import as_view, common_tape, operands, shape_of
from tape.kernels.ops import COMPARISONS, OPCODE, Spelling
from tape.records import array_records
from tape.records.handles import surviving
from tape.records.storage import NO_INPUT, Storage
from tape.sweeps.driver import View

COMPARE = {getattr(np, s.ufunc): s for s in COMPARISONS}


class ArrayCondition:
    """x <op> y for arrays of records (see the module docstring)."""

    __slots__ = ("_spelling", "_seg", "_parts", "shape", "__weakref__")

    def __init__(self, spelling: Spelling, t: Storage, parts: list[tuple[Storage | None, Any]], shape: tuple[int, ...]):
        self._spelling, self._seg, self._parts, self.shape = spelling, t._segment(), parts, shape
        if t._recycling:  # a recycling tape keeps what it compares (tape/sweeps/arenas.py)
            for _, p in parts:
                if isinstance(p, View):
                    t._register(self, p.record)

    @classmethod
    def of(cls, ufunc: np.ufunc, x: Any, y: Any) -> Any:
        parts = operands(x, y)
        if parts is None:
            return NotImplemented
        t = common_tape(parts)
        if t is None:
            return NotImplemented
        return cls(COMPARE[ufunc], t, parts, array_records.broadcast(*(shape_of(p) for _, p in parts)))

    def _live_tape(self) -> Storage:
        """The tape, after checking that the compared records survived every rewind since."""
        if not self._seg.live:
            highest = max((p.record if isinstance(p, View) else int(np.max(p, initial=-1)))
                          for t, p in self._parts if t is not None)
            self._seg = surviving(self._seg, highest, "records this comparison reads were")
        return self._seg.tape

    def _blocked(self, *others: Any) -> bool:
        """Whether it records as an array record: an operand (or a branch of where) is one, or it is big."""
        parts = [p for _, p in self._parts] + [p for p in others]
        return any(isinstance(p, View) for p in parts) or math.prod(self.shape) >= array_records.small()

    def _view(self) -> View:
        """The comparison as an array record of 1.0 and 0.0."""
        t = self._live_tape()
        a, b = (as_view(t, rt is not None, p) for rt, p in self._parts)
        return array_records.elementwise(t, self._spelling.pair, *((b, a) if self._spelling.swap else (a, b)))

    def _rows(self) -> tuple[int, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(opcode, in0, in1, consts) of scalar comparison records, one per element, flattened."""
        (ta, a), (tb, b) = ((rt, np.broadcast_to(p, self.shape).ravel()) for rt, p in self._parts)
        s = self._spelling
        if ta is not None and tb is not None:
            return OPCODE[s.pair], (b if s.swap else a), (a if s.swap else b), None
        if ta is not None:
            return OPCODE[s.var_c], a, None, b
        return OPCODE[s.c_var], b, None, a

    def _check(self, how: str) -> np.ndarray:
        """Record the outcomes as checked branches ("all", "any" or "each"); return them."""
        t = self._live_tape()
        frame = sys._getframe(2)  # the user's line: it called all(), any(), bool() or np.asarray()
        where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        if self._blocked():
            c = self._view()
            outcomes = t._array_values(c) != 0.0
            if how == "each":  # every outcome as it was: all(c == outcomes)
                c = array_records.elementwise(t, "eq", c, array_records.constant(t, outcomes.astype(np.float64)))
            flag = array_records.elem(t, array_records.reduce(t, "any" if how == "any" else "all", c, None))
            row = t._push(OPCODE["ne_c"], flag, int(t._append_consts(np.zeros(1))[0]), 0.0)
            t._val[row] = float(t._val[flag] != 0.0)
            t._checks.append((row, bool(t._val[row]), where))
            return outcomes.reshape(self.shape)
        code, in0, in1, consts = self._rows()
        rows = t._append_block(code, in0.size, in0=in0, in1=NO_INPUT if in1 is None else in1, consts=consts)
        outcomes = t._val[rows] != 0.0  # every element is a checked branch, whatever ``how``
        t._checks.extend(zip(rows.tolist(), outcomes.tolist(), [where] * len(rows), strict=True))
        return outcomes.reshape(self.shape)

    def all(self) -> bool:
        return bool(self._check("all").all())

    def any(self) -> bool:
        return bool(self._check("any").any())

    def __bool__(self) -> bool:
        if math.prod(self.shape) != 1:
            raise ValueError("the truth value of an array comparison with more than one element is ambiguous; "
                             "use .all() or .any()")
        return bool(self._check("all").all())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        outcomes = self._check("each")
        return outcomes if dtype is None else outcomes.astype(dtype)
