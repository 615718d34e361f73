"""The report of tape-bench: one workload's figures as text, and the scaling curve as a plot."""

from __future__ import annotations

from pathlib import Path

from tape.bench.programs import WORKLOADS


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
    if result.get("jit"):
        how = "loaded from the cache" if result["jit"]["from_cache"] else "compiled"
        lines.append(f"  tape.jit: first call {result['jit']['first_call_s']:.2f} s ({how}; not in the timings)")
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
