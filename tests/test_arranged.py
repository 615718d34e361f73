"""NumPy's arranging functions on VarArrays and in tape.jit: np.tile, np.broadcast_to, np.repeat, np.diagonal, np.diag
(both ways), np.trace, np.triu, np.tril and np.tensordot. Each copying op's values are NumPy's bit for bit (edge
values in x too) and its derivatives in every sweep (vjp, jvp, Jacobian, sparse Jacobian, second order, sparse
Hessian) are checked against references made by NumPy alone: the op applied to the numbers 1..n says which input each
output element copies (0: a zero), so its Jacobian is that 0/1 pattern. Scalar records (12 elements), array records
(1,200) and tape.jit's array records; bad arguments raise NumPy's exceptions in both recorders."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
from test_jit_array_records import canonical, raised
from test_jit_arrays import namespace

import tape
from tape.kernels.array_ops import ARRAY_OPCODE

COPIES = {  # name -> the op on x, flat, of 12 or 1,200 elements (A: x as a 3 x 4 or 30 x 40 matrix)
    "tile": "np.tile(A, (2, 3))",
    "tile of a column": "np.tile(A[:, 1], 3)",
    "broadcast_to": "np.broadcast_to(A.T[:, 1:2], (2, A.shape[1], 5))",
    "broadcast_to a middle axis": "np.broadcast_to(A[:, None, ::-2], (A.shape[0], 3, A.shape[1] // 2))",
    "repeat": "np.repeat(A.T, 2, axis=1)",
    "repeat of a middle axis": "np.repeat(A[:, None, ::-2], 2, axis=1)",
    "repeat flat": "np.repeat(A[::2], 3)",
    "diagonal": "np.diagonal(A.T, -1)",
    "diag of a matrix": "np.diag(A, 2)",
    "diag of a vector": "np.diag(A[0], -1) + np.diag(A[1, ::-1], 1)",
    "trace": "np.trace(A.T, 1) + np.zeros(1) + np.trace(A[:, 1:])",
    "triu": "np.triu(A, 1)",
    "tril": "np.tril(A.T, -1)",
    "tensordot with data": "np.tensordot(A, np.arange(2.0 * A.shape[0]).reshape(2, -1), axes=((0,), (1,)))",
}
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e-308, 5e-324]


def source(name: str, n: int) -> str:
    rows = 3 if n == 12 else 30
    return f"def f(x):\n    A = x.reshape({rows}, -1)\n    return {COPIES[name]}\n"


def ops(name: str, n: int, jitted: bool) -> tuple:
    """(NumPy's op, tape's: the Python recorder's or tape.jit's)."""
    py, jn = namespace(source(name, n), arrays=True)
    return quiet(py["f"]), (jn if jitted else py)["f"]


def quiet(op):
    """op without NumPy's warnings of infinities and NaNs (edge values in x)."""
    def run(x):
        with np.errstate(all="ignore"):
            return op(x)
    return run


def sources_of(op, n: int) -> np.ndarray:
    """Which input (1-based; 0: none) each output element of a copying op is: the op on 1..n."""
    return op(np.arange(1.0, n + 1.0)).ravel()


def jacobian_of(name: str, op, n: int) -> scipy.sparse.csr_matrix:
    """The op's Jacobian by NumPy: the op applied to each unit vector (a linear op); of a copying op of 1,200 inputs
    the 0/1 pattern of ``sources_of``."""
    if n == 12 or name in ("trace", "tensordot with data"):
        return scipy.sparse.csr_matrix(np.stack([op(e).ravel() for e in np.eye(n)], 1))
    src = sources_of(op, n)
    picked = np.flatnonzero(src)
    return scipy.sparse.csr_matrix((np.ones(len(picked)), (picked, src[picked].astype(int) - 1)), shape=(src.size, n))


CELLS = [(name, n, jitted) for name in COPIES for n, jitted in ((12, False), (1200, False), (1200, True))]


@pytest.mark.parametrize("name,n,jitted", CELLS)
def test_values_and_derivatives_in_every_sweep(name, n, jitted):
    op, taped = ops(name, n, jitted)
    rng = np.random.default_rng(len(name) + n)
    x, v = rng.normal(size=n), rng.normal(size=n)
    x[:len(EDGES)], x[-len(EDGES):] = EDGES, EDGES[::-1]
    y, vjp = tape.vjp(taped, x)
    if name.startswith("tensordot"):  # (scalar records add products in their own order: NaN's sign open too)
        assert np.allclose(y, op(x), rtol=1e-14, atol=0, equal_nan=True)
    else:  # NumPy's bits (any NaN one NaN)
        assert np.array_equal(*(canonical(np.asarray(a).view(np.uint64)) for a in (y, op(x))))
    w = rng.normal(size=np.shape(y))
    J = jacobian_of(name, op, n)
    assert np.allclose(vjp(w)[0], J.T @ w.ravel(), rtol=1e-13, atol=1e-13)
    x = rng.normal(size=n)  # (finite: the tangents and Jacobians compare as numbers)
    assert np.allclose(np.ravel(tape.jvp(taped, (x,), (v,))[1]), J @ v, rtol=1e-13, atol=1e-13)
    sparse = tape.sparse_jacobian(taped)(x)
    assert np.array_equal(sparse.toarray(), J.toarray())
    if n == 12:
        assert np.allclose(np.reshape(tape.jacobian(taped)(x), J.shape), J.toarray(), rtol=1e-14, atol=0)

    def cubed(x):
        return (taped(x) ** 3 * w).sum()
    H = (J.T @ scipy.sparse.diags(6.0 * (J @ x) * w.ravel()) @ J).toarray()  # sum(w * (J x)^3)'s Hessian
    assert np.allclose(tape.sparse_hessian(cubed)(x).toarray(), H, rtol=1e-12, atol=1e-12)
    assert np.allclose(tape.value_and_grad(cubed)(x)[1], J.T @ (3.0 * (J @ x) ** 2 * w.ravel()), rtol=1e-12,
                       atol=1e-12)


def test_tensordot_of_records_as_numpy():
    """np.tensordot of two taped arrays over an int, tuples and lists of axes: NumPy's numbers, gradients by central
    differences (scalar records and array records)."""
    rng = np.random.default_rng(5)
    for n, shape in ((24, (2, 3, 4)), (1440, (8, 9, 20))):
        def f(x, shape=shape):
            A = x.reshape(shape)
            B = A.transpose(1, 2, 0)
            return (np.tensordot(A, B, axes=([1, 2], [0, 1])) ** 2).sum() + np.tensordot(A, A, 3) + (
                np.tensordot(B, A, 1) * 0.1).sum() + (np.tensordot(A, A[0], axes=((1, 2), (0, 1))) ** 3).sum()
        x, d, h = rng.normal(size=n), rng.normal(size=n), 1e-6
        value, grad = tape.value_and_grad(f)(x)
        assert np.isclose(value, f(x), rtol=1e-14, atol=0)  # (scalar records add products in their own order)
        assert np.isclose(grad @ d, (f(x + h * d) - f(x - h * d)) / (2 * h), rtol=1e-7)


@pytest.mark.parametrize("name", ["tile", "tile of a column", "broadcast_to", "broadcast_to a middle axis", "repeat",
                                  "repeat of a middle axis", "repeat flat"])
@pytest.mark.parametrize("jitted", [False, True])
def test_repeats_of_an_array_record_are_one_add_no_places(name, jitted):
    """tile, broadcast_to and repeat of an array record are one add record (a view of it plus a constant -0.0 of
    the repeats' shape, NumPy's broadcasting), no gather: no plan holds places (a gather's are one per output), and
    the constant is smaller than the output."""
    _, taped = ops(name, 1200, jitted)
    t = tape.Tape()
    y = taped(t.array(np.ones(1200)))
    names = {code: name for name, code in ARRAY_OPCODE.items()}
    assert [names[p.code] for p in t._plans] == ["input", "constant", "add"]
    assert all(p.places.size == 0 for p in t._plans)
    zeros = t._aval[t._plans[1].offset:][:t._plans[1].size]
    assert zeros.size < y.size and np.all(zeros == 0.0) and np.all(np.signbit(zeros))


BAD = """
    def f(u, n, k):
        A = u.reshape(30, 40)
        if n == 0:
            return np.broadcast_to(A, (k, 40)).sum()
        if n == 1:
            return np.broadcast_to(A[0], (30, k)).sum()
        if n == 2:
            return np.tile(A, (k, 2)).sum()
        if n == 3:
            return np.repeat(A, k, axis=1).sum()
        if n == 4:
            return np.repeat(A, 2, axis=k).sum()
        if n == 5:
            return np.tensordot(A, A, axes=(1, k)).sum()
        if n == 6:
            return np.tensordot(A, A[:k], axes=((0,), (0,))).sum()
        return np.tensordot(A, np.ones((k, 3)), 1).sum()
"""


def test_bad_arguments_raise_numpy_s_exceptions():
    """Shapes that do not broadcast, negative repeats, an axis out of bounds, contracted axes of two lengths: NumPy's
    ValueError or AxisError from both recorders."""
    lines = raised(BAD, ((0, 31), (1, 41), (2, -1), (3, -2), (4, 2), (4, -3), (5, 2), (6, 3), (7, 41)))
    assert lines[-1] == "None done"  # (tape.jit's array records raised each: never fell back to scalar records)
    names = ["ValueError"] * 4 + ["AxisError"] * 3 + ["ValueError"] * 2
    assert lines[:-1] == [name for name in names for _ in "pj"]


def test_tape_jit_refuses_tensordot_axes_given_as_lists():
    """tape.jit's tensordot takes its axes as an int or tuples (the result's axes depend on their count, which Numba's
    type of a list may not hold): a list is a JitError naming tensordot, never a wrong count."""
    _, jn = namespace("def f(x):\n    A = x.reshape(40, 50)\n    return np.tensordot(A, A, axes=([1], [1])).sum()\n",
                      arrays=True)
    with pytest.raises(tape.JitError, match="tensordot"):
        tape.value_and_grad(jn["f"])(np.ones(2000))
