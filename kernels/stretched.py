"""A table's STRETCH kernels (kernels/_array_driver.py): consecutive elementwise rows as one generated pass.

tape/sweeps/stretches.py chooses a sweep's stretches and their shapes (each member's op, its operands' sources, what
is stored forward, how each view sends back); here a shape becomes the source of a Numba C function that the driver
calls at its address (``stretch_kernel``): forward, every member's value per element a local and only what is read
after the stretch stored (from a buffer, a block at a time); back, every member's adjoint a local, a view's sends
in the pass, after it or, one number a line, a line's at a time (EACHSUM: the rows' sums). Written and cached
as kernels/shaped.py's run kernels are (``shaped.load``), keyed by the same digest.
"""

from __future__ import annotations

import re
from typing import Any

from numba import types
from numba.core.ccallback import CFunc

from . import _array_driver as driver
from . import ops
from .ops import reads
from .shaped import digest, load


def _fields(k: int, q: int) -> dict[str, int]:
    """Where row k's fields (and its view q's) are in the stretch's rows (the driver's table)."""
    at, f = k * driver.WIDTH, k * driver.WIDTH + driver.VIEWS + driver.VIEW * q
    return {"OUT": at + driver.OUT, "SHAPE": at + driver.SHAPE, "SIZE": at + driver.SIZE,
            "OUT_STRIDES": at + driver.OUT_STRIDES, "VOUT": at + driver.VOUT, "VBASE": at + driver.VBASE + q,
            **{name: f + getattr(driver, name) for name in ("REC", "BASE", "REGION", "REGION_SIZE", "ACC", "STRIDES")}}


SAME, LINE, EACH = -1, -2, -3  # an operand's view (tape/sweeps/stretches.py): its element, its line's, its line's one
ALONG, AT = -5, -6  # (lines over two axes) a line of its own a line, one number a line, placed by a line's indices
SCRATCH, SUMMED = -1, -3  # a view's group back (_reverse_stretch): added after the pass, or a line read by every
# line, summed back across lines (else its place's group, >= 0)
EACHSUM = -4  # (a view's group back) one number a line of lines over two axes: each line's sum made after its elements
REDUCED = -1  # a last member's opcode: its LOGSUMEXP row, log sum exp along each line of the member before it
HEAD, ROLL = -2, -3  # (forward) two members' opcodes: a roll's two COPY rows, a join of a region's last elements and
ROLLED = -7  # its first ones (np.roll), read as the one region (its operand's source ROLLED) rotated by HEAD's size
PICK = -8  # a select's two rows (tape/sweeps/stretches.py's _picked) as members, opcode PICK - taken - 2 * second:
# the first's value its branch (view 1), the second's its branch where its condition (view 0) is not 0 (taken) or is 0,
# else the first's; back, each sends its adjoint to its branch there and 0.0 elsewhere (the driver's _select), the
# second its adjoint to the first
PER = 4096  # elements of a reduced stretch's block of lines (at least a line): the driver's LINES


def picked(code: int) -> tuple[bool, bool] | None:
    """A select's member's (whether it is the second, whether it takes its branch where the condition is not 0), else
    None."""
    return (code <= PICK - 2, (PICK - code) % 2 == 1) if PICK - 3 <= code <= PICK else None


def _taken(taken: bool) -> str:
    """Where a select's member takes its branch: its condition (operand a) not 0, or 0 (np.where's truth: NaN is)."""
    return f"a {'!=' if taken else '=='} 0.0"


def _forward_rule(code: int, k: int) -> str:
    """Member k's value from its operands a, b (a select's second: else the first's, s<k - 1>)."""
    pick = picked(code)
    if pick is None:
        return ops.OPS[code].forward
    return f"b if {_taken(pick[1])} else s{k - 1}" if pick[0] else "b"


def _operand(head: list[str], k: int, q: int, source: int, number: int, f: dict[str, int], member: str,
             each: list[str], back: bool = False) -> str:
    """Member k's operand q: ``member`` (an earlier member's value) where it reads one, else its number (a local
    read once) or its view's element (element e = line i's j: at e, at j, at i times its stride, or from its place for
    line i, set in ``each`` once a line: i's two indices, i // across and i % across, times its strides); the locals'
    reads go into ``head``: x<k>_<q> the view's place (back: its adjoints', its values' in v<k>_<q>, VBASE)."""
    if source >= 0:
        return member
    x, base = ("v", f["VBASE"]) if back else ("x", f["BASE"])
    if number == q + 1:
        head.append(f"    c{k}_{q} = aval[t[{base}]]")
        return f"c{k}_{q}"
    head += [f"    {x}{k}_{q} = t[{base}]", *([f"    x{k}_{q} = t[{f['BASE']}]"] if back else [])]
    if source == EACH:
        head.append(f"    w{k}_{q} = t[{f['STRIDES'] + 2}]")
        return f"aval[{x}{k}_{q} + i * w{k}_{q}]"
    if source in (ALONG, AT):
        head.append(f"    u{k}_{q}, w{k}_{q} = t[{f['STRIDES'] + 1}], t[{f['STRIDES'] + 2}]")
        each.append(f"        l{k}_{q}_@ = {x}{k}_{q} + (i // across) * u{k}_{q} + (i % across) * w{k}_{q}")
        return f"aval[l{k}_{q}_@{' + j' if source == ALONG else ''}]"
    return f"aval[{x}{k}_{q} + {'j' if source == LINE else 'e'}]"


def _pass(members: tuple, row: Any, body: list[str], summed: int = 0, each: tuple[str, ...] = (),
          end: tuple[str, ...] = ()) -> list[str]:
    """A loop over the stretch's elements running body (written for 8 spaces): e in order, or where a member reads
    lines (a LINED row's) or reduces them, line i's elements j (e = i * width + j); row: where member k is in the rows.
    summed: how many views' contributions ``sum<v>_@ = c`` body sums back across lines into T<v>, four lines a pass,
    each element of T<v> held in a register across them (the rows' order; the mixture's back stretch 302 -> 155 us CPU
    against keeping four lines' contributions in a window and adding them by _columns), the other lines one at a time.
    A reduced stretch's pass runs over the lines of a block, first..last (_blocks); each: lines run once a line before
    its elements (a load in the elements' loop, at a place that their stores might meet, kept LLVM from vectorizing
    it: mixture2d's back stretch 1,270 -> 430 us CPU), their ``_@`` a line's own (as body's sums); end: lines run
    once a line after its elements (with no sums across lines)."""
    lined = [k for k, member in enumerate(members) if {LINE, EACH, ALONG, AT} & set(member[2])]
    reduced = members[-1][0] == REDUCED
    if not lined and not reduced:
        return ["    for e in range(n):", *body]
    shape = _fields(row(lined[0]), 0)["SHAPE"] if lined else 0
    top, lo, hi = ([], "first", "last") if reduced else ([
        f"    lines, width, across = t[{shape + 1}] * t[{shape + 2}], t[{shape + 3}], t[{shape + 2}]"], "0", "lines")
    line = [f"    for i in range({{}}, {hi}):", "        for j in range(width):", "            e = i * width + j"]
    rest = ["    " + re.sub(r"sum(\d+)_@ = c", r"T\1[j] += c", text).replace("_@", "") for text in body]
    once = [text.replace("_@", "") for text in each]
    if not summed:
        return [*top, line[0].format(lo), *once, *line[1:], *rest, *end]
    four = [*line[2:], *["    " + text for text in body]]
    return [*top, f"    four = {hi} - ({hi} - {lo}) % 4", f"    for i4 in range({lo}, four, 4):",
            *[text.replace("_@", f"_{u}") for u in range(4) for text in (f"        i = i4 + {u}", *each)], line[1],
            *[text.replace("_@", f"_{u}") for u in range(4) for text in (f"            i = i4 + {u}", *four)],
            *[f"            T{v}[j] = (((T{v}[j] + sum{v}_0) + sum{v}_1) + sum{v}_2) + sum{v}_3"
              for v in range(summed)],
            line[0].format("four"), *once, *line[1:], *rest]


def _blocks(members: tuple, row: Any, first: list[str], then: list[str], last: list[str], summed: int = 0,
            each: tuple[str, ...] = ()) -> list[str]:
    """A reduced stretch's passes (its last member a logsumexp along the lines of the member before it, by its row's
    rule, kernels/_array_driver.py's _logsumexp): a block of lines at a time (PER elements), a pass running first
    (per element, as _pass's body) fills the block's E (each element's difference), ``then`` runs on the block, and a
    pass running last; the lines' shape and the output's place from the logsumexp's row."""
    f = _fields(row(len(members) - 1), 0)
    head = [f"    lines, width = t[{f['SHAPE'] + 2}], t[{f['SHAPE'] + 3}]", f"    y2 = t[{f['OUT_STRIDES'] + 2}]",
            f"    per = max({PER} // width, 1)", "    E = np.empty(per * width)", "    frame = np.empty(5, np.intp)",
            "    for first in range(0, lines, per):", "        last = min(lines, first + per)"]
    passes = [*_pass(members, row, first), *then, *(_pass(members, row, last, summed, each) if last else [])]
    return head + ["    " + text for text in passes]


def _forward_stretch(members: tuple, stored: tuple) -> list[str]:
    head = [f"    n = t[{driver.SIZE}]" + f" + t[{_fields(1, 0)['SIZE']}]" * (members[0][0] == HEAD)]
    body: list[str] = []
    each: list[str] = []
    for k, (code, number, sources, _) in enumerate(members):
        if code == HEAD:  # (its region's last elements: where ROLL, the next member, reads its first r<k>)
            head.append(f"    h{k}, r{k} = t[{_fields(k, 0)['BASE']}], t[{_fields(k, 0)['SIZE']}]")
            continue
        if code == ROLL:  # (the roll's output from HEAD's OUT, the region read from its BASE: x<k>_0, for _delayed;
            head += [f"    x{k}_0 = t[{_fields(k, 0)['BASE']}]"]  # p<k>: where element e is read, set by _rolls)
            body.append(f"        s{k} = aval[p{k} + e]")
            if stored[k]:
                head.append(f"    o{k} = t[{_fields(k - 1, 0)['OUT']}]")
                body.append(f"        aval[o{k} + e] = s{k}")
            continue
        if code == REDUCED:  # (its line's largest element, exp of the differences by NumPy's loop, the sums, their
            # logs: the row's _logsumexp on the block)
            head += [f"    o{k} = t[{_fields(k, 0)['OUT']}]", "    S, T = np.empty(lines), np.empty(lines)"]
            body.append(f"        E[np.uint64(e - first * width)] = s{k - 1}")
            if stored[k - 1]:  # (copied from E after the pass: a second store in it kept LLVM from vectorizing it,
                # the mixture's forward stretch 51 -> 146 us CPU)
                body.remove(f"        aval[o{k - 1} + e] = s{k - 1}")
            copy = ["    for e in range(first * width, last * width):",
                    f"        aval[o{k - 1} + e] = E[np.uint64(e - first * width)]"] if stored[k - 1] else []
            then = [*copy, "    for i in range(first, last):", "        c = _top(E, (i - first) * width, width)",
                    "        T[i] = c", "        for j in range(width):",
                    "            E[np.uint64((i - first) * width + j)] -= c",
                    "    at = _framed(frame, E, E, (last - first) * width)", "    numpy_exp(at, at + 16, at + 24, 0)",
                    "    _sums(E, 0, last - first, width, S, first)"]
            done = ["    at = _framed(frame, S, S, lines)", "    numpy_log(at, at + 16, at + 24, 0)",
                    "    for i in range(lines):", f"        aval[o{k} + i * y2] = S[i] + T[i]"]
            blocks = _blocks(members, lambda k: k, body, then, [])
            return ["def stretch(t, aval):", *blocks[:5], *head, *blocks[5:], *done]
        operands = [_operand(head, k, q, source, number, _fields(k, q), f"s{source}", each)
                    for q, source in enumerate(sources)]
        rule = _forward_rule(code, k)
        body += [f"        {x} = {value}" for x, value in zip("ab", operands, strict=False) if x in reads(rule)]
        body.append(f"        s{k} = {rule}")
        if stored[k]:
            head.append(f"    o{k} = t[{_fields(k, 0)['OUT']}]")
            body.append(f"        aval[o{k} + e] = s{k}")
    plain = _pass(members, lambda k: k, body, each=tuple(each))
    if any({LINE, EACH, ALONG, AT} & set(member[2]) for member in members):
        return ["def stretch(t, aval):", *head, *plain]
    rolls = [k for k, member in enumerate(members) if member[0] == ROLL]
    views = re.findall(r"^    (x\d+_\d+) = ", "\n".join(head), re.M)
    outs = [f"o{k}" for k in range(len(members)) if stored[k]]
    meets = " or ".join(f"({x} - {o} < n and {o} - {x} < n)" for x in views for o in outs) or "False"
    delayed = _delayed(body, [k for k in range(len(members)) if stored[k]])
    for k in rolls:
        delayed = [line.replace(f"aval[p{k} + e]", f"aval[(x{k}_0 - r{k - 1} if e >= r{k - 1} else h{k - 1}) + e]")
                   for line in delayed]
    return ["def stretch(t, aval):", *head, f"    if not ({meets}):", *["    " + line for line in _rolls(rolls, plain)],
            "        return", *delayed]


def _rolls(rolls: list[int], plain: list[str]) -> list[str]:
    """A forward pass with rolls (ROLL members k) run in pieces, cut where a roll's read moves from its region's last
    elements (HEAD's, h<k - 1>) to its first (x<k>_0): in each a roll reads its elements in a run, p<k> + e, which LLVM
    vectorizes (a select at every element kept the pass scalar)."""
    if not rolls:
        return plain
    cuts = ", ".join(["0", "n", *(f"r{k - 1}" for k in rolls)])
    return [f"    cuts = np.sort(np.array([{cuts}]))", "    for c in range(len(cuts) - 1):",
            "        lo, hi = cuts[c], cuts[c + 1]",
            *(f"        p{k} = h{k - 1} if lo < r{k - 1} else x{k}_0 - r{k - 1}" for k in rolls),
            "    " + plain[0].replace("range(n)", "range(lo, hi)"), *["    " + line for line in plain[1:]]]


BLOCK = 512  # elements a block of a forward stretch's pass, whose values are stored after it (_delayed)


def _delayed(body: list[str], stored: list[int]) -> list[str]:
    """A forward pass over its elements in blocks, each block's stored values kept in a buffer and stored after it,
    where a stored member's region meets one a member reads (else one pass: the heat equation's 10% faster): there
    (a value written in place: conv1d's ReLU over the sum it is made from), LLVM cannot tell the stores from the
    loads and keeps the pass scalar, a branch a member (maximum's) at every element; into the buffer it vectorizes
    (conv1d's add and ReLU, 2.6*10^5 elements, 0.83 -> 0.14 CPU-ms). The same values: a pass reads an element of a
    member's region at an index no lower, so before the member stores it."""
    stores = {f"        aval[o{k} + e] = s{k}": f"        buffer[np.uint64({i * BLOCK} + j)] = s{k}"
              for i, k in enumerate(stored)}
    after = [line for i, k in enumerate(stored) for line in (
        "        for j in range(m):", f"            aval[o{k} + e0 + j] = buffer[np.uint64({i * BLOCK} + j)]")]
    return [f"    buffer = np.empty({max(1, len(stored)) * BLOCK})", f"    for e0 in range(0, n, {BLOCK}):",
            f"        m = min({BLOCK}, n - e0)", "        for j in range(m):", "            e = e0 + j",
            *["    " + stores.get(line, line) for line in body], *after]


def _reverse_stretch(members: tuple, sends: tuple) -> list[str]:
    """Rows last first; every member but the last read only by later members, its adjoint a local. Each view's region by
    the stamp rule in the rows' order first (a stale one zeroed, or assigned 0.0 + c where the view is its region: the
    rows' ``_send``). Per element, each member's partials, last member first, a before b; sends: per view sending to the
    arena (in that order), its group, whose adds go into one local stored once an element (the views of one place apart
    from other views'), SCRATCH: the member's adjoint kept in a scratch row and the view's adds made after the pass,
    view by view (views of one region at different places: in the pass, a loop-carried store), or SUMMED: a line read by
    every line, its contributions summed back across lines in the pass in the rows' order (_pass), added to its adjoints
    after the pass by the stamp rule, as the rows' _lined_send does (whose block of contributions, written and then
    read, bounded the mixture's LINED rows back). A member computed again (its fifth field) has its value computed in a
    local s<k> by its forward rule (the forward's IEEE operations: the same bits) where a partial reads it, not read
    from the arena."""
    m = len(members)
    row = {k: m - 1 - k for k in range(m)}
    reduced = members[-1][0] == REDUCED  # (its adjoint one number a line, its partial exp(a - y) in E: _blocks)
    head = [f"    n = t[{_fields(row[m - 2] if reduced else 0, 0)['SIZE']}]"]
    each: list[str] = []  # (per line: a view's place, _operand)
    body, held, after = [f"        g{m - 1} = {'g_@' if reduced else f'aadj[o{m - 1} + e]'}"], set(), []
    outs = {f"{o}{k}": f"    {o}{k} = t[{_fields(row[k], 0)[field]}]" for k in range(m) for o, field in
            (("o", "OUT"), ("vo", "VOUT"))}  # those the body reads: where the adjoints are, where the values are
    group = dict(((k, q), g) for k, q, g in sends)
    kept = {k: i for i, k in enumerate(dict.fromkeys(k for k, _, g in sends if g == SCRATCH))}  # a scratch row each
    summed = [(k, q) for k, q, g in sends if g == SUMMED]  # a sum back each
    lined = [(k, q) for k, q, g in sends if g == EACHSUM]  # a line's contributions and the lines' sums each
    head += [f"    T{v} = np.zeros(t[{_fields(row[k], q)['SHAPE'] + 3}])" for v, (k, q) in enumerate(summed)]
    stores: dict[int, str] = {}
    value = [f"s{k}" if members[k][4] else f"aval[vo{k} + e]" for k in range(m)]
    operands: dict[int, list[str]] = {}
    for k in range(m - 1, -1, -1):
        code, number, sources, wants, _ = members[k]
        operands[k] = []
        for q, source in enumerate(sources):
            f = _fields(row[k], q)
            operands[k].append(_operand(head, k, q, source, number, f, value[source] if source >= 0 else "", each,
                                        True))
            if source == SAME and wants[q]:
                fresh = f"fresh{k}_{q}"
                head += [f"    j, at, size = t[{f['REC']}], t[{f['REGION']}], t[{f['REGION_SIZE']}]",
                         f"    {fresh} = not (stamp[j] == gen or (stamp[j] >= keep and t[{f['ACC']}] != 0))",
                         f"    if {fresh}:", "        stamp[j] = np.uint32(gen)",
                         f"        if x{k}_{q} != at or size != n:  # (not its region: zeroed)",
                         "            for e in range(at, at + size):", "                aadj[e] = 0.0",
                         f"            {fresh} = False"]
    again = {k: [*(f"        {x} = {a}" for x, a in zip("ab", operands[k], strict=False) if x in reads(rule)),
                 f"        s{k} = {rule}"] for k, rule in ((k, _forward_rule(members[k][0], k)) for k in range(m)
                                                           if members[k][4])}

    def computed(lines: list[str]) -> list[str]:
        """The lines computing again the members that lines read (and those they read), in member order."""
        need = {int(k) for k in re.findall(r"\bs(\d+)\b", "\n".join(lines))} & set(again)
        for k in range(m - 1, -1, -1):  # (a member reads only earlier ones)
            need |= {int(j) for j in re.findall(r"\bs(\d+)\b", "\n".join(again[k][:-1]))} if k in need else set()
        return [line for k in sorted(need) for line in again[k]]

    for k in range(m - 1, -1, -1):
        code, number, sources, wants, _ = members[k]
        if k in kept:
            body.append(f"        scratch[{kept[k]} * stride + e] = g{k}")
        for q, source in enumerate(sources):
            if not wants[q]:
                continue
            lines = _contribution(code, k, q, operands[k], value[k])
            if source < 0 and group[k, q] == SCRATCH:
                at = f"x{k}_{q} + e"
                lines = [f"        {line}" for line in lines]
                after += _pass(members, row.get, [f"        g{k} = scratch[{kept[k]} * stride + e]",
                                                  *computed(lines), *lines,
                                                  f"        aadj[{at}] = (0.0 if fresh{k}_{q} else aadj[{at}]) + c"],
                               each=tuple(each))
                continue
            body += [f"        {line}" for line in lines]
            if source < 0 and group[k, q] == EACHSUM:  # (a line's contributions: the rows' 0.0 + c differs only in
                body.append(f"        C{lined.index((k, q))}[np.uint64(j)] = c")  # a zero's sign, lost in S<v>'s sum)
            elif source < 0 and group[k, q] == SUMMED:
                body.append(f"        sum{summed.index((k, q))}_@ = c")
            elif source >= 0:
                body.append(f"        g{source} = {f'g{source} + c' if source in held else '0.0 + c'}")
                held.add(source)
            elif group[k, q] in stores:
                body.append(f"        acc{group[k, q]} = acc{group[k, q]} + c")
            else:
                at = f"x{k}_{q} + e"
                body.append(f"        old = aadj[{at}]")  # read whether fresh or not: a read under a test kept
                # LLVM from vectorizing a pass storing two groups (the heat equation's back stretch, fresh: 65 µs; read
                # first 5.4; its joins after the pass, 7.5), or one with selects (denoise's two: 0.99 -> 0.31 ms)
                body.append(f"        acc{group[k, q]} = (0.0 if fresh{k}_{q} else old) + c")
                stores[group[k, q]] = f"        aadj[{at}] = acc{group[k, q]}"
        pick = picked(code)
        if pick and pick[0] and any(members[k - 1][3]):  # (a select's second: its adjoint is its first's)
            body.append(f"        g{k - 1} = g{k}")
    body += list(stores.values())
    body[1:1] = computed(body)
    for v, (k, q) in enumerate(summed):
        f = _fields(row[k], q)
        after += [*_stamped(f), "    for e in range(width):", f"        aadj[x{k}_{q} + e] += T{v}[e]"]
    end = []  # (one number a line: a line's sum in _pairwise's order added at its place, K<v>, J<v> its strides in
    for v, (k, q) in enumerate(lined):  # the sums' S<v>; then S<v> added to its adjoints: the rows' _lined_send)
        f = _fields(row[k], q)
        shape = f["SHAPE"]
        head += [f"    C{v}, S{v} = np.empty(t[{shape + 3}]), np.zeros(t[{shape + 1}] * t[{shape + 2}])",
                 f"    K{v} = (t[{shape + 2}] if w{k}_{q} != 0 else 1) if u{k}_{q} != 0 else 0",
                 f"    J{v} = 1 if w{k}_{q} != 0 else 0"]
        end.append(f"        S{v}[np.uint64((i // across) * K{v} + (i % across) * J{v})] += "
                   f"_pairwise(C{v}, 0, width, 1)")
        after += [*_stamped(f), f"    for i1 in range(t[{shape + 1}] if u{k}_{q} != 0 else 1):",
                  f"        for i2 in range(across if w{k}_{q} != 0 else 1):",
                  f"            aadj[x{k}_{q} + i1 * u{k}_{q} + i2 * w{k}_{q}] += S{v}[i1 * K{v} + i2 * J{v}]"]
    if reduced:  # (E: the block's differences a - y, then their exps by NumPy's loop, as the row's _logsumexp)
        first = [f"        E[np.uint64(e - first * width)] = {value[m - 2]} - aval[vo{m - 1} + i * y2]"]
        then = ["    at = _framed(frame, E, E, (last - first) * width)", "    numpy_exp(at, at + 16, at + 24, 0)"]
        passes = _blocks(members, row.get, [*computed(first), *first], then, body, len(summed),
                         (f"        g_@ = aadj[o{m - 1} + i * y2]",))
    else:
        passes = _pass(members, row.get, body, len(summed), tuple(each), tuple(end))
    text = "\n".join(passes + after)
    head += [line for name, line in outs.items() if re.search(rf"\b{name}\b", text)]
    return ["def stretch(t, aval, aadj, stamp, gen, keep, scratch, stride):", *head, *passes, *after]


def _contribution(code: int, k: int, q: int, operands: list[str], y: str) -> list[str]:
    """Lines making c, member k's contribution to its operand q: its adjoint g<k> times the partial, 0.0 where either
    is 0 (the rows' ``sends``); a select's member's, its adjoint where it takes its branch, else 0.0 (the rows')."""
    pick = picked(code)
    if pick is not None:
        return [f"a = {operands[0]}", f"c = g{k} if {_taken(pick[1])} else 0.0"]
    rule = ops.Op("", "unary", "", "E[np.uint64(e - first * width)]") if code == REDUCED else ops.OPS[code]
    partial = (rule.da, rule.db)[q]
    binds = [f"{x} = {a}" for x, a in zip("ab", operands, strict=False) if x in reads(partial)]
    binds += [f"y = {y}"] * ("y" in reads(partial))
    return [*binds, f"p = {partial}", f"c = g{k} * p if g{k} != 0.0 and p != 0.0 else 0.0"]


def _stamped(f: dict[str, int]) -> list[str]:
    """The stamp rule for the adjoint region of a view (its fields f) sent to after the pass: zeroed where stale."""
    return [f"    j, at, size = t[{f['REC']}], t[{f['REGION']}], t[{f['REGION_SIZE']}]",
            f"    if not (stamp[j] == gen or (stamp[j] >= keep and t[{f['ACC']}] != 0)):",
            "        stamp[j] = np.uint32(gen)", "        for e in range(at, at + size):", "            aadj[e] = 0.0"]


def stretch(shape: tuple) -> str:
    """The source of a STRETCH's kernel, ``stretch(t, aval)`` forward, ``stretch(t, aval, aadj, stamp, gen, keep,
    scratch, stride)`` back: t the data of its rows. shape: (back, members, stored or sends, forward maybe skips):
    each member's (opcode, its number operand as the driver's _number gives it, its operands' sources: -1 a view laid
    out as its output, -2 a LINED row's line read by every line, -3 its one number a line, in a 3-d space -5 a line of
    its own a line, -6 one number a line (ALONG, AT: placed by the line's two indices), else the member read whole,
    whether each wants an adjoint, and back whether it is computed again; forward, a roll's two members HEAD, ROLL,
    each reading -7, ROLLED); forward, which members are stored (read
    after the stretch) and which of those are not (skips: computed again back), back, how each view sends
    (_reverse_stretch). Each number is the rows' (the same IEEE operations as the driver's ``values`` and ``sends``)."""
    back, members, stored = shape[:3]
    if len(shape) > 3:  # (forward, the members a back stretch computes again left unstored)
        stored = tuple(a and not b for a, b in zip(stored, shape[3], strict=True))
    code = "\n".join(_reverse_stretch(members, stored) if back else _forward_stretch(members, stored)) + "\n"
    used = sorted(name for name in set(re.findall(r"(?<![.\w])([a-z_]\w*)\(", code)) if hasattr(driver, name))
    return "\n".join([f"# Generated by kernels/stretched.py (source {digest()}), for one stretch shape. Do not edit.",
                      f'"""A table\'s stretch kernel, shape {shape!r}."""', "", "import numpy as np",
                      *([f"from tape.kernels._array_driver import {', '.join(used)}  # noqa: F401"] * bool(used)),
                      "", "", code])


_P = types.CPointer
STRETCHES = (types.void(_P(types.int64), _P(types.float64)),  # the driver's _call, forward and back
             types.void(_P(types.int64), _P(types.float64), _P(types.float64), _P(types.uint32), types.int64,
                        types.int64, _P(types.float64), types.int64))


def stretch_kernel(shape: tuple) -> CFunc:
    """A STRETCH shape's kernel as a C function, cached beside tape's kernels; compiled (or loaded) by its
    ``compile()``, then called at its ``address``."""
    sig = STRETCHES[shape[0]]
    kernel = CFunc(load(stretch(shape), "tape_stretch_").stretch, (sig.args, sig.return_type), {},
                   {"nopython": True, "error_model": "numpy"})
    kernel.enable_caching()
    return kernel
