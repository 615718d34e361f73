"""The array driver's broadcasting elementwise records (kernels/codegen/array_driver.py writes them into
``kernels/_array_driver.py``): a LINED row runs its op on blocks of lines along axis 3 of its space, as many as its
table's scratch holds (tape/sweeps/compiled.LINES elements), so that a block stays in cache: each view of a block read
in place where it is laid out as the output, else gathered (each line's elements, stride 1, or its one number, stride
0). Back, each block's contributions are added in place where the view is laid out as the output, else into its sum
back across lines (element after element, in C order, as kernels.array_rule.unbroadcast adds; the lines of a run into
the same elements four at a time), a line's contributions to one number summed pairwise first (np.sum's order along
its trailing broadcast axis; tape/sweeps/compiled.py makes a row LINED only where that is axis 3)."""

BROADCASTS = '''@jit
def _lines(t, f, X, Z, first, last):
    """Z = the elements of view f of row t along its lines first..last (C order), in place where the view is laid out
    as the output, else gathered into Z: each line's n elements or its one number n times."""
    n, base = t[SHAPE + 3], t[f + BASE]
    if _same(t, f):
        return X[base + first * n:base + last * n]
    s0, s1, s2, s3 = t[f + STRIDES], t[f + STRIDES + 1], t[f + STRIDES + 2], t[f + STRIDES + 3]
    _room(Z, (last - first) * n)
    i0, i1, i2 = _line(t, first)
    for e in range(0, (last - first) * n, n):
        at = base + i0 * s0 + i1 * s1 + i2 * s2
        if s3 == 0:
            x = X[at]
            for j in range(n):
                Z[np.uint64(e + j)] = x
        else:
            for j in range(n):
                Z[np.uint64(e + j)] = X[np.uint64(at + j)]
        i0, i1, i2 = _next(t, i0, i1, i2, np.int64(1))
    return Z[:(last - first) * n]


@jit
def _line(t, first):
    """Line first's place (i0, i1, i2) in row t's space."""
    r = first // t[SHAPE + 2]
    return r // t[SHAPE + 1], r % t[SHAPE + 1], first % t[SHAPE + 2]


@jit
def _next(t, i0, i1, i2, step):
    """The place of the line step lines after (i0, i1, i2) in row t's space."""
    i2 += step
    while i2 >= t[SHAPE + 2]:
        i2, i1 = i2 - t[SHAPE + 2], i1 + 1
    while i1 >= t[SHAPE + 1]:
        i1, i0 = i1 - t[SHAPE + 1], i0 + 1
    return i0, i1, i2


@jit
def _run(t, kept, i0, i1, i2):
    """How many lines from place (i0, i1, i2) on add into the same elements of a sum back (kept: _kept's strides)."""
    run, size = 1, 1
    for d, i in ((2, i2), (1, i1), (0, i0)):
        if kept[d] != 0:
            break
        run += (t[SHAPE + d] - 1 - i) * size
        size *= t[SHAPE + d]
    return run


@jit
def _columns(c, e, lines, n, total, k):
    """total[k:k + n] += lines lines of n elements from c[e] (C order), each element's adds in line order, as
    np.add.reduce adds over axis 0: four lines at a time, each running sum held in a register across them and the
    loop along the line vectorized (a store and reload of total per line bounded it: 10^4 lines of 16, 37-41 -> 19 us;
    of 4, 145 -> 63 us; eight at a time was slower at 12-20 elements a line)."""
    four = e + lines // 4 * 4 * n
    for at in range(e, four, 4 * n):
        for j in range(n):
            u = np.uint64(at + j)
            s = total[np.uint64(k + j)] + c[u]
            s += c[u + np.uint64(n)]
            s += c[u + np.uint64(2 * n)]
            total[np.uint64(k + j)] = s + c[u + np.uint64(3 * n)]
    for at in range(four, e + lines * n, n):
        for j in range(n):
            total[np.uint64(k + j)] += c[np.uint64(at + j)]


@jit
def _operands(t, aval, scratch, number, first, last, read):
    """Both views of LINED row t along lines first..last (_lines: gathered into scratch 0 and 1), or the one
    number read by all (number 1 or 2) or a view not read (read: 1 a, 2 b), its first; and the number the op's kernel
    reads. A block of one line (_blocks: lines of LONG) reads each view in place: its line, or its one number, which
    is then the number read by all."""
    a, b = t[VIEWS + BASE], t[VIEWS + VIEW + BASE]
    if last - first == 1 and t[SHAPE + 3] >= LONG:
        (i0, i1, i2), n = _line(t, first), t[SHAPE + 3]
        a, b = _at(t, np.int64(VIEWS), i0, i1, i2), _at(t, VIEWS + VIEW, i0, i1, i2)
        if number == 0:
            number = 1 if t[VIEWS + STRIDES + 3] == 0 else 2 if t[VIEWS + VIEW + STRIDES + 3] == 0 else 0
        return aval[a:a + (1 if number == 1 else n)], aval[b:b + (1 if number == 2 else n)], number
    A = aval[a:a + 1] if number == 1 or read & 1 == 0 else _lines(t, np.int64(VIEWS), aval, scratch[0], first, last)
    return A, aval[b:b + 1] if number == 2 or read & 2 == 0 else _lines(t, VIEWS + VIEW, aval, scratch[1], first,
                                                                          last), number


@jit
def _at(t, f, i0, i1, i2):
    """The first element of view f's line at place (i0, i1, i2) of row t's space."""
    return t[f + BASE] + i0 * t[f + STRIDES] + i1 * t[f + STRIDES + 1] + i2 * t[f + STRIDES + 2]


LONG = 256  # elements a line from which a LINED row runs a line at a time, its views read in place, where at most one
# is one number a line (conv1d's W[:, j] * x[:, :, j:j + m], lines of 1,018, was a block's gathers: a fill of the
# number, a copy of the line; a row forward 0.122 -> 0.041 ms CPU, back 0.223 -> 0.131 with _contiguous's sums; s22's
# notes, rev_rows.py)


@jit
def _blocks(t, scratch):
    """The lines of LINED row t and how many a block holds: as many as scratch does, at least one; one for lines of
    LONG but where both views are one number a line (_operands)."""
    m, n = t[SHAPE] * t[SHAPE + 1] * t[SHAPE + 2], t[SHAPE + 3]
    if n >= LONG and (t[VIEWS + STRIDES + 3] != 0 or t[VIEWS + VIEW + STRIDES + 3] != 0):
        return m, 1
    return m, max(1, scratch.shape[1] // n)


@jit
def _lined(t, aval, scratch, frame):
    """LINED row t's values: op of its views, a block of lines at a time."""
    n, out, number, (m, lines) = t[SHAPE + 3], t[OUT], _number(t), _blocks(t, scratch)
    for first in range(0, m, lines):
        last = min(m, first + lines)
        A, B, read = _operands(t, aval, scratch, number, first, last, np.int64(3))
        values(t[OP], A, B, aval[out + first * n:out + last * n], (last - first) * n, read, frame)


@jit
def _lined_send(t, q, aval, aadj, stamp, gen, keep, scratch):
    """The adjoints of LINED row t's view q += g times its partial, by the stamp rule, a block of lines at a time:
    in place where the view is laid out as the output, else into its sum back (each product in c, 0.0 + it; a
    line's to one number: 0.0 + their pairwise sum, as _summed adds them), then added to the view's adjoints."""
    f, n, out, number, (m, lines) = VIEWS + VIEW * q, t[SHAPE + 3], t[OUT], _number(t), _blocks(t, scratch)
    v = _valued(t, np.empty(WIDTH, np.int64))
    _prepare(t, f, aadj, stamp, gen, keep)
    c, total, same, (kept, held, _, _) = scratch[2], scratch[3], _same(t, f), _kept(t, f)
    frame = np.empty(FRAME, np.intp)  # (sends': a row's; no E: ops.PAIRED's rows are not LINED)
    _room(total, 0 if same else held)
    total[:0 if same else held] = 0.0
    for first in range(0, m, lines):
        last, size = min(m, first + lines), (min(m, first + lines) - first) * n
        A, B, read = _operands(v, aval, scratch, number, first, last, READS[t[OP], q])
        y, g = aval[v[OUT] + first * n:v[OUT] + last * n], aadj[out + first * n:out + last * n]
        if same:
            sends(t[OP], q, A, B, y, g, aadj[t[f + BASE] + first * n:t[f + BASE] + last * n], size, read, False,
                  frame, c[:0])
            continue
        _room(c, size)
        sends(t[OP], q, A, B, y, g, c, size, read, True, frame, c[:0])
        one = t[f + STRIDES + 3] == 0  # one number a line: the lines' sums first, line i's to c[i] (_sums reads a
        if one:  # line before it writes there; total += 0.0 + s is total += s, total never being -0.0)
            _sums(c, np.int64(0), last - first, n, c, np.int64(0))
        (i0, i1, i2), line = _line(t, first), first
        while line < last:  # a run of lines adding into the same elements (one number a line: a run of one)
            k, run = i0 * kept[0] + i1 * kept[1] + i2 * kept[2], 1
            if one:
                total[k] += c[line - first]
            else:
                run = min(last - line, _run(t, kept, i0, i1, i2))
                _columns(c, (line - first) * n, run, n, total, k)
            (i0, i1, i2), line = _next(t, i0, i1, i2, run), line + run
    if not same:
        _back(t, f, aadj, total, kept)

'''
