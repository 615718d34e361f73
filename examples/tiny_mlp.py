"""A tiny neural network (2-16-1, tanh and sigmoid) learns a toy dataset with the array API.

Each step records the forward pass over the whole dataset as blocks of
records (X @ W1 is one block of products and a pairwise tree of sums),
sweeps once in reverse, updates the weights with NumPy and starts a new tape.

    python examples/tiny_mlp.py
"""

import numpy as np

import tape


def main(steps: int = 300) -> list[float]:
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (128, 2))
    y = ((X[:, 0] ** 2 + X[:, 1] ** 2) < 0.5).astype(float).reshape(-1, 1)  # inside a circle or not
    weights = [rng.normal(0, 1, (2, 16)), np.zeros(16), rng.normal(0, 0.5, (16, 1)), np.zeros(1)]
    losses = []
    for step in range(steps):
        t = tape.Tape(capacity=200_000)
        W1, b1, W2, b2 = (t.array(w) for w in weights)
        prediction = tape.sigmoid(np.tanh(X @ W1 + b1) @ W2 + b2)
        loss = ((prediction - y) ** 2).mean()
        loss.backward()
        losses.append(loss.value)
        weights = [p.value - 1.0 * p.grad for p in (W1, b1, W2, b2)]
        if step % 60 == 0 or step == steps - 1:
            accuracy = np.mean((prediction.value > 0.5) == (y > 0.5))
            print(f"step {step:>4}: loss {loss.value:.4f}  accuracy {accuracy:.2f}  ({len(t):,} records)")
    return losses


if __name__ == "__main__":
    main()
