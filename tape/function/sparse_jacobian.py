"""Sparse Jacobians: the pattern of a Function's Jacobian, a coloring of its columns, and the
Jacobian from as many forward sweeps as colors, as a ``scipy.sparse`` CSR matrix.

The pattern is structural (kernels/sparsity.py says which ops carry dependence): it holds every
entry that can be nonzero at some point of the recorded branches, and only those that the
records connect. Columns of one color share no row, so one tangent sweep seeded with the sum of
their unit vectors gives each of their entries alone; the sweeps' structural-zero rule (a
product with a zero factor adds nothing) makes every entry the same number as F.jacobian's
forward mode, bit for bit. Pattern and coloring are made once per recorded program and kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tape.base.numbers import positive_int
from tape.function import arguments, derivatives
from tape.kernels.array_ops import NAME
from tape.kernels.ops import ARRAY_BASE, ELEM
from tape.kernels.sparsity import DEPENDS_A, DEPENDS_B, color_columns, decompress, gather_rows, index_sets
from tape.records.array_records import SMALL

if TYPE_CHECKING:
    from tape.function.function import Function

ORDERS = ("natural", "largest_first")


def _scipy_sparse() -> Any:
    """scipy.sparse, imported at the first sparse derivative (a dependency; it costs import time)."""
    import scipy.sparse

    return scipy.sparse


def input_columns(op: np.ndarray, in0: np.ndarray, in1: np.ndarray, input_rows: np.ndarray, sizes: np.ndarray,
                  output_rows: np.ndarray, param_rows: np.ndarray,
                  what: str = "jacobian_sparsity") -> tuple[np.ndarray, int]:
    """(column, top): each record's input column (flat numbering) or -1, over records [0, top] (top: the
    last output). sizes: how many numbers each input record holds. Scalar records, and elements of array
    inputs and params (``elem`` records read from them; a param's carry no dependence); any other array
    record is refused (TypeError naming the first, from ``what``)."""
    starts = np.full(len(op), -1, np.int64)
    starts[input_rows] = np.cumsum(sizes) - sizes
    param = np.zeros(len(op), np.bool_)
    param[param_rows] = True
    arrays = np.flatnonzero((op >= ARRAY_BASE) & (starts < 0) & ~param)
    outputs = output_rows.astype(np.int64)
    if len(arrays) or np.any(op[outputs] >= ARRAY_BASE):
        i = int(arrays[0]) if len(arrays) else int(outputs[op[outputs] >= ARRAY_BASE][0])
        raise TypeError(f"{what} takes scalar records and elements of array inputs only: record {i} "
                        f"is an array record ({NAME[op[i]]}){'' if len(arrays) else ' given as an output'}; trace "
                        f"the program with scalar Vars (x0 a list, or arrays under {SMALL} elements)")
    top = int(outputs.max()) if len(outputs) else -1
    column = np.where(op[:top + 1] < ARRAY_BASE, starts[:top + 1], -1)
    elems = np.flatnonzero(op[:top + 1] == ELEM)  # in1: the element's place in its (input) array
    column[elems] = np.where(starts[in0[elems]] >= 0, starts[in0[elems]] + in1[elems], -1)  # params: none
    return column, top


def pattern_arrays(op: np.ndarray, in0: np.ndarray, in1: np.ndarray, input_rows: np.ndarray, sizes: np.ndarray,
                   output_rows: np.ndarray, param_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the Jacobian's pattern: for each output, the inputs (flat numbering,
    sorted) it depends on through the records (see input_columns for what is taken)."""
    column, top = input_columns(op, in0, in1, input_rows, sizes, output_rows, param_rows)
    if top < 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int32)
    start, size, pool = index_sets(op, in0, in1, DEPENDS_A, DEPENDS_B, column, top, np.ones(top + 1, np.bool_))
    return gather_rows(output_rows.astype(np.int64), start, size, pool)


def coloring(n: int, indptr: np.ndarray, indices: np.ndarray, order: str = "natural") -> np.ndarray:
    """A color per column such that no two columns of one color have an entry in the same row
    (greedy distance-2 coloring, as ColPack's; "largest_first": columns with the most entries first)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    sparse = _scipy_sparse()
    m = len(indptr) - 1
    csc = sparse.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(m, n)).tocsc()
    if order == "natural":
        sequence = np.arange(n, dtype=np.int64)
    else:
        sequence = np.argsort(-np.diff(csc.indptr), kind="stable").astype(np.int64)
    return color_columns(n, indptr, indices, csc.indptr.astype(np.int64), csc.indices.astype(np.int64), sequence)


def structure(F: Function) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, colors) of the current records, made at the first call and kept with
    them (a retrace installs new records, and the next call makes them again)."""
    kept = F.__dict__.get("_sparsity")
    if kept is None or kept[0] is not F._op:
        indptr, indices = pattern_arrays(F._op, F._in0, F._in1, F._input_rows, input_sizes(F),
                                         F._output_rows, F._param_rows)
        colors = coloring(F.n_inputs, indptr, indices)
        kept = F._sparsity = (F._op, indptr, indices, colors)
    return kept[1], kept[2], kept[3]


def input_sizes(F: Function) -> np.ndarray:
    """How many numbers each input record holds (1, or an array input's size)."""
    sizes = np.ones(len(F._input_rows), np.int64)
    for k in np.flatnonzero(F._op[F._input_rows] >= ARRAY_BASE).tolist():
        _, start, stop = F._in_pieces[k]
        sizes[k] = stop - start
    return sizes


def jacobian_sparsity(F: Function) -> Any:
    """F.jacobian_sparsity: what Function.jacobian_sparsity says (tape/function/function.py)."""
    indptr, indices, _ = structure(F)
    return _scipy_sparse().csr_matrix((np.ones(len(indices)), indices.copy(), indptr.copy()),
                                      shape=(F.n_outputs, F.n_inputs))


def jacobian_colors(F: Function) -> np.ndarray:
    """F.jacobian_colors: what Function.jacobian_colors says (tape/function/function.py)."""
    return structure(F)[2].copy()


def sparse_jacobian(F: Function, x: Any, params: Any = None, block: int = 16) -> Any:
    """F.sparse_jacobian: what Function.sparse_jacobian says (tape/function/function.py)."""
    block = positive_int(block, "block")
    point = arguments.prepare(F, x, params)
    derivatives.at(F, point)  # first: a retrace here changes the records, and so the pattern
    indptr, indices, colors = structure(F)
    k = int(colors.max()) + 1 if len(colors) else 0
    seeds = np.zeros((F.n_inputs, k))
    seeds[np.arange(F.n_inputs), colors] = 1.0
    data = np.empty(len(indices))
    if F._plans:
        compressed = derivatives.seeded(F, seeds, block)
        data[:] = compressed[np.repeat(np.arange(F.n_outputs), np.diff(indptr)), colors[indices]]
    else:
        for first in range(0, k, block):  # straight from the records' tangents
            dot = derivatives.tangents(F, seeds[:, first:first + block])
            decompress(indptr, indices, colors, first, dot, F._output_rows, data)
    return _scipy_sparse().csr_matrix((data, indices.copy(), indptr.copy()), shape=(F.n_outputs, F.n_inputs))

