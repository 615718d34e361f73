"""Recording through the scalar API, each next to its plain-float floor.

Also the constants question: ``x * 2.0`` (one record + 8 pool bytes) against a
constant kept as its own record (``x * c`` with ``c = t.var(2.0)``).
"""

import math

import pytest

import tape

N = 10_000


@pytest.mark.benchmark(group="record: Var * Var")
def test_float_mul(benchmark):
    def loop():
        x = y = 1.0000001
        for _ in range(N):
            y = y * x

    benchmark(loop)


@pytest.mark.benchmark(group="record: Var * Var")
def test_tape_mul(benchmark):
    def loop():
        t = tape.Tape(N + 2)
        x = y = t.var(1.0000001)
        for _ in range(N):
            y = y * x

    benchmark(loop)


@pytest.mark.benchmark(group="record: sin")
def test_float_sin(benchmark):
    def loop():
        y = 0.5
        for _ in range(N):
            y = math.sin(y)

    benchmark(loop)


@pytest.mark.benchmark(group="record: sin")
def test_tape_sin(benchmark):
    def loop():
        t = tape.Tape(N + 2)
        y = t.var(0.5)
        for _ in range(N):
            y = tape.sin(y)

    benchmark(loop)


@pytest.mark.benchmark(group="record: handles")
@pytest.mark.parametrize("how", ["t.var(x)", "t[i]"])
def test_handles(benchmark, how):
    def loop():
        t = tape.Tape(N + 2)
        x = t.var(1.0)
        if how == "t.var(x)":
            for _ in range(N):
                t.var(0.5)
        else:
            get = t.__getitem__
            for _ in range(N):
                get(0)
        return x

    benchmark(loop)


@pytest.mark.benchmark(group="constants: record x * 2.0")
@pytest.mark.parametrize("layout", ["pool", "constant record"])
def test_constant_layout_record(benchmark, layout):
    def loop():
        t = tape.Tape(2 * N + 2)
        x = y = t.var(1.0000001)
        for _ in range(N):
            y = y * (2.0 if layout == "pool" else t.var(2.0)) + x
        return t, y

    benchmark(loop)


@pytest.mark.benchmark(group="constants: reverse sweep of x * 2.0")
@pytest.mark.parametrize("layout", ["pool", "constant record"])
def test_constant_layout_reverse(benchmark, layout):
    t = tape.Tape(3 * N + 2)
    x = y = t.var(1.0000001)
    for _ in range(N):
        y = y * (2.0 if layout == "pool" else t.var(2.0)) + x
    benchmark(lambda: t.backward(y))
    benchmark.extra_info["records"] = len(t)
    benchmark.extra_info["bytes"] = len(t) * tape.BYTES_PER_RECORD + 8 * t.n_consts
