"""The generator of the maps in ``kernels/_sweeps.py``: many points at once.

A map kernel runs points lo to hi with working arrays of its own and the statements of the
single-point kernels, so results equal single calls bit for bit; tape/function/maps.py splits the
points into blocks, one per thread, each one call of the kernel (which releases the GIL). Threads,
not numba.prange: a parallel kernel compiled Numba's parfor passes over the op switch and LLVM's
over the whole kernel once more (map_gradients 12.1 CPU-s cold, a plain kernel 5.3 with its callees).
"""

from __future__ import annotations

import textwrap

from .sweeps import JIT, branches, forward_body, multiply_add_reverse, partials_switch


def kernel(name: str, args: str, doc: str, setup: list[str], point: list[str]) -> list[str]:
    """The map kernel ``name``: points lo to hi, with working arrays of its own (``setup``)."""
    head = f"def {name}"
    return [
        f"@{JIT}",
        textwrap.fill(f"{head}(lo, hi, {args}):", 120, subsequent_indent=" " * (len(head) + 1),
                      break_long_words=False),
        f'    """{doc}"""',
        "    n = len(op)",
        *("    " + line for line in setup),
        "    for p in range(lo, hi):",
        *point,
        "",
        "",
    ]


# the per-point prologue (inputs in) and check of the written-out maps
POINT_INPUTS = ["        for k in range(len(rows)):", "            val[rows[k]] = X[p, k]",
                "        for r in range(n):", "            i = np.uint64(r)", "            k = op[i]"]
POINT_CHECKS = ["        failed[p] = -1", "        for c in range(len(checks)):",
                "            if (val[checks[c]] != 0.0) != expected[c]:", "                failed[p] = c",
                "                break"]
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


def kernels() -> list[str]:
    """The lines of every map kernel.

    map_values and map_gradients write the single-point sweeps out: calling the single-point kernels
    with shared arrays would bump their reference counts atomically on every point, and two cores
    would fight over those cache lines; written out, a point costs what it costs alone. The
    statements are those of replay and replay_gradient, so the bits are the same.
    """
    tangents = kernel("map_tangents",
                      "is_leaf, op, in0, in1, val0, consts, targets0, rows, X, V, checks, expected, outputs, out, "
                      "failed",
                      "Per point p in lo..hi: out[p] = J V[p] at X[p].",
                      ["val = val0.copy()", "targets = targets0.copy()", "partials = np.zeros((2, n))",
                       "dot = np.zeros((n + 1, 1))"], TANGENT_POINT)
    values = kernel("map_values", "op, in0, in1, val0, consts, rows, X, checks, expected, outputs, out, failed",
                    "Per point p in lo..hi: out[p] = outputs at X[p]; failed[p] = first failed check, or -1.",
                    ["val = val0.copy()"],
                    [*POINT_INPUTS, *("    " + line for line in branches(forward_body)), *POINT_CHECKS,
                     "        for j in range(len(outputs)):", "            out[p, j] = val[outputs[j]]"])
    gradients = kernel("map_gradients",
                       "op, in0, in1, val0, consts, targets0, rows, X, checks, expected, seeds, W, values, grads, "
                       "failed",
                       "Per point p in lo..hi: values[p] = outputs, grads[p] = W[p]^T J (value_and_grad, vjp) at X[p].",
                       ["dummy = n", "val = val0.copy()", "r0 = targets0[0].copy()", "r1 = targets0[1].copy()",
                        "p0 = np.zeros(n)", "p1 = np.zeros(n)", "adj = np.zeros(n + 1)"],
                       [*POINT_INPUTS, *("    " + line for line in partials_switch(False)), *POINT_CHECKS,
                        *multiply_add_reverse("        ", "W[p, s]"),
                        "        for k in range(len(rows)):", "            grads[p, k] = adj[rows[k]]",
                        "        for j in range(len(seeds)):", "            values[p, j] = val[seeds[j]]"])
    return tangents + values + gradients
