"""Sparse Hessians: colors, time against the dense Hessian and one Hessian-vector product, pattern
and coloring cost per record.

1. Banded problem f = sum (x_{i+1} - x_i^2)^2 (tridiagonal Hessian), n = 10^3 and 10^4: colors;
   F.sparse_hessian(x) (pattern and coloring kept from the first call) against the dense
   F.hessian(x) (one hvp per input) and against one F.hvp(x, v). At n = 10^4 the dense Hessian
   (800 MB, 10^4 sweeps) is not run: its time is the median time of 256 of its columns
   (derivatives.hessian_columns, the sweeps F.hessian runs, at the point the other variants leave the
   Function at) times n / 256, marked "est." (without its one pass of values and second partials).
2. Arrow problem f = sum_i sin(x_0 + x_i) + x_i^2, n = 10^4 (2 colors: the hub, then the leaves).
3. Pattern (index sets, reverse reach, pairs) and star coloring of the banded problem at
   n = 10^4, 10^5, 10^6: ns per record.

Interleaved medians: each round times every variant once, in turn, so drift hits all alike.

    python bench/bench_sparse_hessian.py [rounds]
"""

import sys

import numpy as np

import tape
from tape.bench.sparse import banded
from tape.bench.timing import medians as interleaved
from tape.bench.timing import per_record
from tape.function import derivatives
from tape.function.sparse_hessian import hessian_pattern_arrays, symmetric_coloring


def arrow(x):
    return sum(tape.sin(x[0] + x[i]) + x[i] * x[i] for i in range(1, len(x)))


def show(medians, estimated=()):
    for name, seconds in medians.items():
        print(f"  {name:52s} {seconds * 1e3:10.3f} ms{' (est.)' if name in estimated else ''}")


def against_dense(name, f, n, rounds):
    x = np.random.default_rng(0).uniform(-1, 1, n)
    F = tape.trace(f, [0.0] * n)
    v = np.ones(n)
    S = F.sparse_hessian(x)
    variants = {"F.sparse_hessian(x)": lambda: F.sparse_hessian(x), "F.hvp(x, v), one": lambda: F.hvp(x, v)}
    columns = 256
    if n <= 1000:
        assert np.allclose(S.toarray(), F.hessian(x), rtol=1e-13, atol=1e-13)
        variants["F.hessian(x), dense"] = lambda: F.hessian(x)
    else:
        eye = np.eye(n)[:, :columns]
        variants[f"F.hessian(x), dense: {columns} columns x n / {columns}"] = (
            lambda: derivatives.hessian_columns(F, eye))
    medians = interleaved(variants, rounds)
    dense = list(medians)[-1]
    if n > 1000:
        medians[dense] *= n / columns
    print(f"{name}, n = {n}: {len(F)} records, {F.hessian_colors().max() + 1} colors, {S.nnz} nonzeros")
    show(medians, estimated=(dense,) if n > 1000 else ())
    sparse, hvp, full = medians.values()
    print(f"  dense / sparse: {full / sparse:.0f}x; sparse / one hvp: {sparse / hvp:.1f}x")


def structure(rounds):
    print("pattern and star coloring of the banded problem (medians; ns per record)")
    cases = {}
    for n in (10**4, 10**5, 10**6):
        F = tape.trace(banded, [0.0] * n)
        args = (F._op, F._in0, F._in1, F._input_rows, int(F._output_rows[0]))
        cases[len(F)] = (args, n, *hessian_pattern_arrays(*args))
    per_record(cases, {"pattern": lambda c: hessian_pattern_arrays(*c[0]),
                       "color": lambda c: symmetric_coloring(*c[1:])}, rounds)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    against_dense("banded", banded, 10**3, rounds)
    against_dense("banded", banded, 10**4, max(3, rounds // 3))
    against_dense("arrow", arrow, 10**4, max(3, rounds // 3))
    structure(max(3, rounds // 3))


if __name__ == "__main__":
    main()
