"""Sparse Jacobians: the pattern of a Function's Jacobian, a coloring of its columns, and the
Jacobian from as many forward sweeps as colors, as a ``scipy.sparse`` CSR matrix.

The pattern is structural (kernels/sparsity.py says which ops carry dependence): it holds every
entry that can be nonzero at some point of the recorded branches, and only those that the
records connect. Columns of one color share no row, so one tangent direction seeded with the sum
of their unit vectors gives each of their entries alone (all colors in one vector-mode sweep);
the sweeps' structural-zero rule (a product with a zero factor adds nothing) makes every entry
the same number as F.jacobian's forward mode, bit for bit. Pattern and coloring are made once
per recorded program and kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tape.base.numbers import positive_int
from tape.function import arguments, array_sparsity, derivatives
from tape.function.array_sparsity import scipy_sparse
from tape.kernels import sparsity as _kernels
from tape.kernels.sparsity import DEPENDS_A, DEPENDS_B, index_sets
from tape.kernels.twins import Twin
from tape.sweeps import vectors

if TYPE_CHECKING:
    from tape.function.function import Function

ORDERS = ("natural", "largest_first")
# a small tape's first pattern, coloring and sparse Jacobian run these kernels' twins while they are not compiled
gather_rows, decompress = Twin(_kernels.gather_rows, globals()), Twin(_kernels.decompress, globals())
color_columns = Twin(_kernels.color_columns, globals())


def input_columns(op: np.ndarray, input_rows: np.ndarray, output_rows: np.ndarray) -> tuple[np.ndarray, int]:
    """(column, top) of a tape of scalar records: each record's input column or -1, over records
    [0, top] (top: the last output)."""
    starts = np.full(len(op), -1, np.int64)
    starts[input_rows] = np.arange(len(input_rows))
    top = int(output_rows.max()) if len(output_rows) else -1
    return starts[:top + 1], top


def pattern_arrays(op: np.ndarray, in0: np.ndarray, in1: np.ndarray, input_rows: np.ndarray,
                   output_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the Jacobian's pattern of a tape of scalar records: for each output,
    the inputs (sorted) it depends on through the records."""
    column, top = input_columns(op, input_rows, output_rows)
    if top < 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int32)
    start, size, pool = index_sets(op, in0, in1, DEPENDS_A, DEPENDS_B, column, top, np.ones(top + 1, np.bool_))
    rows = output_rows.astype(np.int64)
    return gather_rows(rows, start, size, pool, *_kernels.rows_room(rows, size))


def coloring(n: int, indptr: np.ndarray, indices: np.ndarray, order: str = "natural") -> np.ndarray:
    """A color per column such that no two columns of one color have an entry in the same row
    (greedy distance-2 coloring, as ColPack's; "largest_first": columns with the most entries first)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    sparse = scipy_sparse()
    m = len(indptr) - 1
    csc = sparse.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(m, n)).tocsc()
    if order == "natural":
        sequence = np.arange(n, dtype=np.int64)
    else:
        sequence = np.argsort(-np.diff(csc.indptr), kind="stable").astype(np.int64)
    return color_columns(n, indptr, indices, csc.indptr.astype(np.int64), csc.indices.astype(np.int64), sequence,
                         np.full(n, -1, np.int64), np.full(n + 1, -1, np.int64))


def structure(F: Function) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, colors) of the current records, made at the first call and kept with
    them (a retrace installs new records, and the next call makes them again)."""
    kept = F.__dict__.get("_sparsity")
    if kept is None or kept[0] is not F._op:
        indptr, indices = (array_sparsity.jacobian_pattern(F) if F._plans else
                           pattern_arrays(F._op, F._in0, F._in1, F._input_rows, F._output_rows))
        colors = coloring(F.n_inputs, indptr, indices)
        kept = F._sparsity = (F._op, indptr, indices, colors)
    return kept[1], kept[2], kept[3]


def jacobian_sparsity(F: Function) -> Any:
    """F.jacobian_sparsity: what Function.jacobian_sparsity says (tape/function/function.py)."""
    indptr, indices, _ = structure(F)
    return scipy_sparse().csr_matrix((np.ones(len(indices)), indices.copy(), indptr.copy()),
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
    kept = F.__dict__.get("_sparse_seeds")
    if kept is None or kept[0] is not indices:  # a row per color, each entry's place in the compressed Jacobian
        directions = np.zeros((k, F.n_inputs))
        directions[colors, np.arange(F.n_inputs)] = 1.0
        places = colors[indices] * F.n_outputs + np.repeat(np.arange(F.n_outputs), np.diff(indptr))
        kept = F.__dict__["_sparse_seeds"] = (indices, directions, places)
    if F._plans:  # vector mode: one array sweep of block colors, (k, outputs)
        data = vectors.jacobian_times(F, kept[1], block, keep=True).reshape(-1)[kept[2]]
    else:
        seeds, data = kept[1].T, np.empty(len(indices))
        for first in range(0, k, block):  # straight from the records' tangents
            dot = derivatives.tangents(F, seeds[:, first:first + block])
            decompress(indptr, indices, colors, first, dot, F._output_rows, data)
    return scipy_sparse().csr_matrix((data, indices.copy(), indptr.copy()), shape=(F.n_outputs, F.n_inputs))

