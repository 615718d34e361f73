"""Random array programs (tests/array_fuzz_programs.py: eight ops of 47 kinds, as source a user writes) in every
transform, against JAX float64 (tests/array_fuzz_references.json): the Python recorder's gradient, a Function's replayed
value, gradient and Hessian-vector product, tape.jit's gradient at two points and the Hessian-vector product of its
trace; at a (4, 5) state (scalar records, packed in tape.jit) and a (32, 40) one (array records)."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest
from array_fuzz_programs import SHAPES, directions, points, source

import tape

with open(os.path.join(os.path.dirname(__file__), "array_fuzz_references.json")) as _file:
    JAX = json.load(_file)


def _close(got, want, what, rtol=1e-9):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=what)


@pytest.mark.parametrize("seed", range(len(SHAPES)))
def test_every_transform_against_jax(seed):
    R, C = SHAPES[seed]
    namespace = {"xp": np, "sigmoid": tape.sigmoid, "softplus": tape.softplus, "lse": tape.logsumexp,
                 "W": np.linspace(-1.0, 1.0, R * C), "R": R, "C": C}
    exec(source(seed), namespace)  # noqa: S102  # the test programs' own source
    f, (x0, x1, v), V, ref = namespace["f"], points(seed), directions(seed), JAX[str(seed)]
    _close(V @ tape.grad(f)(x0), ref["grad0"], "the Python recorder's gradient")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tape.TracingWarning)  # (a sort's order read at x0: replayed, as it says)
        F = tape.trace(f, x0)
    value, grad = F.value_and_grad(x1)
    _close(value, ref["value"], "replayed value")
    _close(V @ grad, ref["grad1"], "replayed gradient")
    _close(V @ F.hvp(x1, v), ref["hvp"], "replayed Hessian-vector product", 1e-8)
    jf = tape.jit(f)
    _close(V @ tape.grad(jf)(x0), ref["grad0"], "tape.jit's gradient")
    _close(V @ tape.grad(jf)(x1), ref["grad1"], "tape.jit's gradient at x1")
    _close(V @ tape.trace(jf, x0).hvp(x1, v), ref["hvp"], "trace(tape.jit)'s Hessian-vector product", 1e-8)
    assert jf._arrays is True
