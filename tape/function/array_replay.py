"""Replay of Functions that hold array records: the sweeps of tape/sweeps/driver.py over a Function's copies.

A Function without array records replays in one Numba call (tape/function/replay.py);
one with them sets its inputs, runs tape/sweeps/driver.py's forward and reverse over
its own arrays and arenas (allocated once, reused by every call) and
re-evaluates the checked comparisons afterwards. Inputs and outputs are
pieces: a scalar record is one number, an array record all its elements, in
the order given.
"""

from __future__ import annotations

import numpy as np

from tape.kernels.ops import ARRAY_BASE
from tape.sweeps import driver, fusion, tangents


class ArrayReplay:
    """The array-record half of a Function's replay (mixed into tape.function.replay.Replay)."""

    _op: np.ndarray
    _val: np.ndarray
    _adj: np.ndarray
    _stamp: np.ndarray
    _aval: np.ndarray
    _aadj: np.ndarray
    _plans: list[driver.Plan]
    _input_rows: np.ndarray
    _param_rows: np.ndarray
    _output_rows: np.ndarray
    _check_rows: np.ndarray
    _check_expected: np.ndarray

    def _pieces(self, rows: np.ndarray) -> list[tuple[int, int, int]]:
        """(row, start, stop) of each record in the flat vector of rows' numbers."""
        pieces, start = [], 0
        for row in rows.tolist():
            size = self._plans[int(self._in0[row])].size if self._op[row] >= ARRAY_BASE else 1  # type: ignore[attr-defined]
            pieces.append((row, start, start + size))
            start += size
        return pieces

    def _slot(self, row: int, scalars: np.ndarray, arena: np.ndarray) -> np.ndarray:
        """Record row's numbers, flat and writable: its region of an arena, or its entry of a scalar column."""
        if self._op[row] >= ARRAY_BASE:
            return driver.region(arena, self._plans[int(self._in0[row])]).reshape(-1)  # type: ignore[attr-defined]
        return scalars[row:row + 1]

    def _place(self, pieces: list[tuple[int, int, int]], numbers: np.ndarray) -> None:
        """Write numbers into the records of pieces (leaves: scalar records or array inputs)."""
        for row, start, stop in pieces:
            self._slot(row, self._val, self._aval)[...] = numbers[start:stop]

    def _sweep_forward(self, point: np.ndarray, fused: bool = True) -> int:
        """Set the inputs, recompute every record (fused runs leave the values of members nothing
        else reads unwritten: ``fused=False`` for the derivatives that read them); the first failed
        check, or -1."""
        self._place(self._in_pieces, point)
        driver.forward(self, 0, len(self._op), self._runs_first if fused and not self._checking else None)  # type: ignore[attr-defined]
        if len(self._check_rows):
            failed = np.flatnonzero((self._val[self._check_rows] != 0.0) != self._check_expected)
            if len(failed):
                return int(failed[0])
        return -1

    def _collect(self, pieces: list[tuple[int, int, int]], scalars: np.ndarray, arena: np.ndarray,
                 gen: int | None = None) -> np.ndarray:
        """The numbers of pieces from a scalar column and an arena (with gen: zero where the stamp is not gen)."""
        out = np.empty(pieces[-1][2] if pieces else 0)
        for row, start, stop in pieces:
            if gen is None or self._stamp[row] == gen:
                out[start:stop] = self._slot(row, scalars, arena)
            else:
                out[start:stop] = 0.0
        return out

    def _param_values(self) -> np.ndarray:
        """The params as they are now, one flat vector."""
        return self._collect(self._param_pieces, self._val, self._aval)

    def _outputs(self) -> np.ndarray:
        return self._collect(self._out_pieces, self._val, self._aval)

    def _sweep_reverse(self, weights: np.ndarray, check: bool = False) -> np.ndarray:
        """The gradient for output weights, after _sweep_forward (a new generation per call).

        The products go unchecked for 0 * inf (tape/sweeps/driver.py's reverse): a NaN made so cannot vanish
        on its way to an input except where the checked sweep sends 0 as well, so a gradient without
        NaN is the checked sweep's, and one with a NaN is swept again, checked."""
        self._gen += 1
        gen = self._gen
        for row, start, stop in self._out_pieces:
            driver.seed(self, row, weights[start:stop] if self._op[row] >= ARRAY_BASE else weights[start], gen, gen)
        unchecked = driver.reverse(self, int(self._output_rows.max()), gen, gen, check,
                                   None if self._checking else self._runs_last)  # type: ignore[attr-defined]
        grad = self._collect(self._in_pieces, self._adj, self._aadj, gen)
        if not check and unchecked and np.isnan(grad).any():  # (a sum would also be NaN for inf + -inf)
            return self._sweep_reverse(weights, check=True)
        return grad

    def _array_tangents(self, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(scalar tangents (n + 1, 1), tangent arena) for an input direction, after _at."""
        dot, adot = np.zeros((len(self._op) + 1, 1)), np.zeros(len(self._aval))
        for row, start, stop in self._in_pieces:
            self._slot(row, dot[:, 0], adot)[...] = direction[start:stop]
        tangents.tangents(self, dot, adot)
        return dot, adot

    def _install_arrays(self, plans: list[driver.Plan], arena: np.ndarray) -> None:
        self._plans = plans
        self._views: dict = {}  # see tape.sweeps.driver.view
        self._schedules: dict = {}
        self._aval = arena.copy()
        self._aadj = np.zeros(len(arena))
        self._stamp = np.zeros(len(self._op) if plans else 0, np.uint32)  # the array sweeps' generations
        self._gen = 0
        self._in_pieces = self._pieces(self._input_rows)
        self._param_pieces = self._pieces(self._param_rows)
        self._out_pieces = self._pieces(self._output_rows)
        self._n_in = self._in_pieces[-1][2] if self._in_pieces else 0
        self._n_par = self._param_pieces[-1][2] if self._param_pieces else 0
        self._n_out = self._out_pieces[-1][2] if self._out_pieces else 0
        roots = (self._input_rows, self._param_rows, self._check_rows)
        runs = fusion.find(self, set(self._output_rows.tolist()), roots) if plans else []
        self._runs_first = {run.rows[0]: run for run in runs}
        self._runs_last = {run.rows[-1]: run for run in runs}
