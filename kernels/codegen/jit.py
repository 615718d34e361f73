"""The generator of ``tape/compiled/_recorders.py``: tape.jit's recorders, one jitted function per op.

Each op gets ``record_<code>`` (append the record: inputs, a constant-pool slot for const ops, the value by its
forward expression from kernels/ops.py, over the same helpers and math functions the Numba sweeps use, so a
record's value is the replay's bits); unary and pair ops a ``value_<code>`` of numbers (the tables'). Each
spelling (kernels/ops.py: ARITHMETIC, COMPARISONS) records ``x <op> c`` and ``c <op> x`` exactly as
tape/records/_recorders.py writes them (``x - c`` as ``add_c`` with ``-c``, a constant record for ops without a
const op). The forward expressions and spellings are written where they are used: a layer of their own was a
Numba compile each (n-body's cold first gradient: 103 -> 87 compiles). record_<code>, push and push_const are
``@hot`` (compiled once, inlined by LLVM into what calls them: recording.Hot); each entry (``unary_<code>``,
``<name>_vv/_vc/_cv``, ``@entry``: compiled once, cached) is one function with the record's append inside, inlined
by LLVM where it is called too (recording.entry says why), in the user's code and in the loops over Var arrays. A Var
holds its tape as a borrowed pointer (no op touches a reference count) and its value (no op reads
the tape's values: a random DAG would miss the cache there). Tables at the end map names to them; tape/compiled/jit.py
registers them as Numba overloads of the operators, ``math.*``, NumPy ufuncs and ``tape.*``.
Run by ``python -m kernels.codegen``.
"""

from __future__ import annotations

import re

from .. import ops
from . import recorders, sweeps


def value(code: int) -> list[str]:
    op = ops.OPS[code]
    args = {"unary": "a", "binary": "a, b"}[op.kind]
    return ["@hot", f"def value_{code}({args}):  # {op.name}",
            f"    return {forward(code)}", "", ""]


def forward(code: int) -> str:
    """The forward expression as the sweeps compile it (helpers by their kernel names)."""
    name = ops.OPS[code].name
    if name in ops.GROUPED:
        return f"grouped_value({code}, a)"
    if name in ops.GROUPED_PAIRS:
        return f"grouped_pair_value({code}, a, b, 0.0)"
    return ops.OPS[code].forward


def inline(code: int, *args: str) -> str:
    """The forward expression of op ``code`` over argument names (``x.c``; for a, then b or c)."""
    second = "b" if ops.OPS[code].kind in ("binary", "compare") else "c"
    names = dict(zip(("a", second), args, strict=False))  # a unary op's: a alone
    return re.sub(r"\b[abc]\b", lambda m: names[m.group()], forward(code))


def record(code: int) -> list[str]:
    """record_<code> of recorded Vars (and the constant of a const op): values from the Vars themselves."""
    op = ops.OPS[code]
    head = f"def record_{code}"
    if op.kind == "unary":
        body = [f"{head}(x):  # {op.name}",
                f"    return push(x.tape, {code}, x.index, NO_INPUT, {inline(code, 'x.c')})"]
    elif op.kind in ("binary", "compare"):
        body = [f"{head}(x, y):  # {op.name}",
                f"    return push(x.tape, {code}, x.index, y.index, {inline(code, 'x.c', 'y.c')})"]
    else:
        body = [f"{head}(x, c):  # {op.name}", "    k = push_const(x.tape, c)",
                f"    return push(x.tape, {code}, x.index, k, {inline(code, 'x.c', 'c')})"]
    return ["@hot", *body, "", ""]


def spelled(s: ops.Spelling, side: str, x: str, c: str) -> str:
    """The call recording x <op> c (side "var_c") or c <op> x ("c_var"), x a recorded Var, as
    tape/records/_recorders.py writes it: the const op (x - c as add_c of -c), else a constant record and the pair op
    (its CONSTANT_RECORD)."""
    const_op = s.var_c if side == "var_c" else s.c_var
    if const_op:
        return f"record_{ops.OPCODE[const_op]}({x}, {'-' if side == 'var_c' and s.negate else ''}{c})"
    k = f"constant_record({x}.tape, {c})"
    return f"record_{ops.OPCODE[s.pair]}({x}, {k})" if side == "var_c" else f"record_{ops.OPCODE[s.pair]}({k}, {x})"


def unary_entry(name: str) -> list[str]:
    code = ops.OPCODE[name]
    return ["@entry", f"def unary_{code}(x):  # {name} of a Var", "    if x.index < 0:",
            f"        return unbound({inline(code, 'x.c')})", f"    return record_{code}(x)", "", ""]


def entries(s: ops.Spelling) -> list[str]:
    """<name>_vv(x, y), <name>_vc(x, c), <name>_cv(c, y): x <op> y of Vars (maybe unrecorded) and numbers."""
    pair = ops.OPCODE[s.pair]
    vc, cv = spelled(s, "var_c", "x", "c"), spelled(s, "c_var", "y", "c")
    return ["@entry", f"def {s.name}_vv(x, y):", "    if x.index < 0:", "        if y.index < 0:",
            f"            return unbound({inline(pair, 'x.c', 'y.c')})",
            f"        return {spelled(s, 'c_var', 'y', 'x.c')}",
            "    if y.index < 0:", f"        return {spelled(s, 'var_c', 'x', 'y.c')}",
            f"    return record_{pair}(x, y)", "", "",
            "@entry", f"def {s.name}_vc(x, c):", "    if x.index < 0:",
            f"        return unbound({inline(pair, 'x.c', 'c')})", f"    return {vc}", "", "",
            "@entry", f"def {s.name}_cv(c, y):", "    if y.index < 0:",
            f"        return unbound({inline(pair, 'c', 'y.c')})", f"    return {cv}", "", ""]


def compare_entry(s: ops.Spelling) -> list[str]:
    args = f"{ops.OPCODE[s.pair]}, {ops.OPCODE[s.var_c]}, {ops.OPCODE[s.c_var]}, {s.swap}"
    return ["@jit", f"def {s.name}_vv(x, y):  # a Condition",
            f"    return condition(x, y, {args}, x.c {ops.SYMBOL[s.name]} y.c)", "", ""]


def compare_value() -> list[str]:
    """The value of every comparison op, by opcode (for Conditions, recorded when a branch reads them)."""
    out = ["@jit", "def compare_value(code, a, b):", '    """The value of comparison op ``code``."""']
    for code, op in enumerate(ops.OPS):
        if op.kind in ("compare", "compare_c"):
            expr = op.forward.replace(" c ", " b ")
            out += [f"    if code == {code}:  # {op.name}", f"        return {expr}"]
    return out + ["    return 0.0", "", ""]


def math_name(name: str) -> str:
    """The math module's name of a unary op, if it has one (``arcsin``: asin)."""
    m = re.fullmatch(r"(\w+)\(a\)", ops.OPS[ops.OPCODE[name]].forward)
    return m.group(1) if m and m.group(1) in ops.MATH_NAMES else ""


def generate(header: list[str]) -> str:
    codes = [code for code, op in enumerate(ops.OPS) if op.kind in ("unary", "binary", "const", "compare", "compare_c")]
    exprs = [forward(c) for c in codes]
    used = sorted(sweeps.names_in(*exprs) - set(ops.OPERANDS))
    kernels = {"grouped_pair_value", "grouped_value"}
    helpers = sorted({n for n in used if n in {fn.__name__ for fn in ops.HELPERS}} | kernels)
    maths = [n for n in used if n in ops.MATH_NAMES]
    out = [*header, '"""tape.jit\'s recorders, generated from the op table (kernels/codegen/jit.py says how)."""', "",
           *recorders.imports("math", maths), "",
           *recorders.imports("tape.compiled.recording", ["condition", "constant_record", "entry", "hot", "jit", "push",
                                                        "push_const", "unbound"]),
           "from tape.kernels import _sweeps",
           "from tape.records.storage import NO_INPUT", "",
           "# the sweeps' own helpers, called from jitted code only (so warmup need not compile them)",
           *(f"{name} = _sweeps.{name}" for name in helpers), "", ""]
    for code in [*(ops.OPCODE[name] for name in ops.UNARY), *(ops.OPCODE[s.pair] for s in ops.ARITHMETIC)]:
        out += value(code)  # the tables' values of numbers
    for code in codes:
        if ops.OPS[code].kind not in ("compare", "compare_c"):
            out += record(code)
    out += compare_value()
    for name in ops.UNARY:
        out += unary_entry(name)
    for s in ops.ARITHMETIC:
        out += entries(s)
    for s in ops.COMPARISONS:
        out += compare_entry(s)
    out += ["# unary op -> (of a Var, of a number, math's name or '', NumPy's name or '')", "UNARY = {"]
    for name in ops.UNARY:
        code = ops.OPCODE[name]
        ufunc = ops.UNARY_UFUNCS.get(name, "")
        out.append(f"    {name!r}: (unary_{code}, value_{code}, {math_name(name)!r}, {ufunc!r}),")
    out += ["}", "# spelling -> (Var <op> Var, Var <op> number, number <op> Var, numbers, operator, ufunc)",
            "ARITHMETIC = {"]
    for s in ops.ARITHMETIC:
        out.append(f"    {s.name!r}: ({s.name}_vv, {s.name}_vc, {s.name}_cv, value_{ops.OPCODE[s.pair]}, {s.operator}, "
                   f"{s.ufunc!r}),")
    out += ["}", "# comparison -> Var <op> Var as a Condition (numbers are unrecorded Vars)",
            "COMPARISONS = {"]
    for s in ops.COMPARISONS:
        out.append(f"    {s.name!r}: {s.name}_vv,")
    out += ["}"]
    return "\n".join(out).rstrip() + "\n"
