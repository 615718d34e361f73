"""The first article's worked example: L = (sigmoid(w1*x1 + w2*x2 + b) - y)^2 on a tape.

Prints the 13-record table before and after the reverse sweep, the six
gradients, and the central-difference check the article ends with.

    python examples/articles_walkthrough.py [picture.svg]
"""

import sys

import tape

POINT = {"w1": 0.50, "x1": 1.20, "w2": -0.30, "x2": 0.80, "b": 0.10, "y": 1.00}


def loss(v):
    w1, x1, w2, x2, b, y = v
    d = tape.sigmoid(w1 * x1 + w2 * x2 + b) - y
    return d * d  # the same record used twice: fan-out


def main(picture: str | None = None) -> dict[str, float]:
    t = tape.Tape()
    leaves = [t.var(v) for v in POINT.values()]  # records 0..5
    L = loss(leaves)  # records 6..12, created as Python evaluates the expression
    print("The tape after recording (no adjoints yet):")
    print(t.table())
    L.backward()  # one reverse sweep, record 12 down to 0: no DFS needed
    print("\nAfter L.backward():")
    print(t.table())
    grads = {name: leaf.grad for name, leaf in zip(POINT, leaves, strict=True)}
    print("\n" + "\n".join(f"dL/d{name:<3} = {g: .8f}" for name, g in grads.items()))
    print("\nCentral differences against the tape (the article's check):")
    print(tape.gradcheck(loss, list(POINT.values())))
    if picture:
        t.render(L, picture)
        print(f"\ndrawing written to {picture}")
    return grads


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
