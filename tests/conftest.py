"""Fixtures shared by the tests of arrays; the kernels compiled (or loaded) ahead, saying so."""

import os
import time

import pytest
from hypothesis import settings

from tape.records import array_records

# Hypothesis draws the same examples every run, so a run's result never depends on chance (a random run found
# atan2(x, 0.9 tanh(x)) at x = 7.7e-47, whose gradient is the sum of two partials of 1e46 that cancel: 1.3e30 left by
# rounding, where dual numbers give 0, s35); HYPOTHESIS_PROFILE=random draws new ones, to look for failures
settings.register_profile("same", derandomize=True, database=None)
settings.register_profile("random", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "same"))


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
