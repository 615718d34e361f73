"""The generator of ``kernels/_array_rules.py``: each elementwise rule of kernels/ops.py over NumPy arrays.

An array record of a unary or binary op applies, element by element, the very
expressions a scalar record of that op applies: the forward value and the
partials, first and second. Here they are written out as NumPy functions
(names resolve to kernels/array_helpers.py), once, when ``python -m kernels.codegen`` runs.
"""

from __future__ import annotations

from . import ops

PARTS = ("da", "db", "daa", "dab", "dbb")


def _literal(rule: str) -> float | None:
    try:
        return float(rule)
    except ValueError:
        return None


def generate(header: list[str]) -> str:
    lines = [
        *header,
        '"""The elementwise rules of kernels/ops.py over NumPy arrays: RULES[name] = (forward, da, db, daa,',
        "dab, dbb); a partial is a function of (a, b, y), a float where the rule is a number, None where zero.",
        '"""',
        "",
        "from typing import Any",
        "",
        "from .array_helpers import (  # noqa: F401",
        *[f"    {name}," for name in sorted({fn.__name__ for fn in ops.HELPERS} | set(ops.MATH_NAMES) | {"abs"})],
        ")",
    ]
    table = []
    for op in ops.OPS:
        if op.kind not in ("unary", "binary"):
            continue
        lines += ["", "", f"def {op.name}__y(a, b):", f"    return {op.forward}"]
        entries = [f"{op.name}__y"]
        for part in PARTS:
            rule = getattr(op, part)
            if not rule:
                entries.append("None")
            elif _literal(rule) is not None:
                entries.append(repr(_literal(rule)))
            else:
                lines += ["", "", f"def {op.name}__{part}(a, b, y):", f"    return {rule}"]
                entries.append(f"{op.name}__{part}")
        table.append(f"    {op.name!r}: ({', '.join(entries)}),")
    lines += ["", "", "RULES: dict[str, tuple[Any, ...]] = {", *table, "}", ""]
    return "\n".join(lines)
