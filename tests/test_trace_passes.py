"""The passes tape.trace runs over a Function's plans, by NumPy over the plan table: each gives what a plain
Python loop over the plans gives (the loops they replaced, kept here as the reference); and np.pad's index,
one object for every step of a loop, on the tape, in the plan table, in a file and through cse."""

import io

import numpy as np
import pytest
from test_layout import PROGRAMS

import tape
from tape.kernels.array_ops import ACONSTANT, INPUT, RULE
from tape.kernels.ops import ELEM
from tape.records import array_records
from tape.sweeps import arenas, driver, layout
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


ALL = {**PROGRAMS, "stencil": _stencil, "pads": _pads}


def _lifetimes_by_plan(s, runs, outputs, kept):
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


@pytest.mark.parametrize("program", ALL)
def test_lifetimes_by_the_table_are_the_loops(program, arrays):
    """layout.lifetimes (NumPy over the plan table) equals the loop over the plans, with the Function's fused runs,
    without runs, and with every record an output."""
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    F = tape.trace(ALL[program], x, params=0.7)
    kept = np.concatenate([F._input_rows, F._param_rows])
    rows = np.array([p.row for p in F._plans])
    for runs, outputs in ((list(F._runs_first.values()), F._output_rows), ([], F._output_rows), ([], rows[::3])):
        want = _lifetimes_by_plan(F, runs, outputs.tolist(), kept.tolist())
        assert np.array_equal(layout.lifetimes(F, runs, outputs, kept), want)


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
    same gathers by NumPy indexing (each its own index), bit for bit; cse merges a pad taken twice."""
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
    assert len({id(p.places) for p in _gathers(H)}) == 10 and F.nbytes < H.nbytes
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
