"""Kernel sweeps over the rdag tape, and the index-width question (uint32 vs int64)."""

import numpy as np
import pytest

from kernels import forward_sweep, reverse_sweep


def _sweep_args(t, index_dtype):
    n = len(t)
    in0 = t._in0[:n].astype(index_dtype)
    in1 = t._in1[:n].astype(index_dtype)
    return t._op[:n], in0, in1, t._val[:n], t._adj[:n].copy(), t._stamp[:n].copy(), t._consts


@pytest.mark.benchmark(group="reverse sweep: index width")
@pytest.mark.parametrize("index_dtype", [np.uint32, np.int64], ids=["uint32", "int64"])
def test_reverse_sweep_index_width(benchmark, rdag, index_dtype):
    t, out = rdag
    op, in0, in1, val, adj, stamp, consts = _sweep_args(t, index_dtype)
    if index_dtype is np.int64:
        in0[in0 == 0xFFFFFFFF] = -1  # what a signed layout would store for "no input"
        in1[in1 == 0xFFFFFFFF] = -1
    gen = [int(stamp.max())]

    def sweep():
        gen[0] += 1
        reverse_sweep(op, in0, in1, val, adj, stamp, consts, out.index, gen[0], gen[0])

    benchmark(sweep)
    benchmark.extra_info["records"] = len(t)


@pytest.mark.benchmark(group="forward replay")
def test_forward_replay(benchmark, rdag):
    t, _ = rdag
    benchmark(lambda: forward_sweep(t._op, t._in0, t._in1, t._val, t._consts, 0, len(t)))
    benchmark.extra_info["records"] = len(t)
