"""The generator of ``kernels/_array_driver.py``: the compiled sweeps of a Function's array records.

tape/sweeps/compiled.py encodes each record of a stretch once, as a row of an int64 table (the fields below): its kind
in this driver (its Rule's ``compiled``), its scalar opcode, its region, its iteration space (4 axes, a loop over the
output's elements or a reduction's input's), and per view read: the view's first element and strides in that space (0
along broadcast axes), the read record's row and region (for the stamp rule) and whether it wants an adjoint. The
kernels walk the table: elementwise records by their op's kernels (``values_<opcode>``, ``sends_<opcode>``, written by
array_elementwise.py: C functions at their slots of KERNELS, compiled by kernels/array_kernels.py the first time a table
holds the op; the driver knows no op by name), other kinds by their kind's (KINDS: sums by a loop in NumPy's order,
matmuls by the CBLAS call np.matmul makes, NumPy's own OpenBLAS: kernels/blas.py; joins, gathers, logsumexps, lined
rows), so that a program compiles the kernels of its ops and kinds, not a switch over the whole op table (its reverse's
was 30 of the driver's 48 CPU-s). The reverse follows tape/sweeps/driver.py's rules: a record is reached where its stamp
is this pass's, an input's region is zeroed at its first contribution, a product with a zero factor adds nothing, and a
contribution is summed back over the axes its view is broadcast along in np.sum's order first. Each number is the NumPy
step's, bit for bit: the same IEEE operations in the same order (Numba contracts no multiply-add into an FMA without
fastmath).

A constant argument of a call from jitted code is a literal type to Numba, one compile per value: calls whose callee
is called with several pass np.int64(c) or np.bool_(b) (reverse_matmul 2.96 -> 2.00 CPU-s cold, forward_lined 1.06 ->
0.69), but not a literal stride that lets LLVM vectorize a hot loop (_pairwise's, _block's).

The kernels are text here, written into the generated file with the op kernels, so that Numba's cache (which checks only
the file a kernel is defined in) is renewed whenever the op table changes.
"""

from __future__ import annotations

from .. import ops
from .array_broadcasts import BROADCASTS
from .array_elementwise import FRAME, FRAMED, UFUNCS, elementwise, op_kernels, primed, reads
from .array_kinds import KINDS, caught
from .array_lines import LINES
from .array_products import PRODUCTS
from .array_sums import SUMMED, SUMS
from .sweeps import natural


def _names() -> list[str]:
    """NAMES: each slot's kernel (kernels/array_kernels.py compiles it), "" where none."""
    names = [""] * (20 + 2 * len(ops.OPS))
    for kind, name in ((2, "sum"), (3, "matmul"), (4, "copy"), (6, "logsumexp"), (7, "lined"), (9, "select")):
        names[kind], names[10 + kind] = f"forward_{name}", f"reverse_{name}"
    names[10 + 1] = "summed_back"  # (SUMMED)
    for code, op in enumerate(ops.OPS):
        if elementwise(op):
            names[20 + code] = f"values_{code}"
        if elementwise(op) and op.da:  # (a comparison sends nothing)
            names[20 + len(ops.OPS) + code] = f"sends_{code}"
    return ["NAMES = (  # each slot's kernel: a row kind's forward (slot KIND) and reverse (BACK + KIND), an",
            "    # elementwise op's values (VALUES + opcode) and sends (SENDS + opcode); \"\" where none",
            *[f'    "{name}",' for name in names], ")"]


CONSTANTS = """KIND, OP, ROW, OUT, SIZE, NIN, SHAPE, OUT_STRIDES, VIEWS = 0, 1, 2, 3, 4, 5, 6, 10, 14  # a row's fields
REC, BASE, REGION, REGION_SIZE, WANT, ACC, STRIDES = 0, 1, 2, 3, 4, 5, 6  # a view's, from VIEWS + 10 q
VIEW, WIDTH = 10, 37
VOUT, VBASE = 34, 35  # where the values are that the output and view q (VBASE + q) read: OUT's and BASE's, but in a
# reverse table whose adjoints have a layout of their own (tape/sweeps/encoding.py's back), where OUT, BASE, REGION
# place adjoints
ELEMENTWISE, SUM, MATMUL = 1, 2, 3  # kinds: a Rule's ``compiled`` names one
LINED = 7  # an ELEMENTWISE binary record run in blocks of lines along axis 3 (array_broadcasts.py)
COPY, GATHER = 4, 5  # a join's input or a run of a gather's places: one view's elements copied into the output
LOGSUMEXP = 6  # log Σ exp along axis 3 (stride 1) of lines along axis 2 (the output's elements, in order)
STRETCH = 8  # a header of the next SIZE rows (elementwise, laid out alike): run by the generated kernel at address
CALL = 6  # t[CALL] (kernels/shaped.py's stretch: one pass, only what is read after it stored), else row by row
SELECT = 9  # np.where's branch (view 1) where its condition (view 0) is not 0 (OP 1) or is 0 (OP 0): two rows a select
BACK, VALUES, SENDS = 10, 20, 20 + OPS  # the kernels' slots: a row kind's forward (KIND), reverse (BACK + KIND), an
# elementwise op's values (VALUES + opcode) and sends (SENDS + opcode)
SUMMED = BACK + ELEMENTWISE  # the slot of an elementwise row's contribution summed back into a view not laid out as
# its output (summed_back: a program that broadcasts nothing back never compiles it)
SLOTS = SENDS + OPS
WRITE_AT, FORWARD_AT, MOVE_AT, LIVES_AT = SLOTS, SLOTS + 1, SLOTS + 2, SLOTS + 3  # the C functions jitted array
# records call (tape/compiled/array_calls.py: write_record, a row's forward, write_moved, the lives'), 0 until made
CELLS = SLOTS + 4
KERNELS = (ctypes.c_int64 * CELLS)()  # each slot's kernel's address, 0 until compiled (kernels/array_kernels.py):
ll.add_symbol("tape_array_kernels", ctypes.addressof(KERNELS))  # the kernels read it by this symbol (_kernel)
ROWMAJOR, COLMAJOR, NOTRANS, TRANS = 101, 102, 111, 112  # CBLAS's enums
_I, _P, _F, _E = types.int64, types.intp, types.float64, types.int32  # ILP64 ints, pointers, doubles, enums
BLAS = bind(("scipy_cblas_dgemm64_", "scipy_cblas_dgemv64_"))  # NumPy's own OpenBLAS (kernels/blas.py)
dgemm = types.ExternalFunction("scipy_cblas_dgemm64_", types.void(_E, _E, _E, _I, _I, _I, _F, _P, _I, _P, _I, _F,
                                                                  _P, _I))
dgemv = types.ExternalFunction("scipy_cblas_dgemv64_", types.void(_E, _E, _I, _I, _F, _P, _I, _P, _I, _F, _P, _I))
"""

DRIVER = '''def _invoke(returns):
    """The code of a call of the C function at an address with args (an array as its data), giving returns."""
    def codegen(context, builder, signature, values):
        args = signature.args[1]
        data = [builder.extract_value(values[1], i) for i in range(len(args))]
        data = [context.make_array(kind)(context, builder, value).data if isinstance(kind, types.Array) else value
                for kind, value in zip(args, data, strict=True)]
        kind = ir.VoidType() if returns == types.void else context.get_value_type(returns)
        function = builder.inttoptr(values[0], ir.FunctionType(kind, [x.type for x in data]).as_pointer())
        result = builder.call(function, data)
        return context.get_dummy_value() if returns == types.void else result
    return codegen


@intrinsic
def _call(typingctx, address, args):
    """The C function at address called with args, an array as its data: a STRETCH's kernel, an op's."""
    return types.void(address, args), _invoke(types.void)


@intrinsic
def _status(typingctx, address, args):
    """The C function at address called with args, as _call: a row kind's kernel, giving 0, or 1 where it failed."""
    return types.int64(address, args), _invoke(types.int64)


@jit
def _ran(status):
    """Raise for a kernel's failure (its scratch row too short: its _room caught)."""
    if status != 0:
        raise IndexError("tape: a compiled array sweep's scratch is shorter than a record (a bug in its sizing)")


@jit
def _room(buffer, n):
    """Refuse to write n elements into a scratch row shorter than n (Numba checks no bounds: a row that
    tape/sweeps/compiled.py sized wrongly would otherwise be written past)."""
    if n > len(buffer):
        raise IndexError("tape: a compiled array sweep's scratch is shorter than a record (a bug in its sizing)")


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
def _valued(t, v):
    """v = row t with where its values are (VOUT, VBASE) as OUT and each view's BASE: what a reverse kernel's value
    reads are given (t places the adjoints)."""
    v[:] = t
    v[OUT], v[VIEWS + BASE], v[VIEWS + VIEW + BASE] = t[VOUT], t[VBASE], t[VBASE + 1]
    return v


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
def _send(t, q, aadj, stamp, gen, keep, A, B, y, g, c, total, number, frame, E):
    """adjoint[view q] += g * the partial in q (0 where a factor is 0) over record t's iteration space, summed
    back over the axes the view is broadcast along first, by the stamp rule: a stale adjoint is zeroed first
    (0.0 + c: the step's assignment c + 0.0, bit for bit)."""
    f = VIEWS + VIEW * q
    n, base = t[SIZE], t[f + BASE]
    if _same(t, f) and base == t[f + REGION] and n == t[f + REGION_SIZE] and (base >= t[OUT] + n or t[OUT] >= base + n):
        sends(t[OP], q, A, B, y, g, aadj[base:base + n], n, number, _stale(t, f, stamp, gen, keep), frame, E)  # (the
        return  # view is its region, laid out as the output and apart from it: a stale one assigned, 0.0 + a product)
    _prepare(t, f, aadj, stamp, gen, keep)
    if _same(t, f):  # the view laid out as the output: one pass, products added as made
        sends(t[OP], q, A, B, y, g, aadj[base:base + n], n, number, False, frame, E)
        return
    _room(c, n)
    _room(total, n)
    sends(t[OP], q, A, B, y, g, c, n, number, True, frame, E)  # (0.0 + each product: its sum back, from 0.0, the same)
    _call(_address(SUMMED), (t, q, aadj, c, total, aadj.size, n))


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
def _select(t, aval, arena, back, fresh, into):
    """Record row t's branch (view 1) where its condition (view 0) is not 0 (t[OP] 1) or is 0 (t[OP] 0), over its 4
    axes: forward (arena: the values) the output's elements there = the branch's; back (arena: the adjoints) the
    branch's += the output's there and 0.0 elsewhere (the step's np.where(c != 0.0, g, 0.0) added; fresh: = 0.0 +
    those), or those written into ``into`` in the space's order where it is not empty (then summed back)."""
    c, x, out, taken = t[VBASE if back else VIEWS + BASE], t[VIEWS + VIEW + BASE], t[OUT], t[OP] != 0
    s0, s1, s2, s3 = t[VIEWS + STRIDES], t[VIEWS + STRIDES + 1], t[VIEWS + STRIDES + 2], t[VIEWS + STRIDES + 3]
    f = VIEWS + VIEW + STRIDES
    u0, u1, u2, u3 = t[f], t[f + 1], t[f + 2], t[f + 3]
    o0, o1, o2, o3 = t[OUT_STRIDES], t[OUT_STRIDES + 1], t[OUT_STRIDES + 2], t[OUT_STRIDES + 3]
    n, e, listed = t[SHAPE + 3], 0, len(into) > 0
    for i0 in range(t[SHAPE]):
        for i1 in range(t[SHAPE + 1]):
            for i2 in range(t[SHAPE + 2]):
                at = c + i0 * s0 + i1 * s1 + i2 * s2  # (the condition's, the branch's, the output's)
                of = x + i0 * u0 + i1 * u1 + i2 * u2
                to = out + i0 * o0 + i1 * o1 + i2 * o2
                if not back:
                    for i3 in range(n):
                        if (aval[np.uint64(at + i3 * s3)] != 0.0) == taken:
                            arena[np.uint64(to + i3 * o3)] = arena[np.uint64(of + i3 * u3)]
                elif listed:
                    for i3 in range(n):
                        on = (aval[np.uint64(at + i3 * s3)] != 0.0) == taken
                        into[np.uint64(e + i3)] = arena[np.uint64(to + i3 * o3)] if on else 0.0
                    e += n
                else:
                    for i3 in range(n):
                        on = (aval[np.uint64(at + i3 * s3)] != 0.0) == taken
                        g, k = arena[np.uint64(to + i3 * o3)] if on else 0.0, np.uint64(of + i3 * u3)
                        arena[k] = (0.0 if fresh else arena[k]) + g


@intrinsic
def _kernel(typingctx, slot):
    """The address in KERNELS' slot or cell (0: none compiled), read through its symbol."""
    def codegen(context, builder, signature, values):
        table = builder.module.globals.get("tape_array_kernels")
        if table is None:
            table = ir.GlobalVariable(builder.module, ir.ArrayType(ir.IntType(64), CELLS), "tape_array_kernels")
            table.linkage = "external"
        return builder.load(builder.gep(table, [ir.Constant(ir.IntType(32), 0), values[0]]))
    return types.int64(slot), codegen


@jit
def _address(slot):
    """The kernel at slot, refused (not called at 0) where none is compiled, or the slot is none (an unknown kind or op
    in a row: kernels/array_kernels.py compiles a table's kernels before it runs)."""
    if slot < 0 or slot >= SLOTS:
        raise ValueError("tape: a compiled array table's row names no kind or op of the driver")
    address = _kernel(slot)
    if address == 0:
        raise RuntimeError("tape: a compiled array table's row needs a kernel not compiled (kernels/array_kernels.py)")
    return address


@jit
def _op(k, first):
    """The slot of op k's kernel from first (VALUES or SENDS); -1 for none."""
    return first + k if 0 <= k < OPS else -1


@jit
def _row(kind, back):
    """The slot of row kind's kernel, forward or back; -1 for none."""
    if kind < SUM or kind > SELECT or kind == STRETCH:
        return -1
    return (COPY if kind == GATHER else kind) + (BACK if back else 0)


@jit
def values(k, A, B, Y, n, number, frame):
    """Y[:n] = op k of A[:n] (and B[:n]) by its kernel, values_<k> (B unread by a unary op; A[0] or B[0] for all where
    number is 1 or 2)."""
    address = _address(_op(k, VALUES))
    _room(B, n if PRIMED[k] & 1 else 0)  # (a value made in B first)
    _call(address, (A, B, Y, n, number, frame))


@jit
def sends(k, side, A, B, Y, G, D, n, number, fresh, frame, E):
    """D[:n] += G[:n] times op k's partial in operand ``side`` by its kernel, sends_<k> (fresh: D[:n] = 0.0 + those;
    frame: a loop call's, E: scratch)."""
    address = _address(_op(k, SENDS))  # (k checked before PRIMED is read)
    _room(B, n if PRIMED[k] & 2 else 0)  # (a partial made in B first)
    _room(E, 2 * n if PRIMED[k] & 4 else 0)  # (or in E)
    _call(address, (side, A, B, Y, G, D, n, number, 1 if fresh else 0, frame, E))


@jit
def forward(table, aval, scratch):
    """The forward sweep of the table's records, in order: elementwise rows by their op's kernel, other kinds' by
    their kind's (each at its slot of KERNELS)."""
    frame = np.empty(FRAME, np.intp)  # a NumPy loop call's arguments (_framed, _paired): alive for the whole sweep
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
            A = _operand(t, np.int64(0), aval, scratch[0], number)
            B = _operand(t, np.int64(1), aval, scratch[1], number) if t[NIN] == 2 else scratch[1, :n]
            values(t[OP], A, B, aval[t[OUT]:t[OUT] + n], n, number, frame)
        else:
            if kind == LINED:  # (its op's kernel, which its kind's calls)
                _address(_op(t[OP], VALUES))
            _ran(_status(_address(_row(kind, False)), (t, aval, scratch, frame, aval.size, scratch.shape[0],
                                                       scratch.shape[1])))


@jit
def reverse(table, aval, aadj, stamp, gen, keep, scratch, check):
    """The reverse sweep of the table's records (given last first) that this pass reached; whether it made a
    matmul's products back unchecked (check false: see kernels.array_rule.times)."""
    unchecked, skip, v = False, 0, np.empty(WIDTH, np.int64)  # (v: a row's values, _valued)
    frame, E = np.empty(FRAME, np.intp), scratch[4] if scratch.shape[0] > 4 else scratch[3, :0]  # (E: ops.PAIRED's)
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
        if kind == ELEMENTWISE and t[VIEWS + WANT] == 0 and (t[NIN] < 2 or t[VIEWS + VIEW + WANT] == 0):
            continue  # (it sends nothing: a comparison's, or one of constants)
        if kind == ELEMENTWISE:
            n, out, at = t[SIZE], t[OUT], t[VOUT]
            g, y, number = aadj[out:out + n], aval[at:at + n], _number(t)
            _valued(t, v)
            A = _operand(v, np.int64(0), aval, scratch[0], number)
            B = _operand(v, np.int64(1), aval, scratch[1], number) if t[NIN] == 2 else scratch[1, :n]
            for q in range(t[NIN]):
                if t[VIEWS + VIEW * q + WANT] != 0:
                    _send(t, q, aadj, stamp, gen, keep, A, B, y, g, scratch[2], scratch[3], number, frame, E)
            continue
        if kind == LINED:  # (its op's kernel, which its kind's calls)
            _address(_op(t[OP], SENDS))
        _ran(_status(_address(_row(kind, True)), (t, aval, aadj, stamp, scratch, aval.size, aadj.size, stamp.size, gen,
                                                  keep, 1 if check else 0, scratch.shape[0], scratch.shape[1])))
        unchecked = unchecked or (kind == MATMUL and not check)
    return unchecked

'''


def generate(header: list[str]) -> str:
    helpers = sorted({fn.__name__ for fn in ops.HELPERS + ops.CALLED})
    ufuncs = UFUNCS
    lines = [
        *header,
        '"""The compiled sweeps of array records (tape/sweeps/compiled.py encodes their tables)."""',
        "",
        "import ctypes",
        "from math import (  # noqa: F401",
        *[f"    {name}," for name in sorted(ops.MATH_NAMES + ("nan",), key=natural)],
        ")",
        "",
        "import numpy as np",
        "from llvmlite import binding as ll",
        "from llvmlite import ir",
        "from numba import carray, types",
        "from numba.extending import intrinsic",
        "",
        "from ._sweeps import (  # noqa: F401",
        *[f"    {name}," for name in helpers],
        ")",
        "from .blas import bind",
        "from .compiling import jit",
        "from .ufuncs import bind as bind_loops",
        "",
        f"OPS = {len(ops.OPS)}  # opcodes (kernels/ops.py)",
        f"FRAME = {FRAME}  # a NumPy loop call's arguments, at most (_framed, _paired)",
        CONSTANTS,
        "READS = np.array([  # per opcode and side (a, b), the operands its partial reads (1: a, 2: b): a LINED row",
        "    # gathers no other (the mixture's d * e back to e: its line repeated into scratch, 133-134 -> 92 us CPU)",
        *[f"    [{reads(op.da)}, {reads(op.db or op.da)}],  # {op.name}" for op in ops.OPS],
        "], np.int64)",
        "PRIMED = np.array([  # per opcode, what its kernels make in scratch first (array_elementwise.primed)",
        *[f"    {primed(op)},  # {op.name}" for op in ops.OPS],
        "], np.int64)",
        "LOOPS = bind_loops((  # the ufuncs bound to NumPy's own float64 loops (kernels/ufuncs.py)",
        *[f'    "{name}",' for name in ufuncs],
        "))",
        "_LOOP = types.void(_P, _P, _P, _P)  # NumPy's inner loop: (args, dimensions, steps, data)",
        *[f'numpy_{name} = types.ExternalFunction("numpy_{name}", _LOOP)' for name in ufuncs],
        "",
        "",
        *_names(),
        *op_kernels(),
        *caught(KINDS),
        SUMMED,
        "",
        "",
        LINES,
        SUMS,
        PRODUCTS,
        BROADCASTS,
        DRIVER,
        "",
        "",
        FRAMED,
    ]
    return "\n".join(lines)
