"""An array record's gradient tape gives its gradient bit for bit, for every elementwise op.

grad_function and vjp_function record each op's partials as records (tape/symbolic/_partials.py); over arrays
those are array records, whose transcendentals replay NumPy's SIMD loops, while an array record's own partial
is its NumPy rule (kernels/_array_rules.py). The two must be the same operations: logaddexp's partial was the
scalar kernel's (the C library's exp) and lgamma's digamma too, 1 ulp off their gradient tapes' at 1-5% of
random points. Reference: F.gradient and F.vjp of the same Function, at random and edge points.
"""

import numpy as np
import pytest

import tape
from tape.kernels.ops import UNARY

N = 2048  # from 2,000 numbers tape.trace records array records
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -3.0, 1e-300, 5e-324, 1e300, -1e300, np.inf, -np.inf, np.nan, 700.0, -745.0]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "arctan2", "hypot", "logaddexp",
          "fmax", "fmin"]
# (x ** y: a fused run's pow is the C library's, a record alone NumPy's SIMD power, and the gradient tape fuses its
# partial's power where the Function may not: an ulp apart at some points, on a CPU where the two differ; design.md)
NAMES = [*(n for n in UNARY if n not in ("neg", "abs", "stop_gradient")), "negative", "absolute",
         *(n for n in BINARY if n != "power")]


def bits(x) -> bytes:
    """The float64 bytes, every NaN the same one (a NaN's sign is not promised: docs/design.md)."""
    x = np.asarray(x, np.float64)
    return np.where(np.isnan(x), np.nan, x).tobytes()


@pytest.mark.parametrize("name", NAMES)
def test_gradient_tapes_of_array_records_give_the_gradient_bits(name):
    op = getattr(tape, name, None) or getattr(np, name)
    rng = np.random.default_rng(7)
    w = rng.normal(0, 1, N)
    two = name in BINARY
    f = (lambda x: (op(x[:N], x[N:]) * w).sum()) if two else (lambda x: (op(x) * w).sum())
    F = tape.trace(f, np.full(N * (1 + two), 0.3))
    G, V = F.grad_function(), F.vjp_function()
    points = [rng.normal(0, 2, F.n_inputs), rng.uniform(0.05, 3, F.n_inputs), rng.choice(EDGES, F.n_inputs)]
    with np.errstate(all="ignore"):
        for x in points:
            expected = bits(F.gradient(x))
            assert bits(G(x)) == expected
            assert bits(V((x, 1.0))) == bits(F.vjp(x, 1.0)) == expected
