"""tape-bench: time recording, forward replay and the reverse sweep on large graphs.

    tape-bench                      # default: rdag with 10^6 records
    tape-bench rdag chain --size 2000000 --repeat 7 --compare --json out.json

Workloads
  rdag   random DAG of + - * sin cos tanh; each input is one of the 16 previous
         records with probability 0.7, else any earlier record (16 leaves).
  chain  y = sin(y) + x repeated: a dependency chain as deep as the tape.

Every phase reports the median of --repeat runs and ns per record. --compare
adds, side by side in the same run: the same loop over plain floats (the
floor of any operator-overloading recorder), micrograd's Value on the same
DAG (if installed; ops + * relu, which it supports), and the reverse sweep
written in C (if a C compiler is found).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import tape
from kernels import OPCODE

RDAG_OPS = ("add", "sub", "mul", "sin", "cos", "tanh")
WORKLOADS = ("rdag", "chain")
MICROGRAD_OPS = ("add", "mul", "relu")  # what micrograd 0.1.0's Value supports
UNARY_TAPE = {"sin": tape.sin, "cos": tape.cos, "tanh": tape.tanh, "relu": tape.relu}
UNARY_FLOAT = {"sin": math.sin, "cos": math.cos, "tanh": math.tanh}
LEAVES = 16


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


# -- the random DAG -----------------------------------------------------------


def rdag_plan(n: int, seed: int = 0, ops: tuple[str, ...] = RDAG_OPS) -> dict:
    """Ops and inputs of records LEAVES .. LEAVES+n-1, as Python lists.

    An input reference s < 16 means ring slot s (one of the 16 previous
    records); s >= 16 means record s - 16, fetched from anywhere. ``sinks``
    are the records nothing reads: the output is their sum, so the reverse
    sweep reaches every record, as a loss over the whole graph would.
    """
    rng = np.random.default_rng(seed)
    record = np.arange(LEAVES, LEAVES + n)

    def inputs():
        near = rng.random(n) < 0.7
        source = np.where(near, record - rng.integers(1, 17, n), (rng.random(n) * record).astype(np.int64))
        return source, np.where(near, source & 15, source + 16)

    a_source, a_ref = inputs()
    b_source, b_ref = inputs()
    kind = rng.integers(0, len(ops), n)
    binary = np.isin(np.array(ops)[kind], ("add", "sub", "mul"))
    read = np.zeros(LEAVES + n, bool)
    read[a_source] = True
    read[b_source[binary]] = True
    return {"kind": kind.tolist(), "a": a_ref.tolist(), "b": b_ref.tolist(), "ops": ops,
            "sinks": np.flatnonzero(~read).tolist(), "leaves": rng.uniform(-1, 1, LEAVES).tolist()}


def run_rdag(plan: dict, leaves: list, far: Callable, store: list | None, unary: dict) -> object:
    """The user's loop: one op per record, then the sum of the sinks (pairwise)."""
    ring = list(leaves)
    kinds, a_ref, b_ref = plan["kind"], plan["a"], plan["b"]
    functions = [None if op in ("add", "sub", "mul") else unary[op] for op in plan["ops"]]
    add, sub, mul = (plan["ops"].index(op) if op in plan["ops"] else -1 for op in ("add", "sub", "mul"))
    for i in range(len(kinds)):
        k = kinds[i]
        s = a_ref[i]
        x = ring[s] if s < 16 else far(s - 16)
        f = functions[k]
        if f is None:
            s = b_ref[i]
            y = ring[s] if s < 16 else far(s - 16)
            r = x + y if k == add else (x - y if k == sub else x * y)
        else:
            r = f(x)
        ring[(i + LEAVES) & 15] = r
        if store is not None:
            store.append(r)
    return pairwise_sum([far(s) for s in plan["sinks"]] if store is not None else map(far, plan["sinks"]))


def pairwise_sum(terms):
    """Sum in a balanced tree, streaming: O(log n) partial sums alive at once."""
    sums: list = []  # sums[k] adds up sizes[k] terms; sizes strictly decrease
    sizes: list[int] = []
    for term in terms:
        size = 1
        while sizes and sizes[-1] == size:
            term = sums.pop() + term
            size += sizes.pop()
        sums.append(term)
        sizes.append(size)
    total = sums.pop()
    while sums:
        total = sums.pop() + total
    return total


def record_rdag_tape(plan: dict, keep_all: bool = False) -> tuple[tape.Tape, tape.Var]:
    t = tape.Tape(capacity=LEAVES + len(plan["kind"]) + len(plan["sinks"]))
    leaves = t.vars(plan["leaves"])
    store = list(leaves) if keep_all else None
    far = store.__getitem__ if keep_all else t.__getitem__
    out = run_rdag(plan, leaves, far, store, UNARY_TAPE)
    return t, out


def record_rdag_floats(plan: dict) -> float:
    store = list(plan["leaves"])
    return run_rdag(plan, plan["leaves"], store.__getitem__, store, UNARY_FLOAT)


def record_rdag_micrograd(plan: dict):
    from micrograd.engine import Value

    store = [Value(v) for v in plan["leaves"]]
    return run_rdag(plan, list(store), store.__getitem__, store, {"relu": Value.relu})


# -- the chain ------------------------------------------------------------------


def record_chain(n: int) -> tuple[tape.Tape, tape.Var]:
    t = tape.Tape(capacity=n + 2)
    x = t.var(0.5)
    y = x
    for _ in range(n // 2):
        y = tape.sin(y) + x
    return t, y


# -- C reference of the reverse sweep ----------------------------------------

C_REVERSE = r"""
#include <math.h>
#include <stdint.h>
static inline void acc(double *adj, uint32_t *stamp, const uint8_t *op, uint32_t j, double d,
                       int64_t gen, int64_t keep) {
    if (stamp[j] == gen) adj[j] += d;
    else { if (stamp[j] >= keep && op[j] == LEAF) adj[j] += d; else adj[j] = d; stamp[j] = (uint32_t)gen; }
}
#define ACC(j, d) acc(adj, stamp, op, (j), (d), gen, keep)
void forward(const uint8_t *op, const uint32_t *in0, const uint32_t *in1, double *val, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        switch (op[i]) {
        case ADD: val[i] = val[in0[i]] + val[in1[i]]; break;
        case SUB: val[i] = val[in0[i]] - val[in1[i]]; break;
        case MUL: val[i] = val[in0[i]] * val[in1[i]]; break;
        case SIN: val[i] = sin(val[in0[i]]); break;
        case COS: val[i] = cos(val[in0[i]]); break;
        case TANH: val[i] = tanh(val[in0[i]]); break;
        default: break;
        }
    }
}
void reverse(const uint8_t *op, const uint32_t *in0, const uint32_t *in1, const double *val,
             double *adj, uint32_t *stamp, int64_t out, int64_t gen, int64_t keep) {
    acc(adj, stamp, op, (uint32_t)out, 1.0, gen, keep);
    for (int64_t i = out; i >= 0; --i) {
        if (stamp[i] != gen) continue;
        double g = adj[i];
        switch (op[i]) {
        case ADD: ACC(in0[i], g); ACC(in1[i], g); break;
        case SUB: ACC(in0[i], g); ACC(in1[i], -g); break;
        case MUL: { double a = val[in0[i]], b = val[in1[i]]; ACC(in0[i], g * b); ACC(in1[i], g * a); break; }
        case SIN: ACC(in0[i], g * cos(val[in0[i]])); break;
        case COS: ACC(in0[i], -g * sin(val[in0[i]])); break;
        case TANH: { double y = val[i]; ACC(in0[i], g * (1.0 - y * y)); break; }
        default: break;
        }
    }
}
"""


def c_reference(workdir: Path):
    """The forward and reverse sweeps of the rdag ops compiled from C, or None without a compiler."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        return None
    defines = [f"-D{name.upper()}={OPCODE[name]}" for name in ("leaf",) + RDAG_OPS]
    src, lib = workdir / "reverse.c", workdir / "reverse.so"
    src.write_text(C_REVERSE)
    try:
        subprocess.run([cc, "-O2", "-shared", "-fPIC", *defines, "-o", str(lib), str(src), "-lm"],
                       check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError):
        return None
    library = ctypes.CDLL(str(lib))
    library.reverse.restype = library.forward.restype = None
    library.reverse.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_int64] * 3
    library.forward.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64]
    return library


def run_c_reverse(c, t: tape.Tape, out: tape.Var) -> None:
    """One reverse pass in C over the tape's own arrays, in a fresh generation."""
    t._gen += 1
    t._epoch = t._gen
    arrays = (t._op, t._in0, t._in1, t._val, t._adj, t._stamp)
    c.reverse(*(a.ctypes.data for a in arrays), out.index, t._gen, t._epoch)


def run_c_pair(c, t: tape.Tape, out: tape.Var) -> None:
    """Forward then reverse in C: a plain loop pair, the floor for value and gradient."""
    c.forward(t._op.ctypes.data, t._in0.ctypes.data, t._in1.ctypes.data, t._val.ctypes.data, len(t))
    run_c_reverse(c, t, out)


# -- compile time ---------------------------------------------------------------

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
tape.log(0.0)
print(imported - start, time.perf_counter() - imported)
"""


def compile_times() -> dict[str, float]:
    """Seconds to import tape and run each kernel once in a fresh process, after
    importing NumPy and Numba: with an empty Numba cache (compile), then with it filled."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        runs = [subprocess.run([sys.executable, "-c", COMPILE_PROBE], env=env, check=True,
                               capture_output=True, text=True) for _ in range(2)]
    (numba_import, first), (_, cached) = (map(float, r.stdout.split()) for r in runs)
    return {"numpy_numba_import_s": numba_import, "first_call_s": first, "cached_load_s": cached}


# -- driver -----------------------------------------------------------------------


def bench_workload(name: str, size: int, repeat: int, compare: bool) -> dict:
    """Time every phase on one workload; rows are (phase, seconds, baseline phase or None)."""
    rows: list[tuple[str, float, str | None]] = []
    notes: list[str] = []

    def row(phase: str, fn: Callable[[], object], baseline: str | None = None) -> None:
        rows.append((phase, median_time(fn, repeat), baseline))

    if name == "rdag":
        plan = rdag_plan(size)
        row("record (tape)", lambda: record_rdag_tape(plan))
        t, out = record_rdag_tape(plan)
    else:
        row("record (tape)", lambda: record_chain(size))
        t, out = record_chain(size)
    n = len(t)
    leaves = [t[i] for i in range(min(LEAVES, n)) if t._op[i] == 0]
    values = t._val[[x.index for x in leaves]].copy()
    if compare and name == "rdag":
        row("record (tape, all handles kept)", lambda: record_rdag_tape(plan, True), "record (tape)")
        row("record (plain floats: the floor)", lambda: record_rdag_floats(plan), "record (tape)")
        try:
            mg_plan = rdag_plan(size, ops=MICROGRAD_OPS)
            row("record, ops + * relu (tape)", lambda: record_rdag_tape(mg_plan))
            row("record, ops + * relu (micrograd)", lambda: record_rdag_micrograd(mg_plan),
                "record, ops + * relu (tape)")
        except ImportError:
            notes.append("micrograd not installed: pip install micrograd to compare")
    row("tape: forward replay", lambda: t.forward(leaves, values))
    row("tape: reverse sweep", lambda: t.backward(out))
    reached = int(np.count_nonzero(t._stamp[:n] == t._gen))
    notes.append(f"the reverse sweep reaches {reached:,} of {n:,} records ({100 * reached / n:.0f}%)")
    F = t.function(leaves, out)
    row("Function: value F(x)", lambda: F(values))
    row("Function: value_and_grad", lambda: F.value_and_grad(values), "Function: value F(x)")
    if compare:
        with tempfile.TemporaryDirectory() as workdir:
            c = c_reference(Path(workdir)) if name == "rdag" else None
            if c is None:
                notes.append("C reference: rdag only, and needs a C compiler")
            else:
                t.backward(out)
                stamp = t._stamp[:n].copy()
                grads = t._adj[:n][stamp == t._gen].copy()
                row("C: reverse sweep, same arrays", lambda: run_c_reverse(c, t, out), "tape: reverse sweep")
                same = np.array_equal(grads, t._adj[:n][t._stamp[:n] == t._gen])
                notes.append(f"C reference adjoints identical to Numba's: {same}")
                row("C: forward + reverse pair", lambda: run_c_pair(c, t, out), "Function: value_and_grad")
    stats = F.stats()
    return {"workload": name, "records": n, "leaves": len(leaves), "constants": t.n_consts,
            "bytes_per_record": tape.BYTES_PER_RECORD + 8 * t.n_consts / n,
            "function_working_bytes_per_record": stats["working_bytes"] / n,
            "seconds": {phase: sec for phase, sec, _ in rows},
            "ns_per_record": {phase: 1e9 * sec / n for phase, sec, _ in rows},
            "baselines": {phase: base for phase, _, base in rows if base},
            "notes": notes, "gc_enabled": gc.isenabled()}


def per_call_overhead(repeat: int, calls: int = 20_000) -> dict[str, float]:
    """Microseconds per call on the articles' 13-record example."""

    def f(v):
        return (tape.sigmoid(v[0] * v[1] + v[2] * v[3] + v[4]) - v[5]) ** 2

    x = np.array([0.5, 1.2, -0.3, 0.8, 0.1, 1.0])
    F = tape.trace(f, x)

    def many(fn):
        def run():
            for _ in range(calls):
                fn(x)
        return run

    return {"F(x)": 1e6 * median_time(many(F), repeat) / calls,
            "F.value_and_grad(x)": 1e6 * median_time(many(F.value_and_grad), repeat) / calls}


def report(result: dict) -> str:
    n, seconds = result["records"], result["seconds"]
    lines = [f"\n{result['workload']}: {n:,} records ({result['leaves']} leaves, "
             f"{result['constants']:,} constants), median of repeats, GC on: {result['gc_enabled']}",
             f"  {'phase':<36}{'ns/record':>11}{'total ms':>11}   ratio"]
    for phase, sec in seconds.items():
        base = result["baselines"].get(phase)
        ratio = f"{sec / seconds[base]:.2f}x {base}" if base else ""
        lines.append(f"  {phase:<36}{1e9 * sec / n:>11.1f}{1e3 * sec:>11.1f}   {ratio}")
    lines.append(f"  bytes/record: tape {result['bytes_per_record']:.1f} (29 + constant pool); a Function adds "
                 f"{result['function_working_bytes_per_record']:.1f} of working memory (partials, adjoints)")
    lines += [f"  {note}" for note in result["notes"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tape-bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD", help="rdag (default) or chain")
    parser.add_argument("--size", type=int, default=1_000_000, help="records per workload (default 10^6)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per phase; the median is shown")
    parser.add_argument("--compare", action="store_true", help="add floats, micrograd and C side by side")
    parser.add_argument("--no-compile", action="store_true", help="skip the compile-time measurement")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.size < 1 or args.repeat < 1:
        parser.error("--size and --repeat must be positive")
    unknown = sorted(set(args.workloads) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    workloads = args.workloads or ["rdag"]

    print(f"tape-bench {tape.__version__}: numpy {np.__version__}, python {sys.version.split()[0]}")
    results: dict = {"workloads": []}
    if not args.no_compile:
        results["compile"] = compile_times()
        times = results["compile"]
        print(f"kernels in a fresh process: first call (compile) {times['first_call_s']:.2f} s, "
              f"cached load {times['cached_load_s']:.2f} s (after importing numpy and numba: "
              f"{times['numpy_numba_import_s']:.2f} s)")
    _warm_up()
    for name in workloads:
        result = bench_workload(name, args.size, args.repeat, args.compare)
        results["workloads"].append(result)
        print(report(result))
    results["per_call_us"] = per_call_overhead(args.repeat)
    print("\nper call on the articles' 13-record example: " +
          ", ".join(f"{k} {v:.2f} us" for k, v in results["per_call_us"].items()))
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


if __name__ == "__main__":
    raise SystemExit(main())
