"""tape-bench: how fast large graphs record, replay and differentiate on this machine.

    tape-bench                                   # the default mix, then the Jacobian's and the sparse rows:
                                                 # about 95 s on a fresh install (2 cores), Numba's one-time
                                                 # compile included; named workloads run alone
    tape-bench rdag --size 2e6 --repeat 7 --compare --json out.json
    tape-bench chain --sizes 1e4,1e5,1e6,1e7 --plot scaling.png

Workloads (SIZE is what --size sets):
  rdag        random DAG of + - * sin cos tanh on 16 leaves; each input is one of the 16
              previous records (p = 0.7) or any earlier one; the output sums every record
              nothing else reads, so the reverse sweep reaches all. SIZE: ops (10^6)
  chain       y = y + 1e-6 sin(y) repeated: a dependency chain as deep as the tape, whose
              adjoints neither vanish nor overflow. SIZE: records (10^6)
  rosenbrock  sum of 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2, recorded with scalars, and
              with the array API (one block of records per op). SIZE: variables (5 x 10^4)
  seed        the articles' 13-record expression: per-call overhead. SIZE: calls per timing (2000)
  mlp         loss of a 4-16-16-1 tanh network over a batch: one training step. SIZE: batch (64)

Array workloads (one array record per op; ms per value and gradient, and the ratio
to a hand-written NumPy value and gradient, interleaved, once the first calls, reported apart, have
compiled or loaded every kernel they use; --compare adds PyTorch and JAX):
  rosenbrock-array  the Rosenbrock sum on whole arrays. SIZE: variables (10^6)
  mlp-array         784-512-10 tanh network, softmax cross-entropy. SIZE: batch (256)
  stencil           half the squared 5-point Poisson residual on a square grid. SIZE: grid points (10^6)
  logistic          mean logistic loss, 100 features. SIZE: samples (10^5)

Sparse rows (after the Jacobian's): colors, pattern-and-coloring time, and sparse vs dense time
(and against one gradient's) of the Jacobian of a banded residual and of a bundle-adjustment shape,
and of the Hessian of a banded sum of squares; tape/bench/sparse.py says how.
  sparse      those rows alone. SIZE: n (10^4; the bundle: n/20 points, 4000 x 1740 at 10^4);
              `tape-bench sparse --sizes 1e4,1e5,1e6` gives one table of every size

tape.jit on arrays (not in the default mix: a first run compiles each program, about 10 s apiece):
  jit-arrays  an RK4 whose state is a Var array, an n-body step, a heat equation into un[i], as Numba
              code; ns/record recording, numba.njit on floats, record + gradient vs replay, first calls.
              SIZE: records per program (10^6)

Phases: record (the scalar Python API, GC on), record, tape.jit (rdag, chain, rosenbrock,
seed: the same program compiled by tape.jit, the same records; its first call, compile or
cache load, reported apart), record + gradient (a fresh tape and one reverse sweep; for
tape.jit through tape.value_and_grad), forward replay, reverse sweep, and a Function's value and
value_and_grad; median, min and max over --repeat runs after a
warm-up, in ns per record and records per second. Numba compile and cached-load times
are measured once, in fresh processes, apart from the steady-state figures.

--compare runs the same workloads, where they can, on what a user would pick instead
(each skipped with a note when not installed): the articles' Node engine (the baseline),
plain floats (no gradient: the floor), micrograd, PyTorch (scalar autograd and
vectorized), CasADi SX and JAX; plus the rdag sweeps written in C. Ours and theirs are
timed interleaved in one process, at the same size (slow engines at a smaller one).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import tape
from tape.bench.arrays import ARRAY_WORKLOADS, DEFAULT_ARRAYS, bench_array, report_array
from tape.bench.compare import bench_compare
from tape.bench.jit_arrays import JIT_ARRAY_WORKLOADS, bench_jit_arrays, report_jit_arrays
from tape.bench.phases import bench_jacobian, bench_ours, compile_times, warm_up
from tape.bench.programs import DEFAULT_MIX, WORKLOADS
from tape.bench.report import plot, report
from tape.bench.sparse import SPARSE_WORKLOADS, bench_sparse, first_use, report_sparse
from tape.bench.timing import Progress
from tape.kernels import compiling


def parse_size(text: str) -> int:
    """'1e6', '1_000_000' or '1000000' -> 1000000; a positive whole number."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value.is_integer() or value < 1:
        raise argparse.ArgumentTypeError(f"sizes are positive whole numbers, got {text!r}")
    return int(value)


def available_memory() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    eager = compiling.EAGER  # (set by warm_up: restored for a caller that goes on, as the tests do)
    try:
        return _main(argv)
    finally:
        compiling.EAGER = eager


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="tape-bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                        help=f"any of {', '.join(WORKLOADS)}; none means the default mix")
    parser.add_argument("--size", type=parse_size, help="size of every workload named (see above)")
    parser.add_argument("--repeat", type=parse_size, default=3, help="timed runs per phase (default 3)")
    parser.add_argument("--compare", action="store_true", help="run the other engines side by side")
    parser.add_argument("--sizes", help="comma-separated sizes for a scaling curve, e.g. 1e4,1e5,1e6")
    parser.add_argument("--plot", type=Path, help="with --sizes: draw the curve to this PNG (needs matplotlib)")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--no-compile", action="store_true", help="skip the compile-time measurement")
    args = parser.parse_args(argv)

    known: dict[str, tuple[Any, ...]] = {**WORKLOADS, **ARRAY_WORKLOADS, **SPARSE_WORKLOADS, **JIT_ARRAY_WORKLOADS}
    unknown = [w for w in args.workloads if w not in known]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(known)}")
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else None
    except argparse.ArgumentTypeError as exc:
        parser.error(f"--sizes: {exc}")
    names = args.workloads or [*DEFAULT_MIX, *([] if sizes else DEFAULT_ARRAYS)]
    if sizes and any(name in ARRAY_WORKLOADS or name in JIT_ARRAY_WORKLOADS for name in names):
        parser.error("--sizes draws scaling curves of the scalar workloads (and the sparse table) only")
    if args.plot and not (sizes and set(names) - {"sparse"}):
        parser.error("--plot draws the scaling curve of --sizes of a scalar workload")
    memory = available_memory()
    for name in names:
        for size in sizes or [args.size or known[name][0]]:
            need = size * known[name][2]
            if memory and need > 0.8 * memory:
                parser.error(f"{name} at size {size:,} needs about {need / 2**30:.1f} GiB; "
                             f"{memory / 2**30:.1f} GiB are available")
            if name == "rosenbrock" and size < 2:
                parser.error("rosenbrock needs at least 2 variables")

    progress = Progress()
    print(f"tape-bench {tape.__version__}: numpy {np.__version__}, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores")
    results: dict = {"workloads": []}
    if not args.no_compile:
        progress("compiling the Numba kernels for this machine, once (about 8 s on 2 cores), in a fresh process, "
                 "then timing a cached load; this process reuses them, and later phases compile what they first need")
        results["compile"] = times = compile_times()
        print(f"kernels in a fresh process: first call (compile) {times['first_call_s']:.2f} s, cached load "
              f"{times['cached_load_s']:.2f} s (after importing numpy and numba: "
              f"{times['numpy_numba_import_s']:.2f} s)")
    warm_up()
    mix = not args.workloads and not sizes  # the default mix: the Jacobian's and the sparse table after the workloads
    sparse_at = [SPARSE_WORKLOADS["sparse"][0]] if mix else []
    if "sparse" in names:
        names = [name for name in names if name != "sparse"]
        sparse_at = sizes or [args.size or SPARSE_WORKLOADS["sparse"][0]]
    jit_arrays = "jit-arrays" in names
    names = [name for name in names if name != "jit-arrays"]
    if sizes:
        results["scaling"] = scaling = {}
        for name in names:
            scaling[name] = [bench_ours(name, size, args.repeat, progress) for size in sizes]
            progress.done()
            print(f"\n{name}: ns per record as the tape grows")
            phases = list(scaling[name][0]["phases"])
            print(f"  {'records':>12}" + "".join(f"{p[:18]:>20}" for p in phases))
            for r in scaling[name]:
                print(f"  {r['records']:>12,}" + "".join(f"{r['phases'][p]['ns_per_unit']:>20.1f}" for p in phases))
        if args.plot:
            plot(scaling, args.plot)
            print(f"\nplot written to {args.plot}")
    elif names:
        for name in names:
            size = args.size or known[name][0]
            if name in ARRAY_WORKLOADS:
                result = bench_array(name, size, args.repeat, args.compare, progress)
                progress.done()
                results["workloads"].append(result)
                print(report_array(result))
                continue
            result = bench_ours(name, size, args.repeat, progress)
            if args.compare:
                result["compare"], result["notes"] = bench_compare(name, size, args.repeat, progress)
            progress.done()
            results["workloads"].append(result)
            print(report(result))
    if mix:
        results["jacobian"] = jac = bench_jacobian(args.repeat, progress)
        progress.done()
        print(f"\nJacobian of a 100-input, 100-output tape ({jac['records']:,} records), median ms:")
        for label, sec in jac["seconds"].items():
            print(f"  {label:<42}{1e3 * sec:>9.3f}")
    if sparse_at:
        progress("sparse: the first use of tape.trace's passes, a sparse Jacobian and a sparse Hessian (a compile on a "
                 "fresh machine: about 1, 2 and 3 s)")
        results["sparse_first_use_s"] = first = first_use()
        results["sparse"] = rows = {}
        for n in sparse_at:
            rows.update(bench_sparse(args.repeat, progress, n))
            progress.done()
        print(report_sparse(rows, first))
    if jit_arrays:
        results["jit_arrays"] = jit_rows = bench_jit_arrays(args.size or known["jit-arrays"][0], args.repeat, progress)
        progress.done()
        print(report_jit_arrays(jit_rows))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    kept = f"every figure is in {args.json}" if args.json else "--json FILE keeps every figure"
    print(f"\ntape-bench: done in {time.perf_counter() - progress.start:.0f} s; {kept}; next: `tape-bench --compare` "
          "(the same workloads on PyTorch, JAX, ... where installed), `tape-bench --help` (every workload)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
