"""The generator of the parallel maps in ``kernels/_sweeps.py``: many points at once.

Points are split into ``blocks`` blocks (one per thread) run with numba.prange; each block is one
call of a plain kernel (``*_block``) with its own working arrays and the statements of the
single-point kernels, so results equal single calls bit for bit. The parallel loop holds only that
call: Numba's parfor passes then run over a few statements, not over the op switch (map_gradients
compiled in 10.8 CPU-s cold with the switch in its parallel loop).
"""

from __future__ import annotations

import textwrap

from .sweeps import JIT, PARJIT, branches, forward_body, multiply_add_reverse, partials_switch


def wrapped(head: str, args: str) -> str:
    """``head(args)``, its arguments wrapped at 120 characters under the parenthesis."""
    return textwrap.fill(f"{head}({args})", 120, subsequent_indent=" " * (len(head) + 1), break_long_words=False)


def parallel(name: str, args: str, doc: str) -> list[str]:
    """The parallel map ``name``: each of ``blocks`` blocks of X's points one call of ``name``'s block kernel."""
    call = args.replace("blocks, ", "")
    return [
        f"@{PARJIT}",
        wrapped(f"def {name}", args) + ":",
        f'    """{doc}"""',
        "    N = X.shape[0]",
        "    for blk in numba.prange(blocks):",
        wrapped(f"        {name[4:]}_block", f"blk * N // blocks, (blk + 1) * N // blocks, {call}"),
        "",
        "",
    ]


def block(name: str, args: str, setup: list[str], point: list[str]) -> list[str]:
    """The block kernel of map ``name``: points lo to hi with working arrays of its own (``setup``)."""
    return [
        f"@{JIT}",
        wrapped(f"def {name[4:]}_block", "lo, hi, " + args.replace("blocks, ", "")) + ":",
        f'    """{name}\'s points lo to hi."""',
        "    n = len(op)",
        *("    " + line for line in setup),
        "    for p in range(lo, hi):",
        *point,
        "",
        "",
    ]


def kernel(name: str, args: str, doc: str, setup: list[str], point: list[str]) -> list[str]:
    """A map's block kernel and its parallel loop."""
    return block(name, args, setup, point) + parallel(name, args, doc)


# the per-point prologue (inputs in) and check of the written-out maps
POINT_INPUTS = ["        for k in range(len(rows)):", "            val[rows[k]] = X[p, k]",
                "        for r in range(n):", "            i = np.uint64(r)", "            k = op[i]"]
POINT_CHECKS = ["        failed[p] = -1", "        for c in range(len(checks)):",
                "            if (val[checks[c]] != 0.0) != expected[c]:", "                failed[p] = c",
                "                break"]

TANGENTS = ("blocks, is_leaf, op, in0, in1, val0, consts, targets0, rows, X, V, checks, expected, outputs, out, "
            "failed")
TANGENT_POINT = [
    "        set_inputs(rows, X[p], val)  # replay_partials with the full kernel: a map cannot hand over",
    "        forward_partials_from(op, in0, in1, val, consts, partials[0], partials[1], targets[0], targets[1],",
    "                              np.int64(0))",
    "        failed[p] = first_failed(val, checks, expected)",
    "        dot[:] = 0.0",
    "        for k in range(len(rows)):",
    "            dot[rows[k], 0] = V[p, k]",
    "        tangent_sweep(is_leaf, op, partials[0], partials[1], targets[0], targets[1], dot, np.int64(0), len(op))",
    "        for j in range(len(outputs)):",
    "            out[p, j] = dot[outputs[j], 0]",
]
VALUES = "blocks, op, in0, in1, val0, consts, rows, X, checks, expected, outputs, out, failed"
GRADIENTS = "blocks, op, in0, in1, val0, consts, targets0, rows, X, checks, expected, seeds, W, values, grads, failed"


def kernels() -> list[str]:
    """The lines of every map kernel.

    map_values and map_gradients write the single-point sweeps out: calling the single-point kernels
    with shared arrays would bump their reference counts atomically on every point, and two cores
    would fight over those cache lines; written out, a point costs what it costs alone. The
    statements are those of replay and replay_gradient, so the bits are the same.
    """
    tangents = kernel("map_tangents", TANGENTS, "Per point p: out[p] = J V[p] at X[p].",
                      ["val = val0.copy()", "targets = targets0.copy()", "partials = np.zeros((2, n))",
                       "dot = np.zeros((n + 1, 1))"], TANGENT_POINT)
    values = kernel("map_values", VALUES, "out[p] = outputs at X[p]; failed[p] = first failed check at X[p], or -1.",
                    ["val = val0.copy()"],
                    [*POINT_INPUTS, *(" " * 4 + line for line in branches(forward_body)), *POINT_CHECKS,
                     "        for j in range(len(outputs)):", "            out[p, j] = val[outputs[j]]"])
    gradients = kernel("map_gradients", GRADIENTS,
                       "Per point p: values[p] = outputs, grads[p] = W[p]^T J (value_and_grad, vjp) at X[p].",
                       ["dummy = n", "val = val0.copy()", "r0 = targets0[0].copy()", "r1 = targets0[1].copy()",
                        "p0 = np.zeros(n)", "p1 = np.zeros(n)", "adj = np.zeros(n + 1)"],
                       [*POINT_INPUTS, *(" " * 4 + line for line in partials_switch(False)), *POINT_CHECKS,
                        *multiply_add_reverse("        ", "W[p, s]"),
                        "        for k in range(len(rows)):", "            grads[p, k] = adj[rows[k]]",
                        "        for j in range(len(seeds)):", "            values[p, j] = val[seeds[j]]"])
    return tangents + values + gradients
