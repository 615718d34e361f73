"""Array records in the symbolic sweeps: an array record's adjoint and tangent recorded as array records.

tape/symbolic/adjoint.py walks the records; at an array record it calls ``back`` (reverse) or
``ahead`` (forward) here. The rules are each kind's ``adjoint`` and ``tangent`` in
kernels/array_kinds.py, written over handles of records (VarArrays of views) with NumPy's
spelling; ``Emit`` records what NumPy cannot spell (a mul_nz product, a select on a recorded
mask, a scatter). What the rules give an input is routed as the numeric sweep does: summed back
over the axes it was broadcast along (or broadcast out of a reduction), and
added to the input's adjoint whole, or through a scatter record where the view covers only part
of the record. The elements that elem records read send their adjoints as one pack and one
scatter per array record; a pack sends its adjoint to its scalar records through elem records.

So the gradient of an array program is an array program: about as many array records as the
program has, each a NumPy call at replay, not a record per element.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

import numpy as np

from tape.arrays.varray import VarArray
from tape.kernels.array_ops import ACONSTANT, RULE
from tape.kernels.ops import OPCODE
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.storage import Storage
from tape.sweeps.driver import View, contiguous, whole
from tape.symbolic._partials import PARTIALS
from tape.symbolic.partial_helpers import constant

Handle = Any  # a VarArray of a view, a Var, or a float


class Emit:
    """What the rules' symbolic forms call as ``h``: records on storage t, each handle a view."""

    def __init__(self, t: Storage):
        self.t = t
        self.want: list[bool] = []  # which inputs of the record at hand need a contribution
        self.runs: dict[int, list[tuple[int, VarArray]]] = {}  # record -> contributions to runs of its region

    def handle(self, v: View) -> VarArray:
        return VarArray(self.t._segment(), None, v)

    def view(self, x: Handle) -> View:
        """Any handle or number as a view of an array record (scalar records packed, a number a constant)."""
        t = self.t
        if isinstance(x, VarArray):
            return x._view if x._view is not None else array_records.pack(t, x._idx)
        if type(x) is Var:
            return array_records.pack(t, np.array(x._index))
        return array_records.constant(t, float(x))

    def array(self, x: Handle) -> VarArray:
        return x if isinstance(x, VarArray) and x._view is not None else self.handle(self.view(x))

    def times(self, x: Handle | None, d: Handle | None) -> Handle | None:
        """x * d as one mul_nz record (0 where a factor is 0, as every numeric sweep's product); a number
        as the numeric rule's (0: nothing, 1 and -1 no product); None: structurally zero."""
        if x is None or d is None:
            return None
        if not isinstance(d, (VarArray, Var)):
            d = float(d)
            return None if d == 0.0 else x if d == 1.0 else -x if d == -1.0 else x * d
        return self.handle(array_records.elementwise(self.t, "mul_nz", self.view(x), self.view(d)))

    @staticmethod
    def plus(*xs: Handle | None) -> Handle | None:
        terms = [x for x in xs if x is not None]
        return None if not terms else sum(terms[1:], terms[0])

    def partials(self, name: str, ins: list[Any], y: Any, want: list[bool]) -> list[Any]:
        """The op table's partials of elementwise op ``name`` as records (tape/symbolic/_partials.py)."""
        a, b = ins[0], ins[1] if len(ins) > 1 else None
        found = PARTIALS[OPCODE[name]](a, b, y, None, want[0], len(want) > 1 and want[1])
        return [d if w else None for d, w in zip(found, want, strict=False)]

    def select(self, cond: Handle, a: Handle, b: Handle) -> VarArray:
        """a where cond != 0 else b, one select record: only the chosen side's numbers reach it."""
        return self.handle(array_records.elementwise(self.t, "select", self.view(cond), self.view(a), self.view(b)))

    def compare(self, name: str, a: Handle, b: Handle) -> VarArray:
        """1.0 or 0.0 per element (lt, le, eq, ne): data, never differentiated."""
        return self.handle(array_records.elementwise(self.t, name, self.view(a), self.view(b)))

    def reduce(self, name: str, x: Handle, axes: tuple[int, ...], shape: tuple[int, ...]) -> VarArray:
        """A reduction over axes, as a record of the given shape (the kept or the dropped form)."""
        r = array_records.reduce(self.t, name, self.view(x), axes, keepdims=True)
        return self.handle(array_records.reshape(self.t, r, shape))

    def gather(self, x: Handle, places: np.ndarray, shape: tuple[int, ...]) -> VarArray:
        """The elements of x (flat, in C order) at places, in the given shape."""
        v = self.view(x)
        inside = places if v == whole(v.record, self.t._plan(v.record)) else array_records.places(v).reshape(-1)[
            places]
        return self.handle(array_records.gather(self.t, v.record, np.reshape(inside, shape)))

    def scatter(self, x: Handle, places: np.ndarray, shape: tuple[int, ...]) -> VarArray:
        """A record of the given shape, 0 but for x's elements (flat, C order) added at places."""
        return self.handle(array_records.scatter(self.t, self.view(x), places, shape))

    def linalg(self, name: str, *xs: Handle) -> VarArray:
        """A linear algebra record (kernels/linalg.py) of the handles."""
        return self.handle(array_records.computed(self.t, name, *(self.view(x) for x in xs)))

    def permute(self, name: str, a: Handle, x: Handle, axis: int) -> VarArray:
        """x moved along axis as sorting a moves a (sort_as), or back (unsort_as)."""
        return self.handle(array_records.permute(self.t, name, self.view(a), self.view(x), axis))

    def full(self, value: float, shape: tuple[int, ...]) -> VarArray:
        """A constant of the given shape: one number read with stride 0 (a constant gets no adjoint, so no
        sweep ever adds into the one element such a view repeats)."""
        c = array_records.constant(self.t, value)
        return self.handle(View(c.record, 0, tuple(shape), (0,) * len(shape)))

    def zeros(self, shape: tuple[int, ...]) -> VarArray:
        return self.full(0.0, shape)

    def broadcast(self, x: Handle, shape: tuple[int, ...]) -> VarArray:
        """x broadcast to shape: x + 0.0 read in that shape, one record (its reverse sums back)."""
        return self.handle(array_records.elementwise(self.t, "add", self.view(x), self.view(self.zeros(shape))))

    @staticmethod
    def refuse(name: str) -> NoReturn:
        raise NotImplementedError(
            f"a derivative recorded as records (grad_function, vjp_function, jvp_function, a transform inside a "
            f"recorded function) through an array {name} record is not supported yet: use the numeric derivatives "
            f"(F.gradient, F.hessian, F.hvp), or write the program without {name}")


def sources(t: Storage, i: int) -> list[int]:
    """The records array record i reads (its views' records; a pack's scalar records)."""
    p = t._plan(i)
    reads = RULE[p.code].reads
    if reads == "scalars":
        return np.unique(p.places).tolist()
    return [v.record for v in p.inputs]


def _shaped(h: Emit, c: Handle, shape: tuple[int, ...]) -> Handle:
    """c in shape: summed back over the axes it was broadcast along, or broadcast out of a reduction."""
    have = c.shape if isinstance(c, VarArray) else ()
    if have == shape:
        return c
    if len(have) > len(shape) or math.prod(have) > math.prod(shape):
        lead = len(have) - len(shape)
        axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(shape) if n == 1 and have[lead + k] != 1)
        return h.reduce("sum", c, axes, shape)
    return h.broadcast(c, shape)


def route(h: Emit, adj: dict[int, Handle], v: View, c: Handle) -> None:
    """adj[v.record] += c, c a contribution to view v of that record."""
    c = _shaped(h, c, v.shape)
    p = h.t._plan(v.record)
    if v != whole(v.record, p):
        if v.strides == contiguous(v.shape) and array_records.size(v):  # a run of the region: joined at the end
            h.runs.setdefault(v.record, []).append((v.offset, h.array(c).reshape(-1)))
            return
        c = h.scatter(c, array_records.places(v).reshape(-1), p.shape)  # measured on 4e5 elements: 3.1 ms, a join 0.07
    adj[v.record] = c if v.record not in adj else adj[v.record] + c


def _joined(h: Emit, runs: list[tuple[int, VarArray]], size: int) -> Handle:
    """Runs (offset, elements) of a region of ``size`` as one array: disjoint runs and the zeros between them
    joined once (the slices of the MLP's parameters: one copy, where a join and an add per slice took four);
    overlapping ones summed."""
    runs = sorted(runs, key=lambda run: run[0])
    summed: Handle = None
    while runs:
        pieces, end, rest = [], 0, []
        for offset, c in runs:
            if offset < end:
                rest.append((offset, c))
                continue
            pieces += [h.zeros((offset - end,))] * (offset > end) + [c]
            end = offset + c.size
        pieces += [h.zeros((size - end,))] * (end < size)
        joined = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
        summed, runs = joined if summed is None else summed + joined, rest
    return summed


def _rows(t: Storage, values: list[Handle]) -> np.ndarray:
    """A scalar record per value: a Var's own, a constant record for a number."""
    return np.array([x._index if type(x) is Var else constant(t, float(x))._index for x in values], np.int64)


def total(h: Emit, i: int, adj: dict[int, Handle], elements: dict[int, dict[int, Handle]]) -> VarArray | None:
    """Array record i's adjoint: what reached it whole, plus what its elem readers sent (one pack, one scatter)."""
    g, sent, runs = adj.pop(i, None), elements.pop(i, None), h.runs.pop(i, None)
    if runs:
        joined = _joined(h, runs, h.t._plan(i).size).reshape(h.t._plan(i).shape)
        g = joined if g is None else g + joined
    if sent:
        places = np.array(sorted(sent), np.int64)
        rows = _rows(h.t, [sent[k] for k in places.tolist()])
        picked = h.scatter(h.handle(array_records.pack(h.t, rows)), places, h.t._plan(i).shape)
        g = picked if g is None else g + picked
    return None if g is None else h.array(g)


def back(h: Emit, i: int, g: VarArray, need: np.ndarray, adj: dict[int, Handle]) -> None:
    """Send array record i's adjoint g to the inputs that need one, as records."""
    t = h.t
    p = t._plan(i)
    rule = RULE[p.code]
    if not rule.derivative:
        return
    if rule.reads == "scalars":  # a pack: each scalar record gets its element, an elem record
        flat = g.reshape(-1)
        for k, row in enumerate(p.places.tolist()):
            if need[row]:
                adj[row] = flat[k] if row not in adj else adj[row] + flat[k]
    elif rule.reads == "elements":
        if need[p.inputs[0].record]:
            route(h, adj, p.inputs[0], h.scatter(g, p.places, p.inputs[0].shape))
    elif rule.reads == "callee":  # a call of the callee's vjp_function (tape/function/call_records.py)
        if need[p.inputs[0].record]:
            route(h, adj, p.inputs[0], t._callees[p.places[0]]._call_derivative(h, p, g, "vjp"))
    else:
        h.want = [bool(need[v.record]) for v in p.inputs]
        for v, c in zip(p.inputs, rule.adjoint(p, g, _ins(h, p), h.handle(whole(i, p)), h), strict=True):
            if c is not None and need[v.record]:
                route(h, adj, v, c)


def _ins(h: Emit, p: Any) -> list[Any]:
    """The handles p reads: a 0-d constant as its number (as the numeric sweeps read it)."""
    return [float(h.t._array_values(v)) if not v.shape and h.t._op[v.record] == ACONSTANT else
            h.handle(v) for v in p.inputs]


def ahead(h: Emit, i: int, dot: dict[int, Handle]) -> Handle | None:
    """Array record i's tangent as records, from the tangents in dot (absent: zero); None: zero."""
    t = h.t
    p = t._plan(i)
    rule = RULE[p.code]
    if not rule.derivative:
        return None
    if rule.reads == "scalars":
        found = [dot.get(row) for row in p.places.tolist()]
        if all(d is None for d in found):
            return None
        return h.handle(array_records.pack(t, _rows(t, [0.0 if d is None else d for d in found]).reshape(p.shape)))
    tins = [None if v.record not in dot else h.array(dot[v.record]) for v in p.inputs]
    tins = [None if d is None else _input_view(h, d, v) for d, v in zip(tins, p.inputs, strict=True)]
    if rule.reads == "elements":
        return None if tins[0] is None else h.gather(tins[0], p.places, p.shape)
    if rule.reads == "callee":
        return None if tins[0] is None else t._callees[p.places[0]]._call_derivative(h, p, tins[0], "jvp")
    return rule.tangent(p, _ins(h, p), tins, h.handle(whole(i, p)), h)


def _input_view(h: Emit, d: VarArray, v: View) -> VarArray:
    """A record's tangent (a handle of its whole region) seen through the view v of that record."""
    p = h.t._plan(v.record)
    if v == whole(v.record, p):
        return d
    dv = h.view(d)
    if dv == whole(dv.record, h.t._plan(dv.record)) and h.t._plan(dv.record).shape == p.shape:
        return h.handle(View(dv.record, v.offset, v.shape, v.strides))  # the same view of the tangent's record
    return h.gather(d, array_records.places(v).reshape(-1), v.shape)


def element(h: Emit, d: Handle, place: int) -> Var:
    """Element ``place`` (flat, of its record's region) of a tangent: an elem record."""
    return h.array(d).reshape(-1)[place]
