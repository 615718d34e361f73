"""Micro-benchmarks (pytest-benchmark), one group per question, run on demand:

    pip install -e '.[bench]'
    python -m pytest bench        # bench/pytest.ini: its own configuration, apart from tests/

Timings are reported, never asserted.
"""

import pytest

from tape.bench import engines, programs


@pytest.fixture(scope="session")
def rdag():
    """A recorded 10^5-op random DAG (the tape-bench workload at a smaller size): (tape, leaves, output)."""
    t, xs, out = engines.tape_record("rdag", programs.rdag_plan(100_000))
    t.backward(out)
    return t, xs, out
