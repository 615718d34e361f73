"""Every transform on every kind of program (issue 25's matrix): each cell against a reference written
here in plain NumPy (central differences of the program's value for the gradient, of a hand-derived
gradient for the Hessian), or a refusal that says what is not supported, listed in REFUSED.

A cell that gives a wrong number, or fails any other way, fails its test; a listed refusal that starts
working fails too, so that REFUSED (the matrix's open cells) stays true. Dask maps are in
tests/test_distributed.py (a cluster per cell would cost minutes).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import tape

RNG = np.random.default_rng(2525)
N_LARGE = 1100  # arrays from 1,024 elements are array records


@dataclass
class Kind:
    x0: Any  # the point, as a user passes it
    f: Any  # the program on tape's handles
    value: Any  # the same program on a flat float vector, plain NumPy
    grad: Any  # its gradient by hand, on the flat vector
    tree: Any = None  # flat vector -> the structure f takes (None: f takes the flat array)
    trace_kwargs: Any = None


def _flat(tree: Any) -> np.ndarray:
    if isinstance(tree, dict):
        return np.concatenate([_flat(tree[k]) for k in sorted(tree)]) if tree else np.zeros(0)
    if isinstance(tree, (list, tuple)):
        return np.concatenate([_flat(t) for t in tree]) if tree else np.zeros(0)
    return np.ravel(np.asarray(tree, float))


def _loop(xs):
    s = 0.0
    for i in range(len(xs)):
        s = s + np.sin(xs[i]) * xs[(i + 1) % len(xs)]
    return s


def _loop_value(z):
    return sum(math.sin(z[i]) * z[(i + 1) % len(z)] for i in range(len(z)))


def _loop_grad(z):
    n = len(z)
    return np.array([math.cos(z[i]) * z[(i + 1) % n] + math.sin(z[(i - 1) % n]) for i in range(n)])


def _arrays(x):
    return np.sum(np.sin(x) * x) + np.sum(x) ** 2


def _arrays_value(z):
    return float(np.sum(np.sin(z) * z) + np.sum(z) ** 2)


def _arrays_grad(z):
    return np.sin(z) + z * np.cos(z) + 2 * np.sum(z)


def _scaled(p):
    s, A = p
    return np.sum(np.sin(s * A)) + s * np.sum(A * A)


def _scaled_value(z):
    s, A = z[0], z[1:]
    return float(np.sum(np.sin(s * A)) + s * np.sum(A * A))


def _scaled_grad(z):
    s, A = z[0], z[1:]
    return np.concatenate([[np.sum(A * np.cos(s * A)) + np.sum(A * A)], s * np.cos(s * A) + 2 * s * A])


def _branchy(xs):
    return xs[0] * xs[1] ** 2 if xs[0] > 0 else -xs[0] * xs[1]


DATA = RNG.normal(size=5)


def _with_data(x, data=DATA):
    return np.sum(np.exp(x * 0.3) * data) + np.sum(x * x) * data[0]


def _with_data_grad(z):
    return 0.3 * np.exp(z * 0.3) * DATA + 2 * z * DATA[0]


INNER = tape.trace(lambda u: np.sum(np.tanh(u) * u), np.ones(4))


def _calling(x):
    return INNER(x * 2.0) + np.sum(x * x * x)


def _calling_grad(z):
    t = np.tanh(2 * z)
    return 2 * (t + 2 * z * (1 - t * t)) + 3 * z * z


@tape.jit
def _jitted(xs):
    s = 0.0
    for i in range(len(xs)):
        s = s + math.sin(xs[i]) * xs[(i + 1) % len(xs)]
    return s


def _dict_program(p):
    return np.sum(np.tanh(p["w"] * 2.0)) * p["b"] + p["b"] ** 2


def _dict_value(z):
    b, w = z[0], z[1:]  # sorted keys: b, w
    return float(np.sum(np.tanh(w * 2.0)) * b + b * b)


def _dict_grad(z):
    b, w = z[0], z[1:]
    t = np.tanh(2 * w)
    return np.concatenate([[np.sum(t) + 2 * b], 2 * b * (1 - t * t)])


X_SMALL, X_LARGE = RNG.normal(size=6) * 0.5, RNG.normal(size=N_LARGE) * 0.1
KINDS = {
    "scalar loop": Kind([0.3, -0.7, 1.1, 0.5], _loop, _loop_value, _loop_grad, tree=list),
    "small arrays": Kind(X_SMALL, _arrays, _arrays_value, _arrays_grad),
    "large arrays": Kind(X_LARGE, _arrays, _arrays_value, _arrays_grad),
    "scalar times a large array": Kind((0.7, X_LARGE), _scaled, _scaled_value, _scaled_grad,
                                       tree=lambda z: (float(z[0]), z[1:])),
    "python if": Kind([0.4, 1.3], _branchy, lambda z: z[0] * z[1] ** 2,
                      lambda z: np.array([z[1] ** 2, 2 * z[0] * z[1]]), tree=list),
    "data": Kind(RNG.normal(size=5) * 0.5, _with_data, lambda z: float(_with_data(z)), _with_data_grad,
                 trace_kwargs={"data": (DATA,)}),
    "a call of a traced Function": Kind(RNG.normal(size=4) * 0.5, _calling,
                                        lambda z: float(np.sum(np.tanh(2 * z) * 2 * z) + np.sum(z ** 3)),
                                        _calling_grad),
    "tape.jit": Kind([0.3, -0.7, 1.1, 0.5], _jitted, _loop_value, _loop_grad, tree=list),
    "dict pytree": Kind({"w": RNG.normal(size=3) * 0.5, "b": 0.6}, _dict_program, _dict_value, _dict_grad,
                        tree=lambda z: {"b": float(z[0]), "w": z[1:]}),
}


def _structured(kind: Kind, z: np.ndarray) -> Any:
    return kind.tree(z) if kind.tree is list else kind.tree(z) if kind.tree else z


def _f(kind: Kind):
    return kind.f if kind.trace_kwargs is None else (lambda x: kind.f(x, *kind.trace_kwargs["data"]))


def _traced(kind: Kind, **extra) -> tape.Function:
    return tape.trace(kind.f, kind.x0, **(kind.trace_kwargs or {}), **extra)


def _hessian(kind: Kind, z: np.ndarray, h: float = 1e-6) -> np.ndarray:
    cols = [(kind.grad(z + h * e) - kind.grad(z - h * e)) / (2 * h) for e in np.eye(z.size)]
    return np.array(cols).T


def _dot(tree: Any, v: Any) -> Any:
    """Σ tree · v over the leaves, recorded (tree holds tape's handles, v numbers in its structure)."""
    if isinstance(tree, dict):
        return sum(_dot(tree[k], v[k]) for k in tree)
    if isinstance(tree, (list, tuple)):
        return sum(_dot(t, u) for t, u in zip(tree, v, strict=True))
    return np.sum(tree * v)


# each transform: kind, point z (flat), direction v (flat) -> (what tape gives, the reference), flat
def t_value_and_grad(k, z, v):
    val, g = tape.value_and_grad(_f(k))(_structured(k, z))
    return np.concatenate([[val], _flat(g)]), np.concatenate([[k.value(z)], k.grad(z)])


def t_replay(k, z, v):
    F = _traced(k)
    return np.concatenate([[F(_structured(k, z))], _flat(F.gradient(_structured(k, z)))]), \
        np.concatenate([[k.value(z)], k.grad(z)])


def t_jvp(k, z, v):
    _, t = tape.jvp(_f(k), (_structured(k, z),), (_structured(k, v),))
    return _flat(t), np.array([k.grad(z) @ v])


def t_vjp(k, z, v):
    _, pullback = tape.vjp(_f(k), _structured(k, z))
    return _flat(pullback(1.0)), k.grad(z)


def t_jacobian(k, z, v):
    return _flat(tape.jacobian(_f(k))(_structured(k, z))), k.grad(z)


def t_hessian(k, z, v):
    return _flat(_traced(k).hessian(z)), _hessian(k, z).ravel()


def t_hvp(k, z, v):
    return _flat(_traced(k).hvp(z, v)), _hessian(k, z) @ v


def t_grad_of_grad(k, z, v):
    f = _f(k)
    out = tape.grad(lambda x: _dot(tape.grad(f)(x), _structured(k, v)))(_structured(k, z))
    return _flat(out), _hessian(k, z) @ v


def t_jvp_of_grad(k, z, v):
    _, t = tape.jvp(tape.grad(_f(k)), (_structured(k, z),), (_structured(k, v),))
    return _flat(t), _hessian(k, z) @ v


def t_grad_function(k, z, v):
    return _flat(_traced(k).grad_function()(z)), k.grad(z)


def t_sparse_jacobian(k, z, v):
    return _traced(k).sparse_jacobian(z).toarray().ravel(), k.grad(z)


def t_sparse_hessian(k, z, v):
    return _traced(k).sparse_hessian(z).toarray().ravel(), _hessian(k, z).ravel()


def t_save_load(k, z, v):
    buffer = io.BytesIO()
    _traced(k).save(buffer)
    G = tape.load(io.BytesIO(buffer.getvalue()))
    return np.concatenate([[G(z)], _flat(G.gradient(z))]), np.concatenate([[k.value(z)], k.grad(z)])


def t_map(k, z, v):
    Z = np.stack([z, z + 0.01 * v, z - 0.02 * v])
    values, grads = _traced(k).map_value_and_grad(Z)
    return np.concatenate([values, grads.ravel()]), \
        np.concatenate([[k.value(p) for p in Z], np.concatenate([k.grad(p) for p in Z])])


def t_cse_off(k, z, v):
    return _flat(_traced(k, cse=False).gradient(z)), k.grad(z)


def t_gradcheck(k, z, v):
    report = tape.gradcheck(_traced(k), z)
    return np.array([float(report) < 1e-6]), np.array([1.0])


TRANSFORMS = {name[2:]: fn for name, fn in dict(globals()).items() if name.startswith("t_")}

# The open cells: (kind, transform) -> what the refusal must say. Empty it as they are built.
REFUSED = {
    **{(kind, transform): "is an array record" for kind in ("large arrays", "scalar times a large array",
                                                           "a call of a traced Function")
       for transform in ("sparse_jacobian", "sparse_hessian")},  # issue 27
}


def _point(kind: Kind) -> tuple[np.ndarray, np.ndarray]:
    z = _flat(kind.x0)
    return z * (1 + 0.05 * RNG.normal(size=z.size)), RNG.normal(size=z.size)


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_cell(kind, transform):
    k = KINDS[kind]
    z, v = _point(k)
    assert np.allclose(k.grad(z), [(k.value(z + 1e-6 * e) - k.value(z - 1e-6 * e)) / 2e-6 for e in np.eye(z.size)],
                       rtol=1e-6, atol=1e-6), "the hand gradient disagrees with central differences of the value"
    if (kind, transform) in REFUSED:
        with pytest.raises((TypeError, ValueError, NotImplementedError), match=REFUSED[kind, transform]):
            TRANSFORMS[transform](k, z, v)
        return
    got, expected = TRANSFORMS[transform](k, z, v)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
