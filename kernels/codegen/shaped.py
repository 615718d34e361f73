"""The generator of a fused run's own kernels: one pass per element over its whole expression.

fused_forward and fused_reverse (kernels/codegen/fused.py) interpret any run: a loop per member per block
of 512, at about what a NumPy pass costs, so a 3-tap filter's run made 7 passes forward and 10 back (and
Numba counted references to its per-block views: 16-23% of them). Here a run's shape (tape/sweeps/fusion.py's
``Run.shape``: each member's opcode and operands, which views step by one, which members are written, the sum,
and which members hold adjoints) becomes straight-line code: per element, every member's value in a local
(views read as shifted indices into the arena), and back, every member's adjoint in a local. Numbers, views'
offsets and lags stay arguments, so one kernel serves every length and coefficient.

Bits: per element, the same IEEE operations in the same order as the interpreted kernels: the op table's
rules (kernels/ops.py) with the structural-zero select, member adjoints summed from the last member down
(the first contribution assigned), the sum's lanes and blocks as fused_forward's, and each input element's
adds in member order, a before b: the reverse's contributions to views wait in a row per view (256 elements
of the block before kept) and are added view by view, each view's lagged, for the block's elements.
"""

from __future__ import annotations

import re

from .. import ops
from ..ops import SQUARE
from .fused import BLOCK, block_sum
from .sweeps import JIT, names_in

KEPT = BLOCK // 2  # a contribution row's elements before the block: a view's largest lag (tape/sweeps/fusion.py's LAGS)


def _rule(code: int, square: bool) -> ops.Op:
    return ops.Op("square", "unary", SQUARE["forward"], SQUARE["da"]) if square else ops.OPS[code]


def _operands(member: tuple) -> tuple[str, str]:
    """The expressions of a member's operands a and b: an earlier member's value, a view's element, a number."""
    a, b = (f"s{i}" if kind == 0 else f"x{i}" if kind == 1 else f"c{i}" for kind, i in (member[2:4], member[4:6]))
    return a, b


def _apply(target: str, expr: str, member: tuple, k: int, indent: str) -> list[str]:
    """Lines binding what a rule's expression reads of member k (a, b, its value y), then ``target = expr``."""
    names = names_in(expr)
    binds = [f"{name} = {value}" for name, value in zip("aby", (*_operands(member), f"s{k}"), strict=True)
             if name in names]
    return [indent + line for line in (*binds, f"{target} = {expr}")]


def _values(members: tuple, which: tuple[bool, ...], indent: str) -> list[str]:
    """The values of the members in which, into s<k>."""
    return [line for k, member in enumerate(members) if which[k]
            for line in _apply(f"s{k}", _rule(member[0], member[1]).forward, member, k, indent)]


def _loads(body: list[str], views: int, unit: tuple[bool, ...], indent: str) -> list[str]:
    """Each view's element that body reads, into x<i>."""
    text = "\n".join(body)
    return [f"{indent}x{i} = aval[np.uint64(v{i} + e{'' if unit[i] else f' * t{i}'})]"
            for i in range(views) if re.search(rf"\bx{i}\b", text)]


def _numbers(members: tuple) -> list[str]:
    """Each number the members read, into c<i>."""
    numbers = sorted({i for member in members for kind, i in (member[2:4], member[4:6]) if kind == 2})
    return [f"    c{i} = imm[{i}]" for i in numbers]


def _row(views: int, unit: tuple[bool, ...]) -> list[str]:
    """Each view's first element in row r (and its stride where not 1, its lag)."""
    lines = [f"        v{i} = ext[{i}, 0] + r * ext[{i}, 1]" for i in range(views)]
    return lines + [f"        t{i} = ext[{i}, 2]" for i in range(views) if not unit[i]]


def forward(shape: tuple) -> str:
    """The forward kernel of a run of this shape: fused_forward's arguments less the program's arrays."""
    members, unit, live, summed = shape[0], shape[1], shape[2], shape[3]
    m, ind = len(members), " " * 16
    body = _values(members, (True,) * m, ind)
    body += [f"{ind}aval[np.uint64(o{k} + e)] = s{k}" for k in range(m) if live[k]]
    body += [f"{ind}L[np.uint64(e - start)] = s{m - 1}"] if summed else []
    sums = [f"    L = np.empty({BLOCK})", "    tail = np.zeros(8)", "    pending = np.zeros(64)", "    count = 0"]
    lines = ["def forward(imm, ext, live, n0, n1, aval):", *_numbers(members), *(sums if summed else []),
             "    for r in range(n0):", *_row(len(unit), unit),
             *[f"        o{k} = live[{k}] + r * n1" for k in range(m) if live[k]],
             f"        for start in range(0, n1, {BLOCK}):", f"            w = min({BLOCK}, n1 - start)",
             "            for e in range(start, start + w):", *_loads(body, len(unit), unit, ind), *body]
    if summed:
        lines += ["            last = L", *block_sum("            "), "    total = 0.0", "    for level in range(64):",
                  "        if count >> level & 1:", "            total += pending[level]"]
    lines.append(f"    return {'total' if summed else '0.0'}")
    return "\n".join([f"@{JIT}", *lines]) + "\n"


def reverse(shape: tuple) -> str:
    """The reverse kernel of a run of this shape: fused_reverse's arguments less the program's arrays and need."""
    members, unit, need, reached, seeded = shape[0], shape[1], shape[4], shape[5], shape[6]
    m, ind = len(members), " " * 16
    body = _values(members, need, ind)
    for k in range(m):
        if reached[k]:
            body.append(f"{ind}g{k} = aadj[np.uint64(q{k} + e)]")
    if seeded:
        body.append(f"{ind}g{m - 1} {'+' if reached[m - 1] else ''}= seed")
    elif not reached[m - 1]:
        body.append(f"{ind}g{m - 1} = 0.0")
    held = list(reached)
    held[-1] = True
    rows = []  # the views' contribution rows, in the order of their adds
    for k in range(m - 1, -1, -1):
        if not held[k]:
            continue
        code, square, ka, ia, kb, ib = members[k]
        rule = _rule(code, square)
        for side, kind, i in (("a", ka, ia), ("b", kb, ib)):
            partial = getattr(rule, "d" + side)
            if kind == 2 or not partial:
                continue
            body += [*_apply("p", partial, members[k], k, ind),
                     f"{ind}c = g{k} * p if (g{k} != 0.0) & (p != 0.0) else 0.0"]
            if kind == 0:
                body.append(f"{ind}g{i} {'+' if held[i] else ''}= c")
                held[i] = True
            else:
                body.append(f"{ind}C{len(rows)}[np.uint64(e - first + {KEPT})] = c")
                rows.append(i)
    lines = ["def reverse(imm, ext, adj_in, seed, n0, n1, aval, aadj):", *_numbers(members),
             *[f"    C{j} = np.empty({KEPT + BLOCK})" for j in range(len(rows))],
             "    for r in range(n0):", *_row(len(unit), unit),
             *[f"        l{i} = ext[{i}, 3]" for i in sorted(set(rows))],
             *[f"        q{k} = adj_in[{k}] + r * n1" for k in range(m) if reached[k]],
             f"        for first in range(0, n1, {BLOCK}):", f"            w = min({BLOCK}, n1 - first)",
             "            for e in range(first, first + w):", *_loads(body, len(unit), unit, ind), *body]
    for j, i in enumerate(rows):  # each view's adds: its elements first..first + w lagged, the last block's to the end
        at = f"v{i} + e" if unit[i] else f"v{i} + e * t{i}"
        lines += [f"            for e in range(max(first - l{i}, 0), n1 if first + w == n1 else first + w - l{i}):",
                  f"                aadj[np.uint64({at})] += C{j}[np.uint64(e - first + {KEPT})]",
                  f"            for e in range(l{i}):  # kept for the next block (a slice took ~3 s more to compile)",
                  f"                C{j}[np.uint64({KEPT} - l{i} + e)] = C{j}[np.uint64({KEPT} + w - l{i} + e)]"]
    return "\n".join([f"@{JIT}", *lines]) + "\n"


def module(shape: tuple, header: list[str]) -> str:
    """The source of a module holding a run shape's two kernels."""
    code = forward(shape) + "\n\n" + reverse(shape)
    helpers = sorted(names_in(*(op.forward for op in ops.OPS if op.name in ops.FUSIBLE),
                              *(op.da for op in ops.OPS if op.name in ops.FUSIBLE),
                              *(op.db for op in ops.OPS if op.name in ops.FUSIBLE)) - {"a", "b", "y"})
    used = [name for name in helpers if re.search(rf"\b{name}\(", code)]
    imports = ", ".join(["jit", "np", *used])
    return "\n".join([*header, f'"""A fused run\'s kernels, shape {shape!r}."""', "",
                      f"from tape.kernels._sweeps import {imports}  # noqa: F401", "", "", code])

