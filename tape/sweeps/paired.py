"""Two rows of one record that a stretch (tape/sweeps/stretches.py) reads as two members of its own opcodes: a roll's
two COPY rows (np.roll's two slices joined; forward, stretched.HEAD and ROLL, one range read rotated) and a select's two
SELECT rows (stretched.PICK's codes: the first's value its branch, the second's the select's)."""

from __future__ import annotations

import numpy as np

from tape.kernels import stretched
from tape.kernels._array_driver import (
    BASE,
    COPY,
    ELEMENTWISE,
    KIND,
    NIN,
    OP,
    OUT,
    OUT_STRIDES,
    REC,
    ROW,
    SELECT,
    SHAPE,
    SIZE,
    STRIDES,
    VIEWS,
)

FIRSTS = np.array([stretched.PICK, stretched.PICK - 1])  # a select's first row's opcodes as a member (by taken)
SECONDS = FIRSTS - 2  # its second's


def rolls(t: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The first rows of a forward sweep's rolls (np.roll's two slices joined): two COPY rows of one record and no
    other, each a run of one step in its output and its view, the first the last r elements of the range of n whose
    first n - r elements the second reads, in the output's first r elements (the roll's HEAD and ROLL members)."""
    a, one = np.arange(len(t) - 1), t[:, SIZE] == 1
    run = (t[:, KIND] == COPY) & (t[:, SHAPE:SHAPE + 3] == 1).all(1) & (one | (t[:, OUT_STRIDES + 3] == 1)) & (
        one | (t[:, VIEWS + STRIDES + 3] == 1))
    row = np.concatenate([[-1], t[:, ROW], [-1]])  # (the rows around a pair: other records)
    ok = run[a] & run[a + 1] & (row[a + 1] == row[a + 2]) & (row[a] != row[a + 1]) & (row[a + 3] != row[a + 2])
    ok &= (t[a, VIEWS + REC] == t[a + 1, VIEWS + REC]) & (t[a, OUT] + t[a, SIZE] == t[a + 1, OUT])
    ok &= (t[a, VIEWS + BASE] == t[a + 1, VIEWS + BASE] + t[a + 1, SIZE]) & ~np.isin(a + 1, starts)
    return a[ok]


def rolled(t: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """t with each roll's two rows (heads, the rows after) as a stretch's members: elementwise rows of the roll's
    size n and place (HEAD's OUT), opcodes stretched.HEAD and ROLL, each reading the range of n (its view placed at
    the ROLL row's BASE: a ROLLED source)."""
    if not len(heads):
        return t
    u, rows = t.copy(), np.concatenate([heads, heads + 1])
    n = np.tile(t[heads, SIZE] + t[heads + 1, SIZE], 2)
    u[rows, KIND], u[rows, NIN], u[rows, SIZE], u[rows, SHAPE + 3] = ELEMENTWISE, 1, n, n
    u[rows, OP] = np.repeat([stretched.HEAD, stretched.ROLL], len(heads))
    u[rows, OUT], u[rows, VIEWS + BASE] = np.tile(t[heads, OUT], 2), np.tile(t[heads + 1, VIEWS + BASE], 2)
    u[rows, OUT_STRIDES + 3] = u[rows, VIEWS + STRIDES + 3] = 1
    return u


def picked(t: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(t with each select's two SELECT rows as a stretch's members: elementwise rows of opcodes stretched.PICK -
    taken - 2 * second, the first rows of those pairs). A table holds a select's two together (back, in the other
    order: either is the first); starts: each table's first row."""
    two = np.flatnonzero((t[:-1, KIND] == SELECT) & (t[1:, KIND] == SELECT) & (t[:-1, ROW] == t[1:, ROW]))
    two = two[~np.isin(two + 1, starts)]
    if not len(two):
        return t, two
    u, rows = t.copy(), np.concatenate([two, two + 1])
    u[rows, KIND] = ELEMENTWISE
    u[rows, OP] = stretched.PICK - (t[rows, OP] != 0) - 2 * np.repeat([0, 1], len(two))
    return u, two
