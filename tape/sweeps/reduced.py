"""A logsumexp taken into the stretch before it (tape/sweeps/stretches.py's stretches; kernels/stretched.py's REDUCED
member): a row of a sweep that reduces a stretch's last member along its lines joins it as a last member, its exps,
sums and logs made on blocks of lines in cache, and back its operand's adjoint a local, never stored."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tape.kernels import stretched
from tape.kernels._array_driver import (
    BASE,
    KIND,
    LINED,
    LOGSUMEXP,
    NIN,
    OUT,
    REC,
    REGION,
    REGION_SIZE,
    ROW,
    SHAPE,
    SIZE,
    STRIDES,
    VIEW,
    VIEWS,
    WANT,
)
from tape.kernels.stretched import EACH, LINE

Q = np.arange(2)  # a row's views 0, 1


def taken_in(t: np.ndarray, back: bool, k: np.ndarray, ends: np.ndarray, number: np.ndarray, starts: np.ndarray,
             shapes: dict[tuple, int], records: tuple[np.ndarray, Callable[[np.ndarray], np.ndarray], np.ndarray]
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stretches (first rows, ends, shape numbers) with a LOGSUMEXP row that reduces a stretch's last member along
    its lines taken in as a last member (stretched.REDUCED; the row after it in its table: t is in the forward order):
    its exps, sums and logs made on each block of lines in cache, the member's values not read again, and back the
    member's adjoint a local, not stored and read again. Where the row reads the member's whole region in C order as
    lines of the LINED rows' shape, and back where nothing else reads the member (nor is it an output), the stretch
    sends nothing to a scratch row, and no region it sends to meets the logsumexp's adjoint (read as the pass goes).
    t: a sweep's rows (stretches.stretched_all's, the forward order, back too); records: each record's readers, whether
    layout.again allows computing records again (by their plans), and the outputs."""
    readers, again_ok, outputs = records
    j = np.where((ends < len(t)) & ~np.isin(ends, starts), ends, -1)
    f, made = VIEWS, list(shapes)
    for x in np.flatnonzero((j >= 0) & (t[j, KIND] == LOGSUMEXP)).tolist():  # (a loop over logsumexp records)
        row, last, rows = t[j[x]], t[ends[x] - 1], t[k[x]:ends[x]]
        lines, width = row[SHAPE + 2], row[SHAPE + 3]
        lined = rows[rows[:, KIND] == LINED, SHAPE:SHAPE + 4]
        if (row[f + REC] != last[ROW] or row[f + BASE] != last[OUT] or lines * width != last[SIZE]
                or list(row[f + STRIDES:f + STRIDES + 4]) != [0, 0, width, 1] or list(row[SHAPE:SHAPE + 2]) != [1, 1]
                or (lined != row[SHAPE:SHAPE + 4]).any()):
            continue
        shape, alone = made[number[x]], readers[last[ROW]] == 1 and last[ROW] not in outputs
        again = _chain(shape[1], again_ok(rows[:, ROW])) if alone else (False,) * len(rows)
        if back:
            views = Q < rows[:, NIN, None]
            sent = views & (rows[:, f + VIEW * Q + WANT] != 0) & ~np.isin(rows[:, f + VIEW * Q + REC], rows[:, ROW])
            at, size = rows[:, f + VIEW * Q + REGION][sent], rows[:, f + VIEW * Q + REGION_SIZE][sent]
            if (not alone or row[f + WANT] == 0 or any(g == stretched.SCRATCH for *_, g in shape[2])
                    or ((at < row[OUT] + row[SIZE]) & (row[OUT] < at + size)).any()):
                continue
            members = tuple((*m[:4], m[4] or a) for m, a in zip(shape[1], again, strict=True))
            shape = (True, (*members, (stretched.REDUCED, 0, (len(members) - 1,), (True,), False)), shape[2])
        else:
            skips = [*(shape[3] if len(shape) > 3 else (False,) * len(rows))]
            skips[-1] = again[-1]  # (the member computed again back: left unstored once that kernel is set)
            member = (stretched.REDUCED, 0, (len(shape[1]) - 1,), (True,))
            shape = (False, (*shape[1], member), (*shape[2], True), *[(*skips, False)] * any(skips))
        number[x], ends[x] = shapes.setdefault(shape, len(shapes)), ends[x] + 1
    return k, ends, number


def _chain(members: tuple, ok: np.ndarray) -> tuple[bool, ...]:
    """Whether a back stretch computes again each member: its last, a logsumexp's operand (whose partial exp(a - y)
    reads it), and the members it is computed from, where each is layout.again's (ok) and its views are numbers,
    lines, one number a line or such members (as _computed_again's)."""
    on: list[bool] = []
    for k, (_, number, sources, *_) in enumerate(members):
        on.append(bool(ok[k]) and all(number == q + 1 or source in (LINE, EACH) or (source >= 0 and on[source])
                                      for q, source in enumerate(sources)))
    need = [False] * len(members)
    need[-1] = on[-1]
    for k in range(len(members) - 1, -1, -1):
        for q, source in enumerate(members[k][2]):
            if need[k] and source >= 0 and members[k][1] != q + 1:
                need[source] = True
    return tuple(need)
