"""Sparse Hessians: the pattern of a scalar Function's Hessian, a star coloring of its inputs, and
the Hessian from one Hessian-vector product per color, as a symmetric ``scipy.sparse`` CSR matrix.

The pattern (kernels/hessian_sparsity.py) is structural like the Jacobian's: the forward index
sets of the records, a reverse pass marking what the output depends on, and the pairs that each
such record's nonzero second partials (by the op table) make. A star coloring (adjacent inputs
differ, every path on four inputs has three colors) lets every entry be read directly from the
compressed products: H[i, j] is (H v_c(j))[i] when j is i's only neighbor of color c(j). Where
that holds from both sides (always on the diagonal) the entry is the dense F.hessian's
symmetrized 0.5 (H[i, j] + H[j, i]) of the same sweeps, bit for bit; elsewhere it is the one
side's product, equal to the dense one up to the rounding of that average. Pattern and coloring
are made once per recorded program and kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.function.replay import one_call_at_a_time
from tape.function.sparse_jacobian import ORDERS, Sparse, _scipy_sparse, input_columns
from tape.kernels.hessian_sparsity import (
    SECOND_AA,
    SECOND_AB,
    SECOND_BB,
    hessian_pairs,
    pairs_to_csr,
    reached,
    recover,
    star_coloring,
)
from tape.kernels.sparsity import DEPENDS_A, DEPENDS_B, index_sets


def hessian_pattern_arrays(op: np.ndarray, in0: np.ndarray, in1: np.ndarray, input_rows: np.ndarray,
                           sizes: np.ndarray, output: int, param_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the symmetric n x n pattern of the Hessian of record ``output``
    (n: the inputs' numbers, flat), each row's columns sorted."""
    column, top = input_columns(op, in0, in1, input_rows, sizes, np.array([output], np.int64), param_rows,
                                "hessian_sparsity")
    live, wanted = reached(op, in0, in1, DEPENDS_A, DEPENDS_B, SECOND_AA, SECOND_AB, SECOND_BB, top)
    start, size, pool = index_sets(op, in0, in1, DEPENDS_A, DEPENDS_B, column, top, wanted)
    rows, cols = hessian_pairs(op, in0, in1, SECOND_AA, SECOND_AB, SECOND_BB, live, column, start, size, pool)
    return pairs_to_csr(int(sizes.sum()), rows, cols)


def symmetric_coloring(n: int, indptr: np.ndarray, indices: np.ndarray, order: str = "natural") -> np.ndarray:
    """A star coloring of the symmetric pattern's graph (int64 colors from 0; "largest_first":
    inputs with the most entries first)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if order == "natural":
        sequence = np.arange(n, dtype=np.int64)
    else:
        sequence = np.argsort(-np.diff(indptr), kind="stable").astype(np.int64)
    return star_coloring(n, indptr, indices, sequence)


class SparseHessian(Sparse):
    """hessian_sparsity, hessian_colors and sparse_hessian of a Function (see tape.Function)."""

    def _hessian_structure(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, indices, colors) of the current records' Hessian, made at the first call and kept
        with them (a retrace installs new records, and the next call makes them again)."""
        if self.n_outputs != 1:
            raise ValueError(f"a Hessian needs one output, this Function has {self.n_outputs}")
        kept = self.__dict__.get("_hessian_sparsity")
        if kept is None or kept[0] is not self._op:
            indptr, indices = hessian_pattern_arrays(self._op, self._in0, self._in1, self._input_rows,
                                                     self._input_sizes(), int(self._output_rows[0]),
                                                     self._param_rows)
            colors = symmetric_coloring(self.n_inputs, indptr, indices)
            kept = self._hessian_sparsity = (self._op, indptr, indices, colors)
        return kept[1], kept[2], kept[3]

    @one_call_at_a_time
    def hessian_sparsity(self) -> Any:
        """The Hessian's structural pattern as a symmetric scipy.sparse CSR matrix of ones,
        (n_inputs, n_inputs) in flat numbering, for a scalar output: entry (i, j) when some record the
        output depends on has a second partial (not zero by the op table) in inputs that depend on i
        and on j. It holds every nonzero of F.hessian at any point that takes the recorded branches.
        Scalar records only (TypeError naming the first array record)."""
        indptr, indices, _ = self._hessian_structure()
        return _scipy_sparse().csr_matrix((np.ones(len(indices)), indices.copy(), indptr.copy()),
                                          shape=(self.n_inputs, self.n_inputs))

    @one_call_at_a_time
    def hessian_colors(self) -> np.ndarray:
        """A star coloring of the inputs (int64, from 0): inputs of one color share no Hessian entry,
        and every path of four inputs through the pattern has three colors; sparse_hessian takes one
        Hessian-vector product per color."""
        return self._hessian_structure()[2].copy()

    @one_call_at_a_time
    def sparse_hessian(self, x: Any, params: Any = None) -> Any:
        """The Hessian at x as a symmetric scipy.sparse CSR matrix (n_inputs, n_inputs), flat numbering,
        with exactly hessian_sparsity()'s entries, from one Hessian-vector product per color (star
        coloring, direct recovery). Entries read from both sides are F.hessian's bit for bit, the
        others equal to rounding (see tape/function/sparse_hessian.py)."""
        point = self._prepare(x, params)
        if self.n_outputs != 1:
            raise ValueError(f"a Hessian needs one output, this Function has {self.n_outputs}")
        self._at(point, second=True)  # first: a retrace here changes the records, and so the pattern
        indptr, indices, colors = self._hessian_structure()
        n, k = self.n_inputs, int(colors.max()) + 1 if len(colors) else 0
        seeds = np.zeros((n, k))
        seeds[np.arange(n), colors] = 1.0
        if self._plans:
            compressed = np.stack([self._array_hvp(np.ascontiguousarray(seeds[:, q])) for q in range(k)], axis=1)
        else:
            compressed = self._hessian_columns(seeds)
        data = np.empty(len(indices))
        failed = recover(indptr, indices, colors, compressed.reshape(n, k), data)
        assert failed < 0, f"entry {failed} of the Hessian's pattern is not direct: not a star coloring"
        return _scipy_sparse().csr_matrix((data, indices.copy(), indptr.copy()), shape=(n, n))
