"""Micro-benchmarks (pytest-benchmark). Run side by side, one group per question:

    pip install -e '.[bench]'
    python -m pytest bench -o python_files='bench_*.py' --benchmark-columns=median,iqr,rounds

Timings are reported, never asserted.
"""

import pytest

from tape import bench


@pytest.fixture(scope="session")
def rdag():
    """A recorded 10^5-op random DAG (the tape-bench workload at a smaller size) and its output."""
    t, out = bench.record_rdag_tape(bench.rdag_plan(100_000))
    t.backward(out)
    return t, out
