"""The rules of each kind of array op, side by side (the rows of kernels/array_ops.py name their kind).

Each kind's ``Rule`` holds the output shape it can have (what ``tape.load`` checks), forward, vjp,
jvp and the adjoint's tangent (second order), over NumPy arrays; the products below keep the
structural-zero rule of every sweep. The sweeps (tape/sweeps/driver.py, tangents.py) call a row's
rule and know no op by name; they only know how a rule reads (``Rule.reads``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._array_rules import RULES
from .scans import permutation, scan_forward, scan_jvp, scan_vjp, scan_vjp_second, sort_forward, sort_vjp

COMPARE_UFUNC = {"lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal}


# --- products where a zero factor adds nothing (the structural-zero rule of every sweep) -------


def times(g: np.ndarray, d: Any, check: bool = True) -> np.ndarray:
    """g * d, where g == 0 or d == 0 gives 0 even against inf or NaN: the plain product, redone
    with the mask only when it holds a NaN (its sum is NaN then: one pass, no temporary).
    ``check=False`` skips that pass: for a sweep that checks its result and redoes itself."""
    if type(d) is float:  # a rule's number: 0 sends nothing, 1 and -1 need no product (not a NumPy scalar: masked)
        return g if d == 1.0 else -g if d == -1.0 else np.zeros_like(g) if d == 0.0 else g * d
    c = g * d
    if check and math.isnan(np.sum(c)):
        c = np.where((g == 0.0) | (d == 0.0), 0.0, c)
    return c


def product(x: np.ndarray, y: np.ndarray, check: bool = True) -> np.ndarray:
    """x @ y by BLAS, redone term by term with times' mask only if it holds a NaN."""
    c = x @ y
    if check and math.isnan(np.sum(c)):
        c = np.zeros_like(c)
        for j in range(x.shape[-1]):
            left, right = x[..., :, j:j + 1], y[..., j:j + 1, :]
            c += np.where((left == 0.0) | (right == 0.0), 0.0, left * right)
    return c


def kept(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """shape with the reduced axes kept as 1."""
    return tuple(1 if k in axes else n for k, n in enumerate(shape))


def unbroadcast(c: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum c over the axes NumPy broadcast to reach c's shape from ``shape``: the one sum-back."""
    if c.shape == shape:
        return c
    lead = c.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(shape) if n == 1 and c.shape[lead + k] != 1)
    return np.sum(c, axis=axes).reshape(shape) if axes else c.reshape(shape)


# --- the rules of each kind, side by side: what the sweeps call -----------------------------------
# ins: the views a record reads (a 0-d constant as a float); y, out: its values (its own shape, p.shape);
# g, gd: its adjoint and that adjoint's tangent; tins: its inputs' tangents. vjp gives each input's
# contribution as a thunk (a constant input never computes its own); the sweep sums each back over the
# axes it was broadcast along (unbroadcast). None: no contribution to that input.

Send = Callable[[], np.ndarray]
Shape = tuple[int, ...]


class Rule:
    """A kind of array op: how a sweep hands it its inputs, its output shape and its derivatives."""

    reads = "views"  # views of earlier records; "none" (an input), "scalars", "elements", "callee": the sweeps'
    derivative = True  # whether it sends adjoints to its inputs
    places = ""  # what its plan's places index: "rows" (scalar records), "input" (its input's region), "output"
    # (its own region), "callee" (the Function's slot); "": it has none (tape/sweeps/plans.py checks them)

    def shapes(self, shape: Shape, wide: Shape, views: list[Shape], axes: tuple[int, ...]) -> list[Shape]:
        """The output shapes it can have for views of these shapes (ValueError where none)."""
        return [shape]

    def check(self, shape: Shape, wide: Shape, views: list[Shape], axes: tuple[int, ...]) -> None:
        if shape not in self.shapes(shape, wide, views, axes) or wide != shape:
            raise ValueError(f"an array record of views {views} cannot have shape {shape}")

    def forward(self, p: Any, ins: list[Any], out: np.ndarray) -> None:
        """Values (a leaf's are set when it is recorded)."""

    def vjp(self, p: Any, g: np.ndarray, ins: list[Any], y: np.ndarray, check: bool) -> list[Send | None]:
        return [None] * len(ins)

    def jvp(self, p: Any, ins: list[Any], tins: list[Any], y: np.ndarray) -> Any:
        return 0.0

    def vjp_jvp(self, p: Any, g: np.ndarray, gd: np.ndarray, ins: list[Any], tins: list[Any], y: np.ndarray
                ) -> list[tuple[Any, Any] | None]:
        return [None] * len(ins)

    # The same rules as records (tape/symbolic/array_adjoint.py): g, ins, y and tins are handles of
    # records there (tins[k] None: no tangent), and ``h`` records what NumPy cannot spell (mul_nz
    # products, selects, scatters): the adjoint of an array program is an array program.

    def adjoint(self, p: Any, g: Any, ins: list[Any], y: Any, h: Any) -> list[Any]:
        """Each input's contribution as records (None: none), in the output's shape or the input's; a kind
        without this rule refuses (never a silent zero)."""
        return h.refuse(p.name)

    def tangent(self, p: Any, ins: list[Any], tins: list[Any], y: Any, h: Any) -> Any:
        """The record's tangent as records (None: zero); a kind without this rule refuses."""
        return h.refuse(p.name)


class Plumbing(Rule):
    """A kind whose reads are not views: the sweeps move its numbers (tape/sweeps/driver.py, tangents.py)."""

    def __init__(self, reads: str, derivative: bool = True, places: str = ""):
        self.reads, self.derivative, self.places = reads, derivative, places


class Constant(Rule):
    """Numbers an op reads (x * c for an array c): no inputs, no derivative, a zero tangent."""

    derivative = False


def _broadcast(views: list[Shape]) -> list[Shape]:
    return [tuple(np.broadcast_shapes(*views))]


def _reduced(views: list[Shape], axes: tuple[int, ...]) -> list[Shape]:
    a = views[0]
    if any(x >= len(a) for x in axes):
        raise ValueError(f"reduces axes {axes} of a {len(a)}-d view")
    return [kept(a, axes), tuple(n for j, n in enumerate(a) if j not in axes)]


class Elementwise(Rule):
    """Unary and binary ops: kernels/ops.py's rules on every element (kernels/_array_rules.py)."""

    def shapes(self, shape, wide, views, axes):
        return _broadcast(views)

    def forward(self, p, ins, out):
        RULES[p.name][0](ins[0], ins[1] if len(ins) > 1 else None, out)

    @staticmethod
    def _at(rule: Any, ins: list[Any], y: np.ndarray) -> list[Any]:
        """The rule's entries evaluated (numbers stay numbers; None where the op has none)."""
        b = ins[1] if len(ins) > 1 else None
        return [r if r is None or isinstance(r, float) else r(ins[0], b, y) for r in rule]

    def vjp(self, p, g, ins, y, check):
        rule, b = RULES[p.name], ins[1] if len(ins) > 1 else None
        return [None if d is None else lambda d=d: times(g, d if isinstance(d, float) else d(ins[0], b, y), check)
                for d in rule[1:1 + len(ins)]]

    def jvp(self, p, ins, tins, y):
        total: Any = 0.0
        for k, d in enumerate(self._at(RULES[p.name][1:1 + len(ins)], ins, y)):
            if d is not None:
                total = total + times(tins[k], d)
        return total

    def adjoint(self, p, g, ins, y, h):
        return [h.times(g, d) for d in h.partials(p.name, ins, y, h.want)]

    def tangent(self, p, ins, tins, y, h):
        partials = h.partials(p.name, ins, y, [t is not None for t in tins])
        return h.plus(*(h.times(t, d) for t, d in zip(tins, partials, strict=False)))

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        rule = RULES[p.name]
        d, h = self._at(rule[1:3], ins, y), self._at(rule[3:], ins, y)  # partials; daa, dab, dbb

        def dd(k: int) -> Any:  # the tangent of partial k: Σ_j d2y/dk dj ẋ_j, None where no second partial
            pairs = [(h[0], 0), (h[1], 1)] if k == 0 else [(h[1], 0), (h[2], 1)]
            terms = [times(tins[j], second) for second, j in pairs if second is not None and j < len(ins)]
            return sum(terms[1:], terms[0]) if terms else None  # a 0-d operand's term is a NumPy scalar

        sends: list[tuple[Any, Any] | None] = []
        for k in range(len(ins)):
            tangent = None if d[k] is None else dd(k)
            sends.append(None if d[k] is None else
                         (times(g, d[k]), times(gd, d[k]) + (0.0 if tangent is None else times(g, tangent))))
        return sends


class Compare(Rule):
    """1.0 or 0.0 per element: no derivative."""

    derivative = False

    def shapes(self, shape, wide, views, axes):
        return _broadcast(views)

    def forward(self, p, ins, out):
        out[...] = COMPARE_UFUNC[p.name](ins[0], ins[1])


class Truth(Rule):
    """all and any over axes: 1.0 or 0.0, no derivative."""

    derivative = False
    REDUCE = {"all": np.all, "any": np.any}

    def shapes(self, shape, wide, views, axes):
        return _reduced(views, axes)

    def forward(self, p, ins, out):
        out[...] = self.REDUCE[p.name](ins[0] != 0.0, axis=p.axes).reshape(p.shape)


class Select(Rule):
    """y = a where c != 0 else b: the adjoint and tangents go to the branch taken."""

    def shapes(self, shape, wide, views, axes):
        return _broadcast(views)

    def forward(self, p, ins, out):
        out[...] = np.where(ins[0] != 0.0, ins[1], ins[2])

    def vjp(self, p, g, ins, y, check):
        cond = ins[0]
        return [None, lambda: np.where(cond != 0.0, g, 0.0), lambda: np.where(cond == 0.0, g, 0.0)]

    def jvp(self, p, ins, tins, y):
        return np.where(ins[0] != 0.0, tins[1], tins[2])

    def adjoint(self, p, g, ins, y, h):
        return [None, h.select(ins[0], g, 0.0), h.select(ins[0], 0.0, g)]

    def tangent(self, p, ins, tins, y, h):
        if tins[1] is None and tins[2] is None:
            return None
        return h.select(ins[0], 0.0 if tins[1] is None else tins[1], 0.0 if tins[2] is None else tins[2])

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        taken = ins[0] != 0.0
        return [None, (np.where(taken, g, 0.0), np.where(taken, gd, 0.0)),
                (np.where(taken, 0.0, g), np.where(taken, 0.0, gd))]


class Sum(Rule):
    """y = Σ_axes a: a' += g broadcast back over the axes."""

    def shapes(self, shape, wide, views, axes):
        return _reduced(views, axes)

    def forward(self, p, ins, out):
        out[...] = np.sum(ins[0], axis=p.axes).reshape(out.shape)  # NumPy's pairwise sum

    def _back(self, p: Any, g: np.ndarray) -> np.ndarray:
        return np.broadcast_to(g.reshape(kept(p.inputs[0].shape, p.axes)), p.inputs[0].shape)

    def vjp(self, p, g, ins, y, check):
        return [lambda: self._back(p, g)]

    def jvp(self, p, ins, tins, y):
        return np.sum(tins[0], axis=p.axes).reshape(p.shape)

    def adjoint(self, p, g, ins, y, h):
        return [g.reshape(kept(p.inputs[0].shape, p.axes))]  # the sweep broadcasts it back

    def tangent(self, p, ins, tins, y, h):
        return None if tins[0] is None else h.reduce("sum", tins[0], p.axes, p.shape)

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        return [(self._back(p, g), self._back(p, gd))]


class LogSumExp(Rule):
    """y = log Σ_axes exp(a): a' += g exp(a - y), the softmax times g."""

    def shapes(self, shape, wide, views, axes):
        return _reduced(views, axes)

    def forward(self, p, ins, out):
        """Shifted by the largest element (no overflow); -inf for all -inf."""
        a = ins[0]
        top = np.max(a, axis=p.axes, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        out[...] = (np.log(np.sum(np.exp(a - top), axis=p.axes, keepdims=True)) + top).reshape(out.shape)

    @staticmethod
    def _softmax(a: np.ndarray, y: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.exp(a - y.reshape(kept(a.shape, axes)))

    def vjp(self, p, g, ins, y, check):
        a = ins[0]
        return [lambda: times(g.reshape(kept(a.shape, p.axes)), self._softmax(a, y, p.axes), check)]

    def jvp(self, p, ins, tins, y):
        return np.sum(times(tins[0], self._softmax(ins[0], y, p.axes)), axis=p.axes).reshape(p.shape)

    def adjoint(self, p, g, ins, y, h):
        shape = kept(p.inputs[0].shape, p.axes)
        return [h.times(g.reshape(shape), np.exp(ins[0] - y.reshape(shape)))]

    def tangent(self, p, ins, tins, y, h):
        if tins[0] is None:
            return None
        soft = np.exp(ins[0] - y.reshape(kept(p.inputs[0].shape, p.axes)))
        return h.reduce("sum", h.times(tins[0], soft), p.axes, p.shape)

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        a, ta = ins[0], tins[0]
        shape = kept(a.shape, p.axes)
        soft = self._softmax(a, y, p.axes)
        y_dot = np.sum(times(ta, soft), axis=p.axes, keepdims=True)
        soft_dot = times(soft, ta - y_dot)
        return [(times(g.reshape(shape), soft), times(gd.reshape(shape), soft) + times(g.reshape(shape), soft_dot))]


class Extreme(Rule):
    """max and min over axes: the adjoint goes to the tied extremes in equal shares (piecewise linear)."""

    REDUCE = {"max": np.max, "min": np.min}

    def shapes(self, shape, wide, views, axes):
        return _reduced(views, axes)

    def forward(self, p, ins, out):
        """NaN where a NaN is among the elements (as NumPy)."""
        out[...] = self.REDUCE[p.name](ins[0], axis=p.axes, keepdims=True).reshape(out.shape)

    @staticmethod
    def share(a: np.ndarray, y: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """d y / d a: 1/k at each of the k elements equal to the result (a tie shares the slope equally,
        as JAX's), 0 elsewhere; where y is NaN, the NaNs share it."""
        result = y.reshape(kept(a.shape, axes))
        hit = np.where(np.isnan(result), np.isnan(a), a == result)
        return hit / np.sum(hit, axis=axes, keepdims=True)

    def vjp(self, p, g, ins, y, check):
        a = ins[0]
        return [lambda: times(g.reshape(kept(a.shape, p.axes)), self.share(a, y, p.axes), check)]

    def jvp(self, p, ins, tins, y):
        return np.sum(times(tins[0], self.share(ins[0], y, p.axes)), axis=p.axes).reshape(p.shape)

    @staticmethod
    def _share(p: Any, a: Any, y: Any, h: Any) -> Any:
        """share() as records: data (comparisons) over their count, never differentiated."""
        result = y.reshape(kept(p.inputs[0].shape, p.axes))
        hit = h.select(h.compare("ne", result, result), h.compare("ne", a, a), h.compare("eq", a, result))
        return hit / h.reduce("sum", hit, p.axes, kept(p.inputs[0].shape, p.axes))

    def adjoint(self, p, g, ins, y, h):
        return [h.times(g.reshape(kept(p.inputs[0].shape, p.axes)), self._share(p, ins[0], y, h))]

    def tangent(self, p, ins, tins, y, h):
        return None if tins[0] is None else h.reduce("sum", h.times(tins[0], self._share(p, ins[0], y, h)),
                                                     p.axes, p.shape)

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        shape, share = kept(ins[0].shape, p.axes), self.share(ins[0], y, p.axes)
        return [(times(g.reshape(shape), share), times(gd.reshape(shape), share))]


class _AlongOneAxis(Rule):
    def shapes(self, shape, wide, views, axes):
        if len(axes) != 1 or axes[0] >= len(views[0]):
            raise ValueError(f"{type(self).__name__.lower()} along axes {axes} of a {len(views[0])}-d view")
        return [views[0]]


class Scan(_AlongOneAxis):
    """cumsum and cumprod along one axis (kernels/scans.py: cumprod's rules are zero-safe recurrences)."""

    def forward(self, p, ins, out):
        scan_forward(p.name, ins[0], p.axes[0], out)

    def vjp(self, p, g, ins, y, check):
        return [lambda: scan_vjp(p.name, ins[0], g, p.axes[0])]

    def jvp(self, p, ins, tins, y):
        return scan_jvp(p.name, ins[0], tins[0], p.axes[0])

    def adjoint(self, p, g, ins, y, h):
        if p.name != "cumsum":
            h.refuse(p.name)
        back = (slice(None),) * p.axes[0] + (slice(None, None, -1),)  # a view: reversed along the axis
        return [np.cumsum(g[back], axis=p.axes[0])[back]]

    def tangent(self, p, ins, tins, y, h):
        if p.name != "cumsum":
            h.refuse(p.name)
        return None if tins[0] is None else np.cumsum(tins[0], axis=p.axes[0])

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        return [scan_vjp_second(p.name, ins[0], tins[0], g, gd, p.axes[0])]


class Sort(_AlongOneAxis):
    """A stable sort along one axis; its permutation recomputed from the values at every pass."""

    def forward(self, p, ins, out):
        sort_forward(ins[0], p.axes[0], out)

    def vjp(self, p, g, ins, y, check):
        return [lambda: sort_vjp(ins[0], g, p.axes[0])]

    def jvp(self, p, ins, tins, y):
        return np.take_along_axis(tins[0], permutation(ins[0], p.axes[0]), p.axes[0])

    def adjoint(self, p, g, ins, y, h):
        return [h.permute("unsort_as", ins[0], g, p.axes[0])]

    def tangent(self, p, ins, tins, y, h):
        return None if tins[0] is None else h.permute("sort_as", ins[0], tins[0], p.axes[0])

    def vjp_jvp(self, p, g, gd, ins, tins, y):  # piecewise linear: the permutation does not move
        return [(sort_vjp(ins[0], g, p.axes[0]), sort_vjp(ins[0], gd, p.axes[0]))]


class Permute(_AlongOneAxis):
    """x moved along one axis as sorting a moves a's elements (sort_as), or back (unsort_as): a sort's
    derivatives as records; linear in x, piecewise constant in a (its permutation recomputed at every pass)."""

    MOVE = {"sort_as": lambda a, x, axis: np.take_along_axis(x, permutation(a, axis), axis), "unsort_as": sort_vjp}
    OTHER = {"sort_as": "unsort_as", "unsort_as": "sort_as"}

    def shapes(self, shape, wide, views, axes):
        if len(views) != 2 or views[0] != views[1]:
            raise ValueError(f"a permutation of {views[1:]} as {views[:1]} sorts")
        return super().shapes(shape, wide, views, axes)

    def forward(self, p, ins, out):
        out[...] = self.MOVE[p.name](ins[0], ins[1], p.axes[0])

    def vjp(self, p, g, ins, y, check):
        return [None, lambda: self.MOVE[self.OTHER[p.name]](ins[0], g, p.axes[0])]

    def jvp(self, p, ins, tins, y):
        return self.MOVE[p.name](ins[0], tins[1], p.axes[0])

    def adjoint(self, p, g, ins, y, h):
        return [None, h.permute(self.OTHER[p.name], ins[0], g, p.axes[0])]

    def tangent(self, p, ins, tins, y, h):
        return None if tins[1] is None else h.permute(p.name, ins[0], tins[1], p.axes[0])

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        back = self.MOVE[self.OTHER[p.name]]
        return [None, (back(ins[0], g, p.axes[0]), back(ins[0], gd, p.axes[0]))]


class Join(Rule):
    """np.concatenate of two or three views along one axis: each input's adjoint is its slice of g."""

    def shapes(self, shape, wide, views, axes):
        if len(axes) != 1 or any(len(v) != len(views[0]) or axes[0] >= len(v) for v in views):
            raise ValueError(f"join of {views} along axes {axes}")
        k = axes[0]
        if any(v[:k] + v[k + 1:] != views[0][:k] + views[0][k + 1:] for v in views):
            raise ValueError(f"join of {views} along axis {k}: the other axes differ")
        return [(*views[0][:k], sum(v[k] for v in views), *views[0][k + 1:])]

    @staticmethod
    def _parts(p: Any, x: np.ndarray) -> list[np.ndarray]:
        """x (in the join's shape) cut into its inputs' places, by slicing (np.split with its cumsum took 8 µs,
        slices 1 µs: the heat equation's reverse cuts 1,000 joins)."""
        k, start, parts = p.axes[0], 0, []
        for v in p.inputs:
            parts.append(x[(slice(None),) * k + (slice(start, start + v.shape[k]),)])
            start += v.shape[k]
        return parts

    def forward(self, p, ins, out):
        np.concatenate(ins, axis=p.axes[0], out=out)

    def vjp(self, p, g, ins, y, check):
        return [lambda part=part: part for part in self._parts(p, g)]

    def jvp(self, p, ins, tins, y):
        return np.concatenate(tins, axis=p.axes[0])

    def adjoint(self, p, g, ins, y, h):
        k, ends = p.axes[0], np.cumsum([0] + [v.shape[p.axes[0]] for v in p.inputs]).tolist()
        return [g[(slice(None),) * k + (slice(a, b),)] for a, b in zip(ends, ends[1:], strict=False)]

    def tangent(self, p, ins, tins, y, h):
        if all(t is None for t in tins):
            return None
        return np.concatenate([h.zeros(v.shape) if t is None else t for v, t in zip(p.inputs, tins, strict=True)],
                              axis=p.axes[0])

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        return list(zip(self._parts(p, g), self._parts(p, gd), strict=True))


class Matmul(Rule):
    """Y = A B over the last two axes (operands widened to 2-d: p.wide): A' += G Bᵀ, B' += Aᵀ G."""

    def check(self, shape, wide, views, axes):
        A, B = views
        if len(A) < 2 or len(B) < 2 or A[-1] != B[-2]:
            raise ValueError(f"matmul of {A} and {B}")
        if wide != (*np.broadcast_shapes(A[:-2], B[:-2]), A[-2], B[-1]):
            raise ValueError(f"matmul of {A} and {B} is not {wide}")
        if math.prod(shape) != math.prod(wide):
            raise ValueError(f"matmul of {A} and {B} cannot have shape {shape}")

    def forward(self, p, ins, out):
        np.matmul(ins[0], ins[1], out=out.reshape(p.wide))

    def vjp(self, p, g, ins, y, check):
        G = g.reshape(p.wide)
        return [lambda: product(G, np.swapaxes(ins[1], -1, -2), check),
                lambda: product(np.swapaxes(ins[0], -1, -2), G, check)]

    def jvp(self, p, ins, tins, y):
        return (product(tins[0], ins[1]) + product(ins[0], tins[1])).reshape(p.shape)

    def adjoint(self, p, g, ins, y, h):
        G = g.reshape(p.wide)
        return [G @ np.swapaxes(ins[1], -1, -2) if h.want[0] else None,
                np.swapaxes(ins[0], -1, -2) @ G if h.want[1] else None]

    def tangent(self, p, ins, tins, y, h):
        terms = [tins[0] @ ins[1] if tins[0] is not None else None, ins[0] @ tins[1] if tins[1] is not None else None]
        total = h.plus(*terms)
        return None if total is None else total.reshape(p.shape)

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        G, Gd = g.reshape(p.wide), gd.reshape(p.wide)
        At, Bt = np.swapaxes(ins[0], -1, -2), np.swapaxes(ins[1], -1, -2)
        return [(product(G, Bt), product(Gd, Bt) + product(G, np.swapaxes(tins[1], -1, -2))),
                (product(At, G), product(np.swapaxes(tins[0], -1, -2), G) + product(At, Gd))]


class Scatter(Rule):
    """y = 0, a's elements added at places of y (repeated places add up): a gather's transpose, what a derivative
    recorded as records sends to part of a record (a view, a gather's input)."""

    places = "output"

    def shapes(self, shape, wide, views, axes):
        return [shape]

    def forward(self, p, ins, out):
        out.reshape(-1)[...] = np.bincount(p.places, np.reshape(ins[0], -1), out.size)

    @staticmethod
    def _gathered(p: Any, g: np.ndarray) -> np.ndarray:
        return g.reshape(-1)[p.places].reshape(p.inputs[0].shape)

    def vjp(self, p, g, ins, y, check):
        return [lambda: self._gathered(p, g)]

    def jvp(self, p, ins, tins, y):
        return np.bincount(p.places, np.reshape(tins[0], -1), math.prod(p.shape)).reshape(p.shape)

    def adjoint(self, p, g, ins, y, h):
        return [h.gather(g, p.places, p.inputs[0].shape)]

    def tangent(self, p, ins, tins, y, h):
        return None if tins[0] is None else h.scatter(tins[0], p.places, p.shape)

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        return [(self._gathered(p, g), self._gathered(p, gd))]


KIND_RULES: dict[str, Rule] = {
    "input": Plumbing("none", derivative=False), "constant": Constant(), "unary": Elementwise(),
    "binary": Elementwise(), "compare": Compare(), "select": Select(), "sum": Sum(), "matmul": Matmul(),
    "logsumexp": LogSumExp(), "gather": Plumbing("elements", places="input"),
    "pack": Plumbing("scalars", places="rows"), "all": Truth(), "any": Truth(), "extreme": Extreme(), "scan": Scan(),
    "sort": Sort(), "call": Plumbing("callee", places="callee"), "join": Join(), "scatter": Scatter(),
    "permute": Permute(),
}
