"""Kernel sweeps over the rdag tape; the index-width and reset questions; tiny-tape calls."""

import numpy as np
import pytest

import tape
from tape.bench import programs
from tape.kernels import _sweeps


def _sweep_args(t, index_dtype):
    n = len(t)
    in0 = t._in0[:n].astype(index_dtype)
    in1 = t._in1[:n].astype(index_dtype)
    return t._op[:n], in0, in1, t._val[:n], t._adj[:n].copy(), t._stamp[:n].copy(), t._consts


@pytest.mark.benchmark(group="reverse sweep: index width")
@pytest.mark.parametrize("index_dtype", [np.uint32, np.int64], ids=["uint32", "int64"])
def test_reverse_sweep_index_width(benchmark, rdag, index_dtype):
    t, _, out = rdag
    op, in0, in1, val, adj, stamp, consts = _sweep_args(t, index_dtype)
    if index_dtype is np.int64:
        in0[in0 == 0xFFFFFFFF] = -1  # what a signed layout would store for "no input"
        in1[in1 == 0xFFFFFFFF] = -1
    gen = [int(stamp.max())]
    seeds, ones = np.array([out.index]), np.ones(1)

    def sweep():
        gen[0] += 1
        _sweeps.reverse_sweep(op, in0, in1, val, adj, stamp, consts, seeds, ones, gen[0], gen[0])

    benchmark(sweep)


@pytest.mark.benchmark(group="reverse sweep: new generation vs zeroing the adjoints")
@pytest.mark.parametrize("reset", ["generation", "memset"])
def test_adjoint_reset(benchmark, rdag, reset):
    """A generation bump costs nothing; zeroing costs a pass over 8 bytes per record."""
    t, _, out = rdag
    if reset == "generation":
        benchmark(lambda: t.backward(out))
    else:
        def zero_then_sweep():
            t._adj[: len(t)] = 0.0
            t.backward(out)

        benchmark(zero_then_sweep)


@pytest.mark.benchmark(group="forward sweeps")
@pytest.mark.parametrize("sweep", ["values", "values and partials"])
def test_forward(benchmark, rdag, sweep):
    t, xs, out = rdag
    F = t.function(xs, out)
    if sweep == "values":  # the _range/_from kernels: the whole sweep, grouped ops included
        benchmark(lambda: _sweeps.forward_range(F._op, F._in0, F._in1, F._val, F._consts, 0, len(F)))
    else:
        p, r = F._partials, F._targets
        benchmark(lambda: _sweeps.forward_partials_from(F._op, F._in0, F._in1, F._val, F._consts, *p, *r, 0))


@pytest.mark.benchmark(group="reverse sweeps")
@pytest.mark.parametrize("sweep", ["tape (partials recomputed)", "Function (stored partials)"])
def test_reverse(benchmark, rdag, sweep):
    t, xs, out = rdag
    F = t.function(xs, out)
    F.value_and_grad(t._val[: len(xs)].copy())
    if sweep.startswith("tape"):
        benchmark(lambda: t.backward(out))
    else:
        def run():
            F._gen += 1
            _sweeps.reverse_partials(F._adj, F._stamp, F._partials[0], F._partials[1], F._targets[0],
                                     F._targets[1], F._output_rows, F._ones, F._gen)

        benchmark(run)


@pytest.mark.benchmark(group="tiny tape: one call on the articles' 13 records")
@pytest.mark.parametrize("call", ["F(x)", "F.value_and_grad(x)", "tape.value_and_grad(f)(x)"])
def test_tiny_tape_call(benchmark, call):
    plan = programs.seed_plan(1)
    x = plan["x"]
    f = lambda v: programs.seed(plan, v, {"sigmoid": tape.sigmoid})  # noqa: E731
    F = tape.trace(f, x)
    fn = {"F(x)": F, "F.value_and_grad(x)": F.value_and_grad, "tape.value_and_grad(f)(x)": tape.value_and_grad(f)}
    benchmark(fn[call], x)
