"""The arithmetic kinds of array op: elementwise ops, comparisons, selects, reductions and matmul
(kernels/array_rule.py says what a kind's ``Rule`` holds)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._array_driver import ELEMENTWISE, LOGSUMEXP, MATMUL, SELECT, SUM
from ._array_rules import RULES
from .array_rule import (
    Rule,
    both_orders,
    broadcast_of,
    depends,
    kept,
    leading,
    lines,
    one,
    partials_read,
    product,
    read_map,
    reduced_shapes,
    reduction_sparsity,
    shifted,
    spread,
    times,
)
from .ops import OPS, reads

COMPARE_UFUNC = {"lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal}
LINES = 32  # largest(): a NumPy call costs about as much as 32 lines reduced
SIDES = {op.name: (reads(op.da), reads(op.db)) for op in OPS}  # what each side's partial reads: a, b, y


class Elementwise(Rule):
    """Unary and binary ops: kernels/ops.py's rules on every element (kernels/_array_rules.py)."""

    compiled = ELEMENTWISE

    def shapes(self, shape, wide, views, axes):
        return broadcast_of(views)

    def forward(self, p, ins, out):
        RULES[p.name][0](ins[0], ins[1] if len(ins) > 1 else None, out)

    def back_reads(self, p, constant):
        return partials_read(SIDES[p.name], p, constant)

    @staticmethod
    def _at(rule: Any, ins: list[Any], y: np.ndarray) -> list[Any]:
        """The rule's entries evaluated (numbers stay numbers; None where the op has none)."""
        b = ins[1] if len(ins) > 1 else None
        return [r if r is None or isinstance(r, float) else r(ins[0], b, y) for r in rule]

    def vjp(self, p, g, ins, y, check):
        rule, b = RULES[p.name], ins[1] if len(ins) > 1 else None
        return [None if d is None else lambda d=d: times(g, d if isinstance(d, float) else d(ins[0], b, y), check)
                for d in rule[1:1 + len(ins)]]

    def jvp(self, p, ins, tins, y, out=None):
        total: Any = None  # written into out where given (vector mode: the record's tangents)
        for k, d in enumerate(self._at(RULES[p.name][1:1 + len(ins)], ins, y)):
            if d is None or tins[k] is None:  # None: a constant's tangent (vector mode)
                continue
            if total is None:
                total = times(tins[k], d, out=out)
            elif type(d) is float and abs(d) == 1.0:  # a sum or a difference: no product
                total = (np.add if d == 1.0 else np.subtract)(total, tins[k], out=out)
            else:
                total = np.add(total, times(tins[k], d), out=out)
        return 0.0 if total is None else total

    def jvps(self, p, ins, tins, y, out):  # NumPy broadcasts it over the leading axis
        return self.jvp(p, ins, leading(tins, len(p.shape)), y, out)

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
            terms = [times(tins[j], second) for second, j in pairs
                     if second is not None and j < len(ins) and tins[j] is not None]  # None: a constant's
            return sum(terms[1:], terms[0]) if terms else None  # a 0-d operand's term is a NumPy scalar

        sends: list[tuple[Any, Any] | None] = []
        for k in range(len(ins)):
            tangent = None if d[k] is None or tins[k] is None else dd(k)  # nothing sent to a constant
            sends.append(None if d[k] is None or tins[k] is None else
                         (times(g, d[k]), times(gd, d[k]) + (0.0 if tangent is None else times(g, tangent))))
        return sends

    def sparsity(self, p):
        partials = RULES[p.name][1:1 + len(p.inputs)]
        return [read_map(v.shape, p.shape) if depends(d) else None for d, v in zip(partials, p.inputs, strict=True)]

    def second_pairs(self, p, live):
        daa, dab, dbb = (depends(d) for d in RULES[p.name][3:])  # a unary op has no dab, dbb
        a = spread(p.inputs[0].shape, p.shape)[live]
        b = spread(p.inputs[-1].shape, p.shape)[live] + math.prod(p.inputs[0].shape)
        parts = [(a, a)] * daa + [both_orders(a, b)] * dab + [(b, b)] * dbb
        return (np.concatenate([r for r, _ in parts]), np.concatenate([c for _, c in parts])) if parts else None


class Compare(Rule):
    """1.0 or 0.0 per element: no derivative."""

    derivative = False
    compiled = ELEMENTWISE

    def shapes(self, shape, wide, views, axes):
        return broadcast_of(views)

    def forward(self, p, ins, out):
        out[...] = COMPARE_UFUNC[p.name](ins[0], ins[1])


class Truth(Rule):
    """all and any over axes: 1.0 or 0.0, no derivative."""

    derivative = False
    REDUCE = {"all": np.all, "any": np.any}

    def shapes(self, shape, wide, views, axes):
        return reduced_shapes(views, axes)

    def forward(self, p, ins, out):
        out[...] = self.REDUCE[p.name](ins[0] != 0.0, axis=p.axes).reshape(p.shape)


class Select(Rule):
    """y = a where c != 0 else b: the adjoint and tangents go to the branch taken; back, only c is read."""

    compiled = SELECT

    def back_reads(self, p, constant):
        return (True, False, False, False)

    def shapes(self, shape, wide, views, axes):
        return broadcast_of(views)

    def forward(self, p, ins, out):
        out[...] = np.where(ins[0] != 0.0, ins[1], ins[2])

    def vjp(self, p, g, ins, y, check):
        cond = ins[0]
        return [None, lambda: np.where(cond != 0.0, g, 0.0), lambda: np.where(cond == 0.0, g, 0.0)]

    def jvp(self, p, ins, tins, y):
        return np.where(ins[0] != 0.0, 0.0 if tins[1] is None else tins[1], 0.0 if tins[2] is None else tins[2])

    def jvps(self, p, ins, tins, y, out):  # NumPy broadcasts it over the leading axis
        return self.jvp(p, ins, leading(tins, len(p.shape)), y)

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

    def sparsity(self, p):
        return [None, read_map(p.inputs[1].shape, p.shape), read_map(p.inputs[2].shape, p.shape)]


class Sum(Rule):
    """y = Σ_axes a: a' += g broadcast back over the axes."""

    compiled = SUM

    def back_reads(self, p, constant):
        return (False, False)

    def shapes(self, shape, wide, views, axes):
        return reduced_shapes(views, axes)

    def forward(self, p, ins, out):
        out[...] = np.sum(ins[0], axis=p.axes).reshape(out.shape)  # NumPy's pairwise sum

    def _back(self, p: Any, g: np.ndarray) -> np.ndarray:
        return np.broadcast_to(g.reshape(kept(p.inputs[0].shape, p.axes)), p.inputs[0].shape)

    def vjp(self, p, g, ins, y, check):
        return [lambda: self._back(p, g)]

    def jvp(self, p, ins, tins, y):
        return self.jvps(p, ins, one(tins), y, None)[0]

    def jvps(self, p, ins, tins, y, out):
        return np.sum(tins[0], axis=shifted(p.axes)).reshape((-1, *p.shape))

    def adjoint(self, p, g, ins, y, h):
        return [g.reshape(kept(p.inputs[0].shape, p.axes))]  # the sweep broadcasts it back

    def tangent(self, p, ins, tins, y, h):
        return None if tins[0] is None else h.reduce("sum", tins[0], p.axes, p.shape)

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        return [(self._back(p, g), self._back(p, gd))]

    def sparsity(self, p):
        return reduction_sparsity(p)


class LogSumExp(Rule):
    """y = log Σ_axes exp(a): a' += g exp(a - y), the softmax times g."""

    compiled = LOGSUMEXP

    def shapes(self, shape, wide, views, axes):
        return reduced_shapes(views, axes)

    def forward(self, p, ins, out):
        """Shifted by the largest element (no overflow); -inf for all -inf. Its zero's sign does not reach y."""
        a = ins[0]
        top = largest(a, p.axes)
        top = np.where(np.isfinite(top), top, 0.0)
        e = np.subtract(a, top)
        out[...] = (np.log(np.sum(np.exp(e, out=e), axis=p.axes, keepdims=True)) + top).reshape(out.shape)

    @staticmethod
    def _softmax(a: np.ndarray, y: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        e = np.subtract(a, y.reshape(kept(a.shape, axes)))
        return np.exp(e, out=e)

    def vjp(self, p, g, ins, y, check):
        a = ins[0]
        return [lambda: times(g.reshape(kept(a.shape, p.axes)), self._softmax(a, y, p.axes), check)]

    def jvp(self, p, ins, tins, y):
        return self.jvps(p, ins, one(tins), y, None)[0]

    def jvps(self, p, ins, tins, y, out):
        return np.sum(times(tins[0], self._softmax(ins[0], y, p.axes)), axis=shifted(p.axes)).reshape((-1, *p.shape))

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

    def sparsity(self, p):
        return reduction_sparsity(p)

    def second_pairs(self, p, live):
        group = lines(p.inputs[0].shape, p.axes)[live]
        g = group.shape[1]
        return np.repeat(group, g, axis=1).reshape(-1), np.tile(group, (1, g)).reshape(-1)


def largest(a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """np.max(a, axes, keepdims=True) up to a zero's sign; along one axis that LINES times its length of lines
    cross, by one np.maximum per element of a line (NumPy reduces line by line, ~30 ns a line: 10,000 lines
    of 16, 475 -> 182 µs)."""
    if len(axes) != 1 or a.size < LINES * a.shape[axes[0]] ** 2:
        return np.max(a, axis=axes, keepdims=True)
    lines = np.moveaxis(a, axes[0], 0)
    top = lines[0].copy()
    for line in lines[1:]:
        np.maximum(top, line, out=top)
    return np.expand_dims(top, axes[0])


class Extreme(Rule):
    """max and min over axes: the adjoint goes to the tied extremes in equal shares (piecewise linear)."""

    REDUCE = {"max": np.max, "min": np.min}

    def shapes(self, shape, wide, views, axes):
        return reduced_shapes(views, axes)

    def forward(self, p, ins, out):
        """NaN where a NaN is among the elements (as NumPy)."""
        out[...] = self.REDUCE[p.name](ins[0], axis=p.axes, keepdims=True).reshape(out.shape)

    @staticmethod
    def share(a: np.ndarray, y: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """d y / d a: 1/k at each of the k elements equal to the result (a tie shares the slope equally,
        as JAX's), 0 elsewhere; where y is NaN, the NaNs share it."""
        result = y.reshape(kept(a.shape, axes))
        nan = np.isnan(result)  # (a pass over the few results; over a where one is NaN)
        hit = np.where(nan, np.isnan(a), a == result) if nan.any() else a == result
        if np.count_nonzero(hit) == result.size:  # as many hits as lines, each holding its y: no line ties
            return hit.astype(np.float64)
        return hit / np.count_nonzero(hit, axis=axes, keepdims=True)

    def vjp(self, p, g, ins, y, check):
        a = ins[0]
        return [lambda: times(g.reshape(kept(a.shape, p.axes)), self.share(a, y, p.axes), check)]

    def jvp(self, p, ins, tins, y):
        return self.jvps(p, ins, one(tins), y, None)[0]

    def jvps(self, p, ins, tins, y, out):
        return np.sum(times(tins[0], self.share(ins[0], y, p.axes)), axis=shifted(p.axes)).reshape((-1, *p.shape))

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

    def sparsity(self, p):
        return reduction_sparsity(p)


class Matmul(Rule):
    """Y = A B over the last two axes (operands widened to 2-d: p.wide): A' += G Bᵀ, B' += Aᵀ G."""

    compiled = MATMUL

    def back_reads(self, p, constant):  # A's partial reads B, B's reads A
        return partials_read((frozenset("b"), frozenset("a")), p, constant)

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
        return self.jvps(p, ins, one(tins), y, None)[0]

    def jvps(self, p, ins, tins, y, out):
        ta, tb = leading(tins, len(p.wide))
        terms = [product(ta, ins[1]) if ta is not None else None, product(ins[0], tb) if tb is not None else None]
        total = terms[0] if terms[1] is None else terms[1] if terms[0] is None else terms[0] + terms[1]
        return total.reshape((-1, *p.shape))

    def adjoint(self, p, g, ins, y, h):
        G = g.reshape(p.wide)
        return [G @ np.swapaxes(ins[1], -1, -2) if h.want[0] else None,
                np.swapaxes(ins[0], -1, -2) @ G if h.want[1] else None]

    def tangent(self, p, ins, tins, y, h):
        terms = [tins[0] @ ins[1] if tins[0] is not None else None, ins[0] @ tins[1] if tins[1] is not None else None]
        total = h.plus(*terms)
        return None if total is None else total.reshape(p.shape)

    def vjp_jvp(self, p, g, gd, ins, tins, y):  # a constant (tangent None) is sent nothing and adds no term
        G, Gd = g.reshape(p.wide), gd.reshape(p.wide)
        (At, Bt), (Ta, Tb) = ([None if x is None else np.swapaxes(x, -1, -2) for x in xs] for xs in (ins, tins))
        return [None if Ta is None else (product(G, Bt), product(Gd, Bt) if Tb is None else
                                         product(Gd, Bt) + product(G, Tb)),
                None if Tb is None else (product(At, G), product(At, Gd) if Ta is None else
                                         product(Ta, G) + product(At, Gd))]

    @staticmethod
    def _terms(p: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(output, A's element, B's element) of every product term A[.., i, k] B[.., k, j], shape (.., i, j, k)."""
        A, B = (v.shape for v in p.inputs)
        out = np.arange(math.prod(p.wide), dtype=np.int64).reshape(p.wide)[..., None]
        a, b = (np.broadcast_to(np.arange(math.prod(v), dtype=np.int64).reshape(v), (*p.wide[:-2], *v[-2:]))
                for v in (A, B))
        full = (*p.wide, A[-1])
        return (np.broadcast_to(out, full), np.broadcast_to(a[..., :, None, :], full),
                np.broadcast_to(np.swapaxes(b, -1, -2)[..., None, :, :], full))

    def sparsity(self, p):
        out, a, b = (t.reshape(-1) for t in self._terms(p))
        return [(out, a), (out, b)]

    def second_pairs(self, p, live):
        out, a, b = self._terms(p)
        held = live[out]
        return both_orders(a[held], b[held] + math.prod(p.inputs[0].shape))
