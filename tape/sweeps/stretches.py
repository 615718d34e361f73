"""A forward table's stretches: consecutive elementwise rows run as one pass that stores only what is read after it.

A heat step is five elementwise rows of one size (a stencil's adds, a scale, the update); row by row the
compiled forward stores each one's values, and the stores bound its time (0.15-0.2 ns an element stored:
measured in s10), though nothing but the next row reads four of them, and the reverse reads none (an
add's partials read nothing, a scale's its number). So in a forward table (tape/sweeps/compiled.py) a STRETCH
header row stands before such rows: the driver calls its kernel (kernels/stretched.py's ``stretch``, one per shape,
whatever the rows' sizes and places), which computes every member's value per element in a local, with the same
IEEE operations as the rows', and stores only the members that a record after the stretch (an elem record too), an
output or a reverse step (the readers' ``back_reads``) reads: the others are left unwritten, as a fused run's
members are (``sweep_forward``: the sweeps that read every value run without runs, so without tables).

Members: rows of an op of ops.EXACT (the driver's own IEEE rules, not NumPy's loops), all of one size, every view
laid out as the output (an element read at its own index) or one number; a view of an earlier member is read as
that member's local. Forward, a LINED row of a 2-d space joins too where its other view is a line read by every line or
one number a line (the mixture's (points, 1) against (k,)), its lines all the stretch's LINED rows'; back, one number a
line only where it wants no adjoint (its sum back stays the row's; a line's is made in the pass). In a 3-d space (lines
over two axes) a view may also be a line of its own a line or one number a line, placed by the line's two indices (a
convolution's taps ``W[:, j:j + 1] * x[:, :, j:j + m]``, their sums and its ReLU one pass: conv1d's forward table 0.97
-> 0.36 CPU-ms); back, one number a line wanting an adjoint sums each line after its elements in the rows' order
(stretched.EACHSUM; the taps' back 2.0 -> 1.06), a line of its own wanting one stays the rows'. Per element, the
members run in order: where a stored member's region meets a region a member reads, the read must come first for every
element (the read at an index no lower, by a member no later), and a number, a line or one number a line read must meet
none; stored regions are apart. Otherwise the stretch is cut short.

Forward, a roll (np.roll's two slices, or a concatenate of a range's last elements and its first: two COPY rows of
one join, tape/sweeps/paired.py) joins a stretch as two members, HEAD and ROLL, read as the range rotated and stored
whole by ROLL only where read after or back; the pass runs in pieces cut where a roll's read wraps, each read a run
(Burgers' forward table, two rolls a step: 1,550 -> 600-705 CPU-us, its replayed value_and_grad 3.33-3.37 -> 2.60-2.68
ms, load 6.5). Its range may not be made in the pass (it is read at other indices), and back the rows run it.

Back, a member whose value a partial reads is computed again in the pass, by its forward rule (the same bits), where
its plan is layout.again's (an exact op of numbers, lines, one number a line or such members: the layout keeps those
alive while the value is read back) and its views in the span are numbers, lines or members so computed. Forward, the
members stored only for the back's partials are left unstored by a second kernel (its shape's skips), set once every
member it skips is computed again by a back kernel that is set (until then the storing kernel runs: the rows and NumPy's
steps read them from the arena). The mixture's d, z and 0.5 z, 1.28 MB each written and read back: its forward
stretch 196 -> 47 us CPU, its back 158 -> 143.

The kernel is compiled when the tables holding it have run ``PAYBACK`` seconds without it (its compile, ~1 s; until
then the driver runs the rows one by one, the same numbers), or loaded at once where it is cached on disk (the
driver's load paid Numba's first).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tape.kernels import compiling, stretched
from tape.kernels._array_driver import (
    CALL,
    KIND,
    LINED,
    NIN,
    OP,
    OUT,
    OUT_STRIDES,
    REC,
    ROW,
    SELECT,
    SHAPE,
    SIZE,
    STRETCH,
    STRIDES,
    VIEW,
    VIEWS,
    WANT,
    WIDTH,
)
from tape.kernels.array_ops import ACONSTANT
from tape.kernels.shaped import MEMBERS
from tape.sweeps import encoding, layout, paired, places, reduced
from tape.sweeps import live as _live

ON = True  # whether forward tables get stretches (tests switch it off to compare)
ROLLS = True  # whether forward stretches take rolls in (tests/test_trace_passes.py's loop reference takes none)
SAME, LINE, EACH = -1, -2, -3  # a member's operand read from a view (not a member): its sources in a kernel shape
OTHER = -4  # a view read otherwise (no member reads one)
ROLLED = stretched.ROLLED  # (forward) a roll's HEAD's and ROLL's view: a range read rotated
ALONG, AT = stretched.ALONG, stretched.AT  # (a LINED row of a 3-d space's) a line of its own a line, one number a line


class Stretch:
    """A stretch shape's kernel, compiled (or loaded) once its Gate-like clock passes its payback (at once with
    compiling.EAGER)."""

    PAYBACK = 1.0
    made: dict[tuple, Stretch] = {}

    def __init__(self, shape: tuple):
        self.shape, self.clock, self.address = shape, compiling.Clock(), 0
        self.kernel: Any = None
        self.on_disk = False

    @classmethod
    def of(cls, shape: tuple) -> Stretch:
        if shape not in cls.made:
            cls.made[shape] = cls(shape)
        return cls.made[shape]

    def ready(self) -> bool:
        """Whether the kernel is compiled (it is compiled now where the clock says it pays)."""
        if not self.address:
            if self.kernel is None:
                self.kernel = stretched.stretch_kernel(self.shape)
                self.on_disk = os.path.exists(getattr(self.kernel._cache._cache_file, "_index_path", ""))
            if self.clock.spent + self.clock.last >= (0.0 if self.on_disk or compiling.EAGER else self.PAYBACK):
                self.kernel.compile()
                self.address = self.kernel.address
        return bool(self.address)


STRIDED = np.array([[VIEWS + VIEW * q + STRIDES + d for d in range(4)] for q in (0, 1)])  # views 0, 1's strides


def _sources(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the driver's _number of each row of a table: 1 or 2 where view 0 or 1 of a binary row is one element read by
    all, else 0; how each row's views 0, 1 are read: 0 its number, SAME laid out as its output, else (a LINED row's
    lines along axis 3, its output in C order) LINE one line's elements read by every line, or in a 2-d space EACH one
    number a line, in a 3-d space (lines over axes 1 and 2) ALONG a line of its own a line (stride 1 along it) or AT one
    number a line, each placed by the line's two indices (strides not negative); OTHER)."""
    strides = t[:, STRIDED]
    flat = np.logical_not(strides.any(2))
    number = np.where((t[:, NIN] == 2) & (t[:, SIZE] != 1), np.where(flat[:, 1], 2, np.where(flat[:, 0], 1, 0)), 0)
    shape, out = t[:, SHAPE:SHAPE + 4], t[:, OUT_STRIDES:OUT_STRIDES + 4]
    in_order = (out[:, 3] == 1) & (out[:, 2] == shape[:, 3]) & ((shape[:, 1] == 1) |
                                                                (out[:, 1] == shape[:, 2] * shape[:, 3]))
    lines = ((t[:, KIND] == LINED) & (shape[:, 0] == 1) & in_order)[:, None]
    wide = lines & (shape[:, 1] != 1)[:, None]  # (a 3-d space)
    line = (strides == (0, 0, 0, 1)).all(2)
    each = (strides[:, :, 3] == 0) & (strides[:, :, 2] != 0)
    placed = wide & (strides[:, :, 1:3] >= 0).all(2)
    how = np.select([(strides == out[:, None]).all(2), lines & line, placed & (strides[:, :, 3] == 1),
                     placed & (strides[:, :, 3] == 0), ~wide & lines & each], [SAME, LINE, ALONG, AT, EACH], OTHER)
    return number, np.where(number[:, None] == (1, 2), 0, how)


Q = places.Q  # a row's views 0, 1
FIELDS = 10  # a member's fields in a span's code: op, number, inputs, sources (2), wants (2), stored or sends (2),
# back whether it is computed again
UNSENT = places.UNSENT
REFUSED = -2  # a span's verdict where it may not be a stretch


def _reads_back(s: Any) -> np.ndarray:
    """layout's back reads of each plan of s (its 3 views, then itself): kept in s._steps."""
    sees = s._steps.get("reads back")
    if sees is None:
        records = s._table[:, layout.RECORDS]
        constant = (records >= 0) & (s._op[np.maximum(records, 0)] == ACONSTANT)
        sees = s._steps["reads back"] = layout._reads_by_plan(s, s._table, constant)
    return sees


def _again(s: Any) -> np.ndarray:
    """layout.again of each plan of s (whose values a back stretch may compute again): kept in s._steps."""
    ok = s._steps.get("again")
    if ok is None:
        ok = s._steps["again"] = layout.again(s, s._table)
    return ok


def _readers(s: Any) -> np.ndarray:
    """How many reads of each record there are (views of array records, elem records, packs' rows): kept in
    s._steps."""
    counts = s._steps.get("readers")
    if counts is None:
        counts = s._steps["readers"] = np.bincount(_live.reads(s._op, s._in0, s._plans)[1], minlength=len(s._op))
    return counts


def _senders(s: Any) -> np.ndarray:
    """How many reads of each record may send it an adjoint: _readers' but a comparison's and a select's condition
    (its first view); kept in s._steps."""
    counts = s._steps.get("senders")
    if counts is None:
        starts, read = _live.reads(s._op, s._in0, s._plans)
        reader = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
        code = s._op[reader]
        quiet = encoding.IS_COMPARE[code] | ((encoding.KIND[code] == SELECT) & (np.arange(len(read)) == starts[reader]))
        counts = s._steps["senders"] = np.bincount(read[~quiet], minlength=len(s._op))
    return counts


class _Table:
    """A sweep's rows (its tables' rows in the sweep's order) read by NumPy: each row's number and views' sources,
    and which row holds each record (sorted by record, then row)."""

    def __init__(self, s: Any, t: np.ndarray, back: bool):
        self.s, self.t, self.back = s, t, back
        self.number, self.how = _sources(t)
        self.key = t[:, ROW] * (len(t) + 1) + np.arange(len(t))
        self.order = np.argsort(self.key)
        self.key = self.key[self.order]

    def last(self, records: np.ndarray, before: np.ndarray) -> np.ndarray:
        """The last row before ``before`` that holds each record, else -1."""
        least, at = records * (len(self.t) + 1), records * (len(self.t) + 1) + before
        p = np.maximum(np.searchsorted(self.key, at) - 1, 0)
        return np.where((self.key[p] >= least) & (self.key[p] < at), self.order[p], -1)


def _ends(r: _Table, fits: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(whether a stretch may start at each row, where the rows that may follow it end). A row joins the rows before
    it from k on where it fits, is of their size, its LINED shape that of every LINED row among them, and each view is
    laid out as its output (a member's then reads it whole) or its number, or forward a LINED row's line or one number
    a line (_sources), not a member's. So each row has a bar, the last row before it that it cannot follow (its table's
    start, a row of another size or LINED shape, a record a number or line of it reads), and a stretch from k ends at
    the first row whose bar is k or later (a row that cannot join: itself less one)."""
    t, how, n = r.t, r.how, len(r.t)
    i = np.arange(n)
    views = Q < t[:, NIN, None]
    outer = views & (how != SAME)  # (a member's number or lines are made in the pass)
    ok = fits & ~(views & (how == OTHER)).any(1)
    if r.back:  # (one number a line's sum back is the rows'; a line's is made in the pass, in a 2-d space)
        wide = (t[:, SHAPE + 1] != 1)[:, None]  # (a 3-d space's one number a line: each line's sum in the pass)
        ok &= ~(outer & ((how == EACH) | (how == ALONG) | ((how == LINE) & wide))
                & (t[:, VIEWS + VIEW * Q + WANT] != 0)).any(1)
    changed = np.flatnonzero(t[1:, SIZE] != t[:-1, SIZE]) + 1
    bar = np.zeros(n, np.int64)
    bar[changed] = changed
    bar = np.maximum.accumulate(bar) - 1  # the last row of another size
    lined = np.flatnonzero(t[:, KIND] == LINED)
    shapes = t[lined, SHAPE:SHAPE + 4]
    run = np.zeros(len(lined), np.int64)
    run[1:] = np.where((shapes[1:] != shapes[:-1]).any(1), np.arange(1, len(lined)), 0)
    run = np.maximum.accumulate(run)  # (the first LINED row of the LINED rows' run of one shape)
    bar[lined] = np.maximum(bar[lined], np.where(run > 0, lined[run - 1], -1))
    reads = np.where(outer, r.last(t[:, VIEWS + VIEW * Q + REC], i[:, None]), -1)
    bar = np.where(ok, np.maximum(np.maximum(bar, reads.max(1)), i - MEMBERS), i - 1)  # (MEMBERS rows at most)
    bar[starts] = starts - 1
    first = np.full(n + 1, n)
    np.minimum.at(first, bar[bar >= 0], i[bar >= 0])  # (the first row of each bar)
    ends = np.minimum.accumulate(first[::-1])[::-1][:n]
    return ok & (ends - i >= 2), ends


def _walked(nxt: np.ndarray) -> np.ndarray:
    """Which indices a walk from 0 through nxt visits (nxt[i] > i, but the last's, itself): by jumps of 2^j steps,
    largest first (a Python loop over the rows and spans took 36-46 CPU ms of heat-pad's trace)."""
    jumps = [nxt]
    while 1 << len(jumps) < len(nxt):
        jumps.append(jumps[-1][jumps[-1]])
    on = np.zeros(len(nxt), bool)
    on[0] = True
    for jump in reversed(jumps):
        on[jump[on]] = True
    return on


def _spans(r: _Table, fits: np.ndarray, starts: np.ndarray, shapes: dict[tuple, int], inner: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stretches of a sweep's rows (first rows, ends, shape numbers in ``shapes``): from each row on, the rows
    that may join make one where _coded finds a shape for them, else the next row starts over. Each round walks the
    rows taking every span not yet tried as one, and tries the spans it reached, all at once (arrays4k back: 3
    rounds, 1,200 spans refused; a refused span's rows were tried again one span at a time)."""
    tried, ends = _ends(r, fits, starts)
    tried[inner] = False  # (a roll's ROLL row: only after its HEAD)
    i = np.arange(len(r.t))
    verdict = np.full(len(i), -1)  # a shape's number, REFUSED, or -1: not yet tried
    while True:
        on = _walked(np.append(np.where(tried & (verdict != REFUSED), ends, i + 1), len(i)))[:-1] & tried
        new = np.flatnonzero(on & (verdict == -1))
        if not len(new):
            k = np.flatnonzero(on & (verdict >= 0))
            return k, ends[k], verdict[k]
        verdict[new] = _coded(r, new, ends[new], shapes)



def _coded(r: _Table, k: np.ndarray, ends: np.ndarray, shapes: dict[tuple, int]) -> np.ndarray:
    """Each span's shape's number in shapes (new shapes added), or REFUSED where its places do not allow one pass
    (see the module's docstring)."""
    t, count = r.t, ends - k
    span = np.repeat(np.arange(len(k)), count)
    firsts = np.cumsum(count) - count  # each span's first member
    at = np.arange(len(span)) - firsts[span]  # a member's place in its span
    row = k[span] + at
    m, n = t[row], t[k, SIZE][span]
    views, f = Q < m[:, NIN, None], VIEWS + VIEW * Q
    found = r.last(m[:, f + REC], ends[span, None])
    sources = np.where(found >= k[span, None], found - k[span, None], np.where(r.how[row] == 0, SAME, r.how[row]))
    member = views & (sources >= 0)
    source = firsts[span, None] + sources  # a member's operand's member
    inside = np.bincount(source[member], minlength=len(row))[firsts[span] + r.last(m[:, ROW], ends[span]) - k[span]]
    s = r.s
    first, second = np.isin(m[:, OP], paired.FIRSTS), np.isin(m[:, OP], paired.SECONDS)  # (a select's rows: its
    out = np.isin(m[:, ROW], s._output_rows)  # first read by its second alone)
    held = (out | (_readers(s)[m[:, ROW]] != inside)) & ~first
    wants, number = views & (m[:, f + WANT] != 0), r.number[row]
    refused = np.zeros(len(k), bool)
    last = at == count[span] - 1
    refused[span[((first | (m[:, OP] == stretched.HEAD)) & last) | (second & (at == 0))]] = True
    sees = _reads_back(s)[s._in0[m[:, ROW]]]
    code = np.zeros((len(row), FIELDS), np.int64)
    code[:, 0], code[:, 1], code[:, 2] = m[:, OP], number, m[:, NIN]
    code[:, 3:5], code[:, 5:7] = np.where(views, sources, 0), wants
    if r.back:
        sends = wants.any(1)  # (a select's second: its first's too, which its second sends to; members sending
        sends[second] |= sends[np.flatnonzero(second) - 1]  # nothing need no adjoint)
        sent = np.bincount(source[member & wants], minlength=len(row))[firsts[span] + r.last(m[:, ROW], ends[span]) -
                                                                        k[span]]
        outside = out | (_senders(s)[m[:, ROW]] != sent)  # (sent to from outside the span)
        refused[span[~last & sends & ~first & (outside | (sent == 0))]] = True
        code[:, 7:9] = places.sends(m, span, firsts[span] + count[span] - 1 - at, views & ~member & wants,
                                    sources == LINE, number, n, t[ends - 1, OUT], refused, sources == AT)
        code[:, 9] = _computed_again(_again(s)[s._in0[m[:, ROW]]], views, member, source, sees,
                                     (number[:, None] == Q + 1) | (sources == LINE) | (sources == EACH))
    else:
        stored = held | sees[:, 3]
        stored[source[member & sees[:, :2]]] = True  # (a select's views 0, 1 for its 3: it reads back its condition)
        stored &= (m[:, OP] != stretched.HEAD) & ~first  # (a roll stored by its ROLL member, whole; not among lines)
        refused[np.intersect1d(span[m[:, OP] == stretched.ROLL], span[m[:, KIND] == LINED])] = True
        places.overlapping(m, span, at, stored, views & ~member, np.where(number[:, None] == Q + 1, 0, sources), n,
                           refused)
        code[:, 7] = stored
        code[:, 9] = stored & ~held & _again(s)[s._in0[m[:, ROW]]] & (m[:, OP] >= 0)  # (stored for the back's
        # partials only)
    return _numbered(code, count, refused, r.back, shapes)


def _computed_again(ok: np.ndarray, views: np.ndarray, member: np.ndarray, source: np.ndarray, sees: np.ndarray,
                    cheap: np.ndarray) -> np.ndarray:
    """Back, which members' values the pass computes again rather than reads (the module's docstring says what it
    saves): those a partial reads (sees), layout.again's (ok), whose views are numbers, lines or one number a line
    (cheap) or members computed again, and those such members are computed from."""
    on, chained = ok.copy(), views & member
    source = np.where(chained, source, 0)
    for _ in range(layout.DEPTH):
        on = ok & (~views | cheap | (chained & on[source])).all(1)
    used = on & sees[:, 3]
    used[source[chained & sees[:, :2]]] = True
    used &= on
    for _ in range(layout.DEPTH):
        used[source[chained & used[:, None]]] = True
    return used


def _numbered(code: np.ndarray, count: np.ndarray, refused: np.ndarray, back: bool, shapes: dict[tuple, int]
              ) -> np.ndarray:
    """Each span's shape's number in shapes (a shape made once per kind of span, not per span), REFUSED where
    refused."""
    verdict = np.full(len(count), REFUSED)
    firsts = np.cumsum(count) - count
    member, first = _kinds(code)
    for size in np.unique(count[~refused]).tolist():
        of = np.flatnonzero((count == size) & ~refused)
        which, kinds = _kinds(member[firsts[of, None] + np.arange(size)])
        numbers = [shapes.setdefault(_shape(code[first[kind]].tolist(), back), len(shapes))
                   for kind in member[firsts[of[kinds], None] + np.arange(size)].tolist()]
        verdict[of] = np.array(numbers)[which]
    return verdict


def _kinds(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each row's kind: rows alike are of one, the first row of each kind), by a lexsort of a's columns (np.unique's
    rows by a sort of bytes took 18 of heat-pad's 30 ms)."""
    o = np.lexsort(a.T[::-1])
    new = np.ones(len(o), bool)
    new[1:] = (a[o[1:]] != a[o[:-1]]).any(1)
    kind = np.empty(len(o), np.int64)
    kind[o] = np.cumsum(new) - 1
    return kind, o[new]


def _shape(members: list[list[int]], back: bool) -> tuple:
    """A stretch kernel's shape from a span's code: (back, each member's (op, number, sources, wants, and back whether
    it is computed again), forward whether each is stored, back the views' sends (member, view, group)); forward,
    where members are stored only for the back's partials to read and layout.again's, which of them (``skips``)."""
    spec = tuple((m[0], m[1], tuple(m[3:3 + m[2]]), tuple(bool(w) for w in m[5:5 + m[2]]), *[bool(m[9])] * back)
                 for m in members)
    if back:
        return True, spec, tuple((k, q, members[k][7 + q]) for k in range(len(members) - 1, -1, -1)
                                 for q in range(members[k][2]) if members[k][7 + q] != UNSENT)
    skips = tuple(bool(m[9]) for m in members)
    return (False, spec, tuple(bool(m[7]) for m in members), *[skips] * any(skips))


def stretched_all(s: Any, tables: list[list[np.ndarray]], back: bool) -> list[tuple[list[np.ndarray] | np.ndarray,
                                                                                dict[Stretch, list[int]],
                                                                                tuple[int, int]]]:
    """Each table's rows of a sweep (back: last first) with a STRETCH header before each stretch of two or more
    members, each shape's headers (their indices in the rows), whose CALL the kernel's address fills once it is ready
    (``fill``), and the scratch its kernels need back (rows, elements: a member's adjoint kept a row). The rows of all
    the sweep's tables are read by NumPy at once (tables of a few rows between NumPy steps: arrays4k's 1,600, small's
    1,000, cost ~70 us of NumPy calls each, one by one), and so are their stretches (_spans)."""
    if not ON or getattr(s, "_output_rows", None) is None or not tables:
        return [(rows, {}, (0, 0)) for rows in tables]
    tables = [places.hoisted(s, rows, back) for rows in tables]
    counts = np.array([len(rows) for rows in tables])
    t = np.array([row for rows in tables for row in (rows[::-1] if back else rows)], np.int64).reshape(-1, WIDTH)
    elementwise, fits = places.joining(t)
    starts = np.cumsum(counts) - counts
    heads = np.zeros(0, np.int64) if back or not ROLLS else paired.rolls(t, starts)
    u, picks = paired.picked(paired.rolled(t, heads), starts)
    fits[heads] = fits[heads + 1] = True
    fits[t[:, KIND] == SELECT] = False  # (but a select's two rows together)
    fits[picks] = fits[picks + 1] = t[picks, SIZE] >= 2
    pairs = fits[1:] & fits[:-1]
    bounds = starts[1:][(starts[1:] > 0) & (starts[1:] < len(t))]
    pairs[bounds - 1] = False  # (no stretch across tables)
    shapes: dict[tuple, int] = {}
    k = ends = number = np.zeros(0, np.int64)
    if pairs.any():  # (else no two rows may join: tables of a few rows between NumPy steps)
        r = _Table(s, u, back)
        r.how[heads, 0] = r.how[heads + 1, 0] = ROLLED
        spans = _spans(r, fits, starts[starts < len(t)], shapes, np.concatenate([heads, picks]) + 1)
        k, ends, number = reduced.taken_in(u, back, *spans, starts, shapes, (_readers(s), lambda rows: _again(s)[
            s._in0[rows]], s._output_rows))
    if not len(k):
        return [(rows, {}, (0, 0)) for rows in tables]
    used = set(number.tolist())  # (a shape a logsumexp took in: not made)
    return _headed(t, tables, counts, starts, k, ends, number, back,
                   [Stretch.of(shape) if x in used else None for x, shape in enumerate(shapes)])


def _headed(t: np.ndarray, tables: list[list[np.ndarray]], counts: np.ndarray, starts: np.ndarray, k: np.ndarray,
            ends: np.ndarray, number: np.ndarray, back: bool, made: list[Stretch | None]) -> list[tuple]:
    """stretched_all's tables from the stretches (first rows, ends, shape numbers) of t, a sweep's rows."""
    table = np.searchsorted(starts, k, "right") - 1
    if back:  # (t's tables back in the rows' order; a stretch's header before its last row)
        t = t[np.repeat(2 * starts + counts - 1, counts) - np.arange(len(t))]
        k, ends = 2 * starts[table] + counts[table] - ends, 2 * starts[table] + counts[table] - k
        o = np.argsort(k)
        k, ends, number, table = k[o], ends[o], number[o], table[o]
    header = np.zeros((len(k), WIDTH), np.int64)
    header[:, KIND], header[:, SIZE] = STRETCH, ends - k
    out = np.insert(t, k, header, 0)
    before = np.searchsorted(table, np.arange(len(tables) + 1))  # each table's first stretch
    placed = k + np.arange(len(k)) - (starts + before[:-1])[table]  # a header's index in its table's rows
    kept = np.zeros(len(tables), np.int64)  # (back: members whose adjoint is kept a row, at most, and their size)
    wide = np.zeros(len(tables), np.int64)
    if back:
        adjoints = np.array([len({j for j, _, group in x.shape[2] if group == stretched.SCRATCH}) if x else 0
                             for x in made], np.int64)[number]
        np.maximum.at(kept, table, adjoints)
        np.maximum.at(wide, table, np.where(adjoints > 0, t[k, SIZE], 0))
    result: list[tuple] = [(rows, {}, (0, 0)) for rows in tables]
    o = np.lexsort((placed, number, table))  # (by table, then shape, then place)
    new = np.ones(len(o), bool)
    new[1:] = (table[o[1:]] != table[o[:-1]]) | (number[o[1:]] != number[o[:-1]])
    group = np.flatnonzero(new)
    bounds = np.stack([group, np.append(group[1:], len(o))])[:, np.lexsort((placed[o[group]], table[o[group]]))]
    flat = placed[o].tolist()  # (a table's shapes in the order first met)
    pending: dict[int, dict[Stretch, list[int]]] = {}
    for x, shape, a, z in zip(table[o[bounds[0]]].tolist(), number[o[bounds[0]]].tolist(), *bounds.tolist(),
                              strict=True):
        for stretch in {made[shape], Stretch.of(made[shape].shape[:3])}:  # (one that skips: and its storing one)
            pending.setdefault(x, {}).setdefault(stretch, []).extend(flat[a:z])
            pending[x][stretch].sort()
    first, last = (starts + before[:-1]).tolist(), (starts + counts + before[1:]).tolist()
    for x, headers in pending.items():
        result[x] = (out[first[x]:last[x]], headers, (int(kept[x]), int(wide[x])))
    return result


def fill(table: np.ndarray, pending: dict[Stretch, list[int]], seconds: float, s: Any) -> None:
    """Count a sweep's seconds on each pending shape's clock; set the headers of those now ready to their kernel. A
    back stretch's members computed again are noted in s._steps; a forward shape that skips members (left unstored)
    is set only where its storing shape is and every member it skips is computed again in a back stretch whose kernel
    is set: the rows, the storing kernel and the NumPy steps read them from the arena (the mixture's forward stretch,
    storing d, z and 0.5 z too, 196 -> 47 us CPU)."""
    again = s._steps.setdefault("computed again", set())
    for stretch in list(pending):
        stretch.clock.add(seconds)
        if len(stretch.shape) < 4 and stretch.ready():
            headers = pending.pop(stretch)
            table[headers, CALL] = stretch.address
            back, members = stretch.shape[:2]
            rows = np.array([len(members) - k for k, member in enumerate(members) if back and member[4]], np.int64)
            again.update(table[np.add.outer(headers, rows), ROW].ravel().tolist())
    for stretch in [x for x in pending if len(x.shape) == 4 and Stretch.of(x.shape[:3]) not in pending]:
        skips = [1 + k for k, skip in enumerate(stretch.shape[3]) if skip]
        ready = [h for h in pending[stretch] if all(int(table[h + k, ROW]) in again for k in skips)]
        if ready and stretch.ready():
            table[ready, CALL] = stretch.address
            done = set(ready)
            pending[stretch] = [h for h in pending[stretch] if h not in done]
            if not pending[stretch]:
                del pending[stretch]
