"""The op kernels of ``kernels/_array_driver.py``: each elementwise op's ``values_<opcode>`` and ``sends_<opcode>``,
C functions over pointers (kernels/array_kernels.py compiles one the first time a table holds its op).

An op of ops.EXACT or ops.RULED is its rule's expressions in a loop over the elements. One of ops.LOOPED makes its
values by NumPy's own float64 loop of a unary ufunc (kernels/ufuncs.py), and LOOPED_BACK's partials too; one of
ops.PAIRED makes its values by a binary ufunc's loop (np.power's) and each side's partial by a loop into scratch E
first (z, then p of z): each loop called as NumPy's step calls it, over contiguous elements, with a step of 0 over a
number read by all (``_paired``).
"""

from __future__ import annotations

import re

from .. import ops
from .sweeps import element_loop, names_in

LOADS = {"a": "a = A[u]", "b": "b = B[u]", "y": "y = Y[u]", "v": "v = Y[u]", "z": "z = E[u]"}
UFUNCS = tuple(sorted({ufunc for _, ufunc, _ in ops.LOOPED.values()} | {u for u, _ in ops.LOOPED_BACK.values()}
                      | {u for u, sides in ops.PAIRED.values() for u in (u, *(loop for _, loop, _ in sides))}))
FRAME = 7  # a loop call's arguments: the pointers (2 or 3), the count, the steps in bytes (2 or 3)


def primed(op: ops.Op) -> int:
    """What op's kernels make in scratch first (the driver's PRIMED): 1 values in B (sigmoid's exp(-|a|)), 2 sends in B
    (sin's cos(a)), 4 sends in E (power's partials, 2 n elements)."""
    return ((op.name in ops.LOOPED and ops.LOOPED[op.name][0] != "a") + 2 * (op.name in ops.LOOPED_BACK)
            + 4 * (op.name in ops.PAIRED))


def _loop(target: str, rule: str, indent: str, binary: bool) -> list[str]:
    """target[u] = rule over the n elements, loading what the rule reads; target D: D[u] += G[u] times the rule,
    nothing where a factor is 0 (each product added as made: no pass of partials), or where fresh, D[u] = 0.0 + that
    (a zeroed D's numbers without a pass of zeros: the sends' stores bound their time; a loop of its own, so that
    the other adds in the same order, NaN signs too). A binary op's operand that is one number read by all
    (``number`` 1: a, 2: b) is loaded once, in a loop of its own (not a filled row: over 4,096 elements the fill is a
    pass over memory)."""
    product = "(g * p if g != 0.0 and p != 0.0 else 0.0)"
    stores = [[f"D[u] = 0.0 + {product}"], [f"D[u] += {product}"]] if target == "D" else [[f"{target}[u] = {rule}"]]

    def one(number: str, ind: str) -> list[str]:
        loads = [line for name, line in LOADS.items() if name in names_in(rule) and name != number]
        loads += ["g = G[u]", f"p = {rule}"] * (target == "D")
        lines = [f"{ind}{number} = {number.upper()}[0]"] * bool(number)
        if len(stores) == 1:
            return lines + element_loop(ind, [*loads, *stores[0]], "n")
        return [*lines, f"{ind}if fresh:", *element_loop(ind + "    ", [*loads, *stores[0]], "n"), f"{ind}else:",
                *element_loop(ind + "    ", [*loads, *stores[1]], "n")]

    numbers = [x for x in "ab" if binary and x in names_in(rule)]
    if not numbers:
        return one("", indent)
    lines = []
    for k, x in enumerate(numbers):
        lines += [f"{indent}{'elif' if k else 'if'} number == {'ab'.index(x) + 1}:", *one(x, indent + "    ")]
    return [*lines, f"{indent}else:", *one("", indent + "    ")]


def _values(op: ops.Op, ind: str) -> list[str]:
    if op.name in ops.PAIRED:  # NumPy's binary loop over A and B into Y
        return [f"{ind}at = _paired(frame, A, B, Y, n, number)",
                f"{ind}numpy_{ops.PAIRED[op.name][0]}(at, at + 24, at + 32, 0)"]
    if op.name not in ops.LOOPED:
        return _loop("Y", op.forward, ind, op.kind != "unary")
    x, ufunc, y = ops.LOOPED[op.name]  # v = ufunc(x) by NumPy's loop (x into B: a unary op's B is scratch), then y
    before = _loop("B", x, ind, False) if x != "a" else []  # (B's room checked by the driver's values)
    after = _loop("Y", y, ind, False) if y != "v" else []
    return [*before, f"{ind}at = _framed(frame, {'B' if before else 'A'}, Y, n)",
            f"{ind}numpy_{ufunc}(at, at + 16, at + 24, 0)", *after]


def reads(partial: str) -> int:
    """The operands a partial reads: 1 a, 2 b (both: 3)."""
    return sum(1 << q for q, x in enumerate("ab") if x in names_in(partial))


def _paired_side(x: str, loop: str, partial: str, ind: str) -> list[str]:
    """One side's partial of an op of ops.PAIRED: z = loop over (a, x) into E (x made in E's second half first), or
    of a alone, then D (a is never one number: tape/sweeps/encoding.py)."""
    if x:
        made = [f"{ind}X = E[n:]", *_loop("X", x, ind, True), f"{ind}at = _paired(frame, A, X, E, n, number)",
                f"{ind}numpy_{loop}(at, at + 24, at + 32, 0)"]
    else:
        made = [f"{ind}at = _framed(frame, A, E, n)", f"{ind}numpy_{loop}(at, at + 16, at + 24, 0)"]
    return made + _loop("D", partial, ind, True)


def _sends(op: ops.Op, ind: str) -> list[str]:
    two = op.kind == "binary"
    if op.name in ops.PAIRED:
        (x0, loop0, p0), (x1, loop1, p1) = ops.PAIRED[op.name][1]
        return [f"{ind}if side == 0:", *_paired_side(x0, loop0, p0, ind + "    "), f"{ind}else:",
                *_paired_side(x1, loop1, p1, ind + "    ")]
    if op.name in ops.LOOPED_BACK:  # b = ufunc(a) by NumPy's loop into B (a unary op's B is scratch), then the partial
        ufunc, partial = ops.LOOPED_BACK[op.name]
        return [f"{ind}at = _framed(frame, A, B, n)", f"{ind}numpy_{ufunc}(at, at + 16, at + 24, 0)",
                *_loop("D", partial, ind, False)]
    if not op.db:
        return _loop("D", op.da, ind, two)
    return [f"{ind}if side == 0:", *_loop("D", op.da, ind + "    ", two), f"{ind}else:",
            *_loop("D", op.db, ind + "    ", two)]


def elementwise(op: ops.Op) -> bool:
    """Whether the driver runs op's records (its values and sends kernels; a comparison's values only: it sends
    nothing)."""
    return (op.name in ops.EXACT or op.name in ops.RULED or op.name in ops.LOOPED or op.name in ops.PAIRED
            or op.kind == "compare")


def _arrays(body: list[str], names: str) -> list[str]:
    """The line making the arrays (of n elements; frame's FRAME, E's 2 n) that body reads from their pointers."""
    read = [x for x in names if re.search(rf"\b{'frame' if x == 'F' else x}\b", "\n".join(body))]
    size = {"F": str(FRAME), "E": "2 * n"}
    made = {x: f"carray(p{x.lower()}, {size.get(x, 'n')})" for x in read}
    line = f"    {', '.join('frame' if x == 'F' else x for x in read)} = {', '.join(made.values())}"
    return [line] if len(line) <= 120 else [f"    {'frame' if x == 'F' else x} = {made[x]}" for x in read]


def op_kernels() -> list[str]:
    """Each elementwise op's kernels, values_<opcode> and sends_<opcode>: its rule's loops, one op's, not a switch
    over all."""
    lines = []
    for code, op in enumerate(ops.OPS):
        if not elementwise(op):
            continue
        assert op.da or op.kind == "compare", f"{op.name}: an elementwise op of the driver sends back"
        values = _values(op, "    ")
        lines += ["", "", f"def values_{code}(pa, pb, py, n, number, pf):",
                  f'    """Y = {op.name} of A (and B), n elements; A[0] or B[0] for all at number 1 or 2."""',
                  *_arrays(values, "ABYF"), *values]
        if op.da:  # (a comparison sends nothing)
            sends = _sends(op, "    ")
            lines += ["", "", f"def sends_{code}(side, pa, pb, py, pg, pd, n, number, fresh, pf, pe):",
                      f'    """D += G times {op.name}\'s partial in operand side (0: a, 1: b), fresh: 0.0 + it."""',
                      *_arrays(sends, "ABYGDFE"), *sends]
    return lines


FRAMED = '''@jit
def _framed(frame, X, Y, n):
    """frame's address, set to the arguments NumPy passes its unary loop over n contiguous elements: the pointers
    args = (X, Y), the count, and the steps (8, 8) in bytes (kernels/ufuncs.py)."""
    frame[0], frame[1], frame[2], frame[3], frame[4] = X.ctypes.data, Y.ctypes.data, n, 8, 8
    return frame.ctypes.data


@jit
def _paired(frame, X, Y, Z, n, number):
    """frame's address, set to the arguments NumPy passes its binary loop over n elements: args = (X, Y, Z), the count,
    the steps in bytes: 8, but 0 over X (number 1) or Y (number 2), one number read by all."""
    frame[0], frame[1], frame[2], frame[3] = X.ctypes.data, Y.ctypes.data, Z.ctypes.data, n
    frame[4], frame[5], frame[6] = 0 if number == 1 else 8, 0 if number == 2 else 8, 8
    return frame.ctypes.data
'''
