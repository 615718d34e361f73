"""The array driver's row kinds' kernels (kernels/codegen/array_driver.py writes them into
``kernels/_array_driver.py``): each kind's forward and reverse as a C function that kernels/array_kernels.py compiles
the first time a table holds a row of the kind, called by the driver at its slot with the row's data, the arenas,
scratch and their sizes."""

KINDS = '''
def forward_sum(tp, ap, sp, fp, na, rows, cols):
    """A SUM row's values."""
    _sum_forward(carray(tp, WIDTH), carray(ap, na))


def forward_matmul(tp, ap, sp, fp, na, rows, cols):
    """A MATMUL row's values."""
    t, aval = carray(tp, WIDTH), carray(ap, na)
    a, b = VIEWS + STRIDES, VIEWS + VIEW + STRIDES
    _product(aval, t[VIEWS + BASE], t[a], t[a + 1], aval, t[VIEWS + VIEW + BASE], t[b], t[b + 1], aval, t[OUT],
             t[SHAPE], t[SHAPE + 1], t[SHAPE + 2])


def forward_copy(tp, ap, sp, fp, na, rows, cols):
    """A COPY or GATHER row's values."""
    _copy(carray(tp, WIDTH), carray(ap, na), np.bool_(False), np.bool_(False))


def forward_logsumexp(tp, ap, sp, fp, na, rows, cols):
    """A LOGSUMEXP row's values."""
    aval = carray(ap, na)
    _logsumexp(carray(tp, WIDTH), aval, aval, carray(sp, (rows, cols)), np.bool_(False))


def forward_lined(tp, ap, sp, fp, na, rows, cols):
    """A LINED row's values (its op's kernel by values)."""
    _lined(carray(tp, WIDTH), carray(ap, na), carray(sp, (rows, cols)), carray(fp, 5))


def forward_select(tp, ap, sp, fp, na, rows, cols):
    """A SELECT row's values."""
    aval = carray(ap, na)
    _select(carray(tp, WIDTH), aval, aval, np.bool_(False), np.bool_(False), aval[:0])


def reverse_sum(tp, ap, dp, stp, sp, na, nd, ns, gen, keep, check, rows, cols):
    """A SUM row's sends."""
    t, aadj = carray(tp, WIDTH), carray(dp, nd)
    if t[VIEWS + WANT] == 0:
        return 0
    _prepare(t, np.int64(VIEWS), aadj, carray(stp, ns), gen, keep)
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


def reverse_matmul(tp, ap, dp, stp, sp, na, nd, ns, gen, keep, check, rows, cols):
    """A MATMUL row's sends (check: kernels.array_rule.times)."""
    _matmul_reverse(carray(tp, WIDTH), carray(ap, na), carray(dp, nd), carray(stp, ns), gen, keep,
                    carray(sp, (rows, cols))[0], check != 0)


def reverse_copy(tp, ap, dp, stp, sp, na, nd, ns, gen, keep, check, rows, cols):
    """A COPY or GATHER row's sends: a stale region zeroed, then added to (0.0 + c: the step's c + 0.0)."""
    t, aadj = carray(tp, WIDTH), carray(dp, nd)
    if t[VIEWS + WANT] != 0:
        _prepare(t, np.int64(VIEWS), aadj, carray(stp, ns), gen, keep)
        _copy(t, aadj, np.bool_(True), t[KIND] == GATHER)


def reverse_logsumexp(tp, ap, dp, stp, sp, na, nd, ns, gen, keep, check, rows, cols):
    """A LOGSUMEXP row's sends."""
    t, aadj = carray(tp, WIDTH), carray(dp, nd)
    if t[VIEWS + WANT] != 0:
        _prepare(t, np.int64(VIEWS), aadj, carray(stp, ns), gen, keep)
        _logsumexp(t, carray(ap, na), aadj, carray(sp, (rows, cols)), np.bool_(True))


def reverse_lined(tp, ap, dp, stp, sp, na, nd, ns, gen, keep, check, rows, cols):
    """A LINED row's sends (its op's kernel by sends)."""
    t, aval, aadj, stamp = carray(tp, WIDTH), carray(ap, na), carray(dp, nd), carray(stp, ns)
    for q in range(2):
        if t[VIEWS + VIEW * q + WANT] != 0:
            _lined_send(t, q, aval, aadj, stamp, gen, keep, carray(sp, (rows, cols)))


def reverse_select(tp, ap, dp, stp, sp, na, nd, ns, gen, keep, check, rows, cols):
    """A SELECT row's sends to its branch (by the stamp rule and sums back of the driver's _send)."""
    t, aval, aadj, stamp = carray(tp, WIDTH), carray(ap, na), carray(dp, nd), carray(stp, ns)
    f, n, out = VIEWS + VIEW, t[SIZE], t[OUT]
    base = t[f + BASE]
    alone = base == t[f + REGION] and n == t[f + REGION_SIZE] and (base >= out + n or out >= base + n)
    if t[f + WANT] == 0:
        return 0
    if _same(t, f) and alone:
        _select(t, aval, aadj, np.bool_(True), _stale(t, f, stamp, gen, keep), aval[:0])
    elif _same(t, f):
        _prepare(t, f, aadj, stamp, gen, keep)
        _select(t, aval, aadj, np.bool_(True), np.bool_(False), aval[:0])
    else:
        scratch = carray(sp, (rows, cols))
        c, total = scratch[2], scratch[3]
        _room(c, n)
        _room(total, n)
        _prepare(t, f, aadj, stamp, gen, keep)
        _select(t, aval, aadj, np.bool_(True), np.bool_(False), c[:n])
        _call(_address(SUMMED), (t, np.int64(1), aadj, c, total, aadj.size, n))
'''  # each row kind's kernels (C functions: kernels/array_kernels.py), forward (its row's data, the
# arena, scratch, a NumPy loop's frame, their sizes) and reverse (its row's data, the arenas, the stamps, scratch,
# their sizes, the pass)


def caught(text: str) -> list[str]:
    """Each C function of text returning 0, or 1 where its body raised (Numba's C functions cannot raise: a scratch
    row too short, which the driver then raises): the body a jitted function of its own (``_`` before its name), the
    C function's try around the one call of it (a try around the body, each call in it a place to raise: Numba's
    block analyses took 4.0 of reverse_sum's 4.4 s compile; 0.7 s so, the MLP's 16 table kernels 17.3 -> 15.1 s)."""
    lines = []
    for function in text.strip("\n").split("\n\n\n"):
        head, doc, *body = function.split("\n")
        name, args = head.removeprefix("def ").split("(", 1)
        lines += ["", "", "@jit", f"def _{name}({args}", doc, *body, "    return 0", "", "", head, doc, "    try:",
                  f"        return _{name}({args.removesuffix('):')})",
                  "    except Exception:  # noqa: BLE001  # (a scratch row too short)", "        return 1"]
    return lines
