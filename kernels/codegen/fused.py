"""The generator of the fused kernels in ``kernels/_sweeps.py``: runs of elementwise array records in one pass.

A run of same-shape elementwise array records (tape/sweeps/fusion.py finds them) is a
small program: per member, its scalar opcode and where each operand comes from
(an earlier member, a view of another array record, or a number). The kernels
walk the elements in blocks of BLOCK, keep every member's values for the block
in a scratch array, and write to the arena only what records outside the run
read (and the run's sum, when a sum record ends it). The reverse kernel
recomputes the block's values that some partial reads (tape/sweeps/fusion.py marks
them) and sends adjoints back through the members in reverse order: a member's
first contribution is written straight into its row, later ones added, and the
arena is touched only at the run's inputs. Numbers are rows filled once per
call. Measured on Rosenbrock at 10^6 (replayed value and gradient), these three
took the reverse kernel from 6.1 to about 3.5 ms.

An input's element read by views in different blocks (u[:-1], u[1:] at a block's edge) gets its adds
in the NumPy steps' order (the compiled tables', tape/sweeps/steps.py's _kept): a view's adds lag by
ext[i, 3] elements (tape/sweeps/fusion.py's _lags), each block recomputing the most lag's before it.

Each member's rule is the op table's (kernels/ops.py), the expressions the
scalar sweeps compile, with the structural-zero rule as a select: a product
with a zero factor adds nothing. They are compiled once, whatever the program.
"""

from __future__ import annotations

from .. import ops
from ..ops import FUSIBLE, SQUARE
from ..shaped import BLOCK, block_sum
from .sweeps import JIT, element_loop

_SQUARE_TEST = "op == {code} and kb[k] == 2 and imm[ib[k]] == 2.0"


def _operand(letter: str, indent: str) -> list[str]:
    """Point A or B (operand ``letter`` of member k) at the block's values: an earlier member's
    row, the arena itself for a unit-stride view, or a row of IMM for a number, without copying;
    copied otherwise."""
    arr = letter.upper()
    return [f"{indent}kind = k{letter}[k]",
            f"{indent}if kind == 0:",
            f"{indent}    {arr} = S[i{letter}[k]]",
            f"{indent}elif kind == 1:",
            f"{indent}    base = ext[i{letter}[k], 0] + r * ext[i{letter}[k], 1]",
            f"{indent}    stride = ext[i{letter}[k], 2]",
            f"{indent}    if stride == 1:",
            f"{indent}        {arr} = aval[base + start:base + start + w]",
            f"{indent}    else:",
            f"{indent}        {arr} = {arr}0",
            *element_loop(indent + "        ", [f"{arr}[u] = aval[np.uint64(base + (start + e) * stride)]"]),
            f"{indent}else:",
            f"{indent}    {arr} = IMM[i{letter}[k]]"]


def _members() -> list[tuple[int, ops.Op]]:
    return [(code, op) for code, op in enumerate(ops.OPS) if op.name in FUSIBLE]


def _square(part: str, indent: str, body: list[str]) -> list[str]:
    code = ops.OPCODE["pow"]
    return [f"{indent}if {_SQUARE_TEST.format(code=code)}:  # x ** 2",
            *element_loop(indent + "    ", ["a = A[u]", *(line.format(rule=SQUARE[part]) for line in body)])]


def _forward_branches(indent: str) -> list[str]:
    lines = _square("forward", indent, ["Sk[u] = {rule}"])
    for code, op in _members():
        lines += [f"{indent}elif op == {code}:  # {op.name}",
                  *element_loop(indent + "    ", ["a = A[u]", "b = B[u]", f"Sk[u] = {op.forward}"])]
    return lines


def _reverse_branches(indent: str) -> list[str]:
    """Member k's contributions to its operands, CA and CB. A side that is a number gets one too,
    unsent (and reading values the reverse may not have recomputed): a loop per side that skips
    it measured the same speed and took 3 s more to compile."""
    def send(side: str) -> list[str]:
        return [f"p{side} = {{d{side}}}", f"C{side.upper()}[u] = g * p{side} if (g != 0.0) & (p{side} != 0.0) else 0.0"]

    head = ["a = A[u]", "b = B[u]", "y = Sk[u]", "g = Gk[u]"]
    lines = _square("da", indent, ["g = Gk[u]", *(line.format(da=SQUARE["da"]) for line in send("a"))])
    for code, op in _members():
        body = [line.format(da=op.da, db=op.db) for side in ("ab" if op.db else "a") for line in send(side)]
        lines += [f"{indent}elif op == {code}:  # {op.name}", *element_loop(indent + "    ", [*head, *body])]
    return lines


def _target(letter: str, indent: str) -> list[str]:
    """Point C<letter> at the row of G it adds to when that row holds nothing yet (the first
    contribution assigns, without a copy), else at its scratch row."""
    arr, other = "C" + letter.upper(), "a" if letter == "b" else "b"
    same = f" and not (k{other}[k] == 0 and i{other}[k] == i{letter}[k])" if letter == "b" else ""
    return [f"{indent}direct_{letter} = k{letter}[k] == 0 and not held[i{letter}[k]]{same}",
            f"{indent}{arr} = G[i{letter}[k]] if direct_{letter} else {arr}0"]


def _send(letter: str, indent: str) -> list[str]:
    """Add the block's contributions C<letter> to operand ``letter`` of member k (to an input's view, those of its
    elements first..first + step lagged by its lag; the last block's to the row's end)."""
    arr = "C" + letter.upper()
    return [f"{indent}kind = k{letter}[k]",
            f"{indent}if kind == 0:",
            f"{indent}    if direct_{letter}:",
            f"{indent}        held[i{letter}[k]] = True",
            f"{indent}    else:",
            f"{indent}        dst = G[i{letter}[k]]",
            *element_loop(indent + "        ", [f"dst[u] += {arr}[u]"]),
            f"{indent}elif kind == 1:",
            f"{indent}    base = ext[i{letter}[k], 4] + r * ext[i{letter}[k], 1]",
            f"{indent}    stride = ext[i{letter}[k], 2]",
            f"{indent}    lag = ext[i{letter}[k], 3]",
            f"{indent}    lo = max(first - lag, 0) - start",
            f"{indent}    hi = w if start + w == n1 else first + step - lag - start",
            f"{indent}    if stride == 1:",
            f"{indent}        dst = aadj[base + start:base + start + w]",
            *element_loop(indent + "        ", [f"dst[u] += {arr}[u]"], "lo, hi"),
            f"{indent}    else:",
            *element_loop(indent + "        ", [f"aadj[np.uint64(base + (start + e) * stride)] += {arr}[u]"],
                          "lo, hi")]


def kernels() -> list[str]:
    two = {code for code, op in _members() if op.kind == "binary"}
    ind = " " * 16
    computed = [*_operand("a", ind), f"{ind}if {' or '.join(f'op == {c}' for c in sorted(two))}:",
                *_operand("b", ind + "    "), *_forward_branches(ind)]  # member k's values for the block, into Sk
    values = "\n".join([  # the forward's: member k's values to its region where live (the last one's straight there)
        f"{ind}op = code[k]", f"{ind}Sk = S[k]", f"{ind}out = live[k] + r * n1 + start",
        f"{ind}if live[k] >= 0 and k == m - 1:", f"{ind}    Sk = aval[out:out + w]", *computed,
        f"{ind}if live[k] >= 0 and k < m - 1:",
        *element_loop(ind + "    ", ["aval[np.uint64(out + e)] = Sk[u]"])])
    values_need = "\n".join("    " + line for line in [f"{ind}op = code[k]", f"{ind}Sk = S[k]", *computed])
    setup = "\n".join([  # both kernels: operand scratch rows, and each number as a row (filled once)
        f"    A0 = np.empty({BLOCK})", f"    B0 = np.zeros({BLOCK})", "    A = A0", "    B = B0",
        f"    IMM = np.empty((len(imm), {BLOCK}))", "    for j in range(len(imm)):", "        IMM[j, :] = imm[j]"])
    text = f'''@{JIT}
def fused_forward(code, ka, ia, kb, ib, imm, ext, live, summed, n0, n1, aval):
    """A run of elementwise records over n0 rows of n1 elements, in blocks of {BLOCK}: member k's
    values go to aval[live[k] + ...] where live[k] >= 0 (the last member's straight there: no member
    reads it); returns the sum of the last member where summed, else 0.0."""
    m = len(code)
    S = np.empty((m, {BLOCK}))
{setup}
    tail = np.zeros(8)
    pending = np.zeros(64)  # pending[j]: the sum of 2**j blocks, where bit j of count is set
    count = 0
    for r in range(n0):
        for start in range(0, n1, {BLOCK}):
            w = min({BLOCK}, n1 - start)
            for k in range(m):
{values}
            last = Sk  # member m - 1's values
            if not summed:
                continue
{chr(10).join(block_sum(' ' * 12))}
    total = 0.0
    for level in range(64):
        if count >> level & 1:
            total += pending[level]
    return total


@{JIT}
def fused_reverse(code, ka, ia, kb, ib, imm, ext, need, adj_in, seed, n0, n1, aval, aadj):
    """The reverse of fused_forward's run: member k starts from aadj[adj_in[k] + ...] where
    adj_in[k] >= 0 (adjoints sent by records outside the run) plus ``seed`` for the last member
    (a sum record's adjoint); adjoints reach the arena only at the run's inputs (kind 1), each view's
    lagged by ext[i, 3] elements. Only the members marked in need (whose values some partial reads)
    are recomputed."""
    m = len(code)
    S = np.empty((m, {BLOCK}))
    G = np.empty((m, {BLOCK}))
{setup}
    CA0 = np.empty({BLOCK})
    CB0 = np.empty({BLOCK})
    held = np.zeros(m, np.bool_)
    step = {BLOCK} - ext[:, 3].max()  # new elements per block: a block recomputes the lags' most before them
    for r in range(n0):
        for first in range(0, n1, step):
            start = max(first - ({BLOCK} - step), 0)
            w = min(first + step, n1) - start
            for k in range(m):
                if need[k]:
{values_need}
                Gk = G[k]
                held[k] = adj_in[k] >= 0  # whether row k of G holds adjoints yet
                if held[k] and not (k == m - 1 and seed == 0.0):  # (the last member's then read where it is)
                    at = adj_in[k] + r * n1 + start
{chr(10).join(element_loop(ind + "    ", ["Gk[u] = aadj[np.uint64(at + e)]"]))}
            last = G[m - 1]
            if held[m - 1]:
                if seed != 0.0:  # (+ 0.0 would only turn -0.0 into +0.0, which sends the same: g != 0.0 is False)
{chr(10).join(element_loop(" " * 20, ["last[u] += seed"]))}
            else:
{chr(10).join(element_loop(" " * 16, ["last[u] = seed"]))}
                held[m - 1] = True
            for q in range(m):
                k = m - 1 - q
                if not held[k]:  # nothing reached this member in this block: it sends nothing
                    continue
                op = code[k]
                Sk = S[k]
                Gk = G[k]
                if k == m - 1 and seed == 0.0 and adj_in[k] >= 0:  # no member sends to the last: read in place
                    Gk = aadj[adj_in[k] + r * n1 + start:adj_in[k] + r * n1 + start + w]
{chr(10).join(_operand("a", ind))}
                if {" or ".join(f"op == {c}" for c in sorted(two))}:
{chr(10).join(_operand("b", ind + "    "))}
{chr(10).join(_target("a", ind))}
                CB = CB0
                if {" or ".join(f"op == {c}" for c in sorted(two))}:
{chr(10).join(_target("b", ind + "    "))}
{chr(10).join(_reverse_branches(ind))}
{chr(10).join(_send("a", ind))}
                if {" or ".join(f"op == {c}" for c in sorted(two))}:
{chr(10).join(_send("b", ind + "    "))}

'''
    return [text]
