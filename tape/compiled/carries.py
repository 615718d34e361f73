"""Loop variables that start as NumPy arrays and become array records or Var arrays (``h = np.zeros(...)``, then
``h = step(t, h)`` in a loop, as an RNN or a time stepper is written).

Numba gives a variable one type: the NumPy array and the array record do not unify. Where that fails typing, the
function is compiled again (var_lists.retrying) with Carries wrapping every value assigned to that variable in
``carried(xs, value)``: a NumPy array becomes what it meets, on the tape of f's first argument: one constant record of
its numbers (f on an array record), or a Var array holding them as numbers (f on an array of Vars, numbers staying
numbers until they meet a Var); an array record or Var array is itself; a tuple is carried item by item. Numba
internals used here, as in var_lists.py: the untyped IR, the pass-manager API and Numba's "Cannot unify" message.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np
from numba import extending
from numba.core import ir
from numba.core.compiler_machinery import FunctionPass, register_pass

from tape.compiled.array_records import OL, OS, RESULT, data
from tape.compiled.arrays import NUMBER, fill, fresh, is_array, is_data
from tape.compiled.numba_internals import ArrayRecordType, TypingError, types
from tape.compiled.overload_cache import overload

CARRIES = "tape_carries"  # the compiler state's key: the names (unversioned) of the variables carried
_UNIFY = re.compile(r"Cannot unify (.*) and (.*) for '([^']+)'")


def carried(xs, value):
    """value as what xs holds: a NumPy array a constant record (xs an array record) or a Var array of its numbers
    (xs a Var array); an array record, a Var array or a tuple of them itself."""


def _record(typ) -> bool:
    return isinstance(typ, ArrayRecordType)


@overload(carried)
def _carried(xs, value):
    if not (_record(xs) or is_array(xs)):
        raise TypingError(f"tape.jit: a loop variable starts as a NumPy array and becomes {value} in a function whose "
                          f"first argument is {xs}, not f's Vars: take the first step before the loop")
    if _record(value) or is_array(value):
        return lambda xs, value: value
    if is_data(value) and _record(xs):
        make = RESULT[value.ndim]

        def constant(xs, value):
            o = data(xs.tape, xs.arrays, value)
            return make(xs.tape, xs.arrays, (o[0], o[1], o[OL:OS]))
        return constant
    if is_data(value):
        def numbers(xs, value):
            out = fresh(xs.tape, value.shape)
            fill(out.rows, out.vals, np.full(value.shape, NUMBER, np.int64), value)
            return out
        return numbers
    if isinstance(value, types.BaseTuple):
        return None  # _carried_tuple: its implementation is generated source, which no cache can locate
    raise TypingError(f"tape.jit: a loop variable starts as {value} and becomes an array of Vars: take the first "
                      "step before the loop")


@extending.overload(carried)
def _carried_tuple(xs, value):
    return _itemwise(len(value.types)) if isinstance(value, types.BaseTuple) else None


@functools.cache
def _itemwise(size: int) -> Any:
    """carried of a tuple of ``size`` items, item by item (literal_unroll takes no tuple of mixed types here)."""
    items = ", ".join(f"carried(xs, value[{k}])" for k in range(size))
    source = f"def itemwise(xs, value):\n    return ({items},)\n"
    namespace: dict[str, Any] = {"carried": carried}
    exec(compile(source, f"<tape.jit carried {size}-tuple>", "exec"), namespace)  # noqa: S102  # our source
    return namespace["itemwise"]


def _base(name: str) -> str:
    """A variable's name without its SSA versions and the ids of the functions inlined into f (Numba names ``carry``
    of ``loop$14`` inlined ``loop_v14_carry``, version 2 ``loop_v14_carry.2``: base ``loop_v_carry``), which differ
    between the compile that failed and the next (the ids count every function Numba has seen)."""
    return re.sub(r"_v\d+_", "_v_", re.sub(r"(\.\d+)+$", "", name))


def carry_of(message: str) -> str | None:
    """The variable Numba could not unify between a NumPy array and an array record or a Var array (tuples of them
    too), by its base name; None for any other failure."""
    found = _UNIFY.search(message)
    if found is None:
        return None
    a, b = found.group(1), found.group(2)
    if not any("array(float64" in side and ("tape.ArrayRecord" in other or "tape.VarArray" in other)
               for side, other in ((a, b), (b, a))):
        return None
    return _base(found.group(3))


@register_pass(mutates_CFG=False, analysis_only=False)
class Carries(FunctionPass):
    """Wrap each value assigned to a carried variable (the state's CARRIES) in ``carried(xs, value)``, xs f's first
    argument (copied where f starts: f may assign that name again)."""

    _name = "tape_carries"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        names = state.get(CARRIES)
        if not names:
            return False
        blocks = state.func_ir.blocks
        entry = blocks[min(blocks)]
        args = [k for k, stmt in enumerate(entry.body) if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Arg)
                and stmt.value.index == 0]
        if not args:
            return False
        first = entry.body[args[0]]
        xs = ir.Var(entry.scope, "$tape_carried_xs", first.loc)
        changed = False
        for block in blocks.values():
            body: list = []
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and _base(stmt.target.name) in names and not isinstance(stmt.value,
                                                                                               ir.Arg):
                    value, fn = block.scope.redefine("$carried", stmt.loc), block.scope.redefine("$carry", stmt.loc)
                    body += [ir.Assign(stmt.value, value, stmt.loc), ir.Assign(ir.Global("carried", carried, stmt.loc),
                                                                                fn, stmt.loc)]
                    stmt = ir.Assign(ir.Expr.call(fn, [xs, value], (), stmt.loc), stmt.target, stmt.loc)
                    changed = True
                body.append(stmt)
            block.body = body
        entry.body.insert(entry.body.index(first) + 1, ir.Assign(first.target, xs, first.loc))
        return changed


__all__ = ["Carries", "CARRIES", "carried", "carry_of"]
