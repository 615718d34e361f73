"""A fused run (Run: its program, which members it writes, how it reads and sends back) and the kernels that run it:
the generic fused kernels (kernels' fused_forward and fused_reverse) or their NumPy twins (Tiered), or its shape's own
(Shaped). tape/sweeps/fusion.py finds a Function's runs and makes them; tape/sweeps/driver.py and steps.py call
them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from tape.kernels import shaped as _shaped
from tape.kernels._sweeps import fused_forward, fused_reverse
from tape.kernels.compiling import LOAD, Gate
from tape.sweeps import driver, fused_numpy


class Tiered:
    """A fused kernel, or its NumPy twin (tape/sweeps/fused_numpy.py: the same bits, 10-30x slower) until the kernel
    is compiled in this process, or the twin has run ``payback`` seconds in this process, about the kernel's compile
    (a cold first gradient of Rosenbrock at 10^6 took 7.6 s, 4.4 s of it compiling the two), or LOAD seconds where
    the kernel is cached (a first load in a process, 0.4 s, costs more than a first twin run: 0.13 s at 10^6)."""

    def __init__(self, kernel: Any, twin: Callable[..., Any], payback: float):
        self.kernel, self.twin, self.gate = kernel, twin, Gate((kernel,), (LOAD, payback))

    def __call__(self, twinned: bool, *args: Any) -> Any:
        if not twinned or self.gate.ready():
            return self.gate.call(self.kernel, *args)
        return self.gate.timed(self.twin, *args)


FORWARD = Tiered(fused_forward, fused_numpy.forward, 1.0)  # compiled in 1.1 CPU-s (cold, quiet 2-core machine)
REVERSE = Tiered(fused_reverse, fused_numpy.reverse, 3.0)  # 3.3 CPU-s
SHAPED = True  # whether ordered runs get their shape's own kernels (kernels/shaped.py) once these pay back


class Shaped:
    """A run shape's own kernels (kernels/shaped.py: one pass per element), called once its Gate opens: FORWARD and
    REVERSE (stand-ins with the same bits) until they have run ``PAYBACK`` seconds for this shape, about its kernels'
    compile, or LOAD where those are cached. The kernels' source is made at the shape's first call, not its trace."""

    PAYBACK = 1.0
    made: dict[tuple, Shaped] = {}
    eager = False  # open at once (untwinned)

    def __init__(self, shape: tuple):
        self.shape = shape
        self._gate: Gate | None = None
        self.kernels: Any = None

    @property
    def gate(self) -> Gate:
        if self._gate is None:
            self.kernels = _shaped.kernels(self.shape)
            self._gate = Gate((self.kernels.forward, self.kernels.reverse), (LOAD, self.PAYBACK))
            self._gate.open = self.eager
        return self._gate

    def __reduce__(self) -> tuple:
        """Pickled as its shape: a Function loaded elsewhere gets that process's kernels of the shape."""
        return Shaped.of, (self.shape,)

    @classmethod
    def of(cls, shape: tuple) -> Shaped:
        """The kernels of a run shape (one object a shape in a process)."""
        if shape not in cls.made:
            cls.made[shape] = cls(shape)
        return cls.made[shape]


def untwinned() -> None:
    """The fused kernels from now on, not their NumPy twins (``python -m tape warmup``, tape-bench's compile probe)."""
    FORWARD.gate.open = REVERSE.gate.open = Shaped.eager = True
    for shaped in Shaped.made.values():
        if shaped._gate is not None:
            shaped._gate.open = True


class Run(NamedTuple):
    """One fused run; tape/sweeps/driver.py calls forward at its first row and reverse at its last."""

    rows: tuple[int, ...]  # the members' records, then the sum's if one joined
    program: tuple[np.ndarray, ...]  # code, ka, ia, kb, ib, imm, ext
    need: np.ndarray  # members whose values the reverse recomputes (some partial reads them)
    live: np.ndarray  # region offset of members read outside the run, else -1
    inputs: tuple[int, ...]  # records the run reads (views of), whose adjoints it adds to
    rows_cols: tuple[int, int]  # n0 rows of n1 elements
    total: int  # the sum record's row, or -1
    total_at: int  # its place in the arenas
    members: np.ndarray  # the members' rows
    dead: frozenset[int]  # the array records between its first row and its last that no root depends on
    twinned: bool  # whether NumPy can run it with the kernels' bits (fused_numpy.py)
    watched: bool  # whether a member is read outside the run (live has one >= 0)
    ordered: bool  # whether its inputs get their adds in the NumPy steps' order (_lags)
    shaped: Shaped | None  # its shape's own kernels (_shape), where ordered
    reads: np.ndarray  # the record of each view in the program's ext (where in the arenas it reads)
    adj_live: np.ndarray  # live's members' regions in the adjoint arena (where the reverse reads their adjoints)
    adj_total: int  # the sum record's place in the adjoint arena

    def forward(self, s: Any) -> None:
        """Compute the run: its live members' regions and its sum record."""
        shaped = self.shaped if SHAPED else None
        if shaped is not None and shaped.gate.ready(shaped.kernels.forward):  # (the generic kernels' arguments made
            # only where they run: 0.3 µs of the 1.4 µs a small run's call took)
            value = shaped.gate.call(shaped.kernels.forward, self.program[5], self.program[6], self.live,
                                     *self.rows_cols, s._aval)
        else:
            args = (*self.program, self.live, self.total >= 0, *self.rows_cols, s._aval)
            value = FORWARD(self.twinned, *args) if shaped is None else shaped.gate.timed(FORWARD, self.twinned, *args)
        if self.total >= 0:
            s._aval[self.total_at] = value

    def reverse(self, s: Any, gen: int, keep: int) -> None:
        """Send the run's adjoints to its inputs, if this pass reached it."""
        reached = self.reached(s, gen)
        if reached is not None:
            for j in self.inputs:
                driver._prepared(s, j, gen, keep)
            self.back(s, *reached)

    def reached(self, s: Any, gen: int) -> tuple[np.ndarray, float] | None:
        """(where each member's adjoint sent from outside the run is, else -1; the sum's adjoint), or None where
        this pass sent the run nothing."""
        adj_in = np.where(s._stamp[self.members] == gen, self.adj_live, -1) if self.watched else self.adj_live  # (all
        # -1)
        seed = float(s._aadj[self.adj_total]) if self.total >= 0 and s._stamp[self.total] == gen else 0.0
        if seed == 0.0 and (not self.watched or adj_in.max() < 0):
            return None
        return adj_in, seed

    def back(self, s: Any, adj_in: np.ndarray, seed: float, fresh: bool = False) -> None:
        """The run's reverse pass, its inputs' adjoint regions prepared, but where fresh the region of its line's
        (line), stale: its shape's kernel assigns it, else it is zeroed here."""
        shaped = self.shaped if SHAPED and self._full(adj_in, seed) else None
        if shaped is not None and shaped.gate.ready(shaped.kernels.reverse):  # (the generic kernels' arguments made
            # only where they run)
            shaped.gate.call(shaped.kernels.reverse, self.program[5], self.program[6], adj_in, seed, *self.rows_cols,
                             s._aval, s._aadj, fresh)
            return
        if fresh:
            driver.own(s, s._aadj, s._plans[s._in0[self.inputs[self.line(s)]]])[...] = 0.0
        args = (*self.program, self.need, adj_in, seed, *self.rows_cols, s._aval, s._aadj)
        REVERSE(self.twinned, *args) if shaped is None else shaped.gate.timed(REVERSE, self.twinned, *args)

    def line(self, s: Any) -> int:
        """The input (its index in inputs) whose adjoint region is the one line that its shape's reverse pulls
        (kernels/shaped.py's pulled: each element stored once), so that where that region is stale the kernel
        assigns it, not zeroed first (11 regions of 800 KB a filter's call); else -1."""
        views = list(_shaped.pulled(self.shaped.shape)) if self.shaped is not None else []
        records, ext, (n0, n1) = {int(self.reads[i]) for i in views}, self.program[6], self.rows_cols
        if not views or len(records) > 1 or n0 != 1 or len({int(ext[i, 0] - ext[i, 3]) for i in views}) > 1:
            return -1
        j, lags = records.pop(), ext[views, 3]
        p, base = s._plans[s._in0[j]], int(ext[views[0], 0] - ext[views[0], 3])
        return self.inputs.index(j) if (p.offset, p.size) == (base + lags.min(), n1 + lags.max() - lags.min()) \
            and j in self.inputs else -1

    def _full(self, adj_in: np.ndarray, seed: float) -> bool:
        """Whether a reverse pass may hold every member's adjoint, as its shape's kernels do (a list compare, 0.7 µs,
        where np.array_equal took 14 µs a call)."""
        return (seed != 0.0) == (self.total >= 0) and (adj_in is self.adj_live or
                                                        adj_in.tolist() == self.adj_live.tolist())

    def bound(self, s: Any) -> tuple[Callable[[], None], Callable[[np.ndarray, float, bool], None]]:
        """forward(s) and back(s, adj_in, seed, fresh) for a Function s (arenas that never move): once its shape's
        kernel is ready (Gate open for good, machine code loaded), it is called on arguments found once. The Python
        around the MLP's run (bench/array_programs.py): 0.8 of Run.forward's 1.3 µs, 1.0 of back's 1.5."""
        imm, ext, (n0, n1), aval, aadj = self.program[5], self.program[6], self.rows_cols, s._aval, s._aadj
        ready: list[Any] = [None, None]  # the shape's forward and reverse kernel, each once it is ready

        def bind(k: int) -> None:
            shaped = self.shaped
            if shaped is not None and shaped._gate is not None and shaped._gate.open:
                kernel = (shaped.kernels.forward, shaped.kernels.reverse)[k]
                ready[k] = kernel if kernel.overloads else None

        def forward() -> None:
            kernel = ready[0]
            if kernel is None or not SHAPED:
                self.forward(s)
                return bind(0)
            value = kernel(imm, ext, self.live, n0, n1, aval)
            if self.total >= 0:
                aval[self.total_at] = value

        def back(adj_in: np.ndarray, seed: float, fresh: bool) -> None:
            kernel = ready[1]
            if kernel is None or not SHAPED or not self._full(adj_in, seed):
                self.back(s, adj_in, seed, fresh)
                return bind(1)
            kernel(imm, ext, adj_in, seed, n0, n1, aval, aadj, fresh)

        return forward, back
