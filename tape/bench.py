"""tape-bench: how fast large graphs record, replay and differentiate on this machine.

    tape-bench                                   # the default mix, well under a minute
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

Phases: record (the scalar Python API, GC on), forward replay, reverse sweep, and a
Function's value and value_and_grad; median, min and max over --repeat runs after a
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
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np

import tape
from tape.benchmarks import c_reference, engines, programs

WORKLOADS = {  # name: (default size, unit of size, rough bytes per unit while recording)
    "rdag": (1_000_000, "ops", 400),
    "chain": (1_000_000, "records", 150),
    "rosenbrock": (50_000, "variables", 1_200),
    "seed": (2_000, "calls", 0),
    "mlp": (64, "batch", 120_000),
}
DEFAULT_MIX = ("rdag", "chain", "rosenbrock", "seed", "mlp")


class Progress:
    """One status line on stderr, rewritten in place on a terminal."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()

    def __call__(self, text: str) -> None:
        elapsed = time.perf_counter() - self.start
        if self.tty:
            sys.stderr.write(f"\r\033[K[{elapsed:5.1f} s] {text}")
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


def bench_ours(name: str, size: int, repeat: int, progress: Callable[[str], None]) -> dict:
    """Every phase of tape on one workload at one size."""
    plan = programs.PLANS[name](size)
    t, xs, out = engines.tape_record(name, plan)
    n = len(t)
    x = np.asarray(plan["x"], dtype=np.float64)
    F = t.function(xs, out)
    calls = plan["calls"] if name == "seed" else 1

    def repeated(fn):
        return fn if calls == 1 else (lambda: [fn() for _ in range(calls)])

    v = np.ones_like(x)
    phases = {
        "record": lambda: engines.tape_record(name, plan),
        "record + gradient": engines.tape_dynamic(name, plan),
        **({"record, array API": lambda: engines.tape_array_record(name, plan)}
           if name in ("rosenbrock", "mlp") else {}),
        "forward replay": lambda: t.forward(xs, x),
        "reverse sweep": lambda: t.backward(out),
        "Function: value": lambda: F(x),
        "Function: value_and_grad": lambda: F.value_and_grad(x),
        "Function: jvp": lambda: F.jvp(x, v),
        "Function: hvp": lambda: F.hvp(x, v),
    }
    results = {phase: summary(timings(repeated(fn), repeat, progress, f"{name} {size:,}: {phase}"), n * calls)
               for phase, fn in phases.items()}
    maps = bench_map(F, x, repeat, progress, f"{name} {size:,}")
    tracemalloc.start()
    engines.tape_dynamic(name, plan)()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    stats = F.stats()
    return {"workload": name, "size": size, "records": n, "calls": calls, "constants": t.n_consts,
            "comparisons": stats["comparisons_checked"], "phases": results, "map": maps,
            "tape_bytes_per_record": tape.BYTES_PER_RECORD + 8 * t.n_consts / n,
            "function_working_bytes_per_record": stats["working_bytes"] / n,
            "peak_traced_bytes": peak, "gc_enabled": gc.isenabled()}


def bench_map(F, x: np.ndarray, repeat: int, progress: Callable[[str], None], label: str) -> dict:
    """map_value_and_grad over many points near x, on one thread and on all of them."""
    points = int(min(10_000, max(4, 2_000_000 // len(F))))
    X = x + np.random.default_rng(3).uniform(-1e-3, 1e-3, (points, len(x)))
    threads = numba.get_num_threads()
    out = {}
    for k in sorted({1, threads}):
        numba.set_num_threads(k)
        try:
            phase = f"map_value_and_grad, {k} thread{'s' if k > 1 else ''}"
            out[phase] = summary(timings(lambda: F.map_value_and_grad(X), repeat, progress, f"{label}: {phase}"),
                                 len(F) * points)
            out[phase]["points"] = points
        finally:
            numba.set_num_threads(threads)
    return out


def bench_jacobian(repeat: int, progress: Callable[[str], None]) -> dict:
    """The Jacobian of a 100-input, 100-output tape: forward vs reverse, 1 vs k directions per sweep."""
    rng = np.random.default_rng(4)
    W = rng.normal(size=(100, 100)).tolist()

    def f(x):
        return [programs.pairwise_sum([tape.tanh(W[j][i] * x[i]) for i in range(100)]) for j in range(100)]

    F = tape.trace(f, rng.uniform(-1, 1, 100))
    x = rng.uniform(-1, 1, 100)
    rows = {}
    for mode in ("forward", "reverse"):
        for block in (1, 16, 100):
            label = f"{mode}, {block} direction{'s' if block > 1 else ''} per sweep"
            rows[label] = float(np.median(timings(lambda m=mode, b=block: F.jacobian(x, mode=m, block=b), repeat,
                                                  progress, f"jacobian: {label}")))
    rows["value_and_grad of one output (for scale)"] = float(np.median(timings(
        lambda: F.vjp(x, np.eye(100)[0]), repeat, progress, "jacobian: one vjp")))
    return {"records": len(F), "seconds": rows}


def bench_compare(name: str, size: int, repeat: int, progress: Callable[[str], None]) -> tuple[list, list]:
    """Other engines beside ours, interleaved run by run, at the same size."""
    rows, notes = [], []
    for engine in engines.ENGINES[1:]:
        if name not in engine.workloads:
            continue
        reason = engine.missing()
        if reason:
            notes.append(reason)
            continue
        esize = min(size, engine.cap.get(name, size))
        plan = programs.PLANS[name](esize)
        calls = plan["calls"] if name == "seed" else 1
        for mode, factory, ours_factory in (("record + gradient", engine.dynamic, engines.tape_dynamic),
                                            ("replayed value_and_grad", engine.compiled, engines.tape_compiled)):
            if factory is None:
                continue
            try:
                setup, theirs = engines.timed_setup(factory, name, plan)
            except Exception as exc:  # an optional engine failing must not end the run
                notes.append(f"{engine.name}: {type(exc).__name__}: {exc}")
                continue
            ours_s, theirs_s = interleaved(ours_factory(name, plan), theirs, repeat, calls, progress,
                                           f"{name} {esize:,}: {engine.name}")
            rows.append({"engine": engine.name, "mode": mode, "size": esize, "setup_s": setup,
                         "ours_s": ours_s, "theirs_s": theirs_s, "ratio": theirs_s / ours_s, "note": engine.note})
    if name == "rdag":
        rows += compare_c(size, repeat, progress, notes)
    return rows, notes


def compare_c(size: int, repeat: int, progress: Callable[[str], None], notes: list) -> list:
    with tempfile.TemporaryDirectory() as workdir:
        c = c_reference.c_reference(Path(workdir))
        if c is None:
            notes.append("C reference skipped: no C compiler found")
            return []
        t, xs, out = engines.tape_record("rdag", programs.rdag_plan(size))
        F = t.function(xs, out)
        x = t._val[: len(xs)].copy()
        t.backward(out)
        reached = t._stamp[: len(t)] == t._gen
        ours_adjoints = t._adj[: len(t)][reached].copy()
        c_reference.run_c_reverse(c, t, out)
        same = np.array_equal(ours_adjoints, t._adj[: len(t)][t._stamp[: len(t)] == t._gen])
        notes.append(f"C reference adjoints identical to Numba's: {same}")
        rows = []
        modes = (("reverse sweep", lambda: t.backward(out), lambda: c_reference.run_c_reverse(c, t, out)),
                 ("forward + reverse", lambda: F.value_and_grad(x), lambda: c_reference.run_c_pair(c, t, out)))
        for mode, ours, theirs in modes:
            o, th = interleaved(ours, theirs, repeat, 1, progress, f"rdag {size:,}: C {mode}")
            rows.append({"engine": "C (gcc -O2), same arrays", "mode": mode, "size": size, "setup_s": 0.0,
                         "ours_s": o, "theirs_s": th, "ratio": th / o, "note": "tape/benchmarks/c_reference.py"})
        return rows


# -- compile time ---------------------------------------------------------------------------

COMPILE_PROBE = """
import time
start = time.perf_counter()
import numba, numpy
imported = time.perf_counter()
import tape
t = tape.Tape()
x = t.var(0.5)
y = tape.sin(x) * x + 1.0
t.forward([x], [0.25])
t.backward(y)
F = t.function([x], y)
F([0.3]); F.value_and_grad([0.3])
tape.log(0.0)
print(imported - start, time.perf_counter() - imported)
"""


def compile_times() -> dict[str, float]:
    """Seconds to import tape and run every kernel once in a fresh process, after importing
    NumPy and Numba: with an empty Numba cache (compile), then with it filled."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        runs = [subprocess.run([sys.executable, "-c", COMPILE_PROBE], env=env, check=True,
                               capture_output=True, text=True) for _ in range(2)]
    (numba_import, first), (_, cached) = (map(float, r.stdout.split()) for r in runs)
    return {"numpy_numba_import_s": numba_import, "first_call_s": first, "cached_load_s": cached}


# -- reporting --------------------------------------------------------------------------------


def report(result: dict) -> str:
    name, n, calls = result["workload"], result["records"], result["calls"]
    unit, per = ("us/call", 1e6 / calls) if calls > 1 else ("ns/record", 1e9 / n)
    lines = [f"\n{name} (size {result['size']:,} {WORKLOADS[name][1]}): {n:,} records, "
             f"{result['constants']:,} constants; median [min, max] of repeats; GC on: {result['gc_enabled']}",
             f"  {'phase':<28}{unit:>11}{'min':>9}{'max':>9}{'records/s':>14}"]
    for phase, r in result["phases"].items():
        lines.append(f"  {phase:<28}{r['median_s'] * per:>11.2f}{r['min_s'] * per:>9.2f}{r['max_s'] * per:>9.2f}"
                     f"{r['units_per_s']:>14,.0f}")
    value = result["phases"]["Function: value"]["median_s"]
    grad = result["phases"]["Function: value_and_grad"]["median_s"]
    hvp = result["phases"]["Function: hvp"]["median_s"]
    maps = list(result["map"].items())
    rates = ", ".join(f"{phase.split(', ')[1]} {r['points'] / r['median_s']:,.0f}" for phase, r in maps)
    speedup = f" (speed-up {maps[0][1]['median_s'] / maps[-1][1]['median_s']:.2f}x)" if len(maps) > 1 else ""
    lines.append(f"  map_value_and_grad over {maps[0][1]['points']:,} points, points/s: {rates}{speedup};"
                 f"  hvp / value_and_grad: {hvp / grad:.2f}x")
    lines.append(f"  value_and_grad / value: {grad / value:.2f}x;  bytes/record: tape "
                 f"{result['tape_bytes_per_record']:.1f}, Function working memory "
                 f"{result['function_working_bytes_per_record']:.1f};  peak traced memory of record + "
                 f"gradient: {result['peak_traced_bytes'] / 2**20:.1f} MiB")
    if result.get("compare"):
        lines.append("  compared (seconds per evaluation; ratio = theirs / ours, so > 1 means tape is faster):")
        for row in result["compare"]:
            setup = f", setup {row['setup_s']:.2f} s" if row["setup_s"] > 0.05 else ""
            lines.append(f"    {row['engine'] + ' — ' + row['mode']:<58} size {row['size']:>9,}  "
                         f"ours {row['ours_s']:.3g} s  theirs {row['theirs_s']:.3g} s  {row['ratio']:>8.2f}x{setup}")
    lines += [f"  note: {note}" for note in result.get("notes", [])]
    return "\n".join(lines)


def plot(scaling: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("tape-bench: --plot needs matplotlib (pip install 'tape[plot]')") from None
    fig, axes = plt.subplots(1, len(scaling), figsize=(5.5 * len(scaling), 4), squeeze=False)
    for ax, (name, runs) in zip(axes[0], scaling.items(), strict=True):
        records = [r["records"] for r in runs]
        for phase in runs[0]["phases"]:
            ax.plot(records, [r["phases"][phase]["ns_per_unit"] for r in runs], marker="o", label=phase)
        ax.set(xscale="log", yscale="log", xlabel="records", ylabel="ns per record", title=f"tape-bench {name}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# -- command line -----------------------------------------------------------------------------


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

    unknown = [w for w in args.workloads if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    names = args.workloads or list(DEFAULT_MIX)
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else None
    except argparse.ArgumentTypeError as exc:
        parser.error(f"--sizes: {exc}")
    if args.plot and not sizes:
        parser.error("--plot draws the scaling curve of --sizes")
    memory = available_memory()
    for name in names:
        for size in sizes or [args.size or WORKLOADS[name][0]]:
            need = size * WORKLOADS[name][2]
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
        progress("measuring Numba compile and cached-load times in fresh processes")
        results["compile"] = times = compile_times()
        print(f"kernels in a fresh process: first call (compile) {times['first_call_s']:.2f} s, cached load "
              f"{times['cached_load_s']:.2f} s (after importing numpy and numba: "
              f"{times['numpy_numba_import_s']:.2f} s)")
    _warm_up()
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
    else:
        for name in names:
            size = args.size or WORKLOADS[name][0]
            result = bench_ours(name, size, args.repeat, progress)
            if args.compare:
                result["compare"], result["notes"] = bench_compare(name, size, args.repeat, progress)
            progress.done()
            results["workloads"].append(result)
            print(report(result))
        results["jacobian"] = jac = bench_jacobian(args.repeat, progress)
        progress.done()
        print(f"\nJacobian of a 100-input, 100-output tape ({jac['records']:,} records), median ms:")
        for label, sec in jac["seconds"].items():
            print(f"  {label:<42}{1e3 * sec:>9.3f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def _warm_up() -> None:
    """Load the compiled kernels before timing anything."""
    t = tape.Tape()
    x = t.var(0.5)
    y = tape.sin(x) + 1.0
    t.forward([x], [0.5])
    t.backward(y)
    F = t.function([x], y)
    F([0.1])
    F.value_and_grad([0.1])


if __name__ == "__main__":
    raise SystemExit(main())
