"""(a+b)*(a+b) written two ways: the graph's shape follows how the expression is written.

Written out, the tape holds two `add` records with the same inputs; with the
sum kept in a variable, one `add` record feeds the product twice (fan-out).
Both give the same gradients; the second tape is smaller.

    python examples/two_ways.py [directory for two drawings]
"""

import sys
from pathlib import Path

import tape


def record(shared: bool):
    t = tape.Tape()
    a, b = t.var(1.5), t.var(-0.5)
    if shared:
        s = a + b
        out = s * s
    else:
        out = (a + b) * (a + b)
    return t, [a, b], out


def main(directory: str | None = None) -> dict[str, int]:
    sizes = {}
    for shared in (False, True):
        t, leaves, out = record(shared)
        grads = t.gradient(out, leaves)
        title = "s = a + b; s * s" if shared else "(a + b) * (a + b)"
        print(f"\n{title}: {len(t)} records, gradient {grads.tolist()}")
        print(t.table())
        sizes[title] = len(t)
        if directory:
            path = Path(directory) / f"{'shared' if shared else 'written_out'}.svg"
            t.render(out, path)
            print(f"drawing written to {path}")
    return sizes


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
