"""bench/user_programs.py's programs (kinds users write that no one here tuned to) at test sizes, for
tests/test_untuned_programs.py and tests/untuned_references.py (JAX float64's numbers: the tests cannot import JAX)."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import user_programs  # noqa: E402

SIZES = {"logistic": {"n": 300, "d": 5}, "conv1d": {"batch": 3, "length": 40, "channels": 3, "taps": 4},
         "lstm": {"steps": 6, "batch": 4, "hidden": 5, "inputs": 3}, "burgers": {"n": 50, "steps": 12},
         "softmax": {"n": 30, "d": 5, "classes": 4}, "gaussian": {"n": 40, "d": 4},
         "pendulums": {"n": 16, "steps": 8}, "denoise": {"n": 50}, "kmeans": {"k": 4, "n": 30, "d": 3},
         "ode": {"n": 6, "steps": 3}, "lse": {"n": 20}}


def program(name: str, ns) -> tuple:
    """(x, f, hand, state) of a program at its test size, on the namespace ns (xp, nn)."""
    return getattr(user_programs, name)(ns, **SIZES[name])


def points(x: np.ndarray) -> dict[str, np.ndarray]:
    """The points a program is checked at: its own, a moved one, all zeros (ties, kinks) and a large one."""
    rng = np.random.default_rng(len(x))
    return {"own": x, "moved": x + rng.normal(scale=0.1, size=len(x)), "zeros": np.zeros_like(x),
            "large": x * 8.0}


def directions(n: int) -> np.ndarray:
    """Two seeded directions of n numbers: the gradient and Hessian products are checked along them."""
    return np.random.default_rng(n + 1).normal(size=(2, n))
