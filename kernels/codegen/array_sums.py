"""The array driver's sums in NumPy's order (kernels/codegen/array_driver.py writes them into
``kernels/_array_driver.py``): np.sum's pairwise blocks, a SUM row's forward, and a contribution summed back over the
axes a view is broadcast along (kernels.array_rule.unbroadcast's numbers)."""

_BLOCK = """@jit
def {name}(aval, at, n{args}):
    \"\"\"The sum of n <= 128 elements from aval[at] {doc}, as NumPy's pairwise sum adds a
    block.\"\"\"{first}
    if n < 8:
        total = 0.0
        for i in range(n):
            total += aval[np.uint64(at + i * {s})]
        return total
    if n <= 128:
        u = np.uint64(at)
        r0, r1 = aval[u], aval[u + np.uint64({s})]
        r2, r3 = aval[u + np.uint64(2 * {s})], aval[u + np.uint64(3 * {s})]
        r4, r5 = aval[u + np.uint64(4 * {s})], aval[u + np.uint64(5 * {s})]
        r6, r7 = aval[u + np.uint64(6 * {s})], aval[u + np.uint64(7 * {s})]
        i = 8
        while i < n - n % 8:
            x = np.uint64(at + i * {s})
            r0, r1 = r0 + aval[x], r1 + aval[x + np.uint64({s})]
            r2, r3 = r2 + aval[x + np.uint64(2 * {s})], r3 + aval[x + np.uint64(3 * {s})]
            r4, r5 = r4 + aval[x + np.uint64(4 * {s})], r5 + aval[x + np.uint64(5 * {s})]
            r6, r7 = r6 + aval[x + np.uint64(6 * {s})], r7 + aval[x + np.uint64(7 * {s})]
            i += 8
        total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            total += aval[np.uint64(at + i * {s})]
            i += 1
        return total


"""  # (a template: a block apart by a stride, and in a row, every place unsigned, a stride < 0 too: places >= 0;
# conv1d's 256 lines of 1,018 summed back 0.117 -> 0.070 ms CPU in a row, s22's notes: pw2.py)

SUMS = '''@jit
def _kept(t, f):
    """View f's C strides in record t's space, 0 along the axes it is broadcast along (its element k of a sum back),
    their count m, the run of trailing broadcast axes np.sum adds pairwise, and the space's shape without them."""
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
    return kept, m, run, ext


@jit
def _summed(t, f, c, total):
    """total[:m] = c (record t's iteration space in C order) summed over the axes view f is broadcast along, as
    np.sum adds (kernels.array_rule.unbroadcast): pairwise along the trailing broadcast axes, else element after
    element; returns the view's C strides in the space (0 along those axes): its element k of total."""
    kept, m, run, ext = _kept(t, f)
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
def _back(t, f, aadj, total, kept):
    """The adjoints of record t's view f += total, their sum back (element k: kept, _kept's strides)."""
    base = t[f + BASE]
    s0, s1, s2, s3 = t[f + STRIDES], t[f + STRIDES + 1], t[f + STRIDES + 2], t[f + STRIDES + 3]
    for i0 in range(t[SHAPE] if s0 != 0 else 1):
        for i1 in range(t[SHAPE + 1] if s1 != 0 else 1):
            for i2 in range(t[SHAPE + 2] if s2 != 0 else 1):
                at, k = base + i0 * s0 + i1 * s1 + i2 * s2, i0 * kept[0] + i1 * kept[1] + i2 * kept[2]
                for i3 in range(t[SHAPE + 3] if s3 != 0 else 1):
                    aadj[np.uint64(at + i3 * s3)] += total[np.uint64(k + i3 * kept[3])]


''' + ''.join(_BLOCK.format(name=name, args=args, s=step, doc=doc, first=first) for name, args, step, doc, first in (
    ("_block", ", stride", "stride", "apart by stride", "\n    if stride == 1:\n        return _contiguous(aval, at, "
     "n)"),
    ("_contiguous", "", "1", "in a row (LLVM vectorizes its adds)", ""))) + '''
STACK = 64  # levels of _pairwise's halves, at most: each at most half the last and 8, and 2^63 elements at most


@intrinsic
def _stack(typingctx, kind):
    """An array of STACK elements of kind (np.int64, np.float64) in the frame of the kernel that calls it (no heap
    allocation: conv1d's 1,792 line sums back each allocated four, s24)."""
    dtype = kind.instance_type

    def codegen(context, builder, signature, values):
        with builder.goto_entry_block():  # (once a call, wherever it is called)
            frame = builder.alloca(context.get_value_type(dtype), size=ir.Constant(ir.IntType(64), STACK))
        return frame
    return types.CPointer(dtype)(kind), codegen


@jit
def _pairwise(aval, at, n, stride):
    """The sum of n elements from aval[at] apart by stride, in NumPy's pairwise order (its bits): blocks of at
    most 128, halves (the first a multiple of 8) added. Its recursion is a loop over a stack of halves (a
    recursive kernel called from two kernels fails to link from Numba's cache) in its own frame (_stack)."""
    if n <= 128:
        return _block(aval, at, n, stride)
    starts, sizes, done = (carray(_stack(np.int64), STACK), carray(_stack(np.int64), STACK),
                           carray(_stack(np.int64), STACK))
    left = carray(_stack(np.float64), STACK)
    starts[0], sizes[0], done[0], d, value = at, n, 0, 0, 0.0
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
def _sums(X, at, count, n, S, to):
    """S[to + i] = 0.0 + the sum of line i, n adjacent elements from X[at + i * n] on, in _pairwise's order, for i <
    count: lines of 8 to 128 elements two at a time, their adds interleaved (two chains the CPU overlaps: 10^4 lines of
    16, 131 -> 27 µs CPU, s14's notes), others by _pairwise."""
    i, end = 0, n - n % 8
    while 8 <= n <= 128 and i + 1 < count:
        p, q = at + i * n, at + (i + 1) * n
        r0, r1, r2, r3, r4, r5, r6, r7 = X[p], X[p + 1], X[p + 2], X[p + 3], X[p + 4], X[p + 5], X[p + 6], X[p + 7]
        u0, u1, u2, u3, u4, u5, u6, u7 = X[q], X[q + 1], X[q + 2], X[q + 3], X[q + 4], X[q + 5], X[q + 6], X[q + 7]
        for j in range(8, end, 8):
            x, y = p + j, q + j
            r0, r1, r2, r3 = r0 + X[x], r1 + X[x + 1], r2 + X[x + 2], r3 + X[x + 3]
            r4, r5, r6, r7 = r4 + X[x + 4], r5 + X[x + 5], r6 + X[x + 6], r7 + X[x + 7]
            u0, u1, u2, u3 = u0 + X[y], u1 + X[y + 1], u2 + X[y + 2], u3 + X[y + 3]
            u4, u5, u6, u7 = u4 + X[y + 4], u5 + X[y + 5], u6 + X[y + 6], u7 + X[y + 7]
        s, v = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), ((u0 + u1) + (u2 + u3)) + ((u4 + u5) + (u6 + u7))
        for j in range(end, n):
            s, v = s + X[p + j], v + X[q + j]
        S[to + i], S[to + i + 1] = 0.0 + s, 0.0 + v
        i += 2
    for k in range(i, count):
        S[to + k] = 0.0 + _pairwise(X, at + k * n, n, 1)

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

'''


SUMMED = '''

def summed_back(tp, q, dp, cp, sp, nd, n):
    """An elementwise row's contribution to its view q (c: its n products in the row's space, in C order, each 0.0 +
    its product) summed back over the axes the view is broadcast along into total, then added to the view's adjoints
    (the driver's _send); c itself where it is broadcast along none (a strided view: its sum back 0.0 + c is c, two
    passes fewer; conv1d's pooling of pairs back 0.47 -> 0.30 ms CPU)."""
    t, f, total, c = carray(tp, WIDTH), VIEWS + VIEW * q, carray(sp, n), carray(cp, n)
    kept, m, _, _ = _kept(t, f)
    _back(t, f, carray(dp, nd), c if m == n else total, kept if m == n else _summed(t, f, c, total))
'''  # a C function of its own slot (SUMMED; kernels/array_kernels.py): compiled where a table sends back to such a view
