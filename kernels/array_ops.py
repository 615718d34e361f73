"""The array op table: one record per array operation, each row with every rule side by side.

An array record is one row of the same record table as the scalar records
(opcode ``ARRAY_BASE`` + its place here), so creation order is still a
topological order and the reverse sweep still goes by index. Its elements
live in a value arena and an adjoint arena (tape/sweeps/driver.py); what it reads is
described by views (record, offset, shape, strides), so slices, transposes
and reshapes record nothing.

Elementwise ops apply the scalar table's rules of kernels/ops.py to every
element (kernels/_array_rules.py, generated), so a program gives the same
derivatives whether its arrays are scalar records or array records. NumPy
broadcasting is summed back to each input's shape by the sweep, once for all
ops (``unbroadcast``), as autograd's and JAX's single helper does: no rule
below handles shapes. The rules of the other ops, as the articles derive them:

``sum``        y = Σ_axes a                 a' += g, broadcast back over the axes
``matmul``     Y = A B                      A' += G Bᵀ, B' += Aᵀ G (batch axes summed back)
``logsumexp``  y = log Σ_axes exp(a)        a' += g exp(a - y): softmax times g, fused
``select``     y = a where c != 0 else b    a' += g where c != 0, b' += g where c == 0
``gather``     y = a.flat[index]            a'.flat[index] += g (repeated places add up)
``pack``       y = scalar records' values   each scalar record's adjoint += its element of g
``compare``, ``all``, ``any``               1.0 or 0.0 per element; no derivative
``scan``       y = cumsum or cumprod along  cumsum: a' += reversed cumsum of g; cumprod: a' += P_{j-1} R_j,
               one axis                     no division, zero-safe (kernels/scans.py)
``sort``       y = a[perm] along one axis   a'[perm] += g; perm recomputed from a at every pass (stable)
``call``       y = F(a), F a Function       a' += F.vjp(a, g); its tangent F.jvp, its second order F's own
               (places: F's slot)           sweeps (tape/function/call_records.py: CppAD's checkpoint functions)
``join``       y = [a, b, c] along one axis a' += g's slice of a's place (and b', c' of theirs)
``scatter``    y = 0; y.flat[index] += a    a' += g.flat[index] (a gather's transpose: derivatives as records)
``sort_as``    y = x[perm(a)] along an axis x' += g[perm(a)⁻¹] (unsort_as), none to a (perm is piecewise constant);
``unsort_as``  y = x[perm(a)⁻¹]             what sort's derivatives are as records
``solve`` ...  np.linalg and scipy.linalg   kernels/linalg.py: solve, solve_lower/upper, inv, det, slogdet,
                                            cholesky, eigh, qr, svd, lu (Giles', Murray's, Townsend's rules)

Tangents (forward mode) are the same rules read forward: an elementwise record's
tangent is da ȧ + db ḃ, a matmul's Ȧ B + A Ḃ, a reduction's the reduced tangent.

Each row's kind names its ``Rule`` (kernels/array_rule.py; the kinds are in array_kinds.py,
array_moves.py and linalg.py): shape, forward, vjp, jvp and the adjoint's tangent (second order)
over NumPy arrays, sparsity, and the adjoint and tangent as records. The sweeps (tape/sweeps/driver.py,
tangents.py) call a row's rule and know no op by name; they only know how a rule reads
(``Rule.reads``): views of earlier records, or, for four plumbing kinds, nothing (an
input), scalar records (pack), a record's elements by index (gather) or a Function (call).
Adding an array op is a row here, and a Rule there if its kind is new.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._array_driver import GATHER
from ._array_rules import RULES
from .array_kinds import COMPARE_UFUNC, Compare, Elementwise, Extreme, LogSumExp, Matmul, Select, Sum, Truth
from .array_moves import Join, Permute, Scan, Scatter, Sort
from .array_rule import Constant, Plumbing, Rule
from .linalg import LINALG_RULES
from .ops import ARRAY_BASE, OPS, UNARY


@dataclass(frozen=True)
class ArrayOp:
    name: str
    kind: str  # input constant unary binary compare select sum matmul logsumexp gather pack all any extreme
    # scan sort call join, and each linear algebra op its own (kernels/linalg.py)
    inputs: int = 1  # views it reads (pack and gather read scalar rows or places instead)
    least: int | None = None  # the views it must read, where fewer than ``inputs`` will do (the rest absent)


BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "arctan2", "hypot", "logaddexp", "fmax", "fmin")

ARRAY_OPS: tuple[ArrayOp, ...] = (
    ArrayOp("input", "input", 0),  # an array of inputs (Tape.array, tape.trace)
    ArrayOp("constant", "constant", 0),  # numbers an op reads (x * c for an array c); never gets an adjoint
    *(ArrayOp(name, "unary") for name in UNARY),
    *(ArrayOp(name, "binary", 2) for name in BINARY),
    *(ArrayOp(name, "compare", 2) for name in COMPARE_UFUNC),
    ArrayOp("select", "select", 3),  # inputs: condition, a, b
    ArrayOp("sum", "sum"),
    ArrayOp("matmul", "matmul", 2),
    ArrayOp("logsumexp", "logsumexp"),
    ArrayOp("gather", "gather"),
    ArrayOp("pack", "pack", 0),
    ArrayOp("all", "all"),
    ArrayOp("any", "any"),
    ArrayOp("max", "extreme"),  # max and min over axes: the adjoint goes to the tied extremes in equal shares
    ArrayOp("min", "extreme"),
    ArrayOp("cumsum", "scan"),  # along the one axis in ``axes``; cumprod's rules are zero-safe recurrences
    ArrayOp("cumprod", "scan"),
    ArrayOp("sort", "sort"),  # along the one axis in ``axes``: a stable sort, its permutation recomputed
    ArrayOp("call", "call", 2, least=1),  # a Function of a flat view (and its params view): function/call_records.py
    ArrayOp("join", "join", 3, least=2),  # np.concatenate of two or three views along the one axis in ``axes``
    ArrayOp("scatter", "scatter"),  # a view's elements added at ``places`` of a zero region: a gather's transpose
    ArrayOp("mul_nz", "binary", 2),  # 0 where a factor is 0: the product of derivatives recorded as records
    ArrayOp("sort_as", "permute", 2),  # x (view 1) moved along the axis as sorting a (view 0) moves a: sort's tangent
    ArrayOp("unsort_as", "permute", 2),  # and back: sort's adjoint
    # linear algebra (kernels/linalg.py): each its own kind, A first
    *(ArrayOp(name, name, 2) for name in ("solve", "solve_lower", "solve_upper")),
    *(ArrayOp(name, name) for name in ("inv", "det", "slogdet", "cholesky", "eigh", "qr", "svd")),
    ArrayOp("lu", "lu"),  # scipy.linalg.lu_factor: [LU; P] (kernels/linalg.py)
)  # new ops go last: a saved file's opcodes are places in this table
assert ARRAY_BASE + len(ARRAY_OPS) < 256, "opcodes are stored as uint8; 255 stays unknown (V3_OPCODES)"
assert all(op.name in RULES for op in ARRAY_OPS if op.kind in ("unary", "binary"))

ARRAY_OPCODE = {op.name: ARRAY_BASE + k for k, op in enumerate(ARRAY_OPS)}
INPUT, ACONSTANT = ARRAY_OPCODE["input"], ARRAY_OPCODE["constant"]
# the name of every opcode, scalar and array (tables, pictures, errors)
NAME = [op.name for op in OPS] + [f"opcode {k}" for k in range(len(OPS), ARRAY_BASE)] + \
    [f"array {op.name}" for op in ARRAY_OPS] + [f"opcode {k}" for k in range(ARRAY_BASE + len(ARRAY_OPS), 256)]
ARRAY_KIND = ["" for _ in range(ARRAY_BASE)] + [op.kind for op in ARRAY_OPS] + \
    ["" for _ in range(ARRAY_BASE + len(ARRAY_OPS), 256)]
IS_ARRAY_OP = np.array([bool(kind) for kind in ARRAY_KIND])  # a known array opcode

# The array ops of tape format version 3, frozen: opcode 64 + place. tape/function/format.py maps such a file's
# opcodes by name through V3_OPCODES (its scalar opcodes, all below 64, are today's; 255: unknown).
V3_ARRAY_OPS = (
    "input", "constant", "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "log1p",
    "expm1", "exp2", "log2", "log10", "cbrt", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh",
    "arctanh", "erf", "erfc", "lgamma", "floor", "ceil", "trunc", "rint", "sign", "stop_gradient", "add", "sub", "mul",
    "div", "pow", "maximum", "minimum", "lt", "le", "eq", "ne", "select", "sum", "matmul", "logsumexp", "gather",
    "pack", "all", "any", "max", "min")
V3_OPCODES = np.array(list(range(64)) + [ARRAY_OPCODE[name] for name in V3_ARRAY_OPS]
                      + [255] * (256 - 64 - len(V3_ARRAY_OPS)), np.uint8)
IS_ARRAY_LEAF = np.isin(ARRAY_KIND, ("input", "constant"))  # an array record without inputs


KIND_RULES: dict[str, Rule] = {  # each kind's Rule: kernels/array_kinds.py, array_moves.py, linalg.py
    "input": Plumbing("none", derivative=False), "constant": Constant(), "unary": Elementwise(),
    "binary": Elementwise(), "compare": Compare(), "select": Select(), "sum": Sum(), "matmul": Matmul(),
    "logsumexp": LogSumExp(), "gather": Plumbing("elements", places="input", compiled=GATHER),
    "pack": Plumbing("scalars", places="rows"), "all": Truth(), "any": Truth(), "extreme": Extreme(), "scan": Scan(),
    "sort": Sort(), "call": Plumbing("callee", places="callee"), "join": Join(), "scatter": Scatter(),
    "permute": Permute(),
}
NOT_ARRAY = Plumbing("none", derivative=False)  # the rule of a scalar opcode: plans never hold one
RULE: list[Rule] = [{**KIND_RULES, **LINALG_RULES}[kind] if kind else NOT_ARRAY for kind in ARRAY_KIND]  # by opcode
