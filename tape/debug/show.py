"""Pictures of a tape: the articles' node table and Graphviz drawings, for Tapes and Functions.

Both work on the record arrays (op, in0, in1, val, consts) plus the adjoints
of the last reverse pass and a note per record (input, constant, checked
comparison, output), so a Tape and a Function show the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tape.kernels import graph
from tape.kernels.array_ops import NAME
from tape.kernels.ops import HAS_INPUT, IS_LEAF, TWO_RECORDS, USES_POOL


@dataclass
class Records:
    """What the pictures read: the arrays of n records, adjoints on demand, notes by record."""

    op: np.ndarray
    in0: np.ndarray
    in1: np.ndarray
    val: np.ndarray
    consts: np.ndarray
    adjoints: Callable[[np.ndarray], np.ndarray]
    notes: dict[int, str]
    # array records and elem records: the records each reads, and each array record's shape
    arrays: dict[int, list[int]] = field(default_factory=dict)
    shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # array records' values and adjoints (views of the arenas), for tape.debug_nans()
    array_values: dict[int, np.ndarray] = field(default_factory=dict)
    array_adjoints: dict[int, np.ndarray] = field(default_factory=dict)

    def inputs(self, i: int) -> list[int]:
        if i in self.arrays:
            return self.arrays[i]
        k = self.op[i]
        return ([int(self.in0[i])] if HAS_INPUT[k] else []) + ([int(self.in1[i])] if TWO_RECORDS[k] else [])

    def value(self, i: int) -> str:
        """The value as the table prints it: a number, or an array record's shape."""
        return f"{self.val[i]:>13.6g}" if i not in self.shapes else f"{str(self.shapes[i]):>13}"

    def constant(self, i: int) -> float | None:
        return float(self.consts[self.in1[i]]) if USES_POOL[self.op[i]] else None


def table(rec: Records, rows: slice | range | None = None, head: int = 20, tail: int = 20) -> str:
    """id, op, value, inputs, adjoint, note; rows beyond head + tail are elided in the middle."""
    picked = range(len(rec.op))[rows] if isinstance(rows, slice) else rows or range(len(rec.op))
    chosen = [int(r) for r in picked]
    shown: list[int | None] = list(chosen)
    if len(chosen) > head + tail:
        shown = [*chosen[:head], None, *(chosen[-tail:] if tail else [])]
    grads = rec.adjoints(np.array([r for r in shown if r is not None], dtype=np.int64))
    lines = [f"{'id':>6}  {'op':<10} {'value':>13}  {'inputs':<22} {'adjoint':>13}  note"]
    k = 0
    for r in shown:
        if r is None:
            lines.append(f"{'...':>6}  ({len(chosen) - head - tail} records not shown)")
            continue
        inputs = ", ".join(f"#{j}" for j in rec.inputs(r)) or "-"
        constant = rec.constant(r)
        if constant is not None:
            inputs += f", const {constant:g}"
        grad = f"{grads[k]:>13.6g}" if r not in rec.shapes else f"{'(array)':>13}"
        lines.append(f"{r:>6}  {NAME[rec.op[r]]:<10} {rec.value(r)}  {inputs:<22} {grad}  "
                     f"{rec.notes.get(r, '')}".rstrip())
        k += 1
    return "\n".join(lines)


def reaching(rec: Records, outputs: list[int]) -> np.ndarray:
    """Sorted records that outputs depend on (a reverse sweep of marks, in Numba; in Python where
    array records read what in0/in1 do not say)."""
    if not rec.arrays:
        return graph.reaching(rec.op, rec.in0, rec.in1, HAS_INPUT, TWO_RECORDS, np.asarray(outputs))
    marked = set(outputs)
    for i in range(max(outputs), -1, -1):
        if i in marked:
            marked.update(rec.inputs(i))
    return np.array(sorted(marked), np.int64)


def to_dot(rec: Records, outputs: list[int], limit: int = 300) -> str:
    """Graphviz DOT of the records reaching the outputs; one edge per input use, so fan-out shows."""
    nodes = reaching(rec, outputs)
    if len(nodes) > limit:
        raise ValueError(f"{len(nodes)} records reach the output, more than limit={limit}: a drawing that big is "
                         f"unreadable; pass limit= to draw it anyway, or read table() instead")
    grads = rec.adjoints(nodes)
    lines = ["digraph tape {", "  rankdir=LR;", '  node [fontname="Helvetica", fontsize=10];']
    for i, g in zip(nodes.tolist(), grads.tolist(), strict=True):
        name = NAME[rec.op[i]] + (f" {rec.shapes[i]}" if i in rec.shapes else "")
        constant = rec.constant(i)
        detail = f"\\nconst {constant:g}" if constant is not None else ""
        note = f"\\n{rec.notes[i]}" if i in rec.notes else ""
        shape = "ellipse" if IS_LEAF[rec.op[i]] else "box"
        border = ", peripheries=2" if i in outputs else ""
        values = "" if i in rec.shapes else f"\\nvalue {rec.val[i]:.6g}\\nadjoint {g:.6g}"
        lines.append(f'  r{i} [label="#{i} {name}{detail}{values}{note}", '
                     f"shape={shape}{border}];")
    for i in nodes.tolist():
        for slot, j in zip("ab", rec.inputs(i), strict=False):
            lines.append(f'  r{j} -> r{i} [label="{slot}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot: str, path: str | os.PathLike) -> None:
    """Write the drawing as SVG or PNG (by the path's suffix) with Graphviz's dot program."""
    fmt = os.fspath(path).rsplit(".", 1)[-1].lower()
    if fmt not in ("svg", "png"):
        raise ValueError(f"render writes .svg or .png files, not {os.fspath(path)!r}")
    program = shutil.which("dot")
    if program is None:
        raise RuntimeError("rendering needs Graphviz's `dot` program, which is not installed: on Debian or Ubuntu "
                           "`apt-get install graphviz`, elsewhere see https://graphviz.org/download/ "
                           "(to_dot() gives the DOT text without it)")
    subprocess.run([program, f"-T{fmt}", "-o", os.fspath(path)], input=dot.encode(), check=True,
                   capture_output=True)


def depth_and_fan_out(rec: Records) -> tuple[int, dict[int, int]]:
    """Longest dependency chain (in records) and {number of uses: how many records are used that often}."""
    n = len(rec.op)
    depth, uses = np.zeros(n, np.int64), np.zeros(n, np.int64)
    if not rec.arrays:
        graph.depth_and_uses(rec.op, rec.in0, rec.in1, HAS_INPUT, TWO_RECORDS, depth, uses)
    for i in range(n) if rec.arrays else ():  # array records read what in0/in1 do not say: in Python
        for j in rec.inputs(i):
            uses[j] += 1
            depth[i] = max(depth[i], depth[j] + 1)
    counts = np.bincount(uses)
    return int(depth.max(initial=0)), {k: int(c) for k, c in enumerate(counts) if c}
