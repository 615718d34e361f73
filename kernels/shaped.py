"""A fused run shape's own kernels: one pass per element over its whole expression, generated at run time.

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
Measured (bench/array_programs.py's filter, 10^5 elements, thread CPU a run, load 7): forward 118 -> 43 µs,
reverse 291 -> 90 µs; both loops vectorize (zmm).

The source of a shape's kernels is written once to ``<cache_dir>/shaped/`` (kernels/compiling.py), named by
its hash, and imported from there; Numba caches their machine code beside tape's other kernels, so a shape
compiles once per environment, whatever the arrays' lengths. When to call them is tape/sweeps/fusion.py's (a
Gate, until their compile pays back). The runtime imports no code generator, so this one lives here; the
interpreted kernels' generator (kernels/codegen/fused.py) takes its block and sum from it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import pathlib
import re
import sys
import tempfile
from typing import Any

from . import ops
from .compiling import shaped_dir
from .ops import FUSIBLE, SQUARE, reads

BLOCK = 512  # elements a block: the interpreted kernels' (and their twins', tape/sweeps/fused_numpy.py)
KEPT = BLOCK // 2  # a contribution row's elements before the block: a view's largest lag (tape/sweeps/fusion.py's LAGS)
MEMBERS = 32  # members one run's (or stretch's) kernel holds at most: straight-line code, and LLVM's memory and time
# grow with it (an elementwise chain of 1,800 members took over 8 GB and 3 minutes before it was killed; 144: 0.74 GB)


def block_sum(indent: str) -> list[str]:
    """Add the block's values ``last[:w]`` to the sum: eight interleaved partial sums per block, blocks added
    pairwise (a binary counter of partial sums, as NumPy's pairwise sum): error O(log n), deterministic."""
    return [indent + line for line in (
        'p0 = p1 = p2 = p3 = p4 = p5 = p6 = p7 = 0.0',
        'for j in range(0, w - w % 8, 8):  # in registers: twice as fast as an array of eight',
        '    u = np.uint64(j)',
        '    p0 += last[u]',
        '    p1 += last[u + 1]',
        '    p2 += last[u + 2]',
        '    p3 += last[u + 3]',
        '    p4 += last[u + 4]',
        '    p5 += last[u + 5]',
        '    p6 += last[u + 6]',
        '    p7 += last[u + 7]',
        "if w % 8:  # the last block's tail, lane by lane (adding +0.0 elsewhere changes nothing)",
        '    tail[:] = 0.0',
        '    for e in range(w - w % 8, w):',
        '        tail[e % 8] = last[e]',
        '    p0, p1, p2, p3 = p0 + tail[0], p1 + tail[1], p2 + tail[2], p3 + tail[3]',
        '    p4, p5, p6, p7 = p4 + tail[4], p5 + tail[5], p6 + tail[6], p7 + tail[7]',
        'block = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))',
        'level = 0',
        'count += 1',
        'while count >> level & 1 == 0:',
        '    block += pending[level]',
        '    level += 1',
        'pending[level] = block',
    )]


def _rule(code: int, square: bool) -> ops.Op:
    return ops.Op("square", "unary", SQUARE["forward"], SQUARE["da"]) if square else ops.OPS[code]


def _operands(member: tuple) -> tuple[str, str]:
    """The expressions of a member's operands a and b: an earlier member's value, a view's element, a number."""
    a, b = (f"s{i}" if kind == 0 else f"x{i}" if kind == 1 else f"c{i}" for kind, i in (member[2:4], member[4:6]))
    return a, b


def _apply(target: str, expr: str, member: tuple, k: int, indent: str) -> list[str]:
    """Lines binding what a rule's expression reads of member k (a, b, its value y), then ``target = expr``."""
    names = reads(expr)
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
    return "\n".join(["@jit", *lines]) + "\n"


def _partials(members: tuple, reached: tuple[bool, ...]) -> Any:
    """The reverse's partials in the order it takes them: of each member with an adjoint, last first, a before b
    (not a number's, not a constant partial): (k, operand kind, operand index, partial)."""
    held = [*reached[:-1], True]
    for k in range(len(members) - 1, -1, -1):
        if not held[k]:
            continue
        code, square, ka, ia, kb, ib = members[k]
        rule = _rule(code, square)
        for side, kind, i in (("a", ka, ia), ("b", kb, ib)):
            partial = getattr(rule, "d" + side)
            if kind != 2 and partial:
                yield k, kind, i, partial
                if kind == 0:
                    held[i] = True


def pulled(shape: tuple) -> tuple[int, ...]:
    """The views (indices into ext) whose adds the reverse pulls where they are one line (_pulled), else ()."""
    rows = [i for _, kind, i, _ in _partials(shape[0], shape[5]) if kind == 1]
    return tuple(sorted(set(rows))) if len(rows) > 1 and all(shape[1][i] for i in rows) else ()


def reverse(shape: tuple) -> str:
    """The reverse kernel of a run of this shape: fused_reverse's arguments less the program's arrays and need, and
    ``fresh``: whether the line of a pulled shape (pulled) is to be assigned, not added to (its region stale)."""
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
    held = {k for k in range(m) if reached[k]} | {m - 1}
    rows: list[int] = []  # the views' contribution rows, in the order of their adds
    for k, kind, i, partial in _partials(members, reached):
        body += [*_apply("p", partial, members[k], k, ind),
                 f"{ind}c = g{k} * p if (g{k} != 0.0) & (p != 0.0) else 0.0"]
        if kind == 0:
            body.append(f"{ind}g{i} {'+' if i in held else ''}= c")
            held.add(i)
        else:
            body.append(f"{ind}C{len(rows)}[np.uint64(e - first + {KEPT})] = c")
            rows.append(i)
    lines = ["def reverse(imm, ext, adj_in, seed, n0, n1, aval, aadj, fresh):", *_numbers(members),
             *[f"    C{j} = np.empty({KEPT + BLOCK})" for j in range(len(rows))],
             "    for r in range(n0):", *_row(len(unit), unit),
             *[f"        l{i} = ext[{i}, 3]" for i in sorted(set(rows))],
             *[f"        a{i} = ext[{i}, 4] + r * ext[{i}, 1]" for i in sorted(set(rows))],
             *[f"        q{k} = adj_in[{k}] + r * n1" for k in range(m) if reached[k]],
             *_pulled(pulled(shape)),
             f"        for first in range(0, n1, {BLOCK}):", f"            w = min({BLOCK}, n1 - first)",
             "            for e in range(first, first + w):", *_loads(body, len(unit), unit, ind), *body]
    adds = []
    for j, i in enumerate(rows):  # each view's adds: its elements first..first + w lagged, the last block's to the end
        at = f"a{i} + e" if unit[i] else f"a{i} + e * t{i}"
        adds += [f"            for e in range(max(first - l{i}, 0), n1 if first + w == n1 else first + w - l{i}):",
                 f"                aadj[np.uint64({at})] += C{j}[np.uint64(e - first + {KEPT})]"]
    if pulled(shape):
        adds = ["            if pull:", *_pull(rows), "            else:", *["    " + line for line in adds]]
    lines += adds
    for j, i in enumerate(rows):
        lines += [f"            for e in range(l{i}):  # kept for the next block (a slice took ~3 s more to compile)",
                  f"                C{j}[np.uint64({KEPT} - l{i} + e)] = C{j}[np.uint64({KEPT} + w - l{i} + e)]"]
    return "\n".join(["@jit", *lines]) + "\n"


def _pulled(views: tuple[int, ...]) -> list[str]:
    """Whether the views (each stepping by one) are one line of adjoints, each at its lag l_i from one place (base),
    its elements base + lmin.. base + n1 + lmax."""
    if not views:
        return []
    ls = ", ".join(f"l{i}" for i in views)
    return [f"        base = a{views[0]} - l{views[0]}",
            f"        pull = {' and '.join(f'a{i} - l{i} == base' for i in views[1:])}",
            f"        lmin, lmax = min({ls}), max({ls})"]


def _pull(rows: list[int]) -> list[str]:
    """The adds of views on one line pulled: each element of the line stored once, its old value (0.0 where fresh)
    plus every view's add in the rows' order, as the views' loops one after another would add them (view i adds its
    element e - l_i in the block where first <= e < first + w: the same block for every view). The middle, where
    every view reads, without tests; the line's ends test each view. Measured (bench/array_programs.py's filter, 3
    views, 10^5 elements, CPU, load 5): the reverse 66 -> 54 µs a call adding (one pass over the line, not three);
    assigning where fresh, its region not zeroed first (Run.line), the filter's replayed value_and_grad 1.17 ->
    0.82-0.86 ms (min of 300 calls, 2 rounds, load 6)."""
    def one(old: str, ends: bool) -> list[str]:
        adds = [f"acc += C{j}[np.uint64(e - l{i} - first + {KEPT})]" for j, i in enumerate(rows)]
        tested = [line for j, i in enumerate(rows) for line in (f"if l{i} <= e < n1 + l{i}:", "    " + adds[j])]
        return [f"acc = {old}", *(tested if ends else adds), "aadj[np.uint64(base + e)] = acc"]
    ind, old = " " * 20, "aadj[np.uint64(base + e)]"
    return ["                lo = max(first, lmax)",
            "                hi = max(lo, n1 + lmin if first + w == n1 else first + w)",
            "                for e in range(max(first, lmin), lo):  # the line's first elements",
            *[ind + line for line in one(f"0.0 if fresh else {old}", True)],
            "                if fresh:  # (two loops: the middle's adds vectorize)",
            "                    for e in range(lo, hi):", *["    " + ind + line for line in one("0.0", False)],
            "                else:",
            "                    for e in range(lo, hi):", *["    " + ind + line for line in one(old, False)],
            "                for e in range(hi, n1 + lmax if first + w == n1 else hi):  # the line's last elements",
            *[ind + line for line in one(f"0.0 if fresh else {old}", True)]]


CALLS = sorted({name for op in ops.OPS if op.name in FUSIBLE for rule in (op.forward, op.da, op.db)
                for name in re.findall(r"\b([a-z_]\w*)\(", rule)})  # the rules' helpers (pow, sqrt, pow_da, ...)
_made: dict[tuple, Any] = {}


@functools.cache
def digest() -> str:
    """A digest of what the kernels are made of: these generators (and stretched.py's), the op table and the helpers the
    rules call."""
    here = pathlib.Path(__file__).resolve().parent
    names = ("shaped.py", "stretched.py", "ops.py", "special.py", "_sweeps.py")
    return hashlib.sha256(b"".join((here / name).read_bytes() for name in names)).hexdigest()[:16]


def module(shape: tuple) -> str:
    """The source of a module holding a run shape's two kernels."""
    code = forward(shape) + "\n\n" + reverse(shape)
    used = [name for name in CALLS if re.search(rf"\b{name}\(", code)]
    return "\n".join([f"# Generated by kernels/shaped.py (source {digest()}), for one run shape. Do not edit.",
                      f'"""A fused run\'s kernels, shape {shape!r}."""', "",
                      f"from tape.kernels._sweeps import {', '.join(['jit', 'np', *used])}  # noqa: F401", "", "",
                      code])


def kernels(shape: tuple) -> Any:
    """The module holding a run shape's ``forward`` and ``reverse`` (made and imported once a process)."""
    if shape not in _made:
        _made[shape] = load(module(shape), "tape_shaped_")
    return _made[shape]


def load(text: str, prefix: str) -> Any:
    """The module of source text, written once to shaped_dir() (named by its hash) and imported from there."""
    name = prefix + hashlib.sha256(text.encode()).hexdigest()[:20]
    path = os.path.join(shaped_dir(), name + ".py")
    if not os.path.exists(path) or pathlib.Path(path).read_text() != text:  # (a file edited or cut short: again)
        os.makedirs(shaped_dir(), exist_ok=True)
        fd, tmp = tempfile.mkstemp(".py", dir=shaped_dir())  # written whole, then renamed: another process
        with os.fdopen(fd, "w") as f:  # importing it never reads half a file
            f.write(text)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    made = importlib.util.module_from_spec(spec)
    sys.modules[name] = made
    spec.loader.exec_module(made)
    return made
