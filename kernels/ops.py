"""The op table: every primitive's forward and backward rule, side by side.

This is the one place to edit when adding an op. ``python -m kernels.codegen``
turns the table into the Numba sweeps in ``kernels/_sweeps.py`` and the Python
recorders in ``tape/records/_recorders.py`` (a test fails when either is stale), so
recording and replay evaluate the same expression. Below the table: how Python
operators and NumPy ufuncs are spelled in ops (``x - c`` is ``add_c`` with -c,
``x > y`` is ``lt(y, x)``), and masks over opcodes, computed once.

A rule is one expression per partial, as Adept writes its unary functions and
PyTorch's derivatives.yaml its formulas; the reverse sweep is the multiply-add
of stored partials that Adept's Stack runs.

Names inside a rule:

``a``, ``b``  values of the first and second input record
``c``         the constant operand of a ``const`` op (kept in the tape's pool)
``y``         this record's own value (the forward result)
``cond``      for ``select``: the value of the record just before it (a comparison)

``daa``/``dab``/``dbb`` are the second partials, used by Hessian-vector
products (forward-over-reverse); empty means zero.

``da``/``db`` are the local partial derivatives dy/da and dy/db. The reverse
sweep adds ``g * da`` to the first input's adjoint and ``g * db`` to the
second's (``g``: this record's adjoint); a Function's value-and-gradient sweep
stores ``da``/``db`` during the forward pass instead and multiplies later, so
both give the same bits. An op without partials (comparisons) sends nothing
back; ``when_a``/``when_b`` make a contribution conditional: ``select`` sends
its adjoint only to the chosen input, so the other branch is never visited
and its inf/NaN partials (``x / y`` at ``y = 0``) cannot reach the gradient.
In every sweep a product with a zero factor (adjoint, tangent, partial or second
partial) adds nothing, so forward and reverse mode agree where ``0 * inf`` lurks.

Kinds: ``leaf`` (no inputs: ``leaf`` is an input, ``constant`` is not),
``unary`` (a), ``binary`` (a, b), ``const`` (a and a constant c; ``x * 2.0``
records one row, not two), ``compare``/``compare_c`` (1.0 if the predicate
holds, else 0.0; no derivative), ``select`` (a if cond else b).

The helpers below are plain Python over floats; the generated kernels compile
them with Numba, and recording calls them directly, so both sides agree.
Conventions at kinks are documented in docs/design.md and pinned by tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import exp, log, nan, pow

import numpy as np

from .special import (
    atan2_curvature,
    atan2_da,
    atan2_mixed,
    cbrt,
    ceil,
    digamma,
    floor,
    fmax,
    fmax_share,
    fmin,
    hypot_curvature,
    hypot_da,
    logaddexp,
    logaddexp_share,
    rint,
    trigamma,
    trunc,
)


@dataclass(frozen=True)
class Op:
    name: str
    kind: str  # "leaf" | "unary" | "binary" | "const"
    forward: str = ""
    da: str = ""  # d forward / d a: the local partial derivative
    db: str = ""  # d forward / d b
    when_a: str = ""
    when_b: str = ""
    daa: str = ""  # second partials, for Hessian-vector products; empty means zero
    dab: str = ""
    dbb: str = ""


# --- scalar helpers used by the rules (pure functions of floats) -----------


def sign(a):
    """-1, 0 or 1; NaN stays NaN. abs'(0) = sign(0) = 0."""
    if a > 0.0:
        return 1.0
    if a < 0.0:
        return -1.0
    if a == 0.0:
        return 0.0
    return nan


def relu(a):
    """max(a, 0) with NaN propagated."""
    if a > 0.0:
        return a
    if a <= 0.0:
        return 0.0
    return a


def step(a):
    """relu'(a): 1 for a > 0, 0 for a <= 0 (relu'(0) = 0), NaN for NaN."""
    if a > 0.0:
        return 1.0
    if a <= 0.0:
        return 0.0
    return nan


def maximum(a, b):
    """The larger of a and b; NaN if either is NaN (as numpy.maximum)."""
    if a > b:
        return a
    if b > a:
        return b
    if a == b:
        return a
    return nan


def minimum(a, b):
    """The smaller of a and b; NaN if either is NaN (as numpy.minimum)."""
    if a < b:
        return a
    if b < a:
        return b
    if a == b:
        return a
    return nan


def max_share(a, b):
    """d maximum(a, b) / da: 1 if a wins, 0 if b wins, 1/2 each at a tie."""
    if a > b:
        return 1.0
    if b > a:
        return 0.0
    if a == b:
        return 0.5
    return nan


def mul_nz(a, b):
    """a * b where both are nonzero, else 0.0 (so 0 * inf and 0 * NaN are 0): the product that every
    sweep adds, as a record. Gradient tapes (tape/symbolic/adjoint.py) record their products with it."""
    if a == 0.0 or b == 0.0:
        return 0.0
    return a * b


def pow_daa(a, c):
    """d2 a**c / da2 = c (c-1) a**(c-2), exactly 0 for c = 0 or 1 (no 0 * inf at a = 0)."""
    if c == 0.0 or c == 1.0:
        return 0.0
    return c * (c - 1.0) * pow(a, c - 2.0)


def pow_dab(a, b):
    """d2 a**b / da db = a**(b-1) (1 + b log a), taken as 0 at a == 0 (as pow_dc)."""
    if a == 0.0:
        return 0.0
    return pow(a, b - 1.0) * (1.0 + b * log(a))


def pow_dbb(a, y):
    """d2 a**b / db2 = a**b log(a)**2, taken as 0 at a == 0 (as pow_dc)."""
    if a == 0.0:
        return 0.0
    return y * log(a) * log(a)


def sigmoid(a):
    """1 / (1 + exp(-a)), written so that exp never overflows."""
    if a >= 0.0:
        return 1.0 / (1.0 + exp(-a))
    e = exp(a)
    return e / (1.0 + e)


def pow_da(a, c):
    """d a**c / da = c * a**(c-1), exactly 0 for c == 0 (so 0**0 has slope 0)."""
    if c == 0.0:
        return 0.0
    return c * pow(a, c - 1.0)


def pow_dc(a, y):
    """d a**c / dc = a**c * log(a), taken as 0 at a == 0 (as JAX does)."""
    if a == 0.0:
        return 0.0
    return y * log(a)


# --- the table -------------------------------------------------------------
# opcode = position in OPS; the codes are part of the tape file format, so
# new ops are appended at the end.

OPS: tuple[Op, ...] = (
    Op("leaf", "leaf"),
    # binary: two records
    Op("add", "binary", "a + b", "1.0", "1.0"),
    Op("sub", "binary", "a - b", "1.0", "-1.0"),
    Op("mul", "binary", "a * b", "b", "a", dab="1.0"),
    Op("div", "binary", "a / b", "1.0 / b", "-y / b", dab="-1.0 / (b * b)", dbb="2.0 * y / (b * b)"),
    Op("pow", "binary", "pow(a, b)", "pow_da(a, b)", "pow_dc(a, y)",
       daa="pow_daa(a, b)", dab="pow_dab(a, b)", dbb="pow_dbb(a, y)"),
    Op("maximum", "binary", "maximum(a, b)", "max_share(a, b)", "max_share(b, a)"),
    Op("minimum", "binary", "minimum(a, b)", "max_share(b, a)", "max_share(a, b)"),
    # const: a record and a constant c (x - c is recorded as x + (-c), exactly)
    Op("add_c", "const", "a + c", "1.0"),
    Op("rsub_c", "const", "c - a", "-1.0"),
    Op("mul_c", "const", "a * c", "c"),
    Op("div_c", "const", "a / c", "1.0 / c"),
    Op("rdiv_c", "const", "c / a", "-y / a", daa="2.0 * y / (a * a)"),
    Op("pow_c", "const", "pow(a, c)", "pow_da(a, c)", daa="pow_daa(a, c)"),
    Op("rpow_c", "const", "pow(c, a)", "pow_dc(c, y)", daa="pow_dbb(c, y)"),
    Op("maximum_c", "const", "maximum(a, c)", "max_share(a, c)"),
    Op("minimum_c", "const", "minimum(a, c)", "max_share(c, a)"),
    # unary
    Op("neg", "unary", "-a", "-1.0"),
    Op("abs", "unary", "abs(a)", "sign(a)"),
    Op("exp", "unary", "exp(a)", "y", daa="y"),
    # (v + 0.0) turns -0.0 into +0.0 and changes no other number: at -0.0, as at 0, log' and sqrt' are +inf
    Op("log", "unary", "log(a)", "1.0 / (a + 0.0)", daa="-1.0 / (a * a)"),
    Op("sqrt", "unary", "sqrt(a)", "0.5 / (y + 0.0)", daa="-0.25 / ((y + 0.0) * y * y)"),
    Op("sin", "unary", "sin(a)", "cos(a)", daa="-y"),
    Op("cos", "unary", "cos(a)", "-sin(a)", daa="-y"),
    Op("tan", "unary", "tan(a)", "1.0 + y * y", daa="2.0 * y * (1.0 + y * y)"),
    Op("tanh", "unary", "tanh(a)", "1.0 - y * y", daa="-2.0 * y * (1.0 - y * y)"),
    Op("sigmoid", "unary", "sigmoid(a)", "y * (1.0 - y)", daa="y * (1.0 - y) * (1.0 - 2.0 * y)"),
    Op("relu", "unary", "relu(a)", "step(a)"),
    # leaves that are not inputs (branches of tape.where given as numbers)
    Op("constant", "leaf"),
    # comparisons (x > y is recorded as lt(y, x)); no derivative
    Op("lt", "compare", "1.0 if a < b else 0.0"),
    Op("le", "compare", "1.0 if a <= b else 0.0"),
    Op("eq", "compare", "1.0 if a == b else 0.0"),
    Op("ne", "compare", "1.0 if a != b else 0.0"),
    Op("lt_c", "compare_c", "1.0 if a < c else 0.0"),
    Op("le_c", "compare_c", "1.0 if a <= c else 0.0"),
    Op("gt_c", "compare_c", "1.0 if a > c else 0.0"),
    Op("ge_c", "compare_c", "1.0 if a >= c else 0.0"),
    Op("eq_c", "compare_c", "1.0 if a == c else 0.0"),
    Op("ne_c", "compare_c", "1.0 if a != c else 0.0"),
    # tape.where(condition, a, b): the condition is the record just before
    Op("select", "select", "a if cond != 0.0 else b", "1.0", "1.0", "cond != 0.0", "cond == 0.0"),
    # one element of an array record (in0: the array record, in1: the element's place in it): a leaf
    # to every scalar sweep; the array sweep (tape/sweeps/driver.py) sets its value and takes its adjoint
    Op("elem", "leaf"),
    # more unary ops (NumPy's names; rules in math's); constants: ln 2, 1/ln 2, 1/ln 10, 2/sqrt(pi)
    Op("log1p", "unary", "log1p(a)", "1.0 / (1.0 + a)", daa="-1.0 / ((1.0 + a) * (1.0 + a))"),
    Op("expm1", "unary", "expm1(a)", "y + 1.0", daa="y + 1.0"),
    Op("exp2", "unary", "exp2(a)", "0.6931471805599453 * y", daa="0.4804530139182014 * y"),
    Op("log2", "unary", "log2(a)", "1.4426950408889634 / (a + 0.0)", daa="-1.4426950408889634 / (a * a)"),
    Op("log10", "unary", "log10(a)", "0.4342944819032518 / (a + 0.0)", daa="-0.4342944819032518 / (a * a)"),
    Op("cbrt", "unary", "cbrt(a)", "1.0 / (3.0 * y * y)", daa="-2.0 / (9.0 * y * y * y * y * y)"),
    Op("arcsin", "unary", "asin(a)", "1.0 / sqrt(1.0 - a * a)", daa="a / ((1.0 - a * a) * sqrt(1.0 - a * a))"),
    Op("arccos", "unary", "acos(a)", "-1.0 / sqrt(1.0 - a * a)", daa="-a / ((1.0 - a * a) * sqrt(1.0 - a * a))"),
    Op("arctan", "unary", "atan(a)", "1.0 / (1.0 + a * a)", daa="-2.0 * a / ((1.0 + a * a) * (1.0 + a * a))"),
    Op("sinh", "unary", "sinh(a)", "cosh(a)", daa="y"),
    Op("cosh", "unary", "cosh(a)", "sinh(a)", daa="y"),
    Op("arcsinh", "unary", "asinh(a)", "1.0 / hypot(a, 1.0)", daa="-a / (hypot(a, 1.0) * (a * a + 1.0))"),
    Op("arccosh", "unary", "acosh(a)", "1.0 / (sqrt(a - 1.0) * sqrt(a + 1.0))",
       daa="-a / ((a * a - 1.0) * sqrt(a - 1.0) * sqrt(a + 1.0))"),
    Op("arctanh", "unary", "atanh(a)", "1.0 / (1.0 - a * a)", daa="2.0 * a / ((1.0 - a * a) * (1.0 - a * a))"),
    Op("erf", "unary", "erf(a)", "1.1283791670955126 * exp(-a * a)", daa="-2.2567583341910252 * a * exp(-a * a)"),
    Op("erfc", "unary", "erfc(a)", "-1.1283791670955126 * exp(-a * a)", daa="2.2567583341910252 * a * exp(-a * a)"),
    Op("lgamma", "unary", "lgamma(a)", "digamma(a)", daa="trigamma(a)"),
    # piecewise constant: derivative 0 everywhere, also at the jumps (as JAX)
    Op("floor", "unary", "floor(a)", "0.0"),
    Op("ceil", "unary", "ceil(a)", "0.0"),
    Op("trunc", "unary", "trunc(a)", "0.0"),
    Op("rint", "unary", "rint(a)", "0.0"),
    Op("sign", "unary", "sign(a)", "0.0"),
    # the value, with no derivative: recomputed at every replay, unlike a number read with .value
    Op("stop_gradient", "unary", "a", "0.0"),
    # more binary ops (NumPy's names); a number on one side is recorded as a constant record, not as a
    # const op. Partials at the edges (origin, infinities, ties, NaN): kernels/special.py and docs/design.md
    Op("arctan2", "binary", "atan2(a, b)", "atan2_da(a, b)", "-atan2_da(b, a)",
       daa="-atan2_curvature(a, b)", dab="atan2_mixed(a, b)", dbb="atan2_curvature(a, b)"),
    Op("hypot", "binary", "hypot(a, b)", "hypot_da(a, b, y)", "hypot_da(b, a, y)",
       daa="hypot_curvature(b, b, y)", dab="-hypot_curvature(a, b, y)", dbb="hypot_curvature(a, a, y)"),
    Op("logaddexp", "binary", "logaddexp(a, b)", "logaddexp_share(a, b)", "logaddexp_share(b, a)",
       daa="logaddexp_share(a, b) * logaddexp_share(b, a)", dab="-logaddexp_share(a, b) * logaddexp_share(b, a)",
       dbb="logaddexp_share(a, b) * logaddexp_share(b, a)"),
    Op("fmax", "binary", "fmax(a, b)", "fmax_share(a, b)", "fmax_share(b, a)"),
    Op("fmin", "binary", "fmin(a, b)", "fmax_share(-a, -b)", "fmax_share(-b, -a)"),
    # a product with a zero factor is 0, as a sweep's: what gradient tapes record for g * partial
    Op("mul_nz", "binary", "mul_nz(a, b)", "b", "a", dab="1.0"),
)

HELPERS = (sign, relu, step, maximum, minimum, max_share, sigmoid, pow_da, pow_dc, pow_daa, pow_dab, pow_dbb,
           floor, ceil, trunc, rint, cbrt, atan2_da, atan2_curvature, atan2_mixed, hypot_da, hypot_curvature,
           logaddexp, logaddexp_share, fmax, fmin, fmax_share, mul_nz)
CALLED = (digamma, trigamma)  # helpers with loops: compiled once and called, not inlined into every sweep
# Ops that share one branch of every sweep: their rules live in three kernels (grouped_value,
# grouped_da, grouped_daa) that the sweeps call, so the sweeps' compile time does not grow with
# them (measured: 22 more ops as branches of their own took the first gradient's compile from 10 to
# 17 s). The cost is a call per record, for ops that programs use rarely.
GROUPED = ("log1p", "expm1", "exp2", "log2", "log10", "cbrt", "arcsin", "arccos", "arctan", "sinh", "cosh",
           "arcsinh", "arccosh", "arctanh", "erf", "erfc", "lgamma", "floor", "ceil", "trunc", "rint", "sign",
           "stop_gradient")
# Binary ops that share one branch of every sweep the same way: their rules live in one kernel,
# grouped_pair(part, k, a, b, y), part 0 the value, 1 to 5 da, db, daa, dab, dbb (kernels/codegen/sweeps.py)
GROUPED_PAIRS = ("arctan2", "hypot", "logaddexp", "fmax", "fmin")
# helpers of GROUPED_PAIRS' rules that an array rule computes by NumPy's ufuncs (kernels/array_helpers.py), not by
# the scalar kernel: logaddexp_share's records (tape/symbolic/partial_helpers.py) are exp records, which over arrays
# replay NumPy's exp, so an array record's gradient and its gradient tape's are the same bits; logaddexp's value by
# NumPy's SIMD exp and log1p (logistic regression's np.logaddexp(0, z), 10^5: 2.1 -> 0.4 ms)
NUMPY_PARTIALS = ("logaddexp", "logaddexp_share")
# math functions the rules may name (resolved to math.* in Python and Numba)
MATH_NAMES = ("exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "pow", "log1p", "expm1", "exp2", "log2", "log10",
              "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "hypot", "erf", "erfc", "lgamma",
              "atan2")
# names a rule may read besides helpers and math functions (see the module docstring)
OPERANDS = ("a", "b", "c", "y", "cond")
assert len(OPS) < 256, "opcodes are stored as uint8"


# --- spellings: how a Python operator (or NumPy ufunc) on records is recorded ----------


@dataclass(frozen=True)
class Spelling:
    """``x <name> y`` with records and numbers: the op for two records (``swap``: recorded
    with its inputs exchanged, ``x > y`` is ``lt(y, x)``), for ``record <name> c`` (``negate``:
    the constant is stored negated, ``x - c`` is ``x + (-c)``, which IEEE defines to be the same
    number) and for ``c <name> record``."""

    name: str  # Python's name: __{name}__ and __r{name}__; the ufunc numpy.<ufunc>
    ufunc: str
    pair: str
    var_c: str
    c_var: str
    swap: bool = False
    negate: bool = False
    operator: bool = True  # a Python operator on Vars (else a function: tape.maximum)


ARITHMETIC: tuple[Spelling, ...] = (
    Spelling("add", "add", "add", "add_c", "add_c"),
    Spelling("sub", "subtract", "sub", "add_c", "rsub_c", negate=True),
    Spelling("mul", "multiply", "mul", "mul_c", "mul_c"),
    Spelling("truediv", "true_divide", "div", "div_c", "rdiv_c"),
    Spelling("pow", "power", "pow", "pow_c", "rpow_c"),
    Spelling("maximum", "maximum", "maximum", "maximum_c", "maximum_c", operator=False),
    Spelling("minimum", "minimum", "minimum", "minimum_c", "minimum_c", operator=False),
    # no const ops (var_c, c_var ""): a number on either side is recorded as a constant record
    *(Spelling(name, name, name, "", "", operator=False) for name in GROUPED_PAIRS),
)
COMPARISONS: tuple[Spelling, ...] = (  # c <op> x is x <mirrored op> c
    Spelling("lt", "less", "lt", "lt_c", "gt_c"),
    Spelling("le", "less_equal", "le", "le_c", "ge_c"),
    Spelling("gt", "greater", "lt", "gt_c", "lt_c", swap=True),
    Spelling("ge", "greater_equal", "le", "ge_c", "le_c", swap=True),
    Spelling("eq", "equal", "eq", "eq_c", "eq_c"),
    Spelling("ne", "not_equal", "ne", "ne_c", "ne_c"),
)
SYMBOL = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
UNARY_OPERATORS = ("neg", "abs")  # -x and abs(x); the other unary ops are functions (tape.exp, ...)


# --- facts about the table, computed once: opcodes and per-opcode masks ------------------

OPCODE: dict[str, int] = {op.name: code for code, op in enumerate(OPS)}
LEAF, CONSTANT, SELECT, ELEM = OPCODE["leaf"], OPCODE["constant"], OPCODE["select"], OPCODE["elem"]
# opcodes ARRAY_BASE and up are array records (kernels/array_ops.py): the scalar sweeps skip them, and
# every mask below has 256 entries, so a kernel indexing one with any uint8 opcode stays inside it
ARRAY_BASE = 96  # 64 up to tape format 3 (tape/function/format.py reads those files)
assert len(OPS) <= ARRAY_BASE
KINDS_WITH_CONSTANT = ("const", "compare_c")  # in1 is a slot of the constant pool
TWO_RECORD_KINDS = ("binary", "compare", "select")  # in1 is a record
UNARY = tuple(op.name for op in OPS if op.kind == "unary")
# the NumPy ufunc of each unary op that has one (np.exp(X) on a VarArray records exp)
_NUMPY_NAMES = {"neg": "negative", "abs": "absolute"}
UNARY_UFUNCS = {name: _NUMPY_NAMES.get(name, name) for name in UNARY if hasattr(np, _NUMPY_NAMES.get(name, name))}
KIND = np.array([op.kind for op in OPS] + ["none"] * (ARRAY_BASE - len(OPS)) + ["array"] * (256 - ARRAY_BASE))
IS_ARRAY = KIND == "array"  # indexed by opcode, like every mask below
IS_LEAF = KIND == "leaf"
IS_UNARY = KIND == "unary"
IS_GROUPED = np.isin(np.arange(256), [OPCODE[name] for name in GROUPED])
IS_GROUPED_PAIR = np.isin(np.arange(256), [OPCODE[name] for name in GROUPED_PAIRS])
HAS_INPUT = np.isin(KIND, ("unary", "binary", "const", "compare", "compare_c", "select"))  # in0 is a record
TWO_RECORDS = np.isin(KIND, TWO_RECORD_KINDS)
USES_POOL = np.isin(KIND, KINDS_WITH_CONSTANT)
IS_COMPARISON = np.isin(KIND, ("compare", "compare_c"))
HAS_DA = np.isin(np.arange(256), [code for code, op in enumerate(OPS) if op.da])
HAS_DB = np.isin(np.arange(256), [code for code, op in enumerate(OPS) if op.db])


# --- fusion: runs of these elementwise array ops become one pass (kernels/codegen/fused.py writes it) ---

FUSIBLE = ("add", "sub", "mul", "div", "pow", "neg", "sqrt")
# the elementwise ops that the compiled array sweeps (kernels/_array_driver.py) run: each number by the IEEE
# operations (+ - * /, sqrt, comparisons) that its NumPy rule (kernels/_array_rules.py) applies, so the two give the
# same bits; the others' C library functions (exp, tanh, pow) are not NumPy's SIMD loops (docs/design.md)
EXACT = ("add", "sub", "mul", "div", "neg", "abs", "sqrt", "relu", "maximum", "minimum", "mul_nz")
# the elementwise ops the compiled array sweeps run by the scalar records' own functions, as their NumPy rule does
# (kernels/array_helpers.pair_rule runs the scalar kernel over the elements), so the two give the same bits: values
# and partials by the expressions of the op table, in any order of elements, as EXACT's (not lgamma: its NumPy rule's
# partial is digamma by NumPy's SIMD log and tan, array_helpers.digamma)
RULED = ("arctan2", "hypot", "fmax", "fmin")
# the unary ops the compiled array sweeps run by NumPy's own float64 loop of a ufunc (kernels/ufuncs.py), as their
# NumPy rule does, their partials being IEEE operations of a and y: op -> (x, ufunc, y): v = ufunc(x) over the
# contiguous elements, then y (x "a", y "v": the ufunc itself; sigmoid as kernels/array_helpers.sigmoid computes it)
LOOPED = {**{name: ("a", name, "v") for name in ("exp", "log", "tan", "tanh", "log1p", "expm1", "exp2", "log2", "log10",
                                                 "cbrt", "arcsin", "arccos", "arctan", "arctanh", "arccosh", "sin",
                                                 "cos", "sinh", "cosh", "floor", "ceil", "trunc", "rint", "sign")},
          "sigmoid": ("-abs(a)", "exp", "1.0 / (1.0 + v) if a >= 0.0 else v / (1.0 + v)")}
# the ops of LOOPED whose partial is another transcendental of a, made by NumPy's own loop too: op -> (ufunc, p): b =
# ufunc(a) over the contiguous elements into B (a unary op's B is scratch), then the partial p of b, as NumPy's rule
# (kernels/_array_rules.py: sin's cos(a), cos's -sin(a)) computes it
LOOPED_BACK = {"sin": ("cos", "b"), "cos": ("sin", "-b"), "sinh": ("cosh", "b"), "cosh": ("sinh", "b")}
# the binary ops the compiled array sweeps run by NumPy's own float64 loop of a binary ufunc, as their NumPy rule does,
# where a is laid out as the output and b too or is one number read by all (NumPy's step then calls the loop with steps
# of 8 or 0: the driver does too): op -> (ufunc, each side's partial (x, loop, p)): z = loop over (a, x) into scratch
# E first (x an expression of b; "": a unary loop of a), then p of a, b, y, z and ``number`` (1: a is one number, 2: b),
# as the NumPy rule computes it (kernels/array_helpers.pow_da: c * a at the number 2.0, pow_dc)
PAIRED = {"pow": ("power", (("b - 1.0", "power", "0.0 if b == 0.0 else b * a if number == 2 and b == 2.0 else b * z"),
                            ("", "log", "0.0 if a == 0.0 else y * z")))}
# x ** 2 with the 2 a number: the same values as pow(a, 2.0) (an exact square, correctly rounded) and
# pow_da(a, 2.0) = 2 pow(a, 1.0) = 2a, without a call per element (which keeps the loop from vectorizing)
SQUARE = {"forward": "a * a", "da": "2.0 * a"}


def reads(rule: str) -> frozenset[str]:
    """The operands (a, b) and the result (y) a rule's expression reads."""
    return frozenset(re.findall(r"\b[aby]\b", rule))


# opcode -> what its partials read, (da's, db's): the values fused_reverse must recompute
READS = {code: (reads(op.da), reads(op.db)) for code, op in enumerate(OPS) if op.name in FUSIBLE}
SQUARE_READS: tuple[frozenset[str], frozenset[str]] = (reads(SQUARE["da"]), frozenset())
