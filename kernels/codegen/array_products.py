"""The array driver's matmuls (kernels/codegen/array_driver.py writes them into ``kernels/_array_driver.py``): the
product and both products back by the CBLAS routine np.matmul calls for the shapes and strides (NumPy's own OpenBLAS:
kernels/blas.py), or its own loop, with their arguments."""

PRODUCTS = '''@jit
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
    _product(X, x, xm, xn, Y, y, yn, yp, C, np.int64(0), m, n, p)
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
            _checked(aadj, out, m, np.int64(1), aval, t[VBASE + 1], t[b + 1], t[b], P, n, m, k, check)
        else:
            _checked(aval, t[VBASE], t[a + 1], t[a], aadj, out, m, np.int64(1), P, k, n, m, check)
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

'''
