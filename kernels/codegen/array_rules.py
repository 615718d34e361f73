"""The generator of ``kernels/_array_rules.py``: each elementwise rule of kernels/ops.py over NumPy arrays.

An array record of a unary or binary op applies, element by element, the very
expressions a scalar record of that op applies: the forward value and the
partials, first and second. Here they are written out as NumPy functions
(names resolve to kernels/array_helpers.py), once, when ``python -m kernels.codegen`` runs.
"""

from __future__ import annotations

import ast

import numpy as np

from .. import ops
from .sweeps import names_in, natural

PARTS = ("da", "db", "daa", "dab", "dbb")


_UFUNC_OF = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "true_divide"}
# rules' calls that are NumPy ufuncs (asin is numpy.asin, NumPy 2's name of arcsin); erf, erfc and lgamma are not
_CALLED = {"abs": "absolute", "pow": "power",
           **{name: name for name in ops.MATH_NAMES if name != "pow" and isinstance(getattr(np, name, None), np.ufunc)}}


INTO = ("logaddexp",)  # ops whose rule is a call of a helper (kernels/array_helpers.py) that writes into an out given:
# no temporary copied in (logistic regression's np.logaddexp(0, z) over 10^5, 0.24 -> 0.22 ms CPU, s24)


def forward_lines(op: ops.Op) -> list[str]:
    """The forward rule writing into ``out``: one NumPy ufunc call where the rule is one (no temporary), a helper
    of INTO given it, else the expression copied in."""
    node = ast.parse(op.forward, mode="eval").body
    args = None
    if isinstance(node, ast.BinOp) and type(node.op) in _UFUNC_OF:
        ufunc, args = _UFUNC_OF[type(node.op)], [node.left, node.right]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        ufunc, args = "negative", [node.operand]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLED:
        ufunc, args = _CALLED[node.func.id], node.args
    if args is not None and all(isinstance(a, ast.Name) and a.id in ("a", "b") for a in args):
        return [f"    np.{ufunc}({', '.join(a.id for a in args)}, out=out)"]  # type: ignore[attr-defined]
    if op.name in INTO:
        return [f"    {op.forward[:-1]}, out=out)"]
    return [f"    out[...] = {op.forward}"]


def _literal(rule: str) -> float | None:
    try:
        return float(rule)
    except ValueError:
        return None


def _pairs_only() -> set[str]:
    """The names only the rules of ops.GROUPED_PAIRS read: those run by the scalar kernel (pair_rule)."""
    def read(pairs: bool) -> set[str]:
        return names_in(*(getattr(op, part) for op in ops.OPS if (op.name in ops.GROUPED_PAIRS) == pairs
                          for part in ("forward", *PARTS)))
    return read(True) - read(False)


def generate(header: list[str]) -> str:
    lines = [
        *header,
        '"""The elementwise rules of kernels/ops.py over NumPy arrays: RULES[name] = (forward, da, db, daa,',
        "dab, dbb): forward(a, b, out) writes into out; a partial is a function of (a, b, y), a float where",
        "the rule is a number, None where it is zero. a and b are arrays, or floats for 0-d constants.",
        '"""',
        "",
        "from typing import Any",
        "",
        "import numpy as np",
        "",
        "from .array_helpers import (  # noqa: F401",
        *[f"    {name}," for name in sorted(({fn.__name__ for fn in ops.HELPERS + ops.CALLED} | set(ops.MATH_NAMES)
                                         | {"abs", "pair_rule"}) - (_pairs_only() - set(ops.NUMPY_PARTIALS)),
                                        key=natural)],
        ")",
    ]
    table = []
    for op in ops.OPS:
        if op.kind not in ("unary", "binary"):
            continue
        pair = op.name in ops.GROUPED_PAIRS  # by the scalar kernel, element by element (array_helpers.pair_rule),
        # but the rules of NumPy's ufuncs (ops.NUMPY_PARTIALS)
        code = ops.OPCODE[op.name]
        forward = [f"    out[...] = pair_rule(0, {code}, a, b)"] if pair and not names_in(op.forward) <= {
            "a", "b", *ops.NUMPY_PARTIALS} else [f"    out[...] = {op.forward}"] if pair and op.name not in INTO else \
            forward_lines(op)
        lines += ["", "", f"def {op.name}__y(a, b, out):", *forward]
        entries = [f"{op.name}__y"]
        for n, part in enumerate(PARTS, 1):
            rule = getattr(op, part)
            if not rule:
                entries.append("None")
            elif _literal(rule) is not None:
                entries.append(repr(_literal(rule)))
            else:
                by_kernel = pair and not names_in(rule) <= {"a", "b", "y", *ops.NUMPY_PARTIALS}
                body = f"pair_rule({n}, {code}, a, b, y)" if by_kernel else rule
                lines += ["", "", f"def {op.name}__{part}(a, b, y):", f"    return {body}"]
                entries.append(f"{op.name}__{part}")
        table.append(f"    {op.name!r}: ({', '.join(entries)}),")
    lines += ["", "", "RULES: dict[str, tuple[Any, ...]] = {", *table, "}", ""]
    return "\n".join(lines)
