"""The op table: every primitive's forward and backward rule, side by side.

This is the one place to edit when adding an op. ``python -m kernels.codegen``
turns the table into the Numba sweeps in ``kernels/_sweeps.py`` (a test fails
when that file is stale), and ``tape`` builds its Python recording functions
from the same strings, so recording and replay evaluate the same expression.

Names inside a rule:

``a``, ``b``  values of the first and second input record
``c``         the constant operand of a ``const`` op (kept in the tape's pool)
``y``         this record's own value (the forward result)
``g``         this record's adjoint (dL/dy)
``cond``      for ``select``: the value of the record just before it (a comparison)

``grad_a``/``grad_b`` are the contributions added (``+=``) to the inputs'
adjoints; an op without them (comparisons) sends nothing back, and
``when_a``/``when_b`` make a contribution conditional: ``select`` sends its
adjoint only to the chosen input, so the other branch is never visited and
its inf/NaN partials (``x / y`` at ``y = 0``) cannot reach the gradient.

Kinds: ``leaf`` (no inputs: ``leaf`` is an input, ``constant`` is not),
``unary`` (a), ``binary`` (a, b), ``const`` (a and a constant c; ``x * 2.0``
records one row, not two), ``compare``/``compare_c`` (1.0 if the predicate
holds, else 0.0; no derivative), ``select`` (a if cond else b).

The helpers below are plain Python over floats; the generated kernels compile
them with Numba, and recording calls them directly, so both sides agree.
Conventions at kinks are documented in README.md and pinned by tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import exp, log, nan, pow


@dataclass(frozen=True)
class Op:
    name: str
    kind: str  # "leaf" | "unary" | "binary" | "const"
    forward: str = ""
    grad_a: str = ""
    grad_b: str = ""
    when_a: str = ""
    when_b: str = ""


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
    Op("add", "binary", "a + b", "g", "g"),
    Op("sub", "binary", "a - b", "g", "-g"),
    Op("mul", "binary", "a * b", "g * b", "g * a"),
    Op("div", "binary", "a / b", "g / b", "-g * y / b"),
    Op("pow", "binary", "pow(a, b)", "g * pow_da(a, b)", "g * pow_dc(a, y)"),
    Op("maximum", "binary", "maximum(a, b)", "g * max_share(a, b)", "g * max_share(b, a)"),
    Op("minimum", "binary", "minimum(a, b)", "g * max_share(b, a)", "g * max_share(a, b)"),
    # const: a record and a constant c (x - c is recorded as x + (-c), exactly)
    Op("add_c", "const", "a + c", "g"),
    Op("rsub_c", "const", "c - a", "-g"),
    Op("mul_c", "const", "a * c", "g * c"),
    Op("div_c", "const", "a / c", "g / c"),
    Op("rdiv_c", "const", "c / a", "-g * y / a"),
    Op("pow_c", "const", "pow(a, c)", "g * pow_da(a, c)"),
    Op("rpow_c", "const", "pow(c, a)", "g * pow_dc(c, y)"),
    Op("maximum_c", "const", "maximum(a, c)", "g * max_share(a, c)"),
    Op("minimum_c", "const", "minimum(a, c)", "g * max_share(c, a)"),
    # unary
    Op("neg", "unary", "-a", "-g"),
    Op("abs", "unary", "abs(a)", "g * sign(a)"),
    Op("exp", "unary", "exp(a)", "g * y"),
    Op("log", "unary", "log(a)", "g / a"),
    Op("sqrt", "unary", "sqrt(a)", "g * 0.5 / y"),
    Op("sin", "unary", "sin(a)", "g * cos(a)"),
    Op("cos", "unary", "cos(a)", "-g * sin(a)"),
    Op("tan", "unary", "tan(a)", "g * (1.0 + y * y)"),
    Op("tanh", "unary", "tanh(a)", "g * (1.0 - y * y)"),
    Op("sigmoid", "unary", "sigmoid(a)", "g * y * (1.0 - y)"),
    Op("relu", "unary", "relu(a)", "g * step(a)"),
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
    Op("select", "select", "a if cond != 0.0 else b", "g", "g", "cond != 0.0", "cond == 0.0"),
)

HELPERS = (sign, relu, step, maximum, minimum, max_share, sigmoid, pow_da, pow_dc)
# math functions the rules may name (resolved to math.* in Python and Numba)
MATH_NAMES = ("exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "pow")

OPCODE: dict[str, int] = {op.name: code for code, op in enumerate(OPS)}
LEAF = OPCODE["leaf"]
KINDS_WITH_CONSTANT = ("const", "compare_c")  # in1 is a slot of the constant pool
TWO_RECORD_KINDS = ("binary", "compare", "select")  # in1 is a record
assert len(OPS) < 256, "opcodes are stored as uint8"
