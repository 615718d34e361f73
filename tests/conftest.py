"""Fixtures shared by the tests of arrays; the kernels compiled (or loaded) ahead, saying so."""

import time

import pytest

from tape.records import array_records


def pytest_sessionstart(session):
    """Every kernel compiled or loaded before the first test, with a line saying so: on a fresh environment
    this is the one long wait of the run (the tests would otherwise stall silently in whichever test
    first needs each kernel). Under pytest-xdist the controller compiles before it starts the workers."""
    from tape.__main__ import warmup
    from tape.kernels.compiling import cache_dir

    if hasattr(session.config, "workerinput"):  # a pytest-xdist worker: the controller compiled them, load them
        warmup()
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    say = reporter.write_line if reporter is not None else print
    say(f"tape: compiling the Numba kernels ahead, or loading them from {cache_dir()} (python -m tape warmup; "
        "a fresh environment compiles once, about 80 s on 2 cores)")
    start = time.perf_counter()
    warmup()
    say(f"tape: kernels ready in {time.perf_counter() - start:.1f} s")


@pytest.fixture(params=["array", "scalar"])
def form(request, monkeypatch):
    """Array records for every size, then scalar records for every size."""
    monkeypatch.setattr(array_records, "SMALL", 1 if request.param == "array" else 10**12)
    return request.param
