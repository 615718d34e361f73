"""What every kind of array op has: a ``Rule`` (its row's rules side by side), the products of the
structural-zero rule, the sum back over broadcast axes, and the sparsity helpers.

Each kind's ``Rule`` holds the output shape it can have (what ``tape.load`` checks), forward, vjp,
jvp and the adjoint's tangent (second order) over NumPy arrays, its sparsity, and its adjoint and
tangent as records. The kinds: kernels/array_kinds.py (arithmetic: elementwise ops, selects,
reductions, matmul), kernels/array_moves.py (elements moved: scans, sorts, joins, scatters),
kernels/linalg.py (linear algebra); kernels/array_ops.py names each row's kind. The sweeps
(tape/sweeps/driver.py, tangents.py) call a row's rule and know no op by name; they only know how
a rule reads (``Rule.reads``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

# --- products where a zero factor adds nothing (the structural-zero rule of every sweep) -------


def times(g: np.ndarray, d: Any, check: bool = True, out: np.ndarray | None = None) -> np.ndarray:
    """g * d, where g == 0 or d == 0 gives 0 even against inf or NaN: the plain product, redone
    with the mask only when it holds a NaN (its sum is NaN then: one pass, no temporary).
    ``check=False`` skips that pass: for a sweep that checks its result and redoes itself. ``out``:
    where a product goes (what is returned may be another array: g itself for d = 1)."""
    if type(d) is float:  # a rule's number: 0 sends nothing, 1 and -1 need no product (not a NumPy scalar: masked)
        return (g if d == 1.0 else np.negative(g, out=out) if d == -1.0 else np.zeros_like(g) if d == 0.0
                else np.multiply(g, d, out=out))
    c = np.multiply(g, d, out=out)
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


# --- sparsity: which elements each element reads (tape/function/array_sparsity.py propagates it) ----
# A Local says which elements of one view each output element depends on: (None, None) element e reads
# element e (same shape); (None, cols) e reads cols[e]; (rows, cols) output rows[t] reads cols[t]. Element
# numbers are C order within the view's and the output's shapes. Pairs (rows, cols) number the elements
# of a record's views one view after another.

Local = tuple[np.ndarray | None, np.ndarray | None]
Pairs = tuple[np.ndarray, np.ndarray]


def spread(view: Shape, shape: Shape) -> np.ndarray:
    """The element of a view that each element of the broadcast shape reads."""
    return np.broadcast_to(np.arange(math.prod(view), dtype=np.int64).reshape(view), shape).reshape(-1)


def read_map(view: Shape, shape: Shape) -> Local:
    return (None, None) if view == shape else (None, spread(view, shape))


def lines(shape: Shape, axes: tuple[int, ...]) -> np.ndarray:
    """(outputs, elements per output): the elements of ``shape`` along ``axes`` for each place of the
    other axes, in C order of those places (a reduction's groups; a scan's or a sort's lines)."""
    rest = [k for k in range(len(shape)) if k not in axes]
    index = np.arange(math.prod(shape), dtype=np.int64).reshape(shape).transpose(rest + list(axes))
    return index.reshape(math.prod([shape[k] for k in rest]), math.prod([shape[k] for k in axes]))


def reduction_sparsity(p: Any) -> list[Local | None]:
    group = lines(p.inputs[0].shape, p.axes)
    return [(np.repeat(np.arange(len(group), dtype=np.int64), group.shape[1]), group.reshape(-1))]


def whole_lines(p: Any) -> Local:
    """Each element reads every element of its line along p's axis (a sort's data-dependent permutation)."""
    line = lines(p.shape, p.axes)
    n = line.shape[1]
    return np.repeat(line, n, axis=1).reshape(-1), np.tile(line, (1, n)).reshape(-1)


def both_orders(rows: np.ndarray, cols: np.ndarray) -> Pairs:
    return np.concatenate([rows, cols]), np.concatenate([cols, rows])


def depends(d: Any) -> bool:
    """Whether a rule's partial is not zero by the table (None or the number 0.0 are)."""
    return d is not None and not (isinstance(d, float) and d == 0.0)


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
    compiled = 0  # its kind in the compiled array sweeps (kernels/array_driver.py); 0: NumPy's step runs it

    def back_reads(self, p: Any, constant: tuple[bool, ...]) -> tuple[bool, ...]:
        """For each input of p, then p itself: whether p's reverse step reads that value (the arenas' liveness,
        tape/sweeps/layout.py); ``constant``: which inputs are constants, whose partials are never made. All,
        unless the kind says otherwise: a new kind is safe as it is."""
        return (self.derivative,) * (len(p.inputs) + 1)

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

    def jvps(self, p: Any, ins: list[Any], tins: list[Any], y: np.ndarray, out: np.ndarray) -> Any:
        """jvp for k directions at once (vector mode, tape/sweeps/vectors.py): each tangent (None: a constant's), and
        the result, has a leading axis of directions; the result may be ``out``, the record's tangents, written in
        place. This default takes the directions one at a time; a kind whose jvp NumPy broadcasts over the leading
        axis, or that shifts its axes by one, overrides it."""
        tins = filled(p, tins)
        return np.stack([np.broadcast_to(self.jvp(p, ins, [t[q] for t in tins], y), p.shape)
                         for q in range(len(tins[0]))])

    def vjp_jvp(self, p: Any, g: np.ndarray, gd: np.ndarray, ins: list[Any], tins: list[Any], y: np.ndarray
                ) -> list[tuple[Any, Any] | None]:
        return [None] * len(ins)

    def sparsity(self, p: Any) -> list[Local | None]:
        """Per view, which of its elements each output element depends on (Local); None: none."""
        return [None] * len(p.inputs)

    def second_pairs(self, p: Any, live: np.ndarray) -> Pairs | None:
        """Pairs of the views' elements where Σ over the live output elements e of ∇²y_e is not zero by
        the rules (both orders); None where the op is linear in its views."""
        return None

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


def leading(tins: list[Any], ndim: int) -> list[Any]:
    """Tangents with a leading axis of directions, given ones after it up to ``ndim`` axes of their own: NumPy
    then broadcasts them against the values as it broadcasts the views (no copy; None stays None)."""
    return [t if t is None else t.reshape(t.shape[:1] + (1,) * (ndim + 1 - t.ndim) + t.shape[1:]) for t in tins]


def filled(p: Any, tins: list[Any]) -> list[np.ndarray]:
    """Tangents with a constant's None as zeros (read only) of its view's shape, k directions."""
    k = next(len(t) for t in tins if t is not None)
    return [np.broadcast_to(0.0, (k, *v.shape)) if t is None else t for v, t in zip(p.inputs, tins, strict=True)]


def one(tins: list[np.ndarray]) -> list[np.ndarray]:
    """One direction's tangents as k = 1 directions: a kind whose jvp is its jvps reads jvps(...)[0]."""
    return [t[None] for t in tins]


def shifted(axes: tuple[int, ...]) -> tuple[int, ...]:
    """Axes of a view, counted in its tangents with the leading axis of directions."""
    return tuple(k + 1 for k in axes)

class Plumbing(Rule):
    """A kind whose reads are not views: the sweeps move its numbers (tape/sweeps/driver.py, tangents.py)."""

    def __init__(self, reads: str, derivative: bool = True, places: str = "", compiled: int = 0):
        self.reads, self.derivative, self.places, self.compiled = reads, derivative, places, compiled

    def back_reads(self, p, constant):
        moved = self.reads in ("elements", "scalars")  # a gather's or a pack's adjoint moves numbers only
        return (self.derivative and not moved,) * (len(p.inputs) + 1)


def partials_read(sides: tuple[frozenset[str], ...], p: Any, constant: tuple[bool, ...]) -> tuple[bool, ...]:
    """back_reads from the names ("a", "b", "y") each input's partial reads, a constant's partial left out."""
    names = frozenset().union(*(d for d, c in zip(sides, constant, strict=False) if not c))
    return (*("ab"[j] in names for j in range(len(p.inputs))), "y" in names)


class Constant(Rule):
    """Numbers an op reads (x * c for an array c): no inputs, no derivative, a zero tangent."""

    derivative = False


def broadcast_of(views: list[Shape]) -> list[Shape]:
    return [tuple(np.broadcast_shapes(*views))]


def reduced_shapes(views: list[Shape], axes: tuple[int, ...]) -> list[Shape]:
    a = views[0]
    if any(x >= len(a) for x in axes):
        raise ValueError(f"reduces axes {axes} of a {len(a)}-d view")
    return [kept(a, axes), tuple(n for j, n in enumerate(a) if j not in axes)]
