"""The fused kernels' twins in NumPy: the same bits, run while Numba has not compiled the kernels.

A cold first gradient of a 10^6-element program spent 4.4 of its 7.6 s compiling fused_forward and
fused_reverse (kernels/codegen/fused.py). These twins take the same arguments and do, for each
element, the same IEEE operations in the same order: the ops' rules (kernels/ops.py) on whole
arrays, the sum lane by lane in blocks of BLOCK added by the same binary counter, adjoints sent
through the members in reverse order, and the adds into a run's inputs in the kernel's order
(block by block, each view's lagged; it matters where two members read one element). Only runs whose
every member is exact (ops.EXACT, or x ** c for a number c in POWERS: fusion.find fuses no other power, whose C
library call is not NumPy's loop) are twinned. Where a result is NaN, its sign may differ (LLVM may compile
g * -1.0 as a negation, which flips a NaN's sign).
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np

from tape.kernels.ops import EXACT, FUSIBLE, OPCODE, OPS, SQUARE

Array: TypeAlias = np.ndarray
BLOCK, LANES = 512, 8  # the kernels' block and interleaved partial sums (kernels/codegen/fused.py; a test checks)
RULES = {code: {part: compile(getattr(op, part) or "0.0", op.name, "eval") for part in ("forward", "da", "db")}
         for code, op in enumerate(OPS) if op.name in FUSIBLE}
# x ** c, c a number, whose pow(a, c) and pow_da(a, c) = c * pow(a, c - 1.0) (ops.py) are exact for every a: x ** 2
# (the kernels' SQUARE), and x ** 1 and x ** 0, which gradient tapes record (the derivative of x ** 2 is 2 * x ** 1;
# C's pow(a, 1.0) is a, signed zeros and infinities too; pow(a, 0.0) is 1.0, NaN's too): the gradient tape of
# Rosenbrock on 20,000 numbers then compiles no fused_forward, its grad_function's first call 1.8-2.1 -> 0.02-0.04 CPU-s
POWERS = {2.0: SQUARE, 1.0: {"forward": "a", "da": "1.0"}, 0.0: {"forward": "1.0", "da": "0.0"}}
POWER_RULES = {c: {part: compile(rule, f"pow_{c}", "eval") for part, rule in (*rules.items(), ("db", "0.0"))}
               for c, rules in POWERS.items()}
TWO = {OPCODE[op.name] for op in OPS if op.name in FUSIBLE and op.kind == "binary"}


def square(code: np.ndarray, kb: np.ndarray, ib: np.ndarray, imm: np.ndarray, k: int) -> bool:
    return bool(code[k] == OPCODE["pow"] and kb[k] == 2 and imm[ib[k]] == 2.0)


def _rules(code: np.ndarray, kb: np.ndarray, ib: np.ndarray, imm: np.ndarray, k: int) -> dict:
    """Member k's rules, compiled: its op's if exact, x ** c's for a number c in POWERS, else none ({})."""
    if code[k] != OPCODE["pow"]:
        return RULES[int(code[k])] if OPS[code[k]].name in EXACT else {}
    return POWER_RULES.get(float(imm[ib[k]]), {}) if kb[k] == 2 else {}


def twinned(code: np.ndarray, kb: np.ndarray, ib: np.ndarray, imm: np.ndarray, ext: list[tuple[int, int, int]]) -> bool:
    """Whether the twins compute a run with the kernels' bits: every member exact, no input's element read twice in
    a row (an element stride of 0, whose adds NumPy would not make one after another)."""
    return all(_rules(code, kb, ib, imm, k) for k in range(len(code))) and all(step != 0 for _, _, step in ext)


def _view(arena: np.ndarray, ext: np.ndarray, i: int, n0: int, n1: int, place: int = 0) -> np.ndarray:
    """Operand view i of an arena as the run's n0 rows of n1 elements (place: ext's column of its start, 4 for the
    adjoints')."""
    return np.ndarray((n0, n1), arena.dtype, arena, 8 * ext[i, place], (8 * ext[i, 1], 8 * ext[i, 2]))


def _values(program: tuple[np.ndarray, ...], which: np.ndarray, n0: int, n1: int,
            aval: np.ndarray) -> tuple[list, list]:
    """Members' values (those in which) and their operands a, b: arrays, or numbers."""
    code, ka, ia, kb, ib, imm, ext = program
    S: list = [None] * len(code)
    operands: list = [None] * len(code)
    for k in range(len(code)):
        ab = [S[i] if kind == 0 else _view(aval, ext, i, n0, n1).ravel() if kind == 1 else np.float64(imm[i])
              for kind, i in ((ka[k], ia[k]), (kb[k], ib[k]))]
        operands[k] = ab
        if which[k]:
            rule = _rules(code, kb, ib, imm, k)
            S[k] = np.broadcast_to(eval(rule["forward"], {"sqrt": np.sqrt, "a": ab[0], "b": ab[1]}), (n0 * n1,))
    return S, operands


def forward(code: Array, ka: Array, ia: Array, kb: Array, ib: Array, imm: Array, ext: Array, live: Array, summed: bool,
            n0: int, n1: int, aval: Array) -> float:
    """fused_forward's twin."""
    with np.errstate(all="ignore"):
        S, _ = _values((code, ka, ia, kb, ib, imm, ext), np.ones(len(code), np.bool_), n0, n1, aval)
        for k in np.flatnonzero(live >= 0):
            aval[live[k]:live[k] + n0 * n1] = S[k]
        if not summed:
            return 0.0
        rows = np.zeros((n0, -(-n1 // BLOCK) * BLOCK))  # each row in blocks, the last one filled up with 0.0s, which
        rows[:, :n1] = S[-1].reshape(n0, n1)  # change no lane's sum
        last = rows.reshape(-1, BLOCK // LANES, LANES)
        p = np.zeros((len(last), LANES))
        for j in range(BLOCK // LANES):  # each lane's elements one after another, from 0.0
            p += last[:, j]
        sums = ((p[:, 0] + p[:, 1]) + (p[:, 2] + p[:, 3])) + ((p[:, 4] + p[:, 5]) + (p[:, 6] + p[:, 7]))
    total, trees, start = 0.0, [], 0
    for level in range(63, -1, -1):  # the kernel's binary counter: a pairwise tree over each 2**level blocks
        if len(sums) >> level & 1:
            tree, start = sums[start:start + (1 << level)], start + (1 << level)
            while len(tree) > 1:
                tree = tree[0::2] + tree[1::2]
            trees.append(tree[0])
    for tree in reversed(trees):  # the smallest first
        total += tree
    return float(total)


def reverse(code: Array, ka: Array, ia: Array, kb: Array, ib: Array, imm: Array, ext: Array, need: Array, adj_in: Array,
            seed: float, n0: int, n1: int, aval: Array, aadj: Array) -> None:
    """fused_reverse's twin."""
    n = n0 * n1
    with np.errstate(all="ignore"):
        S, operands = _values((code, ka, ia, kb, ib, imm, ext), need, n0, n1, aval)
        held = adj_in >= 0
        G: list = [aadj[at:at + n].copy() if at >= 0 else None for at in adj_in]
        G[-1] = G[-1] + seed if held[-1] else np.full(n, seed)
        held[-1] = True
        sends: list[tuple[np.ndarray, np.ndarray, int]] = []  # (a view of aadj, what it gets, its lag)
        for k in range(len(code) - 1, -1, -1):
            if not held[k]:
                continue
            rule = _rules(code, kb, ib, imm, k)
            a, b = operands[k]
            g = G[k]
            for side, (kind, i) in enumerate(((ka[k], ia[k]), (kb[k], ib[k]))[:2 if code[k] in TWO else 1]):
                if kind == 2:  # a number: sent nowhere (and what its partial reads may not be recomputed)
                    continue
                p = eval(rule["da" if side == 0 else "db"], {"sqrt": np.sqrt, "a": a, "b": b, "y": S[k]})
                c = np.zeros(n)
                np.multiply(g, p, out=c, where=(g != 0.0) & (p != 0.0))  # a zero partial or adjoint sends +0.0
                if kind == 0 and held[i]:
                    G[i] += c
                elif kind == 0:
                    G[i], held[i] = c, True
                else:
                    sends.append((_view(aadj, ext, i, n0, n1, 4), c.reshape(n0, n1), int(ext[i, 3])))
    if len(sends) == 1 and n0 == 1:
        sends[0][0][:] += sends[0][1]
    elif sends:  # block by block, each block's sends in order, lagged: where two read one element, their adds keep the
        step = BLOCK - int(ext[:, 3].max())  # kernel's order
        for r in range(n0):
            for first in range(0, n1, step):
                for view, c, lag in sends:
                    lo, hi = max(first - lag, 0), n1 if first + step >= n1 else first + step - lag
                    view[r, lo:hi] += c[r, lo:hi]
