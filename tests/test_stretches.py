"""A table's stretches (tape/sweeps/stretches.py, kernels/stretched.py's kernels): a Function's values and
gradients with them are the rows' and NumPy's steps' bit for bit, at edge values; their kernels run forward and back;
only the members read after a stretch are stored; against central differences."""

import numpy as np
import pytest
from reference import central
from sameness import edge_points, same_bits

import tape
from tape.kernels import _array_driver as K
from tape.kernels import ops, stretched
from tape.kernels.array_ops import ACONSTANT, INPUT
from tape.records import array_records
from tape.sweeps import compiled, driver, layout, steps, stretches


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)
    monkeypatch.setattr(stretches.Stretch, "PAYBACK", 0.0)  # compiled at a table's first sweep


def heat(pad):
    def f(u):
        for _ in range(6):
            if pad:
                w = np.pad(u, 1, mode="wrap")
                u = u + 0.2 * (w[2:] + w[:-2] - 2.0 * u)
            else:
                u = u + 0.2 * (np.concatenate([u[1:], u[:1]]) + np.concatenate([u[-1:], u[:-1]]) - 2.0 * u)
        return 0.5 * (u * u).sum()
    return f


def chains(u):  # members read by partials (stored), div, abs, maximum, minimum, sqrt, neg, relu, numbers either side
    for _ in range(3):
        v = np.concatenate([u[1:], u[:1]])
        t = (u * v - 0.5 * u) / (1.0 + np.abs(v))
        u = np.maximum(t, -u) + np.sqrt(np.abs(t) + 1.0) * 0.1 - 0.25 * v
        u = u - u * 0.01 + np.minimum(u, v) + (np.maximum(-t, 0.0) if isinstance(t, np.ndarray) else tape.relu(-t))
    return (u * u).sum() + (u[:10] * 3.0).sum()


def filtered(u):  # three views of one padded array: back, their adds in the rows' order only where one pass keeps it
    for _ in range(3):
        w = np.pad(u, 1, mode="wrap")
        u = (w[:-2] + w[1:-1] + w[2:]) * 0.3 - u * u * 0.01
        w = np.pad(u, 1, mode="wrap")
        u = w[2:] * 0.5 + w[1:-1] * 0.25 - w[:-2] * 0.2
    return (u * u).sum()


def scaled(u):  # a member's element read by all (made in the pass: the stretch ends before its reader)
    for _ in range(3):
        v = u * 0.5 + 1.0
        u = v * v[3:4] - u * 0.25
    return (u * u).sum()


def mixture(k):
    def f(u):  # LINED rows (a column by a row, a row on either side) among elementwise ones, then a logsumexp
        m = len(u) - 3 * k  # (odd: 273 lines of 9 at 300, 33 at 60)
        x, mu, logs, logw = u[:m].reshape(m, 1), u[m:m + k], u[m + k:m + 2 * k], u[m + 2 * k:]
        z = (x - mu) * np.exp(-logs)
        a = logw - 0.5 * z * z - logs
        if isinstance(a, np.ndarray):  # (central differences)
            return (np.log(np.exp(a - a.max(1, keepdims=True)).sum(1)) + a.max(1)).sum()
        return tape.logsumexp(a, axis=1).sum()
    return f


def lines(width):
    def f(u):  # a line read by every line, one number a line, both sides, members read back and after
        m = (len(u) - width) // (width + 1)
        x, row = u[:m * width].reshape(m, width), u[m * width:(m + 1) * width]
        col = x[:, 3:4] * 0.5 + u[(m + 1) * width:(m + 1) * width + m].reshape(m, 1)  # (a column of x: stride width)
        y = (x * row - col) / (1.0 + np.abs(row)) + np.maximum(x[:, 5:6], x) * x
        w = np.minimum(row * 2.0, y) - y * y * 0.5
        return (w * 3.0 + row).sum() + (y * col).sum()
    return f


def spaces(u):  # LINED rows of one size, lines 12 x 10 and 10 x 12; a 3-d space's (a column of a (4, 6, 10) block)
    u = np.concatenate([u] * 5) if len(u) < 268 else u  # (central differences' 60)
    x, row, other = u[:120].reshape(12, 10), u[120:130], u[130:142]
    y = ((x * row).reshape(10, 12) - other) * 0.5
    block, col = u[:240].reshape(4, 6, 10), u[240:268].reshape(4, 7)[:, :6, None]
    z = (block - col) * block
    return (y * y).sum() + (z * 3.0).sum()


def summed(width, extra):
    def f(u):  # lines of u against a constant block back: their sums in the pass (two lines of one record, 282 and
        m = len(u) - 2 * width - extra  # 279 lines: a rest of 2 and 3 past fours), then a column's (the rows')
        C, K = np.cos(np.arange(m * width)).reshape(m, width) * 2.0, np.sin(np.arange(m)).reshape(m, 1)
        w, col = u[:2 * width] * 1.0, u[2 * width:2 * width + m].reshape(m, 1)
        r1, r2 = w[:width], w[width:]  # (the stretch sends to w first: its region, stale, is zeroed)
        s = np.abs(r2) * 0.5
        y = ((C * r1 + r2) * (C - r1) - s) * K  # (a constant's one number a line)
        return ((y - col) * u[width:2 * width] * y).sum() + (y * C).sum()
    return f


def inplace(u):  # a block and its first line: their adds would come in another order with the line's sums after
    m = len(u) // 10  # the pass (the rows')
    A, r = u[:m * 10].reshape(m, 10), u[:10]
    z = (r - A) * np.cos(np.arange(m * 10)).reshape(m, 10) * r
    return (z * z).sum()


def again(held):
    def f(u):  # members a partial reads, computed again back (a column less a line, times a line, negated, over a
        m = len(u) - 30  # line: layout.again's), past DEPTH (stored); ``held``: the first read after the stretch
        x, r1, r2, r3 = np.cos(np.arange(m)).reshape(m, 1) * 2.0, u[m:m + 10], u[m + 10:m + 20], u[m + 20:]
        e, g, h = np.exp(r2), 1.0 + np.abs(r3), r1 * 2.0  # (lines made before the rows: no step between them; h read
        d = x - h  # back by no partial, kept alive by the layout while d is computed again: r2 * 5.0 may not take its
        z = (d + 1.0) * e  # (d read back by no partial: what it is computed from lives by d + 1.0's reads)
        q = -z / g
        w = z * z * 0.5 + q - np.sqrt(np.abs(q) + 1.0) * r1 * np.abs(q)  # (sqrt: past DEPTH, read back, stored)
        return (w * 3.0).sum() + (d.sum() if held else 0.0) + (r2 * 5.0).sum()  # region)
    return f


def places(u):  # a back stretch sending to three records' places, each apart (a group each, stored in its pass)
    m = len(u) // 3
    a, b, c = u[:m] * 1.5, u[m:2 * m] - 0.5, u[2 * m:3 * m] * u[2 * m:3 * m]
    for _ in range(2):
        a, b, c = (a * b - 2.0 * c) * 0.3 + a * c, a - c * b, np.concatenate([c[1:], c[:1]]) * 0.5 - b
    return (a * b * c).sum()


def blocks(u):  # 1,100 elements, past a forward pass's blocks (stretched.BLOCK), a rest; members written in place
    u = np.concatenate([u, u * 0.5, -u, u[:200] * 2.0])  # over regions the pass reads, at an index no lower (a ReLU)
    for _ in range(3):
        y = u * 0.5 + np.concatenate([u[1:], u[:1]]) - 0.25
        u = np.maximum(y, 0.0) + np.minimum(y * 0.1, u)
    return (u * u).sum()


def taps(u):  # a 3-d space's LINED rows (batch x filters x length): a window of x, a line of its own a line; a tap of
    u = np.concatenate([u] * 5) if len(u) < 265 else u  # a filter, one number a line (ALONG, AT); a bias; the sum's
    x, W, b, v = u[:240].reshape(4, 1, 60), u[240:255].reshape(5, 3), u[255:260], u[260:265]  # ReLU in place;
    y = b.reshape(5, 1) + W[:, :1] * x[:, :, :58]  # pooled pairs; a column of a block (4, 7)'s, placed by both
    for j in (1, 2):  # indices
        y = y + W[:, j:j + 1] * x[:, :, j:j + 58]
    h = np.maximum(y, 0.0) * 0.5 - u[:28].reshape(4, 7)[:, 1:6, None] * y
    p = np.maximum(h[:, :, 0::2], h[:, :, 1::2])
    return (p * p).sum() + (p.sum(axis=2) * v).sum()


def windows(u):  # x's windows wanting adjoints against constant taps, a 3-d space's line read by every line wanting
    u = np.concatenate([u] * 5) if len(u) < 298 else u  # one (back: the rows' sums, not the pass)
    x, C = u[:240].reshape(4, 1, 60), np.cos(np.arange(15.0)).reshape(5, 3)
    y = C[:, :1] * x[:, :, :58]
    for j in (1, 2):
        y = y + C[:, j:j + 1] * x[:, :, j:j + 58]
    return (np.maximum(y, 0.0) * y * u[240:298]).sum()


def rolls(u):  # np.roll's two slices read in a forward stretch as one range rotated (HEAD, ROLL): shifts 7, 1, -1,
    for _ in range(2):  # 2; stored where a partial reads it (u * r) or a slice of it after (r[:10]), else not; one of a
        r = np.roll(u, 7)  # member (v: the stretch ends before it), one of a slice of a region (-4 of u[2:-1])
        v = np.roll(u, 1) * 0.5 + np.roll(u, -1) * 0.25 - u * r
        u = np.roll(v, 2) - v * 0.5
    s = np.roll(u[2:-1], -4) * 1.5 - u[:-3]
    return (u * u).sum() + (s * s).sum() + (r[:10] * 3.0).sum()


def huber(u):  # np.where's selects and their comparisons among elementwise rows: a Huber loss of a residual and of
    def loss(x):  # neighbours' differences (two views of u back: a scratch row), one stretch each way
        a = np.abs(x)
        return np.where(a < 0.7, 0.5 * x * x, 0.7 * (a - 0.35)).sum()
    return loss(u * 1.5 - 0.25) + loss(u[1:] - u[:-1])


def hubers(u):  # huber's losses with the differences made first: rows of two sizes, the select's moved up (hoisted)
    r = 0.0
    for x in (u * 1.5 - 0.25, u[1:] - u[:-1]):
        a = np.abs(x)
        r = r + np.where(a < 0.7, 0.5 * x * x, 0.7 * (a - 0.35)).sum()
    return r


def wheres(u):  # each comparison's spelling; a branch a number, u itself, one record both sides; selects of selects; a
    v = u * 0.5 + 0.1  # condition read by two selects, one a NumPy step's (pos: u masked, read after the stretch)
    pos = v > 0.0
    a = np.where(pos, v, 0.1 * v)
    b = np.where(v <= 0.2, 2.0, a)
    c = np.where(a == b, a, a * a)
    d = np.where(u != 0.3, c - v, c + v)
    e = np.where(d > c, d, -d)
    f = np.where(v >= -0.1, np.where(pos, e, 3.0 * e), u)
    return (f * f).sum() + (np.where(pos, u, 0.0) * a).sum()


PROGRAMS = {"heat, pad": heat(True), "heat, concatenate": heat(False), "chains": chains, "filtered": filtered,
            "scaled": scaled, "mixture, k 9": mixture(9), "mixture, k 1": mixture(1), "lines": lines(8),
            "spaces": spaces, "summed, rest 2": summed(9, 0), "summed, rest 3": summed(10, 1), "inplace": inplace,
            "again": again(False), "again, held": again(True), "places": places, "blocks": blocks, "taps": taps,
            "windows": windows, "rolls": rolls, "huber": huber, "hubers": hubers,
            "wheres": wheres}
def _headers(F):
    """The STRETCH headers of F's compiled tables, forward and back: (count, how many have their kernel)."""
    rows = [row for sweep in F._steps.values() if isinstance(sweep, steps.Sweep) for call in sweep.calls
            if getattr(call, "func", None) in (compiled.forward, compiled.reverse)
            for row in call.args[1] if row[0] == compiled.kernels.STRETCH]
    return len(rows), sum(row[compiled.kernels.CALL] != 0 for row in rows)


def _trace(f, x, monkeypatch, driven, on):
    monkeypatch.setattr(compiled, "ready", lambda s, runs: driven)
    monkeypatch.setattr(stretches, "ON", on)
    return tape.trace(f, x)


def _run(F, point, monkeypatch, driven, on):
    monkeypatch.setattr(compiled, "ready", lambda s, runs: driven)
    monkeypatch.setattr(stretches, "ON", on)
    with np.errstate(all="ignore"):
        return F.value_and_grad(point)


@pytest.mark.parametrize("name", PROGRAMS)
def test_stretches_give_the_rows_and_numpys_bits(name, monkeypatch):
    f, x = PROGRAMS[name], np.random.default_rng(3).normal(size=300)
    ways = {way: _trace(f, x, monkeypatch, *way) for way in ((True, True), (True, False), (False, False))}
    for point in edge_points(x):
        got = _run(ways[True, True], point, monkeypatch, True, True)
        for way in ((True, False), (False, False)):
            want = _run(ways[way], point, monkeypatch, *way)
            for a, b in zip(got, want, strict=True):
                assert same_bits(a, b), (way, point[:3])
    count, called = _headers(ways[True, True])
    assert count and called == count  # every stretch ran by its kernel, forward and back
    assert _headers(ways[True, False]) == (0, 0)


def test_heat_stores_one_member_a_step_and_reads_none_back(monkeypatch):
    monkeypatch.setattr(stretches.Stretch, "made", {})  # only heat's shapes (earlier tests in this process made others)
    F = _trace(heat(True), np.random.default_rng(4).normal(size=300), monkeypatch, True, True)
    _run(F, np.ones(300), monkeypatch, True, True)
    shapes = {shape for shape in stretches.Stretch.made if shape[1] and shape[1][0][0] == 1 and len(shape[1]) == 5}
    forward = [shape for shape in shapes if not shape[0]]
    assert forward and all(shape[2] == (False, False, False, False, True) for shape in forward)
    assert any(shape[0] for shape in shapes)  # and back


@pytest.mark.parametrize("name, places", [("heat, concatenate", 3), ("places", 3), ("heat, pad", 1)])  # (at least)
def test_a_back_stretch_stores_each_place_apart_in_its_pass(name, places, monkeypatch):
    """Back, the views of each place apart from other views' (heat's two joins and its state; three records) send in
    the pass, a group each; views of one record at places less than a line apart (the pad's) after it."""
    monkeypatch.setattr(stretches.Stretch, "made", {})
    F = _trace(PROGRAMS[name], np.random.default_rng(4).normal(size=300), monkeypatch, True, True)
    _run(F, np.ones(300), monkeypatch, True, True)
    sends = [shape[2] for shape in stretches.Stretch.made if shape[0]]
    assert sends and all(len({g for _, _, g in s if g >= 0}) >= places for s in sends)
    assert all((stretched.SCRATCH in {g for _, _, g in s}) == (name == "heat, pad") for s in sends)


@pytest.mark.parametrize("name", PROGRAMS)
def test_stretches_gradient_is_central_differences(name, monkeypatch):
    f, x = PROGRAMS[name], np.random.default_rng(5).normal(size=60)
    F = _trace(f, x, monkeypatch, True, True)
    value, grad = _run(F, x, monkeypatch, True, True)
    assert _headers(F)[1]
    np.testing.assert_allclose(grad, central(lambda v: float(f(v)), x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f, summing", [(summed(9, 0), True), (inplace, False)])
def test_a_line_sums_back_in_a_stretch_only_where_no_other_view_sends(f, summing, monkeypatch):
    """Back, a line read by every line sums back in the pass (stretched.SUMMED), but not in a stretch where another view
    sends (inplace's r - A, a block and its first line, both wanting adjoints: that row stays out, and the next)."""
    monkeypatch.setattr(stretches.Stretch, "made", {})
    F = _trace(f, np.random.default_rng(7).normal(size=300), monkeypatch, True, True)
    _run(F, np.ones(300), monkeypatch, True, True)
    back = [shape for shape in stretches.Stretch.made if shape[0]]
    assert any(group == stretched.SUMMED for shape in back for _, _, group in shape[2]) == summing
    assert all(group == stretched.SUMMED for shape in back for _, _, group in shape[2]
               if any(g == stretched.SUMMED for *_, g in shape[2]))
    both = ((stretches.LINE, stretches.SAME), (True, True))
    assert not any(member[2:] == both for shape in back for member in shape[1])


@pytest.mark.parametrize("f, size", [(mixture(9), 300), (lines(8), 300), (lines(4100), 3 * 4101 + 4100)])
def test_lined_rows_join_stretches_forward(f, size, monkeypatch):
    """LINED rows' lines (a line read by every line, one number a line) are members forward, lines of 4,100 (past a
    LINED row's block) too; back, a line read by every line wanting an adjoint too (summed back in the pass), one
    number a line only where it wants none (its sum back: the rows')."""
    monkeypatch.setattr(stretches.Stretch, "made", {})
    x = np.random.default_rng(6).normal(size=size)
    ways = {way: _trace(f, x, monkeypatch, *way) for way in ((True, True), (True, False))}
    for point in edge_points(x)[:4]:
        got, want = (_run(ways[way], point, monkeypatch, *way) for way in ways)
        assert all(same_bits(a, b) for a, b in zip(got, want, strict=True))
    lined = [shape for shape in stretches.Stretch.made.values() if len(shape.shape) < 4 and any(
        {stretches.LINE, stretches.EACH} & set(member[2]) for member in shape.shape[1])]  # (one that skips: below)
    assert any(not stretch.shape[0] for stretch in lined) and all(stretch.address for stretch in lined)
    assert not any(wants[q] for stretch in lined if stretch.shape[0] for _, _, sources, wants, _ in stretch.shape[1]
                   for q, j in enumerate(sources) if j == stretches.EACH)


def test_a_3d_space_s_lined_rows_join_stretches(monkeypatch):
    """A 3-d space's LINED rows (lines over two axes: a window of x, a line of its own a line, a filter's tap and a
    block's column, one number a line, each placed by a line's two indices) are members, forward the taps' chain, its
    ReLU and more one pass, back too, each line's sum to a tap made in the pass (stretched.EACHSUM): the same bits as
    the rows; a line of its own wanting an adjoint is no member back."""
    monkeypatch.setattr(stretches.Stretch, "made", {})
    x = np.random.default_rng(9).normal(size=300)
    ways = {way: _trace(taps, x, monkeypatch, *way) for way in ((True, True), (True, False))}
    for point in edge_points(x)[:4]:
        got, want = (_run(ways[way], point, monkeypatch, *way) for way in ways)
        assert all(same_bits(a, b) for a, b in zip(got, want, strict=True))
    made = [x for x in stretches.Stretch.made.values() if len(x.shape) < 4]
    forward = [x for x in made if not x.shape[0] and {stretches.ALONG, stretches.AT} <= {
        j for member in x.shape[1] for j in member[2]}]
    assert forward and all(x.address for x in forward) and max(len(x.shape[1]) for x in forward) >= 6
    back = [x for x in made if x.shape[0]]
    assert any(group == stretched.EACHSUM for x in back for *_, group in x.shape[2]) and all(x.address for x in back)
    assert not any(wants[q] for x in back for _, _, sources, wants, _ in x.shape[1]
                   for q, j in enumerate(sources) if j == stretches.ALONG)


def _skipping(F):
    """The forward STRETCH headers of F running a kernel that leaves members unstored (a shape with skips)."""
    skipping = {x.address for x in stretches.Stretch.made.values() if len(x.shape) == 4 and x.address}
    return [row for sweep in F._steps.values() if isinstance(sweep, steps.Sweep) for call in sweep.calls
            if getattr(call, "func", None) is compiled.forward for row in call.args[1]
            if row[0] == compiled.kernels.STRETCH and row[compiled.kernels.CALL] in skipping]


@pytest.mark.parametrize("name, skipped, again", [("again", True, True), ("mixture, k 9", False, False),
                                                  ("again, held", False, False)])
def test_values_a_back_stretch_computes_again_are_left_unstored(name, skipped, again, monkeypatch):
    """Members a back stretch's partials read, of an exact op of numbers, lines, one number a line or such members
    (layout.again), are computed again in the pass; forward they are left unstored once that back kernel is set: the
    same bits as the stretches without the rule (layout.again none), the rows and NumPy's steps. Not where a member
    is read after its stretch too (held: the back stretch is refused), nor where the members are not computed again
    (the mixture here: its column is u's, one number a line wanting an adjoint, whose row joins no back stretch)."""
    monkeypatch.setattr(stretches.Stretch, "made", {})
    f, x = PROGRAMS[name], np.random.default_rng(3).normal(size=300)
    points = [x, x, *edge_points(x)]  # (the forward skips from its third call)
    monkeypatch.setattr(layout, "again", lambda s, table: np.zeros(len(table), bool))
    old = _trace(f, x, monkeypatch, True, True)
    want = [_run(old, point, monkeypatch, True, True) for point in points]
    monkeypatch.undo()
    monkeypatch.setattr(stretches.Stretch, "made", {})
    monkeypatch.setattr(array_records, "SMALL", 1)
    monkeypatch.setattr(stretches.Stretch, "PAYBACK", 0.0)
    ways = {way: _trace(f, x, monkeypatch, *way) for way in ((True, True), (True, False), (False, False))}
    for point, old_bits in zip(points, want, strict=True):
        got = _run(ways[True, True], point, monkeypatch, True, True)
        others = (_run(ways[way], point, monkeypatch, *way) for way in ((True, False), (False, False)))
        for other in (old_bits, *others):
            assert all(same_bits(a, b) for a, b in zip(got, other, strict=True)), point[:3]
    assert bool(_skipping(ways[True, True])) == skipped
    back = [x.shape for x in stretches.Stretch.made.values() if x.shape[0] and x.address]
    assert max((sum(member[4] for member in shape[1]) for shape in back), default=0) == 6 * again  # (d, d + 1, z,
    # -z, q, |q|: layout.DEPTH deep)
    assert not _skipping(old) and not old._steps.get("computed again")


def test_a_forward_stretch_stores_all_until_the_back_kernel_is_set(monkeypatch):
    """While the back stretch runs its rows (they read the arena), the forward runs its storing kernel: the bits
    stay the rows'."""
    monkeypatch.setattr(stretches.Stretch, "made", {})
    ready = stretches.Stretch.ready
    monkeypatch.setattr(stretches.Stretch, "ready", lambda self: not self.shape[0] and ready(self))
    f, x = PROGRAMS["again"], np.random.default_rng(4).normal(size=300)
    ways = {way: _trace(f, x, monkeypatch, *way) for way in ((True, True), (True, False))}
    for point in [x, x, *edge_points(x)]:
        got, want = (_run(ways[way], point, monkeypatch, *way) for way in ways)
        assert all(same_bits(a, b) for a, b in zip(got, want, strict=True))
    assert _headers(ways[True, True])[1] and not _skipping(ways[True, True])


def test_the_layout_keeps_what_a_member_is_computed_again_from_alive(monkeypatch):
    """Each smaller value a back stretch computes a member again from (a line, one number a line, a number) lives,
    in layout.lifetimes, until that back stretch runs (its top member's reverse step): again's h is read back by
    no partial."""
    F = _trace(PROGRAMS["again"], np.random.default_rng(5).normal(size=300), monkeypatch, True, True)
    for _ in range(3):
        _run(F, np.ones(300), monkeypatch, True, True)
    n, again = len(F._op), F._steps["computed again"]
    life = layout.lifetimes(F, list(F._runs_first.values()), F._output_rows,
                            np.concatenate([F._input_rows, F._param_rows]))
    table = next(call.args[1] for sweep in F._steps.values() if isinstance(sweep, steps.Sweep) for call in sweep.calls
                 if getattr(call, "func", None) is compiled.reverse and again & set(call.args[1][:, K.ROW].tolist()))
    kept = 0
    for h in np.flatnonzero(table[:, K.KIND] == K.STRETCH):
        members = table[h + 1:h + 1 + table[h, K.SIZE]]
        for m in members[np.isin(members[:, K.ROW], list(again))]:
            for q in range(m[K.NIN]):
                x = int(F._in0[m[K.VIEWS + K.VIEW * q + K.REC]])
                if F._plans[x].size < m[K.SIZE]:
                    assert life[x, 1] >= 2 * n + 1 - members[0][K.ROW]
                    kept += 1
    assert kept >= 3


def test_a_forward_stretch_reads_a_roll_as_one_range_rotated(monkeypatch):
    """A roll's two COPY rows join a forward stretch as its HEAD and ROLL members, the roll stored by ROLL only where
    read back or after; a roll of a member starts the stretch after the member's. The rows' bits: the test above."""
    monkeypatch.setattr(stretches.Stretch, "made", {})
    F = _trace(rolls, np.random.default_rng(4).normal(size=300), monkeypatch, True, True)
    _run(F, np.ones(300), monkeypatch, True, True)
    forward = [shape for shape in stretches.Stretch.made if not shape[0]]
    held = [(shape[1][k][0], shape[2][k]) for shape in forward for k in range(len(shape[1]))
            if shape[1][k][0] in (stretched.HEAD, stretched.ROLL)]
    assert all(code == stretched.ROLL for code, _ in held[1::2]) and not any(stored for _, stored in held[::2])
    assert {stored for code, stored in held if code == stretched.ROLL} == {False, True}
    inside, left = [], 0  # (each forward COPY row: whether a STRETCH header's rows hold it)
    for call in F._steps["forward", True].calls:
        for row in call.args[1] if getattr(call, "func", None) is compiled.forward else ():
            inside += [left > 0] * int(row[K.KIND] == K.COPY)
            left = row[K.SIZE] if row[K.KIND] == K.STRETCH else left - 1
    assert inside == [True] * 2 * 9  # (4 rolls a step, v's too: its stretch starts after v's; the slice's)


@pytest.mark.parametrize("join", ["two records", "a gap", "three slices"])
def test_a_join_that_is_not_a_roll_stays_rows(join, monkeypatch):
    """Joins of two records, of two slices with a gap between them, or of three slices: no HEAD or ROLL member."""
    monkeypatch.setattr(stretches.Stretch, "made", {})

    def f(u):
        v = u * 0.5
        w = {"two records": lambda: np.concatenate([v[3:], u[:3]]), "a gap": lambda: np.concatenate([u[4:], u[:3]]),
             "three slices": lambda: np.concatenate([u[5:], u[2:5], u[:2]])}[join]()
        m = len(w)
        return ((w * 2.0 - u[:m]) * u[:m]).sum()

    x = np.random.default_rng(6).normal(size=300)
    F = _trace(f, x, monkeypatch, True, True)
    value, grad = _run(F, x, monkeypatch, True, True)
    assert not any(member[0] in (stretched.HEAD, stretched.ROLL) for shape in stretches.Stretch.made
                   for member in shape[1])
    np.testing.assert_allclose(grad, central(lambda v: float(f(v)), x), rtol=1e-6, atol=1e-6)
    assert all(same_bits(a, b) for a, b in zip(
        (value, grad), _run(_trace(f, x, monkeypatch, True, False), x, monkeypatch, True, False), strict=True))


@pytest.mark.parametrize("name", ["huber", "hubers", "wheres"])
def test_selects_and_comparisons_are_members_both_ways(name, monkeypatch):
    """A select's two SELECT rows are a stretch's two members (stretched.PICK's codes: the first's value its branch,
    never stored; the second's the select's), forward and back; a comparison is a member forward (back it sends
    nothing: no row). huber's losses are a stretch each way, x, its abs, products, comparison and select; hubers' first
    forward too, the select moved up past the differences' row. The bits: the tests above."""
    monkeypatch.setattr(stretches.Stretch, "made", {})
    F = _trace(PROGRAMS[name], np.random.default_rng(8).normal(size=300), monkeypatch, True, True)
    _run(F, np.ones(300), monkeypatch, True, True)
    made = [x.shape for x in stretches.Stretch.made.values() if x.address]
    firsts, seconds = {stretched.PICK, stretched.PICK - 1}, {stretched.PICK - 2, stretched.PICK - 3}
    compares = {op for op, spelled in enumerate(ops.OPS) if spelled.kind == "compare"}
    for back in (False, True):
        codes = [[member[0] for member in shape[1]] for shape in made if shape[0] == back]
        pairs = [k for c in codes for k in range(len(c) - 1) if c[k] in firsts and c[k + 1] in seconds]
        assert pairs and sum(code in firsts | seconds for c in codes for code in c) == 2 * len(pairs)
        assert any(compares & set(c) for c in codes) != back
    assert not any(shape[2][k] for shape in made if not shape[0] for k, member in enumerate(shape[1])
                   if member[0] in firsts)
    longest = {back: max(len(shape[1]) for shape in made if shape[0] == back) for back in (False, True)}
    if name != "wheres":  # (u * 1.5, x, |x|, 0.5 x, its square, |x| - 0.35, its product, a < 0.7, the select's two)
        assert longest == {False: 10, True: 9 if name == "huber" else 8}  # (hubers' back 7 while adjoints shared the
        # values' regions: a region taken inside it)


def products(u):  # the other reverse row kinds: matmuls (a transposed operand), a logsumexp's lines, a gather's runs,
    X, W = u[:240].reshape(12, 20), u[240:300].reshape(20, 3)  # a sum; and a select
    h = np.tanh(X @ W)
    s = tape.logsumexp(h * 3.0, axis=1)
    g = u[np.r_[10:30, 50:70, 20:28]]
    return s.sum() + 0.1 * (h.T @ h).sum() + (g * np.where(g > 0.0, g, 0.5)).sum() + h.sum()


@pytest.mark.parametrize("name", [*PROGRAMS, "products"])
def test_adjoints_laid_out_apart_give_the_recorded_layouts_bits(name, monkeypatch):
    """The compiled tables' reverse rows of every kind and the back stretches on adjoints laid out by their own
    lifetimes (layout.adjoints: their arena shorter than the values'), the adjoint arena and every value region but
    the constants' and inputs' filled with NaN before each call, give the bits of the recorded layout's NumPy steps
    at edge points: an adjoint read from its value's place, or where another record's adjoint lives, shows."""
    f, x = PROGRAMS.get(name, products), np.random.default_rng(3).normal(size=300)
    F = _trace(f, x, monkeypatch, True, True)
    with monkeypatch.context() as m:
        m.setattr(layout, "laid", lambda s, *args: (s._plans, 2 ** 62, None, 2 ** 62))
        G = _trace(f, x, m, False, False)
    assert F._back_at is not None and G._back_at is None
    for point in edge_points(x):
        F._aadj[:] = np.nan
        for p in F._plans:
            if p.code not in (ACONSTANT, INPUT):
                driver.region(F._aval, p)[...] = np.nan
        got, want = _run(F, point, monkeypatch, True, True), _run(G, point, monkeypatch, False, False)
        assert all(same_bits(a, b) for a, b in zip(got, want, strict=True)), point[:3]
    back = {int(row[K.KIND]) for sweep in F._steps.values() if isinstance(sweep, steps.Sweep) for call in sweep.calls
            if getattr(call, "func", None) is compiled.reverse for row in call.args[1]}
    assert len(F._aadj) < len(F._aval) and (K.STRETCH in back or name in FORWARD_ONLY if name != "products" else
                                            {K.MATMUL, K.LOGSUMEXP, K.GATHER, K.SELECT, K.SUM} <= back), back


FORWARD_ONLY = {"mixture, k 9", "mixture, k 1", "spaces", "inplace", "again, held", "windows", "blocks"}  # (no back
# stretch; blocks' two of 2 rows, while adjoints were at their values' offsets, are cut where a step's adjoint takes
# the region of one its stretch reads)


def _members_back(F):
    """The members of each back stretch of F's compiled tables."""
    return [int(row[K.SIZE]) for sweep in F._steps.values() if isinstance(sweep, steps.Sweep) for call in sweep.calls
            if getattr(call, "func", None) is compiled.reverse for row in call.args[1] if row[K.KIND] == K.STRETCH]


def test_runs_run_as_rows_take_regions_between_them_not_inside(monkeypatch):
    """A fused run without a sum runs as rows (compiled.kept), and is laid out as rows at tape.trace (layout.lifetimes'
    rowed): its members' regions go to later records once dead, so a loop's arena holds what the reverse reads and a
    step's values, not every member for good (Burgers' 3.37 -> 1.71 million elements); but none is taken inside the
    run, whose rows are one stretch each way (a region taken there, a step's state's by the next, cut each step's back
    stretch in two: a view's adds go where the last member's adjoint is read as the pass goes). The bits: the rows'."""
    def f(u):  # (a Burgers step: two runs a step, cut by the rolls)
        for _ in range(8):
            d = np.roll(u, 1) - u
            u = u - 0.1 * u * d + 0.05 * (np.roll(u, -1) - 2.0 * u + np.roll(u, 1))
        return (u * u).sum()

    x = np.random.default_rng(4).normal(size=300)
    F = _trace(f, x, monkeypatch, True, True)
    with monkeypatch.context() as m:
        m.setattr(compiled, "kept", lambda s, runs: runs)
        G = _trace(f, x, monkeypatch, True, True)  # (every run fused)
    assert len(F._runs_first) == 1 and len(G._runs_first) == 16 and len(F._aval) < 0.7 * len(G._aval)
    rows = _trace(f, x, monkeypatch, True, False)
    for point in edge_points(x):
        for a, b in zip(_run(F, point, monkeypatch, True, True), _run(rows, point, monkeypatch, True, False),
                        strict=True):
            assert same_bits(a, b)
    assert len(_members_back(F)) >= 15 and set(_members_back(F)) == {4, 5}  # (a run's rows a stretch: 4 + 5 a step)
