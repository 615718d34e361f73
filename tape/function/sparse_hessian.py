"""Sparse Hessians: the pattern of a scalar Function's Hessian, a star coloring of its inputs, and
the Hessian from one Hessian-vector product per color, as a symmetric ``scipy.sparse`` CSR matrix.

The pattern (kernels/hessian_sparsity.py) is structural like the Jacobian's: the forward index
sets of the records, a reverse pass marking what the output depends on, and the pairs that each
such record's nonzero second partials (by the op table) make. A star coloring (adjacent inputs
differ, every path on four inputs has three colors) lets every entry be read directly from the
compressed products: H[i, j] is (H v_c(j))[i] when j is i's only neighbor of color c(j). Where
that holds from both sides (always on the diagonal) the entry is the dense F.hessian's
symmetrized 0.5 (H[i, j] + H[j, i]) of the same sweeps, bit for bit; elsewhere it is the one
side's product, equal to the dense one up to the rounding of that average. On a tape with array
records the products are the Jacobian of F's gradient tape (F.grad_function, made once and kept)
times the colors' seeds, all colors in one vector-mode sweep (tape/sweeps/vectors.py): equal to
F.hessian's to rounding, as that tape sums in its own order (one forward-over-reverse sweep per
color where a record has no adjoint as records). Pattern and coloring are made once per recorded
program and kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tape.function import arguments, array_sparsity, derivatives
from tape.function.array_sparsity import scipy_sparse
from tape.function.sparse_jacobian import ORDERS, input_columns
from tape.kernels import hessian_sparsity as _kernels
from tape.kernels.hessian_sparsity import SECOND_AA, SECOND_AB, SECOND_BB, reached
from tape.kernels.sparsity import DEPENDS_A, DEPENDS_B, index_sets
from tape.kernels.twins import Twin
from tape.sweeps import vectors

if TYPE_CHECKING:
    from tape.function.function import Function

# a small tape's first pattern, coloring and sparse Hessian run these kernels' twins while they are not compiled
recover = Twin(_kernels.recover, globals())
star_coloring = Twin(_kernels.star_coloring, globals())


def hessian_pattern_arrays(op: np.ndarray, in0: np.ndarray, in1: np.ndarray, input_rows: np.ndarray,
                           output: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the symmetric n x n pattern of the Hessian of record ``output`` of a
    tape of scalar records (n: its inputs), each row's columns sorted."""
    column, top = input_columns(op, input_rows, np.array([output], np.int64))
    live, wanted = reached(op, in0, in1, DEPENDS_A, DEPENDS_B, SECOND_AA, SECOND_AB, SECOND_BB, top)
    start, size, pool = index_sets(op, in0, in1, DEPENDS_A, DEPENDS_B, column, top, wanted)
    union = array_sparsity.Union(len(input_rows))
    union.add(array_sparsity.scalar_pairs(len(input_rows), op, in0, in1, live, start, size, pool))
    return union.csr()


def symmetric_coloring(n: int, indptr: np.ndarray, indices: np.ndarray, order: str = "natural") -> np.ndarray:
    """A star coloring of the symmetric pattern's graph (int64 colors from 0; "largest_first":
    inputs with the most entries first)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if order == "natural":
        sequence = np.arange(n, dtype=np.int64)
    else:
        sequence = np.argsort(-np.diff(indptr), kind="stable").astype(np.int64)
    return star_coloring(n, indptr, indices, sequence, np.full(n, -1, np.int64), np.full(n + 1, -1, np.int64))


def hessian_structure(F: Function) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, colors) of the current records' Hessian, made at the first call and kept
    with them (a retrace installs new records, and the next call makes them again)."""
    if F.n_outputs != 1:
        raise ValueError(f"a Hessian needs one output, this Function has {F.n_outputs}")
    kept = F.__dict__.get("_hessian_sparsity")
    if kept is None or kept[0] is not F._op:
        output = int(F._output_rows[0])
        indptr, indices = (array_sparsity.hessian_pattern(F, [(output, np.ones(1, np.bool_))]) if F._plans else
                           hessian_pattern_arrays(F._op, F._in0, F._in1, F._input_rows, output))
        colors = _colors(F, indptr, indices)
        kept = F._hessian_sparsity = (F._op, indptr, indices, colors)
    return kept[1], kept[2], kept[3]


def _colors(F: Function, indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """A star coloring of the pattern; each input its own color where the coloring's steps (each input's
    neighbours' rows walked: the squares of the rows' lengths) pass what a sweep per input costs (records and array
    elements, each): a dense pattern's coloring cost more than it could save (mlp2's 2,368 inputs, every pair
    nonzero: 36 s of coloring for a 2.7 s dense Hessian)."""
    n, rows = F.n_inputs, np.diff(indptr)
    if int((rows * rows).sum()) > n * (len(F._op) + F._aval.size):
        return np.arange(n, dtype=np.int64)
    return symmetric_coloring(n, indptr, indices)


def hessian_sparsity(F: Function) -> Any:
    """F.hessian_sparsity: what Function.hessian_sparsity says (tape/function/function.py)."""
    indptr, indices, _ = hessian_structure(F)
    return scipy_sparse().csr_matrix((np.ones(len(indices)), indices.copy(), indptr.copy()),
                                      shape=(F.n_inputs, F.n_inputs))


def hessian_colors(F: Function) -> np.ndarray:
    """F.hessian_colors: what Function.hessian_colors says (tape/function/function.py)."""
    return hessian_structure(F)[2].copy()


def gradient_tape(F: Function) -> Function | None:
    """F's gradient as a Function (F.grad_function), made at the first call and kept with the records; None
    where a record has no adjoint as records (the Hessian then takes one forward-over-reverse sweep per color)."""
    kept = F.__dict__.get("_gradient_tape")
    if kept is None or kept[0] is not F._op:
        try:
            G = F.grad_function()
        except NotImplementedError:
            G = None
        kept = F.__dict__["_gradient_tape"] = (F._op, G)
    return kept[1]


def sparse_hessian(F: Function, x: Any, params: Any = None) -> Any:
    """F.sparse_hessian: what Function.sparse_hessian says (tape/function/function.py)."""
    point = arguments.prepare(F, x, params)
    if F.n_outputs != 1:
        raise ValueError(f"a Hessian needs one output, this Function has {F.n_outputs}")
    derivatives.at(F, point, second=not F._plans)  # first: a retrace here changes the records, and so the pattern
    indptr, indices, colors = hessian_structure(F)
    n, k = F.n_inputs, int(colors.max()) + 1 if len(colors) else 0
    seeds = np.zeros((n, k))
    seeds[np.arange(n), colors] = 1.0
    G = gradient_tape(F) if F._plans else None
    if G is not None:  # H S = the gradient's Jacobian times S: vector sweeps of G
        derivatives.at(G, arguments.prepare(G, x, params))
        compressed = vectors.jacobian_times(G, np.ascontiguousarray(seeds.T), keep=True).T
    elif F._plans:
        derivatives.at(F, point, second=True)
        compressed = np.stack([derivatives.array_hvp(F, np.ascontiguousarray(seeds[:, q])) for q in range(k)], axis=1)
    else:
        compressed = derivatives.hessian_columns(F, seeds)
    data = np.empty(len(indices))
    failed = recover(indptr, indices, colors, compressed.reshape(n, k), data, np.zeros(k + 1, np.int64),
                     np.empty(len(indices), np.bool_))
    assert failed < 0, f"entry {failed} of the Hessian's pattern is not direct: not a star coloring"
    return scipy_sparse().csr_matrix((data, indices.copy(), indptr.copy()), shape=(n, n))

