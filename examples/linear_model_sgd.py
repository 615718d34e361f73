"""The second article's linear model, y = w x + b, trained by stochastic gradient descent.

Parameters are recorded once; every step records the batch loss after them,
runs one reverse sweep, updates the parameters and rewinds the tape to the
mark, so the tape never grows. The loss curve is printed (and plotted with
matplotlib if a path is given).

    python examples/linear_model_sgd.py [loss.png]
"""

import sys

import numpy as np

import tape


def main(plot: str | None = None, steps: int = 200) -> list[float]:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 256)
    y = 2.0 * x + 1.0 + rng.normal(0, 0.1, x.size)  # the truth: w = 2, b = 1

    t = tape.Tape()
    w, b = t.var(0.0), t.var(0.0)
    mark = len(t)
    rate, losses = 0.1, []
    for step in range(steps):
        batch = rng.integers(0, x.size, 32)
        residuals = [w * xi + b - yi for xi, yi in zip(x[batch], y[batch], strict=True)]
        loss = sum(r * r for r in residuals) * (1.0 / len(batch))
        loss.backward()  # a new generation: no zero_grad() to forget
        losses.append(loss.value)
        new_w, new_b = w.value - rate * w.grad, b.value - rate * b.grad
        t.rewind(mark)  # drop this step's records; w and b stay valid
        t.forward([w, b], [new_w, new_b])
        if step % 40 == 0 or step == steps - 1:
            print(f"step {step:>4}: loss {losses[-1]:.5f}  w = {new_w:.4f}  b = {new_b:.4f}")
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plt.plot(losses)
        plt.xlabel("step")
        plt.ylabel("batch loss")
        plt.yscale("log")
        plt.savefig(plot, dpi=100)
        print(f"loss curve written to {plot}")
    return losses


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
