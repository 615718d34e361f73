"""The generator of ``tape/records/_recorders.py``: the Python recorders, one per operator and unary op.

Each recorder is a template with the op's forward expression from ``kernels/ops.py``
pasted in, so recording computes exactly the expression the Numba kernels replay, and
the hot path is one Python call per record: no helper calls, no lookups of the table.
Helpers and math functions are imported under a leading underscore (``_exp``,
``_sigmoid``), so the public functions can carry the ops' own names.
Run by ``python -m kernels.codegen``.
"""

from __future__ import annotations

import re
import textwrap

from .. import ops
from . import sweeps

# Common tail: append record (code, i, j, v) to tape t and return its handle.
APPEND = """
n = t._n
if n == t._capacity:
    t._grow(n + 1)
    vals = t._val_w
t._op_w[n] = code
t._in0_w[n] = i
{write_in1}vals[n] = v
t._n = n + 1
if t._lines is not None:
    t._lines[n] = caller()
r = Var()  # no __init__: cheaper than object.__new__(Var)
r._seg = seg
r._index = n
return r
"""

# Python's math raises where IEEE (and the kernels) return inf or NaN: fall back to the kernel.
EVALUATE = """
try:
    v = {forward}
except (ArithmeticError, ValueError):
    v = eval_op(code, {args})
"""

UNARY = """
seg = x._seg
if not seg.live:
    seg = revalidate(x)
t = seg.tape
vals = t._val_w
i = x._index
a = vals[i]
code = {code}  # {name}
"""

# x <op> c with c a number; the constant goes to the pool and its slot to in1.
CONST = """
c = y if type(y) is float else as_constant(y)
if c is None:
    return NotImplemented
{negate}if not seg.live:
    seg = revalidate(x)
t = seg.tape
i = x._index
j = t._n_consts
if j == t._consts_capacity:
    t._grow_consts()
t._consts_w[j] = c
t._n_consts = j + 1
vals = t._val_w
a = vals[i]
code = {code}  # {name}
"""

PAIR = """
if y._seg is not seg or not seg.live:
    seg = shared_segment(x, y)
t = seg.tape
vals = t._val_w
i = x._index
j = y._index
a = vals[i]
b = vals[j]
code = {code}  # {name}
"""

# x <op> c or c <op> x for an op without const ops (ops.GROUPED_PAIRS): c becomes a constant record first
CONSTANT_RECORD = """
c = y if type(y) is float else as_constant(y)
if c is None:
    return NotImplemented
if not seg.live:
    seg = revalidate(x)
t = seg.tape
k = t._push({constant}, {none}, {none}, c)  # the constant record
vals = t._val_w
{i} = x._index
{j} = k
a = vals[i]
b = vals[j]
code = {code}  # {name}
"""

RENAMED = tuple(fn.__name__ for fn in ops.HELPERS) + ops.MATH_NAMES


def private(expr: str) -> str:
    """The expression with helper and math calls renamed to their underscored imports."""
    return re.sub(r"\b(" + "|".join(RENAMED) + r")\(", r"_\1(", expr)


def method(lines: list[str]) -> list[str]:
    """A module-level recorder's lines as a method of Var: x is self."""
    return [re.sub(r"\bx\b", "self", line) for line in lines]


def imports(module: str, names: list[str]) -> list[str]:
    """Sorted as ruff's isort wants them: one line per ``as`` import, the rest together."""
    renamed = [f"from {module} import {name}" for name in names if " as " in name]
    plain = [name for name in names if " as " not in name]
    return renamed + (["from " + module + " import (", *(f"    {name}," for name in plain), ")"] if plain else [])


def block(text: str, indent: int) -> list[str]:
    return textwrap.indent(text.strip("\n"), " " * indent).split("\n")


def python_forward(code: int) -> str:
    """The op's forward expression in Python; a grouped op's is the kernel's own evaluation (Python's
    math.lgamma, for one, is not the C library's, so math would record other bits than replay)."""
    if ops.OPS[code].name in ops.GROUPED:
        return f"grouped_value({code}, a)"
    if ops.OPS[code].name in ops.GROUPED_PAIRS:
        return f"grouped_pair_value({code}, a, b, 0.0)"
    return private(ops.OPS[code].forward)


def evaluate(code: int, args: str, indent: int) -> list[str]:
    return block(EVALUATE.format(forward=python_forward(code), args=args), indent)


def const_path(name: str, negate: bool, indent: int) -> list[str]:
    code = ops.OPCODE[name]
    lines = CONST.format(negate="c = -c  # x - c is recorded as x + (-c), the same number\n" if negate else "",
                         code=code, name=name)
    return block(lines, indent) + evaluate(code, "a, c", indent)


def constant_path(spelling: ops.Spelling, reflected: bool, indent: int) -> list[str]:
    """c <op> x (reflected) or x <op> c with c recorded as a constant record (no const op)."""
    code = ops.OPCODE[spelling.pair]
    i, j = ("j", "i") if reflected else ("i", "j")
    lines = CONSTANT_RECORD.format(constant=ops.CONSTANT, none="NO_INPUT", i=i, j=j, code=code, name=spelling.pair)
    return block(lines, indent) + evaluate(code, "a, b", indent)


def binary(header: str, spelling: ops.Spelling, indent: int) -> list[str]:
    """A recorder of x <op> y for a Var x and a Var or number y."""
    code = ops.OPCODE[spelling.pair]
    number = (const_path(spelling.var_c, spelling.negate, indent + 8) if spelling.var_c else
              constant_path(spelling, False, indent + 8))
    return [
        " " * indent + header,
        " " * indent + "    seg = x._seg",
        " " * indent + "    if type(y) is Var:",
        *block(PAIR.format(code=code, name=spelling.pair), indent + 8),
        *evaluate(code, "a, b", indent + 8),
        " " * indent + "    else:",
        *number,
        *block(APPEND.format(write_in1="t._in1_w[n] = j\n"), indent + 4),
    ]


def reflected(header: str, spelling: ops.Spelling, indent: int) -> list[str]:
    """A recorder of c <op> x for a number c and a Var x."""
    return [
        " " * indent + header,
        " " * indent + "    seg = x._seg",
        *(const_path(spelling.c_var, False, indent + 4) if spelling.c_var else
          constant_path(spelling, True, indent + 4)),
        *block(APPEND.format(write_in1="t._in1_w[n] = j\n"), indent + 4),
    ]


def unary(header: str, name: str, indent: int, guard: bool, doc: str = "") -> list[str]:
    code = ops.OPCODE[name]
    lines = [" " * indent + header] + ([" " * indent + f'    """{doc}"""'] if doc else [])
    if guard:  # a public function: VarArrays and numbers go elsewhere
        lines += [" " * indent + "    if type(x) is not Var:", " " * indent + f'        return unary_other({code}, x)']
    return lines + [
        *block(UNARY.format(code=code, name=name), indent + 4),
        *evaluate(code, "a, 0.0", indent + 4),
        *block(APPEND.format(write_in1=""), indent + 4),
    ]


def recorded() -> list[int]:
    """The opcodes that have a recorder: unary ops and every spelling of arithmetic."""
    names = list(ops.UNARY) + [n for s in ops.ARITHMETIC for n in (s.pair, s.var_c, s.c_var) if n]
    return sorted({ops.OPCODE[name] for name in names})


def forward_function(code: int) -> list[str]:
    """The op's value as a function of (a, b), b the constant for const ops: the loop of tape/arrays/small.py."""
    op = ops.OPS[code]
    second = "c" if op.kind == "const" else "b"
    return [f"def _forward_{code}(a: float, {second}: float) -> float:  # {op.name}",
            "    try:",
            f"        return {python_forward(code)}",
            "    except (ArithmeticError, ValueError):",
            f"        return eval_op({code}, a, {second})", "", ""]


def describe(name: str) -> str:
    op = ops.OPS[ops.OPCODE[name]]
    second = f"; d2y/da2 = {op.daa}" if op.daa else ""
    rule = textwrap.fill(f"{name}(x): y = {op.forward}, dy/da = {op.da}{second} (a: the value of x).", 108,
                         subsequent_indent="    ")
    return (f"{rule}\n\n"
            "    A Var gives a Var (one record), a VarArray a VarArray, a number a float (nothing recorded).\n    ")


def unary_function(name: str) -> list[str]:
    return [
        "@overload",
        f"def {name}(x: Var) -> Var: ...",
        "@overload",
        f"def {name}(x: float) -> float: ...",
        "@overload",
        f"def {name}(x: VarArray) -> VarArray: ...",
        *unary(f"def {name}(x):", name, 0, guard=True, doc=describe(name)),
        "",
        "",
    ]


def comparison(spelling: ops.Spelling) -> list[str]:
    other = "object" if spelling.name in ("eq", "ne") else "Var | float"
    ignore = "  # type: ignore[override]" if spelling.name in ("eq", "ne") else ""
    pair, var_c = ops.OPCODE[spelling.pair], ops.OPCODE[spelling.var_c]
    return [
        f"    def __{spelling.name}__(self, y: {other}) -> Condition:{ignore}",
        f"        return compare(self, y, {pair}, {var_c}, {spelling.swap})  # {spelling.pair}, {spelling.var_c}",
        "",
    ]


def generate(header: list[str]) -> str:
    """The text of tape/records/_recorders.py."""
    used = sweeps.names_in(*(ops.OPS[code].forward for code in recorded()
                                  if ops.OPS[code].name not in ops.GROUPED + ops.GROUPED_PAIRS))
    out = [
        *header,
        '"""Var, the handle that records, and the recording functions, generated from the op table.',
        "",
        "Every arithmetic operator of a Var and every unary function (``tape.exp``, ...) is",
        "one of the templates of kernels/codegen/recorders.py with the op's forward expression",
        "pasted in: it reads its inputs' values, evaluates the expression (falling back to the",
        "kernel's evaluator where Python's math raises instead of returning inf/NaN), appends one",
        "record through memoryviews and returns a new handle.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Callable",
        *imports("math", [f"{name} as _{name}" for name in sorted(used & set(ops.MATH_NAMES))]),
        "from typing import TYPE_CHECKING, overload",
        "",
        "from tape.debug.nans import caller",
        "from tape.kernels._sweeps import eval_op, grouped_pair_value, grouped_value",
        *imports("tape.kernels.ops", sorted(f"{fn.__name__} as _{fn.__name__}" for fn in ops.HELPERS
                                            if fn.__name__ in used)),
        *imports("tape.records.handles", ["Condition", "Handle", "as_constant", "compare", "revalidate",
                                          "shared_segment", "unary_other"]),
        "from tape.records.storage import NO_INPUT",
        "",
        "if TYPE_CHECKING:",
        "    from tape.arrays.varray import VarArray",
        "",
        "",
        "class Var(Handle):",
        '    """Handle to one record of a tape: (segment of the tape, index), nothing else.',
        "",
        "    No references to parent records, so dropping a huge graph is O(1) and never",
        "    recursive. Arithmetic with other Vars and with real numbers records new rows;",
        "    comparisons give a Condition; ``.value`` and ``.grad`` read the tape.",
        '    """',
        "",
        "    __slots__ = ()",
        "",
    ]
    for spelling in ops.ARITHMETIC:
        if spelling.operator:
            out += method(binary(f"def __{spelling.name}__(x, y: Var | float) -> Var:", spelling, 4)) + [""]
            out += method(reflected(f"def __r{spelling.name}__(x, y: float) -> Var:", spelling, 4)) + [""]
    for name in ops.UNARY_OPERATORS:
        out += method(unary(f"def __{name}__(x) -> Var:", name, 4, guard=False)) + [""]
    for spelling in ops.COMPARISONS:
        out += comparison(spelling)
    out += ["    __hash__ = Handle.__hash__  # defining __eq__ would otherwise remove it", ""]
    out += ["", "# -- functions: tape.maximum(x, y) and tape.exp(x), ... ---------------------------", "", ""]
    for spelling in ops.ARITHMETIC:
        if not spelling.operator:
            out += binary(f"def {spelling.name}_var(x: Var, y: Var | float) -> Var:", spelling, 0) + ["", ""]
            out += reflected(f"def {spelling.name}_number(x: Var, y: float) -> Var:", spelling, 0) + ["", ""]
    for name in ops.UNARY:
        if name not in ops.UNARY_OPERATORS:
            out += unary_function(name)
    out += ["# -- each op's value, for recording many elements in one loop (tape/arrays/small.py) ---------", "", ""]
    for code in recorded():
        out += forward_function(code)
    entries = "".join(f"    {code}: _forward_{code},\n" for code in recorded())
    out += ["FORWARD: dict[int, Callable[[float, float], float]] = {  # opcode -> its value of (a, b or c)",
            entries.rstrip("\n"), "}"]
    text = "\n".join(out).rstrip() + "\n"
    functions = [n for n in ops.UNARY if n not in ops.UNARY_OPERATORS]
    listed = "".join(f"    {name!r},\n" for name in ["Var", *functions])
    return text + f"\n\n__all__ = [\n{listed}]\n"
