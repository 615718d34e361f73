"""The generator of ``tape/symbolic/_partials.py``: each op's local partials as records.

The op table (kernels/ops.py) writes ``da``/``db`` as expressions of ``a``, ``b``, ``y`` and
``c``; the numeric sweeps compile them to numbers. The gradient tape (tape/symbolic/adjoint.py) needs
them as records instead, so that a derivative is itself a tape: this generator translates each
expression mechanically into Python over Vars (``a``, ``b``, ``y``: the op's input and output
records) and the float ``c``. Operators stay operators (Var arithmetic records them); math
functions become the recorders of their ops (``cos`` -> ``tape.cos``; ``asin`` -> ``tape.arcsin``);
each helper of the table (``sign``, ``step``, ``pow_da``, ``max_share``, ``digamma``, ...) becomes its
recorded equivalent in tape/symbolic/partial_helpers.py, written once; a division of numbers alone
(``1.0 / c``) becomes ``_h.fdiv`` (IEEE: inf for a zero divisor, where Python raises).

A partial that depends on no record (``"1.0"``, ``"c"``) comes out as a float, and ``0.0`` as the
float zero: the sweeps treat those structurally (no record for a product by 1, nothing for 0).
Run by ``python -m kernels.codegen``.
"""

from __future__ import annotations

import ast

from .. import ops

RECORDS = ("a", "b", "y")  # names that are Vars in the generated code
# math functions of the rules and the tape function recording them (by op name)
MATH_TO_OP = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
              "atanh": "arctanh"}
BINARY_FUNCTIONS = ("hypot", "atan2", "pow")  # math functions of two operands: tape/symbolic/partial_helpers.py


class _Translate(ast.NodeTransformer):
    """Rename calls: math functions to recorders (_r.<op>), helpers to recorded helpers (_h.<name>)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node.args = [self.visit(arg) for arg in node.args]
        assert isinstance(node.func, ast.Name), ast.unparse(node)
        name = node.func.id
        if name in BINARY_FUNCTIONS:
            node.func = ast.Attribute(ast.Name("_h", ast.Load()), name, ast.Load())
        elif name in ops.MATH_NAMES:
            node.func = ast.Attribute(ast.Name("_r", ast.Load()), MATH_TO_OP.get(name, name), ast.Load())
        elif name in {f.__name__ for f in ops.HELPERS + ops.CALLED}:
            node.func = ast.Attribute(ast.Name("_h", ast.Load()), name, ast.Load())
        else:
            raise ValueError(f"a rule calls {name}, which is neither a math function nor a helper of kernels/ops.py")
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Div) and not _reads_records(node):
            return ast.Call(ast.Attribute(ast.Name("_h", ast.Load()), "fdiv", ast.Load()), [node.left, node.right], [])
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in ops.OPERANDS:
            raise ValueError(f"a rule reads {node.id}, which is not an operand (kernels/ops.py: OPERANDS)")
        return node


def _reads_records(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id in RECORDS for n in ast.walk(node))


def translate(expression: str) -> str:
    """One rule as Python over Vars: ``"pow_da(a, c)"`` -> ``"_h.pow_da(a, c)"``; "" -> "None"."""
    if not expression:
        return "None"
    tree = ast.parse(expression, mode="eval")
    return ast.unparse(_Translate().visit(tree))


def function(code: int) -> list[str]:
    op = ops.OPS[code]
    da, db = translate(op.da), translate(op.db)
    pair = f"{da}, {db}"
    if da != "None" and db != "None" and not (_constant(da) and _constant(db)):
        pair = f"{da} if want_a else None, {db} if want_b else None"
    return [f"def partials_{code}(a, b, y, c, want_a=True, want_b=True):",
            f"    # {op.name}: da = {op.da or '0'}, db = {op.db or '0'}", f"    return {pair}", "", ""]


def _constant(expression: str) -> bool:
    """A rule that reads no record (its partial is a number: nothing recorded, nothing to skip)."""
    return not _reads_records(ast.parse(expression, mode="eval"))


def differentiable(code: int) -> bool:
    """Ops with a partial: what a sweep sends adjoints (or tangents) through."""
    op = ops.OPS[code]
    return op.kind not in ("leaf", "compare", "compare_c") and bool(op.da or op.db)


def generate(header: list[str]) -> str:
    lines = header + [
        '"""Each op\'s partials (da, db) as records: kernels/ops.py\'s rules over Vars a, b, y and the float c.',
        "",
        "partials_<code>(a, b, y, c) returns (da, db): a Var, a float where the rule reads no record, None",
        "where the op has no such partial (or want_a/want_b is False: records for the partials a sweep uses only).",
        "PARTIALS maps opcodes to them (tape/symbolic/adjoint.py sweeps with them).",
        '"""',
        "",
        "from tape.records import _recorders as _r",
        "from tape.symbolic import partial_helpers as _h",
        "",
        "",
    ]
    codes = [code for code in range(len(ops.OPS)) if differentiable(code)]
    for code in codes:
        lines += function(code)
    lines.append("PARTIALS = {")
    lines += [f"    {code}: partials_{code},  # {ops.OPS[code].name}" for code in codes]
    lines += ["}", ""]
    return "\n".join(lines)
