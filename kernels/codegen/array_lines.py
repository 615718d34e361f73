"""The array driver's kernels of reductions along lines (kernels/codegen/array_driver.py writes them into
``kernels/_array_driver.py``, before the sweeps that call them): a logsumexp row's lines, reduced along axis 3 of its
space (adjacent elements), one line per element of its output, as kernels.array_kinds.LogSumExp makes its numbers."""

LINES = '''@jit
def _top(aval, at, n):
    """The largest of n elements from aval[at] on (NaNs passed over: a line with one gives NaN whatever its shift),
    0.0 where it is not finite: LogSumExp.forward's shift, np.where(np.isfinite(top), top, 0.0) (exact in any order)."""
    top = -np.inf
    for j in range(n):
        x = aval[np.uint64(at + j)]
        top = x if x > top else top
    return top if np.isfinite(top) else 0.0


@jit
def _differences(t, aval, base, first, last, E, centre):
    """E = each element of lines first..last of logsumexp row t (its input's values from base) less its line's
    centre (C order), then by NumPy's exp loop: the step's exp(a - top) or exp(a - y), a block of lines at a time (the
    loop's numbers are its element's alone)."""
    n, s2 = t[SHAPE + 3], t[VIEWS + STRIDES + 2]
    for i in range(first, last):
        at, e, c = base + i * s2, (i - first) * n, centre[i]
        for j in range(n):
            E[np.uint64(e + j)] = aval[np.uint64(at + j)] - c  # (unsigned: a loop LLVM vectorizes)
    frame = np.empty(5, np.intp)
    at = _framed(frame, E, E, (last - first) * n)
    numpy_exp(at, at + 16, at + 24, 0)


@jit
def _logsumexp(t, aval, aadj, scratch, back):
    """Row t's y = log Σ exp(a - top) + top along each line, as kernels.array_kinds.LogSumExp.forward: each line's
    sum as np.sum adds it (0.0 + its pairwise sum), their logs by NumPy's loop; back: a' += g exp(a - y), nothing
    where a factor is 0 (its vjp's product)."""
    m, n, base, out = t[SHAPE + 2], t[SHAPE + 3], t[VIEWS + BASE], t[OUT]
    s2, o2 = t[VIEWS + STRIDES + 2], t[OUT_STRIDES + 2]
    E, S, T = scratch[0], scratch[1], scratch[2]
    _room(E, n)
    _room(S, m)
    _room(T, m)
    values = t[VBASE] if back else base  # (the input's values; back, base and out place adjoints)
    for i in range(m):
        T[i] = aval[t[VOUT] + i * o2] if back else _top(aval, base + i * s2, n)
    lines = len(E) // n
    for first in range(0, m, lines):
        last = min(m, first + lines)
        _differences(t, aval, values, first, last, E, T)
        if not back:
            _sums(E, np.int64(0), last - first, n, S, first)
            continue
        for i in range(first, last):
            e = (i - first) * n
            g, at = aadj[out + i * o2], base + i * s2
            for j in range(n):
                p = E[np.uint64(e + j)]
                aadj[np.uint64(at + j)] += g * p if g != 0.0 and p != 0.0 else 0.0
    if not back:
        frame = np.empty(5, np.intp)
        at = _framed(frame, S, S, m)
        numpy_log(at, at + 16, at + 24, 0)
        for i in range(m):
            aval[out + i * o2] = S[i] + T[i]

'''
