"""Timing helpers for tape-bench: a progress line, repeated and interleaved timings, their summary."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


class Progress:
    """One status line on stderr, rewritten in place on a terminal; elsewhere (a log, CI) a line per
    phase, so that a long first compile never looks like a hang."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.phase = ""

    def __call__(self, text: str) -> None:
        elapsed = time.perf_counter() - self.start
        if self.tty:
            sys.stderr.write(f"\r\033[K[{elapsed:5.1f} s] {text}")
            sys.stderr.flush()
            return
        phase = re.split(r"[0-9]", text, maxsplit=1)[0]  # the text before its counters
        if phase != self.phase:
            self.phase = phase
            sys.stderr.write(f"[{elapsed:5.1f} s] {text}\n")
            sys.stderr.flush()

    def done(self) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def timings(fn: Callable[[], object], repeat: int, progress: Callable[[str], None], label: str) -> list[float]:
    """Seconds of ``repeat`` runs of fn after one warm-up run."""
    fn()
    out = []
    for k in range(repeat):
        progress(f"{label} {k + 1}/{repeat}")
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def summary(seconds: list[float], units: int) -> dict:
    med = float(np.median(seconds))
    return {"median_s": med, "min_s": min(seconds), "max_s": max(seconds), "units": units,
            "ns_per_unit": 1e9 * med / units, "units_per_s": units / med}


def interleaved(ours: Callable, theirs: Callable, repeat: int, calls: int, progress: Callable[[str], None],
                label: str) -> tuple[float, float]:
    """Median seconds per call of ours and theirs, timed alternately after one warm-up each."""
    ours(), theirs()
    times: dict[str, list[float]] = {"ours": [], "theirs": []}
    for k in range(repeat):
        progress(f"{label} {k + 1}/{repeat}")
        for who, fn in (("ours", ours), ("theirs", theirs)):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[who].append((time.perf_counter() - start) / calls)
    return float(np.median(times["ours"])), float(np.median(times["theirs"]))


def medians(variants: dict, rounds: int, calls: int = 1) -> dict:
    """{name: median seconds per call} over rounds, every variant timed once per round (``calls``
    calls each), in turn: the bench/ scripts' interleaved comparisons."""
    times: dict = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            start = time.perf_counter()
            for _ in range(calls):
                run()
            times[name].append((time.perf_counter() - start) / calls)
    return {name: float(np.median(found)) for name, found in times.items()}


def per_record(cases: dict[int, Any], passes: dict[str, Callable[[Any], object]], rounds: int) -> None:
    """Print each pass's interleaved median time on each case (keyed by its record count: a Function's
    arrays, say): ms and ns per record (the passes and structures of bench/)."""
    found = medians({(what, n): (lambda a=a, do=do: do(a)) for n, a in cases.items()
                     for what, do in passes.items()}, rounds)
    for (what, n), seconds in found.items():
        print(f"  {what:5s} {n:>8d} records: {seconds * 1e3:8.3f} ms, {seconds / n * 1e9:6.2f} ns per record")
