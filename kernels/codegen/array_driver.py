"""The generator of ``kernels/_array_driver.py``: the compiled sweeps of a Function's array records.

tape/sweeps/compiled.py encodes each record of a stretch once, as a row of an int64 table (the
fields below): its kind in this driver (its Rule's ``compiled``), its scalar opcode, its region,
its iteration space (4 axes, a loop over the output's elements or a reduction's input's), and per
view read: the view's first element and strides in that space (0 along broadcast axes), the read
record's row and region (for the stamp rule) and whether it wants an adjoint. The kernels walk the
table: elementwise records by ``values`` and ``sends`` (one ``if``/``elif`` branch per op of
ops.EXACT: the driver knows no op by name), sums by a loop in NumPy's order, matmuls by the
CBLAS call np.matmul makes (NumPy's own OpenBLAS: kernels/blas.py). The reverse follows
tape/sweeps/driver.py's rules: a record is reached where its stamp is this pass's, an input's
region is zeroed at its first contribution, a product with a zero factor adds nothing, and a
contribution is summed back over the axes its view is broadcast along in np.sum's order first.
Each number is the NumPy step's, bit for bit: the same IEEE operations in the same order (Numba
contracts no multiply-add into an FMA without fastmath).

The kernels are text here, written into the generated file with the switches, so that Numba's cache
(which checks only the file a kernel is defined in) is renewed whenever the op table changes.
"""

from __future__ import annotations

from .. import ops
from .array_broadcasts import BROADCASTS
from .array_lines import LINES
from .array_products import PRODUCTS
from .array_sums import SUMS
from .sweeps import JIT, branches, element_loop, names_in, natural

LOADS = {"a": "a = A[u]", "b": "b = B[u]", "y": "y = Y[u]", "v": "v = Y[u]"}


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


def _values(op: ops.Op) -> list[str]:
    if op.name not in ops.LOOPED:
        return _loop("Y", op.forward, " " * 12, op.kind == "binary")
    x, ufunc, y = ops.LOOPED[op.name]  # v = ufunc(x) by NumPy's loop (x into B: a unary op's B is scratch), then y
    ind = " " * 12
    before = [f"{ind}_room(B, n)", *_loop("B", x, ind, False)] if x != "a" else []
    after = _loop("Y", y, ind, False) if y != "v" else []
    return [*before, f"{ind}at = _framed(frame, {'B' if before else 'A'}, Y, n)",
            f"{ind}numpy_{ufunc}(at, at + 16, at + 24, 0)", *after]


def _reads(partial: str) -> int:
    return sum(1 << q for q, x in enumerate("ab") if x in names_in(partial))


def _sends(op: ops.Op) -> list[str]:
    ind, two = " " * 12, op.kind == "binary"
    if not op.db:
        return _loop("D", op.da, ind, two)
    return [f"{ind}if side == 0:", *_loop("D", op.da, ind + "    ", two), f"{ind}else:",
            *_loop("D", op.db, ind + "    ", two)]


def _elementwise(op: ops.Op) -> bool:
    return op.name in ops.EXACT or op.name in ops.LOOPED


def _branches(body_for, include) -> list[str]:
    """sweeps.branches, with each included op of ops.GROUPED a branch of its own (its own NumPy loop)."""
    lines = branches(body_for, include)
    for code, op in enumerate(ops.OPS):
        if op.name in ops.GROUPED and include(op):
            lines += [f"        elif k == {code}:  # {op.name}", *body_for(op)]
    return lines


def _body(lines: list[str]) -> list[str]:
    """sweeps.branches' lines, written for a loop's body, as a function's."""
    return [line[4:] for line in lines]


CONSTANTS = """KIND, OP, ROW, OUT, SIZE, NIN, SHAPE, OUT_STRIDES, VIEWS = 0, 1, 2, 3, 4, 5, 6, 10, 14  # a row's fields
REC, BASE, REGION, REGION_SIZE, WANT, ACC, STRIDES = 0, 1, 2, 3, 4, 5, 6  # a view's, from VIEWS + 10 q
VIEW, WIDTH = 10, 34
ELEMENTWISE, SUM, MATMUL = 1, 2, 3  # kinds: a Rule's ``compiled`` names one
LINED = 7  # an ELEMENTWISE binary record run in blocks of lines along axis 3 (array_broadcasts.py)
COPY, GATHER = 4, 5  # a join's input or a run of a gather's places: one view's elements copied into the output
LOGSUMEXP = 6  # log Σ exp along axis 3 (stride 1) of lines along axis 2 (the output's elements, in order)
STRETCH = 8  # a header of the next SIZE rows (elementwise, laid out alike): run by the generated kernel at address
CALL = 6  # t[CALL] (kernels/shaped.py's stretch: one pass, only what is read after it stored), else row by row
ROWMAJOR, COLMAJOR, NOTRANS, TRANS = 101, 102, 111, 112  # CBLAS's enums
_I, _P, _F, _E = types.int64, types.intp, types.float64, types.int32  # ILP64 ints, pointers, doubles, enums
BLAS = bind(("scipy_cblas_dgemm64_", "scipy_cblas_dgemv64_"))  # NumPy's own OpenBLAS (kernels/blas.py)
dgemm = types.ExternalFunction("scipy_cblas_dgemm64_", types.void(_E, _E, _E, _I, _I, _I, _F, _P, _I, _P, _I, _F,
                                                                  _P, _I))
dgemv = types.ExternalFunction("scipy_cblas_dgemv64_", types.void(_E, _E, _I, _I, _F, _P, _I, _P, _I, _F, _P, _I))
"""

DRIVER = '''@intrinsic
def _call(typingctx, address, args):
    """The C function at address called with args, an array as its data: a STRETCH's kernel."""
    def codegen(context, builder, signature, values):
        data = [builder.extract_value(values[1], i) for i in range(len(args))]
        data = [context.make_array(kind)(context, builder, value).data if isinstance(kind, types.Array) else value
                for kind, value in zip(args, data, strict=True)]
        function = builder.inttoptr(values[0], ir.FunctionType(ir.VoidType(), [x.type for x in data]).as_pointer())
        builder.call(function, data)
        return context.get_dummy_value()
    return types.void(address, args), codegen


@jit
def _room(buffer, n):
    """Refuse to write n elements into a scratch row shorter than n (Numba checks no bounds: a row that
    tape/sweeps/compiled.py sized wrongly would otherwise be written past)."""
    if n > len(buffer):
        raise IndexError("tape: a compiled array sweep's scratch is shorter than a record (a bug in its sizing)")


@jit
def _framed(frame, X, Y, n):
    """frame's address, set to the arguments NumPy passes its unary loop over n contiguous elements: the pointers
    args = (X, Y), the count, and the steps (8, 8) in bytes (kernels/ufuncs.py)."""
    frame[0], frame[1], frame[2], frame[3], frame[4] = X.ctypes.data, Y.ctypes.data, n, 8, 8
    return frame.ctypes.data


@jit
def _same(t, f):
    """Whether view f of record row t is laid out as its output (its elements in order)."""
    same = True
    for d in range(4):
        same = same and t[f + STRIDES + d] == t[OUT_STRIDES + d]
    return same


@jit
def _number(t):
    """1 or 2 where view 0 or 1 of binary record row t is one element read by all (strides 0), else 0."""
    if t[NIN] != 2 or t[SIZE] == 1:
        return 0
    for q in (1, 0):
        f = VIEWS + VIEW * q
        if t[f + STRIDES] == 0 and t[f + STRIDES + 1] == 0 and t[f + STRIDES + 2] == 0 and t[f + STRIDES + 3] == 0:
            return q + 1
    return 0


@jit
def _operand(t, q, aval, buffer, number):
    """View q of record row t over its iteration space, flat: the arena itself where the view is its
    elements in order or the one number (number q + 1), else gathered into buffer."""
    f = VIEWS + VIEW * q
    base, n = t[f + BASE], t[SIZE]
    if number == q + 1 or _same(t, f):
        return aval[base:base + (1 if number == q + 1 else n)]
    _room(buffer, n)
    s0, s1, s2, s3 = t[f + STRIDES], t[f + STRIDES + 1], t[f + STRIDES + 2], t[f + STRIDES + 3]
    e = 0
    for i0 in range(t[SHAPE]):
        for i1 in range(t[SHAPE + 1]):
            for i2 in range(t[SHAPE + 2]):
                at = base + i0 * s0 + i1 * s1 + i2 * s2
                for i3 in range(t[SHAPE + 3]):
                    buffer[np.uint64(e)] = aval[np.uint64(at + i3 * s3)]
                    e += 1
    return buffer[:n]


@jit
def _send(t, q, aadj, stamp, gen, keep, A, B, y, g, c, total, number):
    """adjoint[view q] += g * the partial in q (0 where a factor is 0) over record t's iteration space, summed
    back over the axes the view is broadcast along first, by the stamp rule: a stale adjoint is zeroed first
    (0.0 + c: the step's assignment c + 0.0, bit for bit)."""
    f = VIEWS + VIEW * q
    n, base = t[SIZE], t[f + BASE]
    if _same(t, f) and base == t[f + REGION] and n == t[f + REGION_SIZE] and (base >= t[OUT] + n or t[OUT] >= base + n):
        sends(t[OP], q, A, B, y, g, aadj[base:base + n], n, number, _stale(t, f, stamp, gen, keep))  # (the view is its
        return  # region, laid out as the output and apart from it: a stale one assigned, 0.0 + each product)
    _prepare(t, f, aadj, stamp, gen, keep)
    if _same(t, f):  # the view laid out as the output: one pass, products added as made
        sends(t[OP], q, A, B, y, g, aadj[base:base + n], n, number, False)
        return
    _room(c, n)
    _room(total, n)
    sends(t[OP], q, A, B, y, g, c, n, number, True)  # (0.0 + each product: its sum back, from 0.0, is the same)
    _back(t, f, aadj, total, _summed(t, f, c, total))


@jit
def _stale(t, f, stamp, gen, keep):
    """The stamp rule: whether the adjoint region of the record view f reads is stale in generation gen (then it is
    this generation's: its first contribution is assigned, 0.0 + c, or added to zeros)."""
    j = t[f + REC]
    s = stamp[j]
    if s == gen or (s >= keep and t[f + ACC] != 0):
        return False
    stamp[j] = gen
    return True


@jit
def _prepare(t, f, aadj, stamp, gen, keep):
    """The stamp rule: the adjoint region of the record view f reads, zeroed if stale in generation gen."""
    if _stale(t, f, stamp, gen, keep):
        aadj[t[f + REGION]:t[f + REGION] + t[f + REGION_SIZE]] = 0.0


@jit
def _copy(t, arena, back, masked):
    """Record row t's piece of its output = its view's elements, over its 4 axes (a join's input, a run of a
    gather's places); back: the view's adjoints += the piece's, in the same order (np.add.at's), masked: only
    where the piece's adjoint is not 0 (a gather's step adds only those; a region may hold a seed's -0.0)."""
    base, out = t[VIEWS + BASE], t[OUT]
    s0, s1, s2, s3 = t[VIEWS + STRIDES], t[VIEWS + STRIDES + 1], t[VIEWS + STRIDES + 2], t[VIEWS + STRIDES + 3]
    o0, o1, o2, o3 = t[OUT_STRIDES], t[OUT_STRIDES + 1], t[OUT_STRIDES + 2], t[OUT_STRIDES + 3]
    n = t[SHAPE + 3]
    for i0 in range(t[SHAPE]):
        for i1 in range(t[SHAPE + 1]):
            for i2 in range(t[SHAPE + 2]):
                at, to = base + i0 * s0 + i1 * s1 + i2 * s2, out + i0 * o0 + i1 * o1 + i2 * o2
                if not back and s3 == 1 and o3 == 1:  # (unit strides apart: loops LLVM vectorizes)
                    for e in range(n):
                        arena[np.uint64(to + e)] = arena[np.uint64(at + e)]
                elif not back:
                    for e in range(n):
                        arena[np.uint64(to + e * o3)] = arena[np.uint64(at + e * s3)]
                elif masked:
                    for e in range(n):
                        g, x = arena[np.uint64(to + e * o3)], arena[np.uint64(at + e * s3)]
                        arena[np.uint64(at + e * s3)] = x + g if g != 0.0 else x
                elif s3 == 1 and o3 == 1:
                    for e in range(n):
                        arena[np.uint64(at + e)] += arena[np.uint64(to + e)]
                else:
                    for e in range(n):
                        arena[np.uint64(at + e * s3)] += arena[np.uint64(to + e * o3)]


@jit
def forward(table, aval, scratch):
    """The forward sweep of the table's records, in order."""
    frame = np.empty(5, np.intp)  # a NumPy loop call's arguments (_framed): alive for the whole sweep
    skip = 0
    for r in range(table.shape[0]):
        t = table[r]
        kind = t[KIND]
        if r < skip:
            continue
        if kind == STRETCH:
            if t[CALL] != 0:
                _call(t[CALL], (table[r + 1:r + 1 + t[SIZE]], aval))
                skip = r + 1 + t[SIZE]
        elif kind == ELEMENTWISE:
            n, number = t[SIZE], _number(t)
            A = _operand(t, 0, aval, scratch[0], number)
            B = _operand(t, 1, aval, scratch[1], number) if t[NIN] == 2 else scratch[1, :n]
            values(t[OP], A, B, aval[t[OUT]:t[OUT] + n], n, number, frame)
        elif kind == SUM:
            _sum_forward(t, aval)
        elif kind == MATMUL:
            a, b = VIEWS + STRIDES, VIEWS + VIEW + STRIDES
            _product(aval, t[VIEWS + BASE], t[a], t[a + 1], aval, t[VIEWS + VIEW + BASE], t[b], t[b + 1], aval,
                     t[OUT], t[SHAPE], t[SHAPE + 1], t[SHAPE + 2])
        elif kind == COPY or kind == GATHER:
            _copy(t, aval, False, False)
        elif kind == LOGSUMEXP:
            _logsumexp(t, aval, aval, scratch, False)
        elif kind == LINED:
            _lined(t, aval, scratch, frame)


@jit
def reverse(table, aval, aadj, stamp, gen, keep, scratch, check):
    """The reverse sweep of the table's records (given last first) that this pass reached; whether it made a
    matmul's products back unchecked (check false: see kernels.array_rule.times)."""
    unchecked = False
    skip = 0
    for r in range(table.shape[0]):
        t = table[r]
        if r < skip:
            continue
        if t[KIND] == STRETCH:  # (its members last first: reached where the last is)
            if t[CALL] != 0:
                skip = r + 1 + t[SIZE]
                if stamp[table[r + 1, ROW]] == gen:
                    _call(t[CALL], (table[r + 1:skip], aval, aadj, stamp, gen, keep, scratch, scratch.shape[1]))
            continue
        if stamp[t[ROW]] != gen:
            continue
        kind = t[KIND]
        if kind == ELEMENTWISE:
            n, out = t[SIZE], t[OUT]
            g, y, number = aadj[out:out + n], aval[out:out + n], _number(t)
            A = _operand(t, 0, aval, scratch[0], number)
            B = _operand(t, 1, aval, scratch[1], number) if t[NIN] == 2 else scratch[1, :n]
            for q in range(t[NIN]):
                if t[VIEWS + VIEW * q + WANT] != 0:
                    _send(t, q, aadj, stamp, gen, keep, A, B, y, g, scratch[2], scratch[3], number)
        elif kind == LINED:
            for q in range(2):
                if t[VIEWS + VIEW * q + WANT] != 0:
                    _lined_send(t, q, aval, aadj, stamp, gen, keep, scratch)
        elif kind == MATMUL:
            _matmul_reverse(t, aval, aadj, stamp, gen, keep, scratch[0], check)
            unchecked = not check
        elif kind == COPY or kind == GATHER:  # a stale region zeroed, then added to (0.0 + c: the step's c + 0.0)
            if t[VIEWS + WANT] != 0:
                _prepare(t, VIEWS, aadj, stamp, gen, keep)
                _copy(t, aadj, True, kind == GATHER)
        elif kind == LOGSUMEXP:
            if t[VIEWS + WANT] != 0:
                _prepare(t, VIEWS, aadj, stamp, gen, keep)
                _logsumexp(t, aval, aadj, scratch, True)
        elif kind == SUM:
            if t[VIEWS + WANT] == 0:
                continue
            _prepare(t, VIEWS, aadj, stamp, gen, keep)
            base, out = t[VIEWS + BASE], t[OUT]
            s, o = t[VIEWS + STRIDES:VIEWS + STRIDES + 4], t[OUT_STRIDES:OUT_STRIDES + 4]
            for i0 in range(t[SHAPE]):
                for i1 in range(t[SHAPE + 1]):
                    for i2 in range(t[SHAPE + 2]):
                        at, to = base + i0 * s[0] + i1 * s[1] + i2 * s[2], out + i0 * o[0] + i1 * o[1] + i2 * o[2]
                        if o[3] == 0:  # a run of the input from one element (its own region): a loop LLVM vectorizes
                            g = aadj[to]
                            for i3 in range(t[SHAPE + 3]):
                                aadj[np.uint64(at + i3 * s[3])] += g
                            continue
                        for i3 in range(t[SHAPE + 3]):
                            aadj[np.uint64(at + i3 * s[3])] += aadj[np.uint64(to + i3 * o[3])]
    return unchecked

'''


def generate(header: list[str]) -> str:
    helpers = sorted({fn.__name__ for fn in ops.HELPERS + ops.CALLED})
    ufuncs = tuple(sorted({ufunc for _, ufunc, _ in ops.LOOPED.values()}))
    lines = [
        *header,
        '"""The compiled sweeps of array records (tape/sweeps/compiled.py encodes their tables)."""',
        "",
        "from math import (  # noqa: F401",
        *[f"    {name}," for name in sorted(ops.MATH_NAMES + ("nan",), key=natural)],
        ")",
        "",
        "import numpy as np",
        "from llvmlite import ir",
        "from numba import types",
        "from numba.extending import intrinsic",
        "",
        "from ._sweeps import (  # noqa: F401",
        *[f"    {name}," for name in helpers],
        ")",
        "from .blas import bind",
        "from .compiling import jit",
        "from .ufuncs import bind as bind_loops",
        "",
        CONSTANTS,
        "READS = np.array([  # per opcode and side (a, b), the operands its partial reads (1: a, 2: b): a LINED row",
        "    # gathers no other (the mixture's d * e back to e: its line repeated into scratch, 133-134 -> 92 us CPU)",
        *[f"    [{_reads(op.da)}, {_reads(op.db or op.da)}],  # {op.name}" for op in ops.OPS],
        "], np.int64)",
        "LOOPS = bind_loops((  # the ufuncs bound to NumPy's own float64 loops (kernels/ufuncs.py)",
        *[f'    "{name}",' for name in ufuncs],
        "))",
        "_LOOP = types.void(_P, _P, _P, _P)  # NumPy's inner loop: (args, dimensions, steps, data)",
        *[f'numpy_{name} = types.ExternalFunction("numpy_{name}", _LOOP)' for name in ufuncs],
        "",
        "",
        f"@{JIT}",
        "def values(k, A, B, Y, n, number, frame):",
        '    """Y[:n] = op k of A[:n] (and B[:n]), element by element or by NumPy\'s loop (B unread by a unary op;',
        '    A[0] or B[0] for all where number is 1 or 2)."""',
        *_body(_branches(_values, _elementwise)),
        "",
        "",
        f"@{JIT}",
        "def sends(k, side, A, B, Y, G, D, n, number, fresh):",
        '    """D[:n] += G[:n] times op k\'s partial in its operand ``side`` (0: a, 1: b) at A, B and its values Y,',
        '    nothing where a factor is 0 (A[0] or B[0] for all where number is 1 or 2); fresh: D[:n] = 0.0 + those."""',
        *_body(_branches(_sends, lambda op: _elementwise(op) and bool(op.da))),
        "",
        "",
        LINES,
        SUMS,
        PRODUCTS,
        BROADCASTS,
        DRIVER,
    ]
    return "\n".join(lines)
