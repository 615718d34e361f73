"""The generator of ``kernels/_sweeps.py``: the Numba sweeps, one ``if``/``elif`` branch per op.

Each sweep is one loop over the records with an ``if``/``elif`` chain on the
opcode (LLVM turns it into a jump table); the body of each branch is the op's
rule from ``kernels/ops.py``, so adding an op never touches this file.
Run by ``python -m kernels.codegen``.
"""

from __future__ import annotations

import ast
import re

from .. import ops

JIT = "jit"  # the decorators of kernels/compiling.py: cache=True, nogil=True, error_model="numpy"


def natural(name: str) -> list:
    """The sort key of isort (and ruff): numbers by value, so log2 comes before log10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def element_loop(indent: str, body: list[str], count: str = "w") -> list[str]:
    """A loop over count elements; unsigned indices, so Numba drops the wraparound test and LLVM
    vectorizes it (measured 3.5x faster than signed indices into 2-d arrays)."""
    return [f"{indent}for e in range({count}):", f"{indent}    u = np.uint64(e)", *[indent + "    " + x for x in body]]


def names_in(*exprs: str) -> set[str]:
    """The variable names an op's rule expressions read."""
    found: set[str] = set()
    for expr in exprs:
        if expr:
            found |= {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}
    return found


def operand_loads(op: ops.Op, used: set[str], indent: str) -> list[str]:
    """Lines loading the values a rule reads (a, b, c, y) for record i."""
    loads = {
        "a": "a = val[in0[i]]",
        "b": "b = val[in1[i]]",
        "c": "c = consts[in1[i]]",
        "y": "y = val[i]",
        "cond": "cond = val[i - 1]",
    }
    return [indent + line for name, line in loads.items() if name in used]


# ops.GROUPED in a sweep: one branch, whose rules call the grouped kernels with the opcode k
GROUP = ops.Op("grouped", "unary", "grouped_value(np.int64(k), a)", "grouped_da(np.int64(k), a, y)",
               daa="grouped_daa(np.int64(k), a, y)")  # int64, as Python calls them: one signature each
# ops.GROUPED_PAIRS: one branch too, calling grouped_pair_<part>(k, a, b, y), a kernel per rule: a first
# gradient compiles the value, da and db kernels, not the second partials (grouped_pair(part, ...) picks one)
PAIR_PARTS = ("da", "db", "daa", "dab", "dbb")
PAIR_NAMES = ("value", *PAIR_PARTS)
GROUP_PAIR = ops.Op("grouped_pair", "binary", "grouped_pair_value(np.int64(k), a, b, 0.0)",
                    **{part: f"grouped_pair_{part}(np.int64(k), a, b, y)" for part in PAIR_PARTS})
GROUPS = ((GROUP, "IS_GROUPED", "GROUPED"), (GROUP_PAIR, "IS_GROUPED_PAIR", "GROUPED_PAIRS"))


def branches(body_for, include=lambda op: op.kind != "leaf") -> list[str]:
    """One ``if``/``elif`` branch per included op (one for all of ops.GROUPED, one for all of
    ops.GROUPED_PAIRS), with body lines from body_for(op)."""
    lines: list[str] = []
    first = True
    for code, op in enumerate(ops.OPS):
        if not include(op) or op.name in ops.GROUPED + ops.GROUPED_PAIRS:
            continue
        lines.append(f"        {'if' if first else 'elif'} k == {code}:  # {op.name}")
        lines.extend(body_for(op))
        first = False
    for group, mask, names in GROUPS:
        count = len(getattr(ops, names))
        if include(group) and count:
            lines.append(f"        {'if' if first else 'elif'} {mask}[k]:  # the {count} ops of ops.{names}")
            lines.extend(body_for(group))
            first = False
    return lines


def _rule_kernel(name: str, args: str, group: tuple[str, ...], part: str, what: str) -> list[str]:
    """A kernel returning rule ``part`` of the op of the group with opcode k."""
    out = [f"@{JIT}", f"def {name}(k, {args}):", f'    """The {part} rule of {what} k (kernels/ops.py)."""']
    for code, op in enumerate(ops.OPS):
        if op.name in group:
            out += [f"    if k == {code}:  # {op.name}", f"        return {getattr(op, part) or '0.0'}"]
    return out + ["    return nan", "", ""]


def grouped_kernels() -> list[str]:
    """grouped_value, grouped_da, grouped_daa: each rule of ops.GROUPED by opcode k; grouped_pair_value to
    grouped_pair_dbb: of ops.GROUPED_PAIRS (a kernel per rule: a sweep compiles only the rules it reads)."""
    out = []
    for name, part, args in (("value", "forward", "a"), ("da", "da", "a, y"), ("daa", "daa", "a, y")):
        out += _rule_kernel(f"grouped_{name}", args, ops.GROUPED, part, "grouped op")
    for name, part in zip(PAIR_NAMES, ("forward", *PAIR_PARTS), strict=True):
        out += _rule_kernel(f"grouped_pair_{name}", "a, b, y", ops.GROUPED_PAIRS, part, "grouped binary op")
    out += [f"@{JIT}", "def grouped_pair(part, k, a, b, y):",
            '    """Rule ``part`` of grouped binary op k (ops.GROUPED_PAIRS): 0 value, 1-5 da, db, daa, dab, dbb."""']
    for n, name in enumerate(PAIR_NAMES):
        out += [f"    {'if' if n == 0 else 'elif'} part == {n}:", f"        return grouped_pair_{name}(k, a, b, y)"]
    out += ["    return nan", "", "", f"@{JIT}", "def grouped_pair_map(part, k, a, b, y, out):",
            '    """grouped_pair over flat arrays."""', "    for e in range(len(a)):",
            "        out[e] = grouped_pair(part, k, a[e], b[e], y[e])", "", ""]
    return out + [f"@{JIT}", "def grouped_map(part, k, a, y, out):",
                  '    """grouped_value (part 0), grouped_da (1) or grouped_daa (2) of op k over flat arrays."""',
                  "    for e in range(len(a)):", "        if part == 0:", "            out[e] = grouped_value(k, a[e])",
                  "        elif part == 1:", "            out[e] = grouped_da(k, a[e], y[e])", "        else:",
                  "            out[e] = grouped_daa(k, a[e], y[e])", "", ""]


def forward_body(op: ops.Op, hand_over: bool = False) -> list[str]:
    """A branch of a forward sweep; hand_over: grouped ops return (as in reverse_sweep)."""
    ind = " " * 12
    if hand_over and op in (GROUP, GROUP_PAIR):  # their rules: 1-1.5 s of an hvp's first compile
        return [f"{ind}return np.int64(i)"]
    return operand_loads(op, names_in(op.forward) - {"y"}, ind) + [f"{ind}val[i] = {op.forward}"]


def accumulate(index: str, contribution: str, indent: str, j: str = "j") -> list[str]:
    """adj[index] += contribution, where adjoints stamped before this pass count as zero.

    Written out inline: a helper taking the arrays would make Numba emit
    reference-count calls on every record (measured 1.8x slower).
    With keep < gen (accumulate=True), leaf adjoints stamped at or after keep
    are carried over instead of being reset.
    """
    body = ["{j} = {index}", "d = {contribution}", "if stamp[{j}] == gen:", "    adj[{j}] += d", "else:",
            "    if stamp[{j}] >= keep and op[{j}] == LEAF:", "        adj[{j}] += d", "    else:",
            "        adj[{j}] = d + 0.0  # as a zeroed adjoint plus d: -0.0 becomes +0.0", "    stamp[{j}] = gen"]
    return [indent + line.format(j=j, index=index, contribution=contribution) for line in body]


def reverse_body(op: ops.Op, hand_over: bool = False) -> list[str]:
    """Tape reverse sweep: partials computed here, from the stored values, and whether each is sent
    (``sa``, ``sb``); the sends are one tail after the branches (``reverse_tail``); hand_over: grouped ops return."""
    ind = " " * 12
    if hand_over and op in (GROUP, GROUP_PAIR):  # their rules took half of reverse_sweep's first compile
        return [f"{ind}return np.int64(i)"]
    lines = operand_loads(op, names_in(op.da, op.db, op.when_a, op.when_b), ind)
    lines.append(f"{ind}pa = {op.da}")
    if op.db:  # both partials first: in0 and in1 may be the same record
        lines.append(f"{ind}pb = {op.db}")
    for sent, partial, rule, when in (("sa", "pa", op.da, op.when_a), ("sb", "pb", op.db, op.when_b)):
        if not rule:
            continue
        # a zero partial sends nothing, as in every sweep (0 * inf stays out); literals need no test
        conditions = ([when] if when else []) + ([] if nonzero_literal(rule) else [f"{partial} != 0.0"])
        lines.append(f"{ind}{sent} = {' and '.join(conditions) or 'True'}")
    return lines


def reverse_tail(stamped: bool = True) -> list[str]:
    """After the branches: each partial sent is accumulated, in0's first. Written once instead of in every
    branch: the kernel is a third of the size and compiles in about half the time (measured).
    stamped=False: into adjoints zeroed before the sweep (0.0 + d is d + 0.0: the same bits)."""
    ind = " " * 8
    if not stamped:
        return [f"{ind}if sa:", f"{ind}    adj[in0[i]] += g * pa", f"{ind}if sb:", f"{ind}    adj[in1[i]] += g * pb"]
    return [f"{ind}if sa:", *accumulate("in0[i]", "g * pa", ind + "    "),
            f"{ind}if sb:", *accumulate("in1[i]", "g * pb", ind + "    ")]


# an op without partials (a comparison, a leaf) sends none
REVERSE_START = ["        k = op[i]", "        pa = pb = 0.0", "        sa = sb = False"]


def nonzero_literal(rule: str) -> bool:
    """Whether a partial is a number other than zero ("1.0", "-1.0")."""
    try:
        return float(rule) != 0.0
    except ValueError:
        return False


def has_partials(op: ops.Op) -> bool:
    return bool(op.da)


def partials_body(op: ops.Op, second: bool = False, hand_over: bool = False, hoisted: bool = False) -> list[str]:
    """A branch of partials_switch: value y, partials pa, pb (second: SECOND too), the select's targets; hoisted:
    its operands are loaded before the switch (``HOISTED``: a const op's c is read as b)."""
    ind = " " * 12
    if hand_over and op in (GROUP, GROUP_PAIR):  # as in reverse_sweep: their rules, 2 s of an hvp's first compile
        return [f"{ind}return np.int64(i)"]
    used = names_in(op.forward, op.da, op.db, op.daa, op.dab, op.dbb, op.when_a, op.when_b) - {"y"}
    lines = operand_loads(op, used - ({"a", "b", "c"} if hoisted else set()), ind)
    rules = (op.forward, op.da, op.db, *((op.daa, op.dab, op.dbb) if second else ()))
    if hoisted:
        rules = tuple(re.sub(r"\bc\b", "b", rule) for rule in rules)
    lines += [f"{ind}{name} = {rule}" for name, rule in zip(("y", "pa", "pb", *SECOND), rules, strict=False) if rule]
    if op.when_a:
        lines.append(f"{ind}r0[i] = in0[i] if {op.when_a} else dummy")
    if op.when_b:
        lines.append(f"{ind}r1[i] = in1[i] if {op.when_b} else dummy")
    return lines


SECOND = ("ha", "hab", "hb")  # a partials kernel's second partials, stored in h0, h1, h2
# The operands of every op loaded once, before the switch (b: in1's record, or its constant c), not in each branch:
# forward_second, a scalar hvp's first compile, 1.0 -> 0.75 CPU-s (Numba's passes scale with the branches' statements)
HOISTED = ["        if not HAS_INPUT[k]:", "            continue", "        a = val[in0[i]]",
           "        b = val[in1[i]] if TWO_RECORDS[k] else consts[in1[i]] if USES_POOL[k] else 0.0"]


def partials_switch(second: bool, hand_over: bool = False, include=lambda op: op.kind != "leaf",
                    hoisted: bool = False) -> list[str]:
    """The op switch of a partials sweep, its stores in one tail (a store per branch compiled 1.5x
    slower): zero for a partial its op has not, nothing for a record without a branch (a leaf); hoisted: the
    operands loaded before it (``HOISTED``)."""
    names = ("pa", "pb", *(SECOND if second else ()))
    return [*(HOISTED if hoisted else []), f"        {' = '.join(names)} = 0.0",
            *branches(lambda op: partials_body(op, second, hand_over, hoisted), include),
            "        else:", "            continue", "        val[i] = y",
            *(f"        {out}[i] = {name}" for out, name in zip(("p0", "p1", "h0", "h1", "h2"), names, strict=False))]


def partials_kernel(name: str, outputs: str, second: bool, doc: str, start: bool = False,
                    hand_over: bool = False) -> list[str]:
    """A forward sweep storing partials (and with second, second partials) per record, from record 0 or
    ``start``; hand_over: returning -1, or the first grouped record met, unswept."""
    return [
        f"@{JIT}",
        f"def {name}(op, in0, in1, val, consts, {outputs}{', start' if start else ''}):",
        f'    """{doc}"""',
        "    dummy = len(op)  # the extra adjoint slot that absorbs contributions nobody reads",
        f"    for r in range({'start, ' if start else ''}len(op)):",
        "        i = np.uint64(r)",
        "        k = op[i]",
        *partials_switch(second, hand_over, hoisted=True),
        *(["    return -1"] if hand_over else []),
        "",
        "",
    ]


def is_group(op: ops.Op) -> bool:
    return op in (GROUP, GROUP_PAIR)


def continuation(name: str, args: str, sweep: str, doc: str, switch: list[str], step: str = "+") -> list[str]:
    """A kernel going on from record ``start`` where ``sweep`` stopped: ``sweep`` runs each stretch of
    plain records and the grouped record it stops at is done here, so a program with grouped ops compiles
    their rules once and the op switch of ``sweep`` once (a full second sweep compiled it twice).
    step "-": a reverse sweep, going on below the grouped record."""
    call = args.replace("start", "r")
    return [f"@{JIT}", f"def {name}({args}):", f'    """{doc}"""', "    r = start", "    while True:",
            f"        at = {sweep}({call})", "        if at < 0:", "            return", f"        r = at {step} 1",
            "        i = np.uint64(at)", "        k = op[i]", *switch, "", ""]


def scalar_body(op: ops.Op) -> list[str]:
    ind = " " * 12
    lines = [f"{ind}c = b"] if op.kind in ops.KINDS_WITH_CONSTANT else []
    return lines + [f"{ind}return {op.forward}"]


def multiply_add_reverse(indent: str, weight: str) -> list[str]:
    """The Function reverse pass: zero adj, seed the outputs with ``weight``, multiply-add down to 0."""
    body = ["adj[:] = 0.0", "top = 0", "for s in range(len(seeds)):", f"    adj[seeds[s]] += {weight}",
            "    top = max(top, seeds[s])", "for r in range(top + 1):", "    i = np.uint64(top - r)",
            "    g = adj[i]", "    if g == 0.0:", "        continue",
            "    # a zero partial sends nothing, even from an infinite adjoint; adding +0.0 instead of",
            "    # skipping is the same bits (these adjoints are never -0.0) and needs no branch",
            "    adj[r0[i]] += g * p0[i] if p0[i] != 0.0 else 0.0",
            "    adj[r1[i]] += g * p1[i] if p1[i] != 0.0 else 0.0"]
    return [indent + line for line in body]


def reverse_loop(body: list[str]) -> list[str]:
    """Seed the outputs, then sweep from the highest seed down to record 0."""
    return [
        "    top = 0",
        "    for s in range(len(seeds)):",
        *accumulate("seeds[s]", "weights[s]", "        ", j="seed"),
        "        top = max(top, seed)",
        "    for r in range(top + 1):",
        "        i = np.uint64(top - r)  # unsigned: Numba then skips negative-index wraparound",
        "        if stamp[i] != gen:",
        "            continue",
        "        g = adj[i]",
        "        if g == 0.0:  # an exactly-zero adjoint propagates nothing: 0 * inf partials stay out",
        "            continue",
        *body,
    ]


def generate(header: list[str], more: list[str]) -> str:
    """The text of kernels/_sweeps.py; ``more``: the kernels over stored partials and the parallel maps
    (kernels/codegen/derivatives.py, kernels/codegen/maps.py)."""
    helpers = [f"{fn.__name__} = _inline(_ops.{fn.__name__})" for fn in ops.HELPERS]
    helpers += [f"{fn.__name__} = jit(_ops.{fn.__name__})" for fn in ops.CALLED]
    helpers += [f"{name} = _ops.{name}" for name in ("IS_GROUPED", "IS_GROUPED_PAIR", "HAS_INPUT", "TWO_RECORDS",
                                                     "USES_POOL")]
    out = [
        *header,
        '"""Numba sweeps over the tape\'s record arrays, one branch per op."""',
        "",
        "from math import (  # noqa: F401",
        *[f"    {name}," for name in sorted(ops.MATH_NAMES + ("nan",), key=natural)],
        ")",
        "",
        "import numpy as np",
        "",
        "from . import ops as _ops",
        "from .compiling import inline as _inline",
        "from .compiling import jit",
        "",
        *helpers,
        "",
        f"LEAF = {ops.LEAF}",
        "",
        "",
        *grouped_kernels(),
        "",
        "",
        f"@{JIT}",
        "def forward_sweep(op, in0, in1, val, consts, start, stop):",
        '    """Recompute the value of every non-leaf record in [start, stop) from its inputs. Returns -1, or',
        '    the first grouped record met, unswept: forward_range goes on from there (driver.forward_scalars)."""',
        "    for r in range(start, stop):",
        "        i = np.uint64(r)  # unsigned: Numba then skips negative-index wraparound",
        "        k = op[i]",
        *branches(lambda op: forward_body(op, True)),
        "    return -1",
        "",
        "",
        *continuation("forward_range", "op, in0, in1, val, consts, start, stop", "forward_sweep",
                      "forward_sweep on from record start, grouped records included, to stop.",
                      branches(forward_body, is_group)),
        f"@{JIT}",
        "def reverse_sweep(op, in0, in1, val, adj, stamp, consts, seeds, weights, gen, keep):",
        '    """Seed adj[seeds[k]] += weights[k] in generation gen, then sweep records down to 0.',
        "",
        "    A record not stamped gen is skipped. Returns -1, or the first grouped record met, unswept (storage.py).",
        '    """',
        *reverse_loop([*REVERSE_START, *branches(lambda op: reverse_body(op, True), has_partials), *reverse_tail()]),
        "    return -1",
        "",
        "",
        f"@{JIT}",
        "def reverse_range(op, in0, in1, val, adj, stamp, consts, low, high, gen, keep):",
        '    """reverse_sweep over the records in [low, high), high first, with no seeding: the adjoints',
        '    there were seeded or sent by later records (tape/sweeps/driver.py runs it between array records)."""',
        "    for r in range(high - low):",
        "        i = np.uint64(high - 1 - r)",
        "        if stamp[i] != gen:",
        "            continue",
        "        g = adj[i]",
        "        if g == 0.0:",
        "            continue",
        *REVERSE_START,
        *branches(reverse_body, has_partials),
        *reverse_tail(),
        "",
        "",
        f"@{JIT}",
        "def fresh_reverse(op, in0, in1, val, adj, consts, start):",
        '    """reverse_sweep from record start down for a tape swept once (Storage._gradient_and_clear): no stamps,',
        "    adj zeroed and seeded by the caller; an adjoint nothing was sent to stays 0.0 and is skipped as a zero",
        '    one is, so the same bits. Returns -1, or the first grouped record met, unswept."""',
        "    for r in range(start + 1):",
        "        i = np.uint64(start - r)",
        "        g = adj[i]",
        "        if g == 0.0:",
        "            continue",
        *REVERSE_START,
        *branches(lambda op: reverse_body(op, True), has_partials),
        *reverse_tail(stamped=False),
        "    return -1",
        "",
        "",
        *continuation("fresh_reverse_from", "op, in0, in1, val, adj, consts, start", "fresh_reverse",
                      "fresh_reverse on from record start down, grouped records included.",
                      ["        g = adj[i]", *REVERSE_START[1:], *branches(reverse_body, is_group),
                       *reverse_tail(stamped=False)], step="-"),
        *partials_kernel("forward_partials", "p0, p1, r0, r1", False, "Values and local partials of each record"
                         " (a select's r0/r1: its chosen input); -1, or the grouped row met", True, True),
        *continuation("forward_partials_from", "op, in0, in1, val, consts, p0, p1, r0, r1, start", "forward_partials",
                      "forward_partials on from record start, grouped records included.",
                      partials_switch(False, include=is_group)),
        *partials_kernel("forward_second", "p0, p1, h0, h1, h2, r0, r1", True,
                         "forward_partials plus second partials h0 = d2y/da2, h1 = d2y/dadb, h2 = d2y/db2; -1, or"
                         " the grouped row met", True, True),
        *partials_kernel("forward_second_from", "p0, p1, h0, h1, h2, r0, r1", True,  # whole: as a continuation
                         "forward_second from record start, grouped ops included.", True),  # it made hvps 2.5x slower
        f"@{JIT}",
        "def reverse_partials(adj, p0, p1, r0, r1, seeds, weights):",
        '    """The reverse sweep as multiply-adds over partials stored by forward_partials.',
        "",
        "    The same products, added in the same order and skipped where reverse_sweep skips",
        "    them (zero adjoints), so the same bits; adj is zeroed here instead of stamped.",
        '    """',
        *multiply_add_reverse("    ", "weights[s]"),
        "",
        "",
        *more,
        f"@{JIT}",
        "def eval_op(k, a, b):",
        '    """One op\'s forward value (b is the constant for const ops)."""',
        *[line[4:] for line in branches(scalar_body, lambda op: op.kind not in ("leaf", "select"))],
        "    return nan",
        "",
    ]
    text = "\n".join(out)
    kernels = sorted(re.findall(r"^def (\w+)\(", text, flags=re.MULTILINE))
    listed = "".join(f"    {name!r},\n" for name in kernels)
    return text + f"\n\n__all__ = [\n{listed}]\n"
