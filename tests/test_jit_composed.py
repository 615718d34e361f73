"""Functions made of other ops inside tape.jit (tape/compiled/composed.py) on Var arrays and Vars, the inputs below
array records' SMALL: the Python recorder's value and gradient bit for bit, at edge values (ties at clip's bounds,
-0.0, 0, huge); array records of them: tests/jit_array_programs.py's "composed" (tapes bit for bit, JAX float64)."""

from __future__ import annotations

import numpy as np
import pytest

import tape

X = np.array([0.0, -0.0, -0.5, 0.8, 1e300, -1e-300, 0.3, -2.0, 5.0, 0.25, -0.75, 1.5])
W = np.linspace(-1.0, 2.0, 12)
CASES = {
    "np.clip": lambda x: (np.clip(x, -0.5, 0.8) * W).sum(),
    "tape.clip": lambda x: tape.clip(x * 2.0, -1.0, 1.0).sum(),
    "softplus": lambda x: tape.softplus(np.minimum(x, 30.0) * 3.0).sum(),
    "square, reciprocal": lambda x: (np.square(x[2:] - W[2:]) * np.reciprocal(x[2:] * x[2:] + 1.0)).sum(),
    "outer": lambda x: (np.outer(x[:3], W[:4]) * np.outer(x[3:6], x[6:10])).sum(),
    "diff": lambda x: (np.diff(x[2:]) * W[3:]).sum() + np.diff(x[2:], 2)[::3].sum() + np.diff(x.reshape(3, 4)).sum(),
    "trace": lambda x: np.trace(x.reshape(3, 4)) * np.trace(x[:9].reshape(3, 3)),
    "norm": lambda x: np.linalg.norm(x[2:]) + np.linalg.norm(x[6:].reshape(2, 3) * W[:3]),
    "scalars": lambda x: tape.softplus(x[0]) + tape.clip(x[2], -0.5, 0.5) * np.clip(x[3], 0.0, 0.8) + np.square(x[6]),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("kind", ["array", "list"])
def test_composed_functions_record_as_python(name, kind):
    f = CASES[name]
    x = X if kind == "array" else X.tolist()
    want = tape.value_and_grad(f)(X)
    got = tape.value_and_grad(tape.jit(f, cache=False))(x)
    assert np.float64(got[0]).tobytes() == np.float64(want[0]).tobytes()
    assert np.asarray(got[1], np.float64).tobytes() == np.asarray(want[1], np.float64).tobytes()


def test_the_ties_of_clip_share_their_slope():
    """At a bound, clip's slope is 1/2 (maximum's and minimum's tie rule), as JAX's jnp.clip: of an array, and of a
    Var (whose np.clip was NumPy's own, compared and picked: slope 1), in tape.jit and the Python recorder."""
    def each(x):
        total = 0.0
        for k in range(4):
            total = total + np.clip(x[k], -0.5, 0.8)
        return total

    x = np.array([-0.5, 0.8, 0.0, 2.0])
    for f in (lambda x: np.clip(x, -0.5, 0.8).sum(), each):
        assert tape.grad(f)(x).tolist() == tape.grad(tape.jit(f, cache=False))(x).tolist() == [0.5, 0.5, 1.0, 0.0]


def test_what_var_arrays_lack_is_refused_by_name():
    """softmax along an axis needs logsumexp of Var arrays along it, which tape.jit's Var arrays lack: a JitError
    naming it (array records have it: the "composed" case); np.diff of a negative order: NumPy's ValueError."""
    with pytest.raises(tape.JitError, match="softmax"):
        tape.grad(tape.jit(lambda x: (tape.softmax(np.asarray(x).reshape(3, 4), axis=1) * W.reshape(3, 4)).sum(),
                           cache=False))(X.tolist())
    with pytest.raises(ValueError, match="order must be non-negative"):
        tape.grad(lambda x: np.diff(x, -1).sum())(np.ones(2000))
