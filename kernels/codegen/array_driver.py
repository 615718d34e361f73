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
from .array_lines import LINES
from .sweeps import JIT, branches, element_loop, names_in, natural

LOADS = {"a": "a = A[u]", "b": "b = B[u]", "y": "y = Y[u]", "v": "v = Y[u]"}


def _loop(target: str, rule: str, indent: str, binary: bool) -> list[str]:
    """target[u] = rule over the n elements, loading what the rule reads; target D: D[u] += G[u] times the rule,
    nothing where a factor is 0 (each product added as made: no pass of partials). A binary op's operand that is
    one number read by all (``number`` 1: a, 2: b) is loaded once, in a loop of its own (not a filled row: over
    4,096 elements the fill is a pass over memory)."""
    store = ["g = G[u]", f"p = {rule}", "D[u] += g * p if g != 0.0 and p != 0.0 else 0.0"] if target == "D" else [
        f"{target}[u] = {rule}"]

    def one(number: str, ind: str) -> list[str]:
        loads = [line for name, line in LOADS.items() if name in names_in(rule) and name != number]
        return [f"{ind}{number} = {number.upper()}[0]"] * bool(number) + element_loop(ind, [*loads, *store], "n")

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
COPY, GATHER = 4, 5  # a join's input or a run of a gather's places: one view's elements copied into the output
LOGSUMEXP = 6  # log Σ exp along axis 3 (stride 1) of lines along axis 2 (the output's elements, in order)
ROWMAJOR, COLMAJOR, NOTRANS, TRANS = 101, 102, 111, 112  # CBLAS's enums
_I, _P, _F, _E = types.int64, types.intp, types.float64, types.int32  # ILP64 ints, pointers, doubles, enums
BLAS = bind(("scipy_cblas_dgemm64_", "scipy_cblas_dgemv64_"))  # NumPy's own OpenBLAS (kernels/blas.py)
dgemm = types.ExternalFunction("scipy_cblas_dgemm64_", types.void(_E, _E, _E, _I, _I, _I, _F, _P, _I, _P, _I, _F,
                                                                  _P, _I))
dgemv = types.ExternalFunction("scipy_cblas_dgemv64_", types.void(_E, _E, _I, _I, _F, _P, _I, _P, _I, _F, _P, _I))
"""

DRIVER = '''@jit
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
def _summed(t, f, c, total):
    """total[:m] = c (record t's iteration space in C order) summed over the axes view f is broadcast along, as
    np.sum adds (kernels.array_rule.unbroadcast): pairwise along the trailing broadcast axes, else element after
    element; returns the view's C strides in the space (0 along those axes): its element k of total."""
    kept, ext = np.zeros(4, np.int64), t[SHAPE:SHAPE + 4].copy()
    m, run, trailing = 1, 1, True
    for d in range(3, -1, -1):
        if t[f + STRIDES + d] != 0:  # (an axis of length 1 has stride 0)
            trailing = False
            kept[d] = m
            m *= t[SHAPE + d]
        elif trailing:  # the run pairwise sums, one call per place of the other axes
            run *= t[SHAPE + d]
            ext[d] = 1
    total[:m] = 0.0
    e = 0
    for i0 in range(ext[0]):
        for i1 in range(ext[1]):
            for i2 in range(ext[2]):
                k = i0 * kept[0] + i1 * kept[1] + i2 * kept[2]
                if run == 1:  # (a loop of its own: LLVM vectorizes it along a kept last axis)
                    for i3 in range(ext[3]):
                        total[np.uint64(k + i3 * kept[3])] += c[np.uint64(e + i3)]
                    e += ext[3]
                    continue
                for i3 in range(ext[3]):
                    total[k + i3 * kept[3]] += _pairwise(c, e, run, 1)
                    e += run
    return kept


@jit
def _send(t, q, aadj, stamp, gen, keep, A, B, y, g, c, total, number):
    """adjoint[view q] += g * the partial in q (0 where a factor is 0) over record t's iteration space, summed
    back over the axes the view is broadcast along first, by the stamp rule: a stale adjoint is zeroed first
    (0.0 + c: the step's assignment c + 0.0, bit for bit)."""
    f = VIEWS + VIEW * q
    n, base = t[SIZE], t[f + BASE]
    j = t[f + REC]
    if not (stamp[j] == gen or (stamp[j] >= keep and t[f + ACC] != 0)):
        stamp[j] = gen
        aadj[t[f + REGION]:t[f + REGION] + t[f + REGION_SIZE]] = 0.0
    if _same(t, f):  # the view laid out as the output: one pass, products added as made
        sends(t[OP], q, A, B, y, g, aadj[base:base + n], n, number)
        return
    _room(c, n)
    _room(total, n)
    c[:n] = 0.0  # (0.0 + each product: its sum back, from 0.0, is the same)
    sends(t[OP], q, A, B, y, g, c, n, number)
    kept = _summed(t, f, c, total)
    s0, s1, s2, s3 = t[f + STRIDES], t[f + STRIDES + 1], t[f + STRIDES + 2], t[f + STRIDES + 3]
    for i0 in range(t[SHAPE] if s0 != 0 else 1):
        for i1 in range(t[SHAPE + 1] if s1 != 0 else 1):
            for i2 in range(t[SHAPE + 2] if s2 != 0 else 1):
                at, k = base + i0 * s0 + i1 * s1 + i2 * s2, i0 * kept[0] + i1 * kept[1] + i2 * kept[2]
                for i3 in range(t[SHAPE + 3] if s3 != 0 else 1):
                    aadj[np.uint64(at + i3 * s3)] += total[np.uint64(k + i3 * kept[3])]


@jit
def _prepare(t, f, aadj, stamp, gen, keep):
    """The stamp rule: the adjoint region of the record view f reads, zeroed if stale in generation gen."""
    j = t[f + REC]
    s = stamp[j]
    if not (s == gen or (s >= keep and t[f + ACC] != 0)):
        aadj[t[f + REGION]:t[f + REGION] + t[f + REGION_SIZE]] = 0.0
        stamp[j] = gen


@jit
def _block(aval, at, n, stride):
    """The sum of n <= 128 elements from aval[at] apart by stride, as NumPy's pairwise sum adds a block."""
    if n < 8:
        total = 0.0
        for i in range(n):
            total += aval[at + i * stride]
        return total
    if n <= 128:
        r0, r1, r2, r3 = aval[at], aval[at + stride], aval[at + 2 * stride], aval[at + 3 * stride]
        r4, r5, r6, r7 = aval[at + 4 * stride], aval[at + 5 * stride], aval[at + 6 * stride], aval[at + 7 * stride]
        i = 8
        while i < n - n % 8:
            x = at + i * stride
            r0, r1, r2, r3 = r0 + aval[x], r1 + aval[x + stride], r2 + aval[x + 2 * stride], r3 + aval[x + 3 * stride]
            r4, r5 = r4 + aval[x + 4 * stride], r5 + aval[x + 5 * stride]
            r6, r7 = r6 + aval[x + 6 * stride], r7 + aval[x + 7 * stride]
            i += 8
        total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            total += aval[at + i * stride]
            i += 1
        return total


@jit
def _pairwise(aval, at, n, stride):
    """The sum of n elements from aval[at] apart by stride, in NumPy's pairwise order (its bits): blocks of at
    most 128, halves (the first a multiple of 8) added. Its recursion is a loop over a stack of halves (a
    recursive kernel called from two kernels fails to link from Numba's cache)."""
    if n <= 128:
        return _block(aval, at, n, stride)
    starts, sizes, left, done = np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64), np.zeros(64, np.int64)
    starts[0], sizes[0], d, value = at, n, 0, 0.0
    while d >= 0:
        m = sizes[d]
        if m <= 128 or done[d] == 2:  # a block, or both halves summed: its value to the level above
            value = _block(aval, starts[d], m, stride) if m <= 128 else left[d] + value
            d -= 1
            continue
        half = m // 2 - (m // 2) % 8
        if done[d] == 1:
            left[d] = value
        done[d] += 1
        starts[d + 1], sizes[d + 1], done[d + 1] = (starts[d], half, 0) if done[d] == 1 else (
            starts[d] + half * stride, m - half, 0)
        d += 1
    return value


@jit
def _sum_forward(t, aval):
    """y = the sum over the reduced axes (output strides 0 along them), as NumPy adds: pairwise along the
    last axis where it is reduced, else element after element."""
    out, n = t[OUT], t[SIZE]
    f = VIEWS
    s0, s1, s2, s3 = t[f + STRIDES], t[f + STRIDES + 1], t[f + STRIDES + 2], t[f + STRIDES + 3]
    o0, o1, o2, o3 = t[OUT_STRIDES], t[OUT_STRIDES + 1], t[OUT_STRIDES + 2], t[OUT_STRIDES + 3]
    aval[out:out + n] = 0.0
    base = t[f + BASE]
    for i0 in range(t[SHAPE]):
        for i1 in range(t[SHAPE + 1]):
            for i2 in range(t[SHAPE + 2]):
                at, to = base + i0 * s0 + i1 * s1 + i2 * s2, out + i0 * o0 + i1 * o1 + i2 * o2
                if o3 == 0:  # a run along the last axis into one element
                    aval[to] += _pairwise(aval, at, t[SHAPE + 3], s3)
                else:
                    for i3 in range(t[SHAPE + 3]):
                        aval[to + i3 * o3] += aval[at + i3 * s3]


@jit
def _blasable(s1, s2, d2):
    """NumPy's is_blasable2d in elements: the second axis contiguous, the first apart by at least d2."""
    return s2 == 1 and s1 >= d2


@jit
def _gemv(A, am, an, x, xn, y, m, n):
    """y = A x as NumPy's DOUBLE_gemv (numpy/_core/src/umath/matmul.c.src) calls dgemv, y contiguous."""
    order, lda = (COLMAJOR, am) if _blasable(am, an, n) else (ROWMAJOR, an)
    dgemv(order, TRANS, n, m, 1.0, A, lda, x, xn, 0.0, y, 1)


@jit
def _product(X, x, xm, xn, Y, y, yn, yp, C, c, m, n, p):
    """C[c:] = X[x:] @ Y[y:] (m x n and n x p by those strides; C in C order) by the routine DOUBLE_matmul calls
    for these shapes and strides, with its arguments: dgemm, dgemv or its own loop (never its dot, its syrk for
    X @ X.T, or a copy of an operand BLAS cannot read: tape/sweeps/compiled.py leaves those to NumPy)."""
    px, py, pc = np.intp(X.ctypes.data) + 8 * x, np.intp(Y.ctypes.data) + 8 * y, np.intp(C.ctypes.data) + 8 * c
    if m > 1 and n > 1 and p > 1:
        ta, lda = (NOTRANS, xm) if _blasable(xm, xn, n) else (TRANS, xn)
        tb, ldb = (NOTRANS, yn) if _blasable(yn, yp, p) else (TRANS, yp)
        dgemm(ROWMAJOR, ta, tb, m, p, n, 1.0, px, lda, py, ldb, 0.0, pc, p)
    elif n > 1 and m == 1 and (_blasable(yn, yp, p) or _blasable(yp, yn, n)) and xn >= 1:
        _gemv(py, yp, yn, px, xn, pc, p, n)
    elif n > 1 and p == 1 and (_blasable(xm, xn, n) or _blasable(xn, xm, m)) and yn >= 1:
        _gemv(px, xm, xn, py, yn, pc, m, n)
    else:
        for i in range(m):
            for j in range(p):
                total = 0.0
                for k in range(n):
                    total += X[x + i * xm + k * xn] * Y[y + k * yn + j * yp]
                C[c + i * p + j] = total


@jit
def _checked(X, x, xm, xn, Y, y, yn, yp, C, m, n, p, check):
    """C = X @ Y as kernels.array_rule.product makes it: by NumPy's routine, redone term by term (a product with
    a zero factor adds nothing) only if its np.sum is NaN."""
    _product(X, x, xm, xn, Y, y, yn, yp, C, 0, m, n, p)
    if not check or not np.isnan(_pairwise(C, 0, m * p, 1)):
        return
    C[:m * p] = 0.0
    for k in range(n):
        for i in range(m):
            a = X[x + i * xm + k * xn]
            for j in range(p):
                b = Y[y + k * yn + j * yp]
                C[i * p + j] += 0.0 if a == 0.0 or b == 0.0 else a * b


@jit
def _matmul_reverse(t, aval, aadj, stamp, gen, keep, C, check):
    """A' += G Bt, then B' += At G, by the stamp rule (a stale region is assigned where the view covers it in
    order: the product made there, then + 0.0; else zeroed first and the product, made in C, added)."""
    n, k, m, out = t[SHAPE], t[SHAPE + 1], t[SHAPE + 2], t[OUT]
    a, b = VIEWS + STRIDES, VIEWS + VIEW + STRIDES
    for q in range(2):
        f = VIEWS + VIEW * q
        if t[f + WANT] == 0:
            continue
        rows, cols = (n, k) if q == 0 else (k, m)
        base, rs, cs, j = t[f + BASE], t[f + STRIDES], t[f + STRIDES + 1], t[f + REC]
        stale = not (stamp[j] == gen or (stamp[j] >= keep and t[f + ACC] != 0))
        ordered = (cs == 1 or cols == 1) and (rs == cols or rows == 1)
        whole = stale and ordered and base == t[f + REGION] and rows * cols == t[f + REGION_SIZE]
        _room(C, 0 if whole else rows * cols)
        P = aadj[base:base + rows * cols] if whole else C
        if q == 0:
            _checked(aadj, out, m, 1, aval, t[VIEW + VIEWS + BASE], t[b + 1], t[b], P, n, m, k, check)
        else:
            _checked(aval, t[VIEWS + BASE], t[a + 1], t[a], aadj, out, m, 1, P, k, n, m, check)
        if stale:
            stamp[j] = gen
            if whole:
                for e in range(rows * cols):
                    P[e] = P[e] + 0.0
                continue
            aadj[t[f + REGION]:t[f + REGION] + t[f + REGION_SIZE]] = 0.0
        for i in range(rows):
            for e in range(cols):
                aadj[base + i * rs + e * cs] += C[i * cols + e]


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
    for r in range(table.shape[0]):
        t = table[r]
        kind = t[KIND]
        if kind == ELEMENTWISE:
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


@jit
def reverse(table, aval, aadj, stamp, gen, keep, scratch, check):
    """The reverse sweep of the table's records (given last first) that this pass reached; whether it made a
    matmul's products back unchecked (check false: see kernels.array_rule.times)."""
    unchecked = False
    for r in range(table.shape[0]):
        t = table[r]
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
        "from numba import types",
        "",
        "from ._sweeps import (  # noqa: F401",
        *[f"    {name}," for name in helpers],
        ")",
        "from .blas import bind",
        "from .compiling import jit",
        "from .ufuncs import bind as bind_loops",
        "",
        CONSTANTS,
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
        "def sends(k, side, A, B, Y, G, D, n, number):",
        '    """D[:n] += G[:n] times op k\'s partial in its operand ``side`` (0: a, 1: b) at A, B and its values Y,',
        '    nothing where a factor is 0 (A[0] or B[0] for all where number is 1 or 2)."""',
        *_body(_branches(_sends, lambda op: _elementwise(op) and bool(op.da))),
        "",
        "",
        LINES,
        DRIVER,
    ]
    return "\n".join(lines)
