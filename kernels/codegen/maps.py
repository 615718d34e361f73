"""The generator of the parallel maps in ``kernels/_sweeps.py``: many points at once.

Points are split into ``blocks`` blocks (one per thread) run with numba.prange, each with
its own working arrays and the statements of the single-point kernels, so results equal
single calls bit for bit.
"""

from __future__ import annotations

from .sweeps import PARJIT, branches, forward_body, multiply_add_reverse, partials_switch

MAP_KERNELS = f'''@{PARJIT}
def map_tangents(blocks, is_leaf, op, in0, in1, val0, consts, targets0, rows, X, V, checks, expected, outputs,
                 out, failed):
    """Per point p: out[p] = J V[p] at X[p]."""
    N, n = X.shape[0], len(op)
    for blk in numba.prange(blocks):
        val = val0.copy()
        targets = targets0.copy()
        partials = np.zeros((2, n))
        dot = np.zeros((n + 1, 1))
        for p in range(blk * N // blocks, (blk + 1) * N // blocks):
            set_inputs(rows, X[p], val)  # replay_partials with the full kernel: a map cannot hand over
            forward_partials_from(op, in0, in1, val, consts, partials[0], partials[1], targets[0], targets[1],
                                  np.int64(0))
            failed[p] = first_failed(val, checks, expected)
            dot[:] = 0.0
            for k in range(len(rows)):
                dot[rows[k], 0] = V[p, k]
            tangent_sweep(is_leaf, op, partials[0], partials[1], targets[0], targets[1], dot, np.int64(0), len(op))
            for j in range(len(outputs)):
                out[p, j] = dot[outputs[j], 0]

'''


# the per-point prologue (inputs in) and check of the written-out parallel maps
POINT_INPUTS = ["            for k in range(len(rows)):", "                val[rows[k]] = X[p, k]",
                "            for r in range(n):", "                i = np.uint64(r)", "                k = op[i]"]
POINT_CHECKS = ["            failed[p] = -1", "            for c in range(len(checks)):",
                "                if (val[checks[c]] != 0.0) != expected[c]:", "                    failed[p] = c",
                "                    break"]


def map_values_kernel() -> list[str]:
    """map_values, with the forward sweep written out in its parallel loop (see map_gradients)."""
    forward = [" " * 8 + line for line in branches(forward_body)]
    return [
        f"@{PARJIT}",
        "def map_values(blocks, op, in0, in1, val0, consts, rows, X, checks, expected, outputs, out, failed):",
        '    """out[p] = outputs at X[p]; failed[p] = first failed check at X[p], or -1."""',
        "    N, n = X.shape[0], len(op)",
        "    for blk in numba.prange(blocks):",
        "        val = val0.copy()",
        "        for p in range(blk * N // blocks, (blk + 1) * N // blocks):",
        *POINT_INPUTS,
        *forward,
        *POINT_CHECKS,
        "            for j in range(len(outputs)):",
        "                out[p, j] = val[outputs[j]]",
        "",
        "",
    ]


def map_gradients_kernel() -> list[str]:
    """map_gradients with the per-point sweeps written out in its parallel loop.

    Calling the single-point kernels with shared arrays would bump their
    reference counts atomically on every call, and two cores would fight over
    those cache lines; written out, a point costs what it costs alone. The
    statements are those of replay_gradient, so the bits are the same.
    """
    forward = [" " * 8 + line for line in partials_switch(False)]
    return [
        f"@{PARJIT}",
        "def map_gradients(blocks, op, in0, in1, val0, consts, targets0, rows, X, checks, expected, seeds, W, values,",
        "                  grads, failed):",
        '    """Per point p: values[p] = outputs, grads[p] = W[p]^T J (value_and_grad, vjp) at X[p]."""',
        "    N, n = X.shape[0], len(op)",
        "    dummy = n",
        "    for blk in numba.prange(blocks):",
        "        val = val0.copy()",
        "        r0 = targets0[0].copy()",
        "        r1 = targets0[1].copy()",
        "        p0 = np.zeros(n)",
        "        p1 = np.zeros(n)",
        "        adj = np.zeros(n + 1)",
        "        for p in range(blk * N // blocks, (blk + 1) * N // blocks):",
        *POINT_INPUTS,
        *forward,
        *POINT_CHECKS,
        *multiply_add_reverse("            ", "W[p, s]"),
        "            for k in range(len(rows)):",
        "                grads[p, k] = adj[rows[k]]",
        "            for j in range(len(seeds)):",
        "                values[p, j] = val[seeds[j]]",
        "",
    ]


def kernels() -> list[str]:
    """The lines of every map kernel."""
    return [MAP_KERNELS, "", *map_values_kernel(), *map_gradients_kernel()]
