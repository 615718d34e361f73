"""The passes tape.trace runs over a Function's plans, by NumPy over the plan table: each gives what a plain
Python loop over the plans gives (the loops they replaced, kept here as the reference); and np.pad's index,
one object for every step of a loop, on the tape, in the plan table, in a file and through cse."""

import collections
import importlib.util
import io
import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from test_layout import PROGRAMS, rowed
from test_stretches import PROGRAMS as STRETCH_PROGRAMS
from test_stretches import lines

import tape
from tape.analyses import prune
from tape.kernels import _array_driver as K
from tape.kernels import stretched
from tape.kernels.array_ops import ACONSTANT, ARRAY_KIND, INPUT, RULE
from tape.kernels.ops import ARRAY_BASE, ELEM, EXACT, FUSIBLE, IS_ARRAY, OPCODE, OPS
from tape.records import array_records
from tape.sweeps import arenas, compiled, driver, encoding, fused_numpy, fused_runs, fusion, layout, places, stretches
from tape.sweeps import live as _live
from tape.sweeps import plans as _plans


@pytest.fixture
def arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def _stencil(u, p):
    for t in range(10):
        padded = np.pad(u, 1, mode="wrap")
        u = u + 0.1 * p * (padded[:-2] + padded[2:] - 2.0 * u)
        if t % 3 == 0:
            u = u * (u[4] + 1.0)
    return 0.5 * (u * u).sum()


def _pads(x, p):
    u = x[:600].reshape(20, 30)
    for mode in ("wrap", "edge", "reflect", "symmetric", "wrap", "edge"):
        v = np.pad(u, ((1, 2), (3, 1)), mode=mode)
        w = np.pad(u[:, ::2], (0, 1), mode=mode)  # a view's pad
        u = 0.5 * u * p + 0.1 * v[1:-2, 3:-1] * v[:-3, 4:] + 0.01 * np.concatenate([w[:20, :15], w[1:, 1:]], axis=1)
    return (u * u).sum() + np.pad(x[3::7], 2, mode="reflect").sum()


ALL = {**PROGRAMS, "stencil": _stencil, "pads": _pads,
       "again": lambda u, p: STRETCH_PROGRAMS["again"](u) * p}  # (values a back stretch computes again: layout.again)


def _lifetimes_by_plan(s, runs, outputs, kept, rowed=()):
    """The lifetimes as a loop over the plans computes them (the reference)."""
    n = len(s._op)
    seed, end, back = n, 3 * n + 2, 2 * n + 1
    first, last, recompute = {}, {}, set()
    for run in runs:
        for k, r in enumerate(run.rows):
            first[r], last[r] = run.rows[0], run.rows[-1]
            if k < len(run.need) and run.need[k]:
                recompute.add(r)
    reached = _live.reaching(s._op, s._in0, s._in1, s._plans, [outputs])[0]
    life = np.array([(first.get(p.row, p.row), p.row, end, back - p.row) for p in s._plans], np.int64)
    for p in s._plans:
        y = p.row
        sees = RULE[p.code].back_reads(p, tuple(bool(s._op[v.record] == ACONSTANT) for v in p.inputs))
        if y in recompute:
            sees = (True,) * len(p.inputs) + sees[-1:]
        for v, read in zip(p.inputs, sees, strict=False):
            x = int(s._in0[v.record])
            life[x, 1] = max(life[x, 1], back - y if read else y)
            if reached[y] and RULE[p.code].derivative and s._op[v.record] != ACONSTANT:
                life[x, 2] = min(life[x, 2], back - last.get(y, y))
        if sees[-1]:
            life[s._in0[y], 1] = max(life[s._in0[y], 1], back - y)
    for r in np.flatnonzero(s._op == ELEM).tolist():
        x = int(s._in0[s._in0[r]])
        life[x, 1] = max(life[x, 1], r)
        if reached[r]:
            life[x, 2] = min(life[x, 2], back - r)
    _kept_again_by_plan(s, life, n)
    for run in rowed:
        for r in [*run.members.tolist(), *run.reads.tolist()]:
            life[s._in0[r], 1] = max(life[s._in0[r], 1], run.rows[-1])
            if life[s._in0[r], 2] <= life[s._in0[r], 3]:
                life[s._in0[r], 2] = min(life[s._in0[r], 2], back - run.rows[-1])
    for k, p in enumerate(s._plans):
        if p.code in (ACONSTANT, INPUT) or p.row in kept:
            life[k, :2] = 0, end
        if p.row in outputs:
            life[k, 1] = end
            if p.code != ACONSTANT:
                life[k, 2] = seed
        if p.row in kept:
            life[k, 2:] = seed, end
    return life


def _again_by_plan(s):
    """layout.again as a loop over the plans (the reference): the plans of an exact op whose views are smaller
    records than itself or, DEPTH deep at most, such plans."""
    size, depth = _plans.regions(s._plans)[2], {}
    for k, p in enumerate(s._plans):
        big = [int(s._in0[v.record]) for v in p.inputs[:2] if size[s._in0[v.record]] >= size[k]]
        if encoding.IS_EXACT[p.code] and all(x in depth for x in big):
            depth[k] = 1 + max((depth[x] for x in big), default=-1)
    return {k for k, d in depth.items() if d < layout.DEPTH}


def _kept_again_by_plan(s, life, n):
    """layout._kept_again as a loop over the plans, last first (the reference)."""
    ok, size, need, lived = _again_by_plan(s), _plans.regions(s._plans)[2], {}, life[:, 1].copy()
    for k in range(len(s._plans) - 1, -1, -1):
        if k in ok:
            t = max(lived[k] if lived[k] > n else -1, need.get(k, -1))
            for v in s._plans[k].inputs[:2]:
                x = int(s._in0[v.record])
                if size[x] < size[k]:
                    life[x, 1] = max(life[x, 1], t)
                else:
                    need[x] = max(need.get(x, -1), t)


@pytest.mark.parametrize("program", ALL)
def test_lifetimes_by_the_table_are_the_loops(program, arrays):
    """layout.lifetimes (NumPy over the plan table) equals the loop over the plans, with the Function's fused runs and
    those run as rows, every run fused, without runs, and with every record an output."""
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    F = tape.trace(ALL[program], x, params=0.7)
    kept = np.concatenate([F._input_rows, F._param_rows])
    rows = np.array([p.row for p in F._plans])
    fused, rows_of = list(F._runs_first.values()), rowed(F)
    for runs, outputs, others in ((fused, F._output_rows, rows_of), (fused + rows_of, F._output_rows, []),
                                  ([], F._output_rows, []), ([], rows[::3], rows_of)):
        want = _lifetimes_by_plan(F, runs, outputs.tolist(), kept.tolist(), others)
        assert np.array_equal(layout.lifetimes(F, runs, outputs, kept, others), want)


def _encode_by_plan(plans):
    """The plan table and places as a loop over the plans writes them (the reference)."""
    table = np.zeros((len(plans), _plans.WIDTH), np.int64)
    places, start, first = [], 0, {}
    for k, p in enumerate(plans):
        count = len(p.places)
        begins = first.setdefault(id(p.places), start) if count else start
        table[k, :6] = p.code, p.row, p.offset, sum(1 << a for a in p.axes), begins, count
        for at, shape in ((_plans.SHAPE, p.shape), (_plans.SHAPE + 9, p.wide)):
            table[k, at:at + 1 + len(shape)] = len(shape), *shape
        for j, cols in enumerate(_plans.VIEWS):
            if j < len(p.inputs):
                v = p.inputs[j]
                table[k, cols.start:cols.start + 3 + len(v.shape)] = v.record, v.offset, len(v.shape), *v.shape
                table[k, cols.start + 11:cols.start + 11 + len(v.strides)] = v.strides
            else:
                table[k, cols.start] = -1
        if begins == start:
            places.append(p.places)
            start += count
    return table, np.concatenate(places) if places else np.zeros(0, np.int64)


@pytest.mark.parametrize("program", ALL)
def test_encode_by_columns_is_the_loops(program, arrays):
    """plans.encode (the plans taken apart by zip and map) writes what the loop over the plans writes: the tape's
    plans, the Function's (on shared regions), a few of them, none."""
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    t = tape.Tape()
    X = t.array(x)
    ALL[program](X, t.var(0.7))
    F = tape.trace(ALL[program], x, params=0.7)
    for plans in (t._plans, F._plans, F._plans[1::3], F._plans[:1], []):
        got, want = _plans.encode(plans), _encode_by_plan(plans)
        assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got, want, strict=True))
    deep = F._plans[0]._replace(shape=(1,) * 9, row=17)
    with pytest.raises(ValueError, match="array record #17 has 9 dimensions"):
        _plans.encode([F._plans[0], deep])


def _reads_by_plan(op, in0, plans):
    """live.reads as a loop over the plans makes it (the reference)."""
    elems = np.flatnonzero(op == ELEM)
    readers, read = [elems], [in0[elems].astype(np.int64)]
    for p in plans:
        if p.name == "pack":
            readers.append(np.full(len(p.places), p.row, np.int64))
            read.append(p.places)
    readers.append(np.array([p.row for p in plans for _ in p.inputs], np.int64))
    read.append(np.array([v.record for p in plans for v in p.inputs], np.int64))
    reader = np.concatenate(readers)
    starts = np.zeros(len(op) + 1, np.int64)
    np.cumsum(np.bincount(reader, minlength=len(op)), out=starts[1:])
    return starts, np.concatenate(read)[np.argsort(reader, kind="stable")]


@pytest.mark.parametrize("program", ALL)
def test_reads_by_columns_are_the_loops(program, arrays):
    """live.reads (the plans taken apart by zip and map) gives what the loop over the plans gives."""
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    F = tape.trace(ALL[program], x, params=0.7)
    for plans in (F._plans, F._plans[: len(F._plans) // 2]):
        got, want = _live.reads(F._op, F._in0, plans), _reads_by_plan(F._op, F._in0, plans)
        assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize("program", ALL)
def test_relaid_plans_and_moved_leaves_are_the_loops(program, arrays, monkeypatch):
    """plans.relaid gives each plan's _replace(offset=...); arenas.move copies the constants' and inputs' numbers as
    a loop over the plans copies them (small leaves by one gather, big ones each)."""
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    F = tape.trace(ALL[program], x, params=0.7)
    size = np.array([p.size for p in F._plans], np.int64)
    offsets = np.cumsum(size[::-1])[::-1] - size  # the regions in reverse order
    to = _plans.relaid(F._plans, offsets)
    assert to == [p._replace(offset=int(o)) for p, o in zip(F._plans, offsets, strict=True)]
    assert all(type(q) is type(p) for p, q in zip(F._plans, to, strict=True))
    want = np.full(int(size.sum()), np.nan)
    for p, q in zip(F._plans, to, strict=True):
        if p.code in (ACONSTANT, INPUT):
            driver.region(want, q)[...] = driver.region(F._aval, p)
    for moved in (arenas.MOVED, 1):
        monkeypatch.setattr(arenas, "MOVED", moved)
        got = np.full(len(want), np.nan)
        arenas.move(F._plans, F._aval, to, got)
        assert np.array_equal(got, want, equal_nan=True)


def _gathers(F):
    return [p for p in F._plans if p.name == "gather"]


def test_a_loops_pads_share_one_index(arrays):
    """np.pad's copying modes in a loop: one index object for all the loop's gathers of one (shape, widths, mode),
    one range of the plan table's places, one object again in a loaded file; values and gradients those of the
    same gathers by NumPy indexing (an index array made each step), bit for bit; cse merges a pad taken twice."""
    x = np.random.default_rng(3).uniform(-1.0, 1.0, 600)
    F = tape.trace(_stencil, x, params=0.7)
    gathers = _gathers(F)
    assert len(gathers) == 10 and len({id(p.places) for p in gathers}) == 1
    ranges = F._table[[p.name == "gather" for p in F._plans], 4:6]  # (start, count) of its places
    assert len({tuple(r) for r in ranges.tolist()}) == 1
    buffer = io.BytesIO()
    F.save(buffer)
    buffer.seek(0)
    G = tape.load(buffer)
    assert len({id(p.places) for p in _gathers(G)}) == 1

    def by_index(u, p):  # the same gathers, each with an index of its own
        for t in range(10):
            padded = u[np.concatenate([[len(u) - 1], np.arange(len(u)), [0]])]
            u = u + 0.1 * p * (padded[:-2] + padded[2:] - 2.0 * u)
            if t % 3 == 0:
                u = u * (u[4] + 1.0)
        return 0.5 * (u * u).sum()
    H = tape.trace(by_index, x, params=0.7)
    assert len({id(p.places) for p in _gathers(H)}) == 1 and F.nbytes == H.nbytes  # (equal places of up to
    # arenas.SHARED elements are one object too, arenas._PLACES: ten index arrays made one a step, one kept)
    for point in (x, np.zeros(600), np.full(600, -0.0), np.full(600, 1e300), np.full(600, 5e-324),
                  np.resize([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-300], 600)):
        with np.errstate(all="ignore"):
            want = [H.value_and_grad(point, params=0.7), tape.value_and_grad(by_index)(point, 0.7)]
            for got in (F.value_and_grad(point, params=0.7), G.value_and_grad(point, params=0.7),
                        tape.value_and_grad(_stencil)(point, 0.7)):
                for a, b in zip(got, want[0], strict=True):
                    assert np.array_equal(a, b, equal_nan=True)
    pads = tape.trace(_pads, x, params=0.7)  # every copying mode, of views too: NumPy's numbers
    assert np.allclose(pads(x * 0.9, params=0.8), _pads(x * 0.9, 0.8), rtol=1e-13, atol=0)
    twice = tape.trace(lambda u: (np.pad(u, 1, mode="wrap") * np.pad(u, 1, mode="wrap")).sum(), x)
    assert len(_gathers(twice)) == 1 and twice.stats()["records_merged"] == 1


def _outside(starts, reads, j, rows):
    """Whether a record not in rows reads record j (by the readers of each record, from live.reads' table)."""
    reader = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    return not rows.issuperset(reader[reads == j].tolist())


def _find_by_plan(s, outputs, roots=None):
    """fusion.find as a loop over the plans (and the members of each run) finds the runs (the reference)."""
    n = getattr(s, "_n", len(s._op))
    if roots is None:
        arrays = [p for p in s._plans if p.size >= fusion.TAPE_RUNS or not p.shape]
        if len(arrays) - sum(not p.shape for p in arrays) < 2:
            return []
    table = _live.reads(s._op[:n], s._in0[:n], s._plans)
    if roots is None:
        live = np.ones(len(s._op), np.bool_)
    else:
        live = _live.reaching(s._op, s._in0, s._in1, s._plans, [np.array(sorted(outputs), np.int64), *roots],
                              table)[0]
        arrays = [p for p in s._plans if live[p.row]]

    def exact_power(p):  # x ** 2, 1 or 0: a general power is NumPy's step, not fused
        record, at, shape, _ = p.inputs[1]
        return not shape and s._op[record] == ACONSTANT and s._aval[s._plans[s._in0[record]].offset + at] in (
            2.0, 1.0, 0.0)

    def fits(p, members):
        return (ARRAY_KIND[p.code] in ("unary", "binary") and p.name in FUSIBLE and len(p.shape) in (1, 2)
                and (p.name != "pow" or exact_power(p)) and (not members or p.shape == members[0].shape))

    def next_to(members, p):
        return not members or all(not live[r] or (s._op[r] == ACONSTANT and not s._plans[s._in0[r]].shape)
                                  for r in range(members[-1].row + 1, p.row))

    runs, members, k = [], [], 0
    while k < len(arrays):
        p = arrays[k]
        if fits(p, members) and next_to(members, p):
            members.append(p)
            k += 1
            continue
        if ARRAY_KIND[p.code] == "constant" and not p.shape and members:
            k += 1
            continue
        if members:
            total = p if fusion._sums(p, members[-1]) and next_to(members, p) else None
            runs += _run_by_plan(s, members, total, table, outputs, live)
            members = []
            if total is not None:
                k += 1
                continue
        if not fits(p, []):
            k += 1
    return runs + (_run_by_plan(s, members, None, table, outputs, live) if members else [])


def _run_by_plan(s, members, total, table, outputs, live):
    if len(members) < 2:
        return []
    shape = members[0].shape
    slot = {p.row: k for k, p in enumerate(members)}
    rows = set(slot) | ({total.row} if total else set())
    code, ka, ia, kb, ib = (np.zeros(len(members), np.int64) for _ in range(5))
    kb[:] = 2
    imm, ext, ext_rows, inputs = [], [], [], []
    for k, p in enumerate(members):
        code[k] = OPCODE[p.name]
        for j, v in enumerate(p.inputs):
            kinds, index = (ka, ia) if j == 0 else (kb, ib)
            if v.record in slot and v == driver.whole(v.record, members[slot[v.record]]):
                kinds[k], index[k] = 0, slot[v.record]
            elif s._op[v.record] == ACONSTANT and not v.shape:
                kinds[k], index[k] = 2, len(imm)
                imm.append(float(s._aval[s._plans[s._in0[v.record]].offset + v.offset]))
            else:
                if v.shape != shape or v.record in slot or v.record in getattr(s, "_borrowed", {}):
                    return []
                kinds[k], index[k] = 1, len(ext)
                ext.append((s._plans[s._in0[v.record]].offset + v.offset,
                            *((0, v.strides[0]) if len(shape) == 1 else v.strides)))
                ext_rows.append(v.record)
                if s._op[v.record] != ACONSTANT:
                    inputs.append(v.record)
    need = fusion._needed(code, ka, ia, kb, ib, imm)
    if fusion._recycled(s, ext_rows, need, ka, ia, kb, ib, total.row if total else members[-1].row):
        return []
    written = np.array([p.offset if _outside(*table, p.row, rows) or p.row in outputs else -1 for p in members],
                       np.int64)
    n0, n1 = (1, shape[0]) if len(shape) == 1 else shape
    if all(row == n1 * step for _, row, step in ext):
        n0, n1 = 1, n0 * n1
    lags, ordered = fusion._lags(ext, ext_rows, set(inputs), n0, n1)
    program = (code, ka, ia, kb, ib, np.array(imm + [0.0]),
               np.array([(*view, lag, view[0]) for view, lag in zip(ext, lags, strict=True)] or [(0, 0, 0, 0, 0)],
                        np.int64))
    order = tuple(p.row for p in members) + ((total.row,) if total else ())
    dead = frozenset(r for r in range(order[0], order[-1]) if not live[r] and s._op[r] >= ARRAY_BASE)
    return [fused_runs.Run(order, program, need, written, tuple(dict.fromkeys(inputs)), (n0, n1),
                       total.row if total else -1, total.offset if total else -1,
                       np.array([p.row for p in members], np.int64), dead,
                       fused_numpy.twinned(code, kb, ib, program[5], ext), bool((written >= 0).any()), ordered,
                       fused_runs.Shaped.of(fusion._shape(program, need, written, total is not None)) if ordered else
                       None,
                       np.array(ext_rows, np.int64), written, total.offset if total else -1)]


def _same_runs(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        for name in fused_runs.Run._fields:
            x, y = getattr(a, name), getattr(b, name)
            for u, v in zip(*((x, y) if name == "program" else ((x,), (y,))), strict=True):
                if isinstance(v, np.ndarray):
                    assert u.dtype == v.dtype and u.shape == v.shape and np.array_equal(u, v), (name, u, v)
                    assert u.flags.c_contiguous and u.flags.writeable  # (the kernels' signatures)
                else:
                    assert u == v and type(u) is type(v), (name, u, v)


STEPS = [lambda a, p: a[::-1], lambda a, p: a * 0.5, lambda a, p: a ** 2, lambda a, p: np.sqrt(a * a + 1.0),
       lambda a, p: -a, lambda a, p: a / (a * a + 2.0), lambda a, p: np.exp(a * 0.1), lambda a, p: a - p,
       lambda a, p: a + a[..., :1] if a.ndim == 2 else a * a[0], lambda a, p: a * 2.0 + 1.0, lambda a, p: a ** 3,
       lambda a, p: a * a, lambda a, p: a * a[::-1], lambda a, p: a.T.T * a]


def _fused(rng, X, p):
    """A random program of elementwise runs: 1-d and 2-d shapes, views (reversed, shifted, of one input in several
    ways), 0-d constants, scalars and elem reads between, transcendentals, broadcasting, sums, dead records."""
    u, out = X[:242], []
    for _ in range(int(rng.integers(4, 12))):
        shape = [(240,), (12, 20), (20, 12), (120,)][int(rng.integers(4))]
        size = int(np.prod(shape))
        a = u[:size].reshape(shape) + u[1:size + 1].reshape(shape) * u[2:size + 2].reshape(shape)
        if rng.uniform() < 0.3:
            a = a * X[:2 * size:2].reshape(shape)  # a strided input (2-d: rows one after another)
        for _ in range(int(rng.integers(1, 8))):
            b = STEPS[int(rng.integers(len(STEPS)))](a, p)
            if rng.uniform() < 0.15:
                _ = a * 3.0  # a dead record between members
            if rng.uniform() < 0.15:
                out.append(b[(0,) * b.ndim] * 0.5)  # an elem record
            a = b if b.shape == a.shape else a
        if rng.uniform() < 0.4:
            out.append(a.sum())
        u = np.concatenate([a.reshape(-1), u])[:242]
    return (u * u).sum() + sum(out)


def _alike(X, p):
    """Runs alike but for which of their views read one record: their lags differ."""
    u, acc = X[:302], X[300:600]
    w = u * p
    for t in range(6):
        v = u if t % 2 else w
        acc = acc + (u[:-2] + v[1:-1] * u[2:])
    return (acc * acc).sum()


def _keyed(X, p):
    """Runs alike but for one thing (fusion.MADE's key): an exponent (2 or 3), a sum that joins, which views read one
    record, a view's place in its record, a number; each run ended by np.sin, which reads its last member."""
    c, acc, u = np.linspace(0.5, 1.5, 290), 0.0, X[:300]
    for t in range(24):
        a, b = u[:290], u[1 + t % 2:291 + t % 2] if t % 3 else u[:290]  # (lags 0, 1 or 2; each step's u anew)
        y = (a * (0.5 if t % 5 else 0.25) + b * c) ** (2 if t % 4 < 2 else 3)
        if t % 6 < 3:
            acc = acc + y.sum()
        u = np.concatenate([np.sin(y), X[:10]])
    return acc * p + u.sum()


@pytest.mark.parametrize("seed", range(12))
def test_runs_found_by_the_table_are_the_loops(seed, arrays):
    """fusion.find (NumPy over all members at once, the structure's choices once per distinct run, its Runs by map)
    finds the runs the loop over the plans finds, field for field: random programs of runs, the test programs, and a
    Tape's one reverse sweep (big arrays only: TAPE_RUNS made small)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 1.5, 600)
    programs = [lambda X, p: _fused(np.random.default_rng(seed), X, p), _alike, _keyed, *list(ALL.values())[seed::12]]
    fusion.MADE.clear()
    for f, pruned in itertools.product(programs, (True, False)):
        F = tape.trace(f, x, params=0.7, prune=pruned)
        roots = (F._input_rows, F._param_rows, F._check_rows)
        for outputs in (set(F._output_rows.tolist()), set(F._output_rows.tolist()) | {p.row for p in F._plans[::7]}):
            want = _find_by_plan(F, outputs, roots)
            for _ in range(2):  # each structure's choices made (or found: another program's), then found in MADE
                _same_runs(fusion.find(F, outputs, roots), want)
        t = tape.Tape()
        y = f(t.array(x), t.var(0.7))
        for runs in (1, 200):
            with pytest.MonkeyPatch.context() as m:
                m.setattr(fusion, "TAPE_RUNS", runs)
                _same_runs(fusion.find(t, {y.index}), _find_by_plan(t, {y.index}))


def _number_by_row(row):
    if row[K.NIN] != 2 or row[K.SIZE] == 1:
        return 0
    for q in (1, 0):
        if not row[K.VIEWS + K.VIEW * q + K.STRIDES:K.VIEWS + K.VIEW * q + K.STRIDES + 4].any():
            return q + 1
    return 0


def _view_by_row(row, q):
    f, shape = K.VIEWS + K.VIEW * q, row[K.SHAPE:K.SHAPE + 4]
    strides = row[f + K.STRIDES:f + K.STRIDES + 4]
    if (strides == row[K.OUT_STRIDES:K.OUT_STRIDES + 4]).all():
        return stretches.SAME
    out = row[K.OUT_STRIDES:K.OUT_STRIDES + 4].tolist()
    if row[K.KIND] != K.LINED or shape[0] != 1 or out[2:] != [shape[3], 1] or (shape[1] != 1 and
                                                                               out[1] != shape[2] * shape[3]):
        return stretches.OTHER
    if (strides == (0, 0, 0, 1)).all():
        return stretches.LINE
    if shape[1] == 1:
        return stretches.EACH if strides[3] == 0 and strides[2] != 0 else stretches.OTHER
    if strides[1] < 0 or strides[2] < 0:  # (a 3-d space: a line's place by its two indices)
        return stretches.OTHER
    return {1: stretches.ALONG, 0: stretches.AT}.get(int(strides[3]), stretches.OTHER)


def _joins_by_row(row, members, back):
    code = int(row[K.OP])
    if row[K.KIND] not in (K.ELEMENTWISE, K.LINED) or row[K.SIZE] < 2 or stretched.picked(code) is None and (
            OPS[code].name not in EXACT and OPS[code].kind != "compare"):
        return False
    if members and row[K.SIZE] != members[0][K.SIZE]:
        return False
    if row[K.KIND] == K.LINED and any(m[K.KIND] == K.LINED and (m[K.SHAPE:K.SHAPE + 4] != row[K.SHAPE:K.SHAPE + 4])
                                      .any() for m in members):
        return False
    rows, number = {int(m[K.ROW]) for m in members}, _number_by_row(row)
    for q in range(row[K.NIN]):
        how = 0 if q + 1 == number else _view_by_row(row, q)
        f = K.VIEWS + K.VIEW * q
        summed = how in (stretches.EACH, stretches.ALONG) or how == stretches.LINE and row[K.SHAPE + 1] != 1
        # (back: a sum across lines the pass does not make)
        if how == stretches.OTHER or how != stretches.SAME and (back and summed and row[f + K.WANT] or
                                                                int(row[f + K.REC]) in rows):
            return False
    return True


def _sends_by_row(members, spec, n):
    """stretches' sends of a span back as the loop over its views (the reference): (member, view, group), every view
    stretched.SUMMED where all are lines read by every line; None where a number wants an adjoint, a view's region meets
    the last member's adjoint, or lines meet other views."""
    last, views, sums, regions = int(members[-1][K.OUT]), [], [], []
    for k in range(len(members) - 1, -1, -1):
        _, number, sources, wants = spec[k]
        for q, j in enumerate(sources):
            f = K.VIEWS + K.VIEW * q
            if j >= 0 or not wants[q]:
                continue
            region, size = int(members[k][f + K.REGION]), int(members[k][f + K.REGION_SIZE])
            if number == q + 1 or (region < last + n and last < region + size):
                return None
            regions.append((j == stretches.AT, region, size))
            if j == stretches.AT:  # (one number a line of a 3-d space: its lines' sums in the pass)
                sums.append((k, q, stretched.EACHSUM))
                continue
            views.append((k, q, int(members[k][f + K.BASE]) if j != stretches.LINE else None))
    if any(a and not b and r < s + z and s < r + y for a, r, y in regions for b, s, z in regions):
        return None
    groups = _groups(views, n)
    return None if groups is None else tuple(sorted([*groups, *sums], key=lambda x: (-x[0], x[1])))


def _groups(views, n):
    """The groups of views sending in the pass or after it, as _sends_by_row."""
    if any(b is None for _, _, b in views):
        return tuple((k, q, stretched.SUMMED) for k, q, _ in views) if all(b is None for _, _, b in views) else None
    alone = list(dict.fromkeys(b for _, _, b in views if all(c == b or abs(c - b) >= n for _, _, c in views)))
    return tuple((k, q, alone.index(b) if b in alone else stretched.SCRATCH) for k, q, b in views)


def _again_by_row(s, members, spec, seen):
    """spec with each member's fifth field, whether the back stretch computes it again: a plan of layout.again whose
    views are numbers, lines, one number a line or members computed again, read by a partial or by such a member."""
    ok, on = _again_by_plan(s), []
    for k, (_, number, sources, _) in enumerate(spec):
        on.append(int(s._in0[members[k][K.ROW]]) in ok and all(
            number == q + 1 or j in (stretches.LINE, stretches.EACH) or (j >= 0 and on[j]) for q, j in
            enumerate(sources)))
    used = [on[k] and seen[k][-1] for k in range(len(spec))]
    for k, (_, _, sources, _) in enumerate(spec):
        for q, j in enumerate(sources):
            if j >= 0 and seen[k][q] and on[j]:
                used[j] = True
    for k in range(len(spec) - 1, -1, -1):
        for j in spec[k][2]:
            if j >= 0 and used[k]:
                used[j] = True
    return tuple((*member, used[k]) for k, member in enumerate(spec))


def _picked_by_row(rows):
    """rows (copies) with each select's two rows (a pair of SELECT rows of one record) as elementwise rows of its
    members' opcodes (stretched.PICK - taken - 2 * second); a SELECT row alone stays one (it joins no stretch)."""
    rows = [row.copy() for row in rows]
    for k in range(len(rows) - 1):
        a, b = rows[k], rows[k + 1]
        if a[K.KIND] == b[K.KIND] == K.SELECT and a[K.ROW] == b[K.ROW]:
            for second, row in enumerate((a, b)):
                row[K.KIND], row[K.OP] = K.ELEMENTWISE, stretched.PICK - int(row[K.OP] != 0) - 2 * second
    return rows


def _senders_by_plan(s):
    """How many reads of each record may send it an adjoint, a loop over the plans: its elem records' and the plans'
    views but a comparison's and a select's condition."""
    count = collections.Counter(int(s._in0[r]) for r in np.flatnonzero(s._op == ELEM))  # (an elem record's read)
    for p in s._plans:
        for q, v in enumerate(p.inputs):
            if not encoding.IS_COMPARE[p.code] and not (encoding.KIND[p.code] == K.SELECT and q == 0):
                count[int(v.record)] += 1
    return count


def _shape_by_row(s, members, back):
    SAME = stretches.SAME
    pick = [stretched.picked(int(m[K.OP])) for m in members]
    first = [x is not None and not x[0] for x in pick]
    if first[-1] or pick[0] is not None and pick[0][0]:  # (a select's two rows in one stretch)
        return None
    index = {int(m[K.ROW]): k for k, m in enumerate(members)}
    inside, read_back, spec, seen = collections.Counter(), set(), [], []
    for k, m in enumerate(members):
        reads = layout._reverse_reads(s, s._plans[s._in0[m[K.ROW]]])
        sources = tuple(index.get(int(m[K.VIEWS + K.VIEW * q + K.REC]), SAME if q + 1 == _number_by_row(m) else
                                  _view_by_row(m, q)) for q in range(m[K.NIN]))
        for q, j in enumerate(sources):
            if j >= 0:
                inside[int(members[j][K.ROW])] += 1
                if reads[q]:
                    read_back.add(j)
        if reads[-1]:
            read_back.add(k)
        spec.append((int(m[K.OP]), _number_by_row(m), sources, tuple(bool(m[K.VIEWS + K.VIEW * q + K.WANT])
                                                                     for q in range(m[K.NIN]))))
        seen.append(reads)
    outputs, readers = set(s._output_rows.tolist()), stretches._readers(s)
    held = tuple((int(m[K.ROW]) in outputs or readers[m[K.ROW]] != inside[int(m[K.ROW])]) and not first[k]
                 for k, m in enumerate(members))
    n = int(members[0][K.SIZE])
    if back:
        sends = _sends_by_row(members, spec, n)
        sent, senders = collections.Counter(), _senders_by_plan(s)  # (reads inside that send an adjoint)
        for _, _, sources, wants in spec:
            for q, j in enumerate(sources):
                if j >= 0 and wants[q]:
                    sent[int(members[j][K.ROW])] += 1
        for k, m in enumerate(members[:-1]):  # (a member sending to its views: its adjoint all made inside)
            row = int(m[K.ROW])
            wanting = any(spec[k][3]) or pick[k] is not None and pick[k][0] and any(spec[k - 1][3])
            if wanting and not first[k] and (row in outputs or senders[row] != sent[row] or not sent[row]):
                return None
        if sends is None:
            return None
        return True, _again_by_row(s, members, spec, seen), sends
    stored = tuple(bool(k in read_back or held[k]) and not first[k] for k in range(len(members)))
    starts = sorted(int(m[K.OUT]) for k, m in enumerate(members) if stored[k])
    if any(q - o < n for o, q in zip(starts, starts[1:], strict=False)):
        return None
    for k, (_, number, sources, _) in enumerate(spec):
        for q, j in enumerate(sources):
            f, how = K.VIEWS + K.VIEW * q, 0 if number == q + 1 else j
            b, line = int(members[k][f + K.BASE]), members[k][K.SHAPE:K.SHAPE + 4]
            strides = members[k][f + K.STRIDES:f + K.STRIDES + 4]
            length = 1 if how == 0 else n if how == SAME else 1 + sum(int(line[d] - 1) * int(strides[d])
                                                                       for d in (1, 2, 3))
            if j < 0 and any(b < int(w[K.OUT]) + n and int(w[K.OUT]) < b + length and not (
                    how == SAME and k <= i and b >= int(w[K.OUT])) for i, w in enumerate(members) if stored[i]):
                return None
    ok = _again_by_plan(s)
    skips = tuple(stored[k] and not held[k] and int(s._in0[m[K.ROW]]) in ok for k, m in enumerate(members))
    return (False, tuple(spec), stored, *[skips] * any(skips))


def _reduced_by_row(s, members, row, shape, back):
    """A span's shape with the logsumexp row after it taken in as a last member, as stretches._reduced (the reference,
    a loop over the members and views); None where it may not be."""
    f, last = K.VIEWS, members[-1]
    lines, width = int(row[K.SHAPE + 2]), int(row[K.SHAPE + 3])
    if row[K.KIND] != K.LOGSUMEXP or int(row[f + K.REC]) != int(last[K.ROW]) or int(row[f + K.BASE]) != int(
            last[K.OUT]) or lines * width != int(last[K.SIZE]) or row[f + K.STRIDES:f + K.STRIDES + 4].tolist() != [
            0, 0, width, 1] or row[K.SHAPE:K.SHAPE + 2].tolist() != [1, 1]:
        return None
    if any(m[K.KIND] == K.LINED and m[K.SHAPE:K.SHAPE + 4].tolist() != row[K.SHAPE:K.SHAPE + 4].tolist()
           for m in members):
        return None
    alone = stretches._readers(s)[last[K.ROW]] == 1 and int(last[K.ROW]) not in set(s._output_rows.tolist())
    ok, on = _again_by_plan(s), []
    for k, (_, number, sources, *_) in enumerate(shape[1]):
        on.append(int(s._in0[members[k][K.ROW]]) in ok and all(
            number == q + 1 or j in (stretches.LINE, stretches.EACH) or (j >= 0 and on[j]) for q, j in
            enumerate(sources)))
    again = [False] * len(members)
    stack = [len(members) - 1] if alone and on[-1] else []
    while stack:  # (the operand and every member it is computed from)
        k = stack.pop()
        again[k] = True
        _, number, sources, *_ = shape[1][k]
        stack += [j for q, j in enumerate(sources) if j >= 0 and number != q + 1]
    if back:
        records = {int(m[K.ROW]) for m in members}
        at, size = int(row[K.OUT]), int(row[K.SIZE])
        if not alone or not row[f + K.WANT] or any(g == stretched.SCRATCH for *_, g in shape[2]):
            return None
        for m in members:
            for q in range(m[K.NIN]):
                v = K.VIEWS + K.VIEW * q
                if m[v + K.WANT] and int(m[v + K.REC]) not in records and int(m[v + K.REGION]) < at + size and \
                        at < int(m[v + K.REGION]) + int(m[v + K.REGION_SIZE]):
                    return None
        spec = tuple((*member[:4], member[4] or again[k]) for k, member in enumerate(shape[1]))
        return True, (*spec, (stretched.REDUCED, 0, (len(spec) - 1,), (True,), False)), shape[2]
    skips = list(shape[3]) if len(shape) > 3 else [False] * len(members)
    skips[-1] = again[-1]
    member = (stretched.REDUCED, 0, (len(members) - 1,), (True,))
    return (False, (*shape[1], member), (*shape[2], True), *[(*skips, False)] * any(skips))


def _stretched_by_row(s, rows, back, tally):
    """stretches.stretched as a loop over the rows, NumPy rows read a number at a time, finds the stretches (the
    reference; tally counts the spans it refuses and those it takes at the table's end), on the rows as places.hoisted
    moves them (tests/test_hoisted.py)."""
    rows = places.hoisted(s, rows, back)
    need, order, spans, k = (0, 0), _picked_by_row(rows[::-1] if back else rows), {}, 0
    while k < len(order):
        pick = stretched.picked(int(order[k][K.OP])) if order[k][K.KIND] == K.ELEMENTWISE else None
        if pick is not None and pick[0]:  # (a select's second row starts none)
            k += 1
            continue
        end = k
        while end < len(order) and _joins_by_row(order[end], order[k:end], back):
            end += 1
        shape = _shape_by_row(s, order[k:end], back) if end - k >= 2 else None
        tally["refused"] += end - k >= 2 and shape is None
        reduced = _reduced_by_row(s, order[k:end], order[end], shape, back) if shape and end < len(order) else None
        shape, end = (reduced, end + 1) if reduced else (shape, end)
        tally["reduced"] += reduced is not None
        tally["at an end"] += shape is not None and end == len(order)
        if shape is None:
            k += 1
            continue
        spans[len(rows) - end if back else k] = (end - k, stretches.Stretch.of(shape))
        kept = len({j for j, _, group in shape[2] if group == stretched.SCRATCH}) if back else 0
        need = (max(need[0], kept), max(need[1], int(order[k][K.SIZE]) if kept else 0))
        k = end
    out, pending = [], {}
    for i, row in enumerate(rows):
        if i in spans:
            header = np.zeros(K.WIDTH, np.int64)
            header[K.KIND], header[K.SIZE] = K.STRETCH, spans[i][0]
            for stretch in {spans[i][1], stretches.Stretch.of(spans[i][1].shape[:3])}:  # (one that skips: and its
                pending.setdefault(stretch, []).append(len(out))  # storing one)
            out.append(header)
        out.append(row)
    return out, pending, need


def _tiny(X, p):
    """Rows of one element (no stretch), rows whose operands are both one number read by all, a line read by every
    line of a 3-d space."""
    u, v, w = X[:1] * 2.0, X[:40], X[:240].reshape(4, 6, 10)
    for _ in range(4):
        u = u * u - X[1:2] * p
        v = v * 0.5 + (np.zeros(40) + X[3]) * X[4]
        w = (w * 0.5 + 1.0) * X[240:250] - w
    return (u * u).sum() + (v * v).sum() + (w * w).sum()


def _gathered(X, p):
    """Gathers, a 0-d constant, strided and reversed views, a 2-d block's rows, members read by a gather and a sum."""
    u, index, block = X[:120], np.arange(119, -1, -3), X[:240].reshape(12, 20)
    for _ in range(4):
        v = u * np.array(0.5) + u[::-1] * p
        w = v[index] * 2.0 - u[index]  # (a gather's rows between elementwise rows)
        u = np.concatenate([w, w[::-1], v[:80] * w[0]])[:120] * 0.9 - v
        block = block[:, ::-1] * 0.5 + block.sum(0) * 0.01 - block
    return (u * u).sum() + (block * block).sum() + v.sum()


def _refusing(X, p):
    """arrays4k's kind (bench's tanh layer, slices, a repeated sin): a member read after its stretch and by partials
    refuses spans forward and back, and each shorter one tried after (found in s15)."""
    h, W = X[:36].reshape(6, 6), X[36:72].reshape(6, 6) * 0.1
    for _ in range(8):
        b = np.tanh(h @ W) * h + 0.5
        c = b[:, 1:] - b[:, :-1]
        h = h * 0.9 + 0.1 * b + 0.001 * c.sum() + 0.01 * np.sin(h) * np.sin(h) * p
    return (h * h).sum()


def _bench(name):
    """bench/array_programs.py's program at a small size (its function, its point)."""
    spec = importlib.util.spec_from_file_location("array_programs", "bench/array_programs.py")
    programs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(programs)
    programs.nn = SimpleNamespace(sigmoid=tape.sigmoid, logsumexp=tape.logsumexp, loop=programs.loop)
    small = {"mlp": (4, 8), "attention": (8, 4), "gru": (4, 3, 4), "filter": (200, 3), "mixture": (60, 9),
             "heat-concatenate": (100, 12), "heat-pad": (100, 12, True), "stencil5": (300, 3), "mlp2": (4, 6, 3)}
    make = {"filter": programs.filter1d, "heat-concatenate": programs.heat, "heat-pad": programs.heat}
    x, f, *_ = make.get(name, getattr(programs, name, None))(*small[name])
    return f, x


class _Outputs:
    """A Function whose outputs are others (outputs, record indices)."""

    def __init__(self, s, outputs):
        self.s, self._output_rows = s, outputs

    def __getattr__(self, name):
        return getattr(self.s, name)


def _shaken(s, rows, rng):
    """(s with some of the rows' records outputs too, the rows with some places moved by up to a row's size (or next
    to the row before's), some views made to read their own row's output, some adjoints wanted or not): tables no
    program may make, for the checks no program reaches (stored members that meet, a member reading its own
    region)."""
    rows = [row.copy() for row in rows]
    for row, before in zip(rows, [rows[-1], *rows], strict=False):
        f = K.VIEWS + K.VIEW * int(rng.integers(2))
        if rng.uniform() < 0.1:  # (next to the row before's, or one element into it)
            row[K.OUT] = max(0, before[K.OUT] + rng.choice([-1, 1]) * (row[K.SIZE] - rng.integers(2)))
        for field in (K.OUT, f + K.BASE, f + K.REGION, f + K.REGION_SIZE):
            if rng.uniform() < 0.1:
                n = int(row[K.SIZE])
                row[field] = max(0, row[field] + rng.choice([-n, 1 - n, n - 1, n, int(rng.integers(-n, n + 1))]))
        if rng.uniform() < 0.05:
            row[f + K.BASE] = row[K.OUT]
        if rng.uniform() < 0.05:
            row[f + K.WANT] = 1 - row[f + K.WANT]
    records = [int(row[K.ROW]) for row in rows]
    outputs = rng.choice(records, int(rng.integers(0, len(records) // 8 + 1)))
    return _Outputs(s, np.concatenate([s._output_rows, outputs]).astype(np.int64)), rows


def _checked_against_the_loop(monkeypatch, seed):
    """Swap stretches.stretched_all for one that checks each sweep's stretches against _stretched_by_row's, field for
    field (the shapes' reprs too), on the sweep's tables, on its rows cut into tables at random places, and on those
    shaken (_shaken); the tally of the loop's refused spans and spans at a table's end."""
    stretched_all, tally, rng = stretches.stretched_all, collections.Counter(), np.random.default_rng(seed)

    def checked(s, tables, back):
        rows = [row for table in tables for row in table]
        cuts = np.sort(rng.choice(len(rows) + 1, int(rng.integers(0, len(rows) // 2 + 1)), replace=True))
        cut = [rows[a:b] for a, b in itertools.pairwise([0, *cuts.tolist(), len(rows)]) if b > a]
        shaken, moved = _shaken(s, rows, rng)
        for s_, tables_ in ((s, tables), (s, cut), (shaken, [moved[a:a + len(t)] for a, t in zip(
                np.cumsum([0, *map(len, cut)]).tolist(), cut, strict=False)])):
            for table, got in zip(tables_, stretched_all(s_, tables_, back), strict=True):
                want = _stretched_by_row(s_, table, back, tally)
                assert len(got[0]) == len(want[0]) and all(np.array_equal(a, b) for a, b in zip(got[0], want[0],
                                                                                                  strict=True))
                assert got[1:] == want[1:] and all(type(x) is int for x in got[2])
                assert sorted(map(repr, (x.shape for x in got[1]))) == sorted(map(repr, (x.shape for x in want[1])))
                tally["stretches"] += sum(map(len, got[1].values()))
        return stretched_all(s, tables, back)

    monkeypatch.setattr(stretches, "stretched_all", checked)
    monkeypatch.setattr(stretches, "ROLLS", False)  # (the loop takes no roll in: tests/test_stretches.py's rolls)
    monkeypatch.setattr(stretches.Stretch, "made", {})
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    return tally


@pytest.mark.parametrize("seed", range(6))
def test_stretches_found_by_the_table_are_the_loops(seed, arrays, monkeypatch):
    """stretches.stretched_all (a sweep's tables at once: each row's bar and the spans by NumPy, the spans tried in
    rounds, each kind of span's shape once) finds the stretches the loop over the rows finds, forward and back, on
    every table of random programs, the stretch tests' programs, gathers, refused spans (and those at the tables'
    ends: their rows cut into tables at random)."""
    tally = _checked_against_the_loop(monkeypatch, seed)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 1.5, 600)
    for f in [lambda X, p: _fused(np.random.default_rng(seed), X, p), _tiny, _gathered, _refusing,
              *list(ALL.values())[seed::6]]:
        tape.trace(f, x, params=0.7).value_and_grad(x, params=0.7)
    for f, size in [*((f, 600) for f in list(STRETCH_PROGRAMS.values())[seed::6]), (lines(4100), 3 * 4101 + 4100)]:
        with np.errstate(all="ignore"):
            tape.trace(f, np.random.default_rng(seed).normal(size=size)).value_and_grad(x[:1].repeat(size))
    assert tally["stretches"] > 0 and tally["refused"] > 0 and tally["at an end"] > 0


@pytest.mark.parametrize("name", ["mlp", "attention", "gru", "filter", "mixture", "heat-concatenate", "heat-pad",
                                  "stencil5", "mlp2"])
def test_stretches_of_the_bench_programs_are_the_loops(name, arrays, monkeypatch):
    """The bench programs' stretches (bench/array_programs.py, small) are the row loop's."""
    tally = _checked_against_the_loop(monkeypatch, len(name))
    f, x = _bench(name)
    tape.trace(f, x).value_and_grad(x)
    assert tally["stretches"] > 0 or name in ("mlp", "mlp2", "attention")
    assert (tally["reduced"] > 0) == (name == "mixture")  # (its logsumexp taken into its stretches)


def _kept_plans_by_plan(pruned, arena, plans, callees, live, new_row):
    """prune._kept_plans as a loop over the plans renumbers and packs them (the reference; without leaves_only)."""
    op, in0 = pruned["op"], pruned["in0"]
    in0[IS_ARRAY[op]] = np.arange(np.count_nonzero(IS_ARRAY[op]))
    in0[op == ELEM] = new_row[in0[op == ELEM]]
    kept, regions, offset, slots = [], [], 0, {}
    for p in plans:
        if not live[p.row]:
            continue
        places = p.places
        if ARRAY_KIND[p.code] in ("pack", "call"):
            places = new_row[places] if ARRAY_KIND[p.code] == "pack" else np.array(
                [slots.setdefault(int(places[0]), len(slots))], np.int64)
            places.flags.writeable = False
        kept.append(p._replace(row=int(new_row[p.row]), offset=offset, places=places, inputs=tuple(
            v._replace(record=int(new_row[v.record])) for v in p.inputs)))
        regions.append(p)
        offset += p.size
    pruned["plans"], pruned["plan_places"] = _plans.encode(kept)
    pruned["arena"] = np.concatenate([arena[p.offset:p.offset + p.size] for p in regions]) if regions else np.zeros(0)
    return kept, [callees[old] for old in slots]


def _same_plans(got, want):
    assert len(got) == len(want)
    for p, q in zip(got, want, strict=True):
        assert type(p) is type(q) and p._replace(places=None) == q._replace(places=None)
        assert all(type(x) is int for x in (p.row, p.offset, *(v.record for v in p.inputs)))
        assert np.array_equal(p.places, q.places) and p.places.dtype == q.places.dtype
        assert p.places.flags.writeable == q.places.flags.writeable


@pytest.mark.parametrize("program", [*ALL, "fused", "alike", "tiny"])
def test_kept_plans_by_zip_are_the_loops(program, arrays, monkeypatch):
    """prune's renumbering (the plans taken apart by zip and rebuilt by map) gives what the loop over the plans gives:
    plans (rows, offsets, views' records, pack rows, callee slots), the table, arena, in0 and callees."""
    f = {"fused": lambda X, p: _fused(np.random.default_rng(5), X, p), "alike": _alike, "tiny": _tiny}.get(
        program) or ALL[program]
    kept_plans, seen = prune._kept_plans, []

    def both(pruned, arena, plans, callees, live, new_row, leaves_only):
        mine = dict(pruned, in0=pruned["in0"].copy())
        want = _kept_plans_by_plan(mine, arena, plans, callees, live, new_row)
        got = kept_plans(pruned, arena, plans, callees, live, new_row, leaves_only)
        _same_plans(got[0], want[0])
        assert [id(c) for c in got[1]] == [id(c) for c in want[1]]
        for name in ("plans", "plan_places", "in0") + (() if leaves_only else ("arena",)):
            assert np.array_equal(pruned[name], mine[name]) and pruned[name].dtype == mine[name].dtype
        seen.append(len(plans) - len(got[0]))
        return got

    monkeypatch.setattr(prune, "_kept_plans", both)
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)

    def g(X, p):  # dead records first: every row moves
        _ = X * 3.0, np.stack([X[0] * p, X[1]])
        return f(X * 1.5, p)
    tape.trace(g, x, params=0.7)
    assert seen and min(seen) > 0  # plans dropped


def _twice(X, p):
    """A loop written twice: each step of the copy merges only once the step before it has (more than ROUNDS), beside
    a pad, a pack and a constant written twice."""
    def run(u):
        for _ in range(12):
            u = np.sin(u) * 0.5 + u * p
        return u
    packs = np.stack([X[0] * p, X[1]]) * np.stack([X[0] * p, X[1]])
    return (run(X) * run(X)).sum() + packs.sum() + (np.pad(X, 1, mode="wrap")[2:] * np.arange(600.0)).sum() + (
        np.pad(X, 1, mode="wrap")[:-2] * np.arange(600.0)).sum()


def _cse_programs():
    from test_cse import PROGRAMS as CSE_PROGRAMS
    return {**{name: (f, None) for name, f in ALL.items()}, "twice": (_twice, None), "fused": (
        lambda X, p: _fused(np.random.default_rng(5), X, p), None), "alike": (_alike, None),
        **{f"cse {name}": (f, x0) for name, (f, x0) in CSE_PROGRAMS.items()}}


@pytest.mark.parametrize("program", list(_cse_programs()))
def test_cse_by_rounds_is_the_in_order_loop(program, arrays, monkeypatch):
    """cse's rounds (a Numba call and NumPy over the plan table each) give what the in-order loop over the plans gives
    (ROUNDS 0): records merged, renamed in0/in1/outputs, plans field for field; a loop written twice takes the loop."""
    from tape.analyses import cse as module

    f, x0 = _cse_programs()[program]
    real, firsts, seen = module.cse, module._firsts, []

    def both(a, plans):
        before = len(passes)
        got = real(a, plans)
        rounds = len(passes) - before
        monkeypatch.setattr(module, "ROUNDS", 0)
        want = real(a, plans)
        monkeypatch.undo()
        assert got[2] == want[2] and got[0].keys() == want[0].keys()
        for name in got[0]:
            assert got[0][name].tobytes() == want[0][name].tobytes() and got[0][name].dtype == want[0][name].dtype
        _same_plans(got[1], want[1])
        seen.append((got[2], rounds))
        return got

    passes = []
    monkeypatch.setattr(module, "_firsts", lambda *args: passes.append(1) or firsts(*args))
    monkeypatch.setattr(prune, "cse", both)
    if x0 is None:
        def g(X, p):  # a repeat after the program, whose records merge in the second round
            return f(X, p) + (np.tanh(X[:300] * p) * 2.0).sum() + (np.tanh(X[:300] * p) * 2.0).sum()
        tape.trace(g, np.random.default_rng(8).uniform(0.2, 1.5, 600), params=0.7)
    else:
        tape.trace(lambda x: f(x, False), x0)
    assert max(merged for merged, _ in seen) > 0 or program == "calling"  # (records merged; not in "calling"'s
    # passes seen here)
    assert any(rounds == module.ROUNDS for _, rounds in seen) == (program == "twice")  # (then the in-order loop)


def _collide(X, p):
    """Constants of one shape, other numbers; gathers of one record, other places; a pad's index twice."""
    return (X[:4] * np.array([1.0, 2.0, 3.0, 4.0])).sum() + (X[:4] * np.array([4.0, 3.0, 2.0, 1.0]) * p).sum() + (
        X[[1, 2]] * 2.0).sum() + (X[[2, 1]] * 2.0).sum() + (np.pad(X, 1)[1:] * p).sum() + (np.pad(X, 1)[1:] * p).sum()


@pytest.mark.parametrize("program", ["collide", "cse packs"])
def test_cse_keys_whose_hashes_meet_by_chance_take_the_loop(program, arrays, monkeypatch):
    """Places' and numbers' hashes all alike (as if every piece met another's by chance): rows of one hash are compared
    element by element, none merge wrongly, and cse takes the in-order loop: the same merge."""
    from tape.analyses import cse as module

    f, x0 = {**_cse_programs(), "collide": (_collide, None)}[program]
    real, found = module.cse, []
    monkeypatch.setattr(module, "_firsts", lambda *args, firsts=module._firsts: found.append(firsts(*args)) or
                        found[-1])

    def both(a, plans):
        with monkeypatch.context() as m:
            m.setattr(module, "_hashes", lambda values, starts, counts: (0 * starts, 0 * starts))
            got = real(a, plans)
        with monkeypatch.context() as m:
            m.setattr(module, "ROUNDS", 0)
            want = real(a, plans)
        assert got[2] == want[2] and all(got[0][k].tobytes() == want[0][k].tobytes() for k in want[0])
        _same_plans(got[1], want[1])
        return got

    monkeypatch.setattr(prune, "cse", both)
    g = (lambda x: f(x, False)) if x0 is not None else None
    tape.trace(g, x0) if g else tape.trace(f, np.linspace(0.2, 1.5, 600), params=0.7)
    assert any(x is None for x in found)  # (the loop taken)


def _compact_by_plan(s, runs, outputs, kept, rowed, scan=32):
    """layout.compact as s16 wrote it, a first-fit loop over every plan (a region of its size class or the next, at
    most twice as big, among the first ``scan`` of each), kept for its arena's length: the one compact lays out is no
    longer."""
    life = layout.lifetimes(s, runs, outputs, kept, rowed)
    n = len(s._op)
    open_ = {}
    offsets, top = [], 0
    for k, p in enumerate(s._plans):
        born, dies, size = int(life[k, 0]), int(life[k, 1]), p.size
        bits, own = size.bit_length(), size <= layout.SMALL and layout.PACK[p.code]
        near = [*open_.get(bits, [])[:scan], *open_.get(bits + 1, [])[:scan]]
        region = next((r for r in near if size <= r[1] <= 2 * size and born > r[2]), None)
        if region is None or own:
            region = [top, size, -1]
            top += size
            if not own:
                open_.setdefault(bits, []).append(region)
        region[2] = max(region[2], dies)
        if dies >= n and not own:
            open_[region[1].bit_length()].remove(region)
        offsets.append(region[0])
    return [p._replace(offset=o) for p, o in zip(s._plans, offsets, strict=True)], top


def _freed_by_plan(kind, born, dies, alone):
    """layout._freed as a loop (the reference): each kind's plans in order of birth, each taking the region of the
    first of its kind to die that no plan took yet, if that one died before it is born."""
    came = np.full(len(kind), -1)
    for k in np.unique(kind).tolist():
        plans = np.flatnonzero((kind == k) & ~alone)
        by_death, taken = plans[np.argsort(dies[plans], kind="stable")].tolist(), 0
        for q in plans[np.argsort(born[plans], kind="stable")].tolist():
            if taken < len(by_death) and dies[by_death[taken]] < born[q]:
                came[q], taken = by_death[taken], taken + 1
    return came


def _compact_by_loop(s, runs, outputs, kept, rowed):
    """layout.compact as loops (the reference): regions handed on within a size class (_freed_by_plan), then twice to
    the class beside, each region as big as the most it holds, laid out in the order of its first plan."""
    life, n = layout.lifetimes(s, runs, outputs, kept, rowed), len(s._op)
    size = np.array([p.size for p in s._plans], np.int64)
    kind = np.array([int(m).bit_length() for m in size])
    alone = np.array([(m <= layout.SMALL and layout.PACK[p.code]) or (b <= 0 and d >= n)
                      for m, p, b, d in zip(size, s._plans, life[:, 0], life[:, 1], strict=True)], np.bool_)

    def first(came):
        at = list(range(len(came)))
        for k in range(len(came)):
            while came[at[k]] >= 0:
                at[k] = came[at[k]]
        return at

    came = _freed_by_plan(kind, life[:, 0], life[:, 1], alone)
    for pairs in (kind // 2, (kind + 1) // 2):
        last = np.zeros(len(size), np.int64)
        for k, head in enumerate(first(came)):
            last[head] = max(last[head], life[k, 1])
        came = np.maximum(came, _freed_by_plan(pairs, life[:, 0], last, alone | (came >= 0)))
    at, most, offset, top = first(came), {}, {}, 0
    for k, head in enumerate(at):
        most[head] = max(most.get(head, 0), int(size[k]))
    for head in sorted(most):
        past = most[head] % layout.PAGE  # (a length within NEAR of whole pages: room to NEAR past them)
        near = most[head] >= layout.PAGE and min(past, layout.PAGE - past) < layout.NEAR
        offset[head], top = top, top + most[head] + ((layout.NEAR - past) % layout.PAGE if near else 0)
    ends = {head: offset[head] + most[head] for head in most}
    return [p._replace(offset=offset[head]) for p, head in zip(s._plans, at, strict=True)], max(ends.values(),
                                                                                                  default=0)


@pytest.mark.parametrize("program", [*ALL, "fused", "alike", "tiny"])
def test_compact_is_the_loop(program, arrays, monkeypatch):
    """layout.compact (regions handed on by NumPy, _freed) lays out what the loops lay out (_compact_by_loop), field
    for field and the arena's length, on the Function's lifetimes and on random ones (born at 0, living past the
    records, sizes of packs their own). On the Function's lifetimes no two plans meet in the arena while their values
    live (layout.sharing), and its arena (unstaggered) is no longer than the first-fit loop's (s16's); nor in the
    adjoint arena (layout.adjoints) while their adjoints live, each living one inside it."""
    f = {"fused": lambda X, p: _fused(np.random.default_rng(5), X, p), "alike": _alike, "tiny": _tiny}.get(
        program) or ALL[program]
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    F = tape.trace(f, x, params=0.7)
    args = F, list(F._runs_first.values()), F._output_rows, np.concatenate([F._input_rows, F._param_rows]), rowed(F)
    n, m, real, freed = len(F._op), len(F._plans), layout.lifetimes, layout._freed

    def both():
        got, want = layout.compact(*args), _compact_by_loop(*args)
        _same_plans(got[0], want[0])
        assert got[1] == want[1] == max((p.offset + p.size for p in got[0]), default=0)
        return got

    plans, size = both()
    _, offset, sizes = _plans.regions(plans)
    assert layout.sharing(offset, sizes, real(*args)[:, :2]) == []
    with monkeypatch.context() as patched:  # (without the room staggered regions take past whole pages)
        patched.setattr(layout, "staggered", lambda length: length)
        assert layout.compact(*args)[1] <= _compact_by_plan(*args)[1]
    back, end = layout.adjoints(F, args[1], F._output_rows, real(*args))
    lives = real(*args)[:, 2] <= real(*args)[:, 3]
    assert layout.sharing(back, sizes, real(*args)[:, 2:]) == [] and (back + sizes <= end)[lives].all()
    kinds = np.random.default_rng(m).integers(0, 4, m)
    for alone in (np.zeros(m, np.bool_), np.arange(m) % 5 == 0):
        life = real(*args)
        assert np.array_equal(freed(kinds, life[:, 0], life[:, 1], alone), _freed_by_plan(kinds, life[:, 0],
                                                                                           life[:, 1], alone))
    for seed in range(8):
        rng = np.random.default_rng(seed)
        born = np.where(rng.random(m) < 0.3, 0, rng.integers(0, n, m))
        life = real(*args)
        late = rng.random(m)
        life[:, 0] = born
        life[:, 1] = np.where(late < 0.1, n, born + np.where(late < 0.3, n, rng.integers(0, n // 4, m)))
        monkeypatch.setattr(layout, "lifetimes", lambda *a, life=life: life.copy())
        monkeypatch.setattr(layout, "SMALL", int(rng.choice([0, 256, 10**6])))
        both()


def _table_by_table(rows, stretched=None):
    """compiled._tables' item for one table, made alone (the reference: grouped's step per table it replaced)."""
    rows, pending, (kept, wide) = stretched or (rows, None, (0, 0))
    table = np.asarray(rows)
    products = table[table[:, 0] == K.MATMUL, 6:9]
    m, n = table[table[:, 0] == K.LOGSUMEXP, 8:10].T
    elementwise, lined = table[table[:, 0] == K.ELEMENTWISE], table[table[:, 0] == K.LINED]
    paired = elementwise[np.isin(elementwise[:, 1], compiled.PAIRS)]  # (x ** y's: 2 n elements in a fifth row)
    picks = [row for row in table if row[0] == K.SELECT]  # (a branch not laid out as the output: its sends first)
    strides = K.VIEWS + K.VIEW + K.STRIDES
    size = max(int(elementwise[compiled._scratched(elementwise), 4].max(initial=1)),
               max((int(row[4]) for row in picks if list(row[strides:strides + 4]) != list(row[10:14])), default=1),
               int(2 * paired[:, 4].max(initial=0)),
               int(compiled._lines_back(lined).max(initial=1)),
               int((products[:, 1] * np.maximum(products[:, 0], products[:, 2])).max(initial=1)),
               int(np.maximum(m, np.minimum(m * n, np.maximum(n, compiled.LINES))).max(initial=1)))
    scratch = np.empty((max(4 + bool(len(paired)), kept), max(size, wide)))
    return compiled.TABLE, (table, scratch) if pending is None else (table, scratch, pending)


SCRATCHES = [lambda X, p: ((X[:60].reshape(2, 30) * p) @ X[:300].reshape(30, 10)).sum(),  # a matmul wider than tall
             lambda X, p: (tape.logsumexp(X[:600].reshape(75, 8), axis=1) * X[:75]).sum() * p]  # many short lines


@pytest.mark.parametrize("seed", range(6))
def test_tables_made_at_once_are_made_one_by_one(seed, arrays, monkeypatch):
    """compiled._tables (every table's scratch by NumPy over all their rows at once) makes each table as it was made
    alone: its rows, its scratch's shape and type, its pending kernels; a sweep's tables (forward and back, with their
    stretches) and a walk's without a sweep (compiled.ready's), on random programs and the stretch tests'."""
    tables, made = compiled._tables, []

    def both(stretched, back):
        got = tables(stretched, back)
        assert len(got) == len(stretched)
        for one, (kind, what) in zip(stretched, got, strict=True):
            want_kind, want = _table_by_table(one[0]) if one[1] is None else _table_by_table(None, one)
            assert kind == want_kind and len(what) == len(want)
            assert what[0].dtype == want[0].dtype and np.array_equal(what[0], want[0])
            assert what[1].shape == want[1].shape and what[1].dtype == want[1].dtype
            assert what[2:] == want[2:] and all(a is b for a, b in zip(what[2:], want[2:], strict=True))
            made.append(len(what))
        return got

    monkeypatch.setattr(compiled, "_tables", both)
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 1.5, 600)
    for f in [lambda X, p: _fused(np.random.default_rng(seed), X, p), _tiny, *SCRATCHES, *list(ALL.values())[seed::6]]:
        F = tape.trace(f, x, params=0.7)
        F.value_and_grad(x, params=0.7)
        list(compiled.grouped(F, driver.forward_walk(F, 0, len(F._op), F._runs_first)))
    for f, size in [*((f, 600) for f in list(STRETCH_PROGRAMS.values())[seed::6]), (lines(4100), 3 * 4101 + 4100)]:
        with np.errstate(all="ignore"):
            tape.trace(f, np.random.default_rng(seed).normal(size=size)).value_and_grad(x[:1].repeat(size))
    assert made.count(2) >= 4 and made.count(3) >= 4


def _regions_by_item(s, kind, what, back=False):
    """The arena regions (start, stop) of table rows (kind TABLE, what their array) or of a walk's item (back: in the
    adjoint arena), as NumPy's arrays (s16's compiled._regions, the reference); None for an item never moved."""
    if kind == compiled.TABLE:
        found = np.concatenate([what[:, [K.OUT, K.SIZE]], *(what[:, K.VIEWS + K.VIEW * q + K.REGION:][:, :2]
                                                            for q in range(2))])
        return np.stack([found[:, 0], found.sum(1)], 1)
    if kind == driver.RECORD and RULE[s._op[what]].reads != "callee":
        records = [what, *(v.record for v in s._plans[s._in0[what]].inputs)]
    elif kind == driver.SCALARS:
        records = s._in0[what[0]].tolist()
    else:
        return None
    start = driver.starts(s, back)
    return np.array([(start[k], start[k] + s._plans[k].size) for k in (int(s._in0[j]) for j in records)],
                    np.int64).reshape(-1, 2)


def _apart_by_item(a, b):
    """Whether no region of a meets one of b (either None: never)."""
    if a is None or b is None:
        return False
    a, b = a[a[:, 0] < a[:, 1]], b[b[:, 0] < b[:, 1]]
    return not ((a[:, None, 0] < b[None, :, 1]) & (b[None, :, 0] < a[:, None, 1])).any()


def _walked_by_item(s, walk, back, encoded, starts):
    """compiled._walked as s16 wrote it, each item's regions met against the table's by NumPy (the reference)."""
    rows, idle, moved, apart = [], [], [], np.zeros((0, 2), np.int64)
    first, in0 = starts.tolist(), s._in0
    for kind, what in walk:
        k = int(in0[what]) if kind == driver.RECORD else 0
        if kind == driver.RECORD and first[k + 1] > first[k]:
            if moved and not _apart_by_item(apart, _regions_by_item(s, compiled.TABLE, encoded[first[k]:first[k + 1]])):
                yield from ((compiled.TABLE, rows), *idle, *moved)
                rows, idle, moved, apart = [], [], [], apart[:0]
            rows += range(first[k], first[k + 1])
            idle = []
            continue
        if rows and compiled._idle(s, kind, what):
            idle.append((kind, what))
            continue
        if rows:
            touched = _regions_by_item(s, kind, what, back)
            if _apart_by_item(touched, apart[:0] if back else _regions_by_item(s, compiled.TABLE, encoded[rows])):
                if back:
                    moved.append((kind, what))
                    apart = np.concatenate([apart, touched])
                else:
                    yield kind, what
                continue
            yield from ((compiled.TABLE, rows), *idle, *moved)
            rows, idle, moved, apart = [], [], [], apart[:0]
        yield kind, what
    if rows:
        yield from ((compiled.TABLE, rows), *idle, *moved)


class _Uncached(_Outputs):
    """A Function without its kept encodings (rows given to _walked that are not its own)."""

    _encoded = None

    def __init__(self, s):
        super().__init__(s, s._output_rows)


@pytest.mark.parametrize("seed", range(4))
def test_tables_walked_by_pieces_are_the_loops(seed, arrays, monkeypatch):
    """compiled._walked (the pieces of the arenas a table's rows cover, marked by Python ints) gives the loop's items
    (every item's regions met against the table's by NumPy), forward and back, on the programs' sweeps, on the recorded
    layout and the shared one, and on the sweeps' rows shaken (_shaken: outputs and views that partly meet)."""
    walked, rng, tally = compiled._walked, np.random.default_rng(seed), collections.Counter()

    def same(got, want):
        assert [kind for kind, _ in got] == [kind for kind, _ in want]
        assert all(a == b if kind == compiled.TABLE else a is b for (kind, a), (_, b) in zip(got, want, strict=True))

    def checked(s, walk, back, encoded, starts):
        walk = list(walk)
        got = list(walked(s, iter(walk), back, encoded, starts))
        same(got, list(_walked_by_item(s, iter(walk), back, encoded, starts)))
        shaken = _Uncached(s)
        moved = np.array(_shaken(s, list(encoded), rng)[1], np.int64).reshape(-1, K.WIDTH)
        same(list(walked(shaken, iter(walk), back, moved, starts)),
             list(_walked_by_item(shaken, iter(walk), back, moved, starts)))
        tally["tables"] += sum(kind == compiled.TABLE for kind, _ in got)
        return iter(got)

    monkeypatch.setattr(compiled, "_walked", checked)
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    if seed % 2:  # the recorded layout, not the shared one
        monkeypatch.setattr(layout, "laid", lambda F, *args: (F._plans, 2 ** 62, None, 2 ** 62))
    x = np.random.default_rng(seed).uniform(0.2, 1.5, 600)
    for f in [lambda X, p: _fused(np.random.default_rng(seed), X, p), _tiny, *list(ALL.values())[seed % 2::2]]:
        tape.trace(f, x, params=0.7).value_and_grad(x, params=0.7)
    for name in ("gru", "mixture", "heat-concatenate", "heat-pad", "stencil5", "mlp2")[seed % 2::2]:
        f, x0 = _bench(name)
        tape.trace(f, x0).value_and_grad(x0)
    assert tally["tables"] >= 10
