"""The kinds of array op that move elements: scans and sorts along an axis, joins and scatters
(kernels/array_rule.py says what a kind's ``Rule`` holds)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._array_driver import COPY
from .array_rule import Rule, filled, lines, one, shifted, whole_lines
from .scans import permutation, scan_forward, scan_jvp, scan_vjp, scan_vjp_second, sort_forward, sort_vjp


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

    def jvps(self, p, ins, tins, y, out):  # cumprod's recurrence runs a direction at a time
        return np.cumsum(tins[0], axis=p.axes[0] + 1) if p.name == "cumsum" else super().jvps(p, ins, tins, y, out)

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

    def sparsity(self, p):  # element t of a line reads elements 0..t
        line = lines(p.shape, p.axes)
        below = np.tril_indices(line.shape[1])
        return [(line[:, below[0]].reshape(-1), line[:, below[1]].reshape(-1))]

    def second_pairs(self, p, live):  # cumprod: any two elements up to the last live one of their line
        if p.name == "cumsum":
            return None
        line = lines(p.shape, p.axes)
        n = line.shape[1]
        last = n - 1 - np.argmax(live[line][:, ::-1], axis=1)
        last[~live[line].any(axis=1)] = -1
        s, t = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        held = (s != t)[None] & (np.maximum(s, t)[None] <= last[:, None, None])
        which, first, second = np.nonzero(held)
        return line[which, first], line[which, second]


class Sort(_AlongOneAxis):
    """A stable sort along one axis; its permutation recomputed from the values at every pass."""

    def forward(self, p, ins, out):
        sort_forward(ins[0], p.axes[0], out)

    def vjp(self, p, g, ins, y, check):
        return [lambda: sort_vjp(ins[0], g, p.axes[0])]

    def jvp(self, p, ins, tins, y):
        return self.jvps(p, ins, one(tins), y, None)[0]

    def jvps(self, p, ins, tins, y, out):
        return np.take_along_axis(tins[0], permutation(ins[0], p.axes[0])[None], *shifted(p.axes))

    def adjoint(self, p, g, ins, y, h):
        return [h.permute("unsort_as", ins[0], g, p.axes[0])]

    def tangent(self, p, ins, tins, y, h):
        return None if tins[0] is None else h.permute("sort_as", ins[0], tins[0], p.axes[0])

    def vjp_jvp(self, p, g, gd, ins, tins, y):  # piecewise linear: the permutation does not move
        return [(sort_vjp(ins[0], g, p.axes[0]), sort_vjp(ins[0], gd, p.axes[0]))]

    def sparsity(self, p):  # the permutation depends on the values: each element may read its whole line
        return [whole_lines(p)]


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

    def sparsity(self, p):  # x moved by a's permutation (a carries nothing): any place of its line
        return [None, whole_lines(p)]


class Join(Rule):
    """np.concatenate of two or three views along one axis: each input's adjoint is its slice of g."""

    compiled = COPY

    def back_reads(self, p, constant):
        return (False,) * (len(p.inputs) + 1)

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
        return self.jvps(p, ins, one(tins), y, None)[0]

    def jvps(self, p, ins, tins, y, out):
        return np.concatenate(filled(p, tins), axis=p.axes[0] + 1, out=out)

    def adjoint(self, p, g, ins, y, h):
        return self._parts(p, g)  # slices of a handle are views

    def tangent(self, p, ins, tins, y, h):
        if all(t is None for t in tins):
            return None
        return np.concatenate([h.zeros(v.shape) if t is None else t for v, t in zip(p.inputs, tins, strict=True)],
                              axis=p.axes[0])

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        return list(zip(self._parts(p, g), self._parts(p, gd), strict=True))

    def sparsity(self, p):
        places = self._parts(p, np.arange(math.prod(p.shape), dtype=np.int64).reshape(p.shape))
        return [(part.reshape(-1), np.arange(part.size, dtype=np.int64)) for part in places]


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
        return self.jvps(p, ins, one(tins), y, None)[0]

    def jvps(self, p, ins, tins, y, out):  # direction q's places moved past the q before it
        k, size = len(tins[0]), math.prod(p.shape)
        places = (p.places + size * np.arange(k, dtype=np.int64)[:, None]).reshape(-1)
        return np.bincount(places, np.reshape(tins[0], -1), k * size).reshape((k, *p.shape))

    def adjoint(self, p, g, ins, y, h):
        return [h.gather(g, p.places, p.inputs[0].shape)]

    def tangent(self, p, ins, tins, y, h):
        return None if tins[0] is None else h.scatter(tins[0], p.places, p.shape)

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        return [(self._gathered(p, g), self._gathered(p, gd))]

    def sparsity(self, p):
        return [(p.places, np.arange(len(p.places), dtype=np.int64))]
