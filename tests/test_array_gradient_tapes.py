"""Derivatives of array programs as array programs (issue 25): grad_function, vjp_function and jvp_function of
array records emit array records (kernels/array_kinds.py's ``adjoint`` and ``tangent`` rows), so the gradient of
an array program replays at NumPy speed, is O(array ops) records, and is differentiated again.

References: gradients and Hessians derived by hand (written without looking at the op table), central
differences of the numeric gradient, and the numeric sweeps of the same Function.
"""

import io

import numpy as np
import pytest
from sameness import same_bits

import tape

RNG = np.random.default_rng(2025)
N = 1200  # from 1,024 elements an array is an array record


def _central(g, x, v, step=1e-6):
    return (g(x + step * v) - g(x - step * v)) / (2 * step)


# each: a program of an array of N numbers (array records only), a point; every kind of array op and view
PROGRAMS = {
    "elementwise and broadcast": lambda x: np.sum(np.sin(x) * x ** 2 + np.exp(-x * x) / (1.0 + x * x)),
    "a scalar on either side": lambda x: np.sum((2.5 * x - x[3]) * (x[7] / (x + 3.0))),
    "reductions over axes": lambda x: np.sum(np.tanh(x.reshape(30, 40).sum(axis=0)) ** 2)
    + np.sum(x.reshape(30, 40).sum(axis=1, keepdims=True) * x.reshape(30, 40)),
    "logsumexp and max": lambda x: tape.logsumexp(x.reshape(40, 30), axis=1).sum() + np.max(x.reshape(40, 30), 0).sum(),
    "views: slices, transposes, steps": lambda x: np.sum(x[1:] * x[:-1]) + np.sum(x.reshape(40, 30).T[::2] ** 3)
    + np.sum(x[::-1][:600] * x[600:]),
    "gather (fancy index)": lambda x: np.sum(np.cos(x[np.arange(N) % 7 * 100]) * x[::-1]),
    "join": lambda x: np.sum(np.concatenate([x[1:], x[:1] * 2.0]) * np.sin(x)),
    "matmul, batched and 1-d": lambda x: np.sum(np.tanh(x.reshape(40, 30) @ x[:30 * 20].reshape(30, 20)))
    + x[:30] @ x.reshape(40, 30)[3] + np.sum(x.reshape(4, 10, 30) @ x[:30]),
    "where and comparisons": lambda x: np.sum(tape.where(x > 0.2, np.sqrt(np.abs(x)) * x, -x * x)),
    "cumsum": lambda x: np.sum(np.cumsum(x.reshape(30, 40), axis=1) ** 2) * 1e-3,
    "sort": lambda x: np.sum(np.sort(x.reshape(30, 40), axis=1) ** 2 * np.arange(40.0)) + np.sum(np.sort(x) * x),
    "elements read as scalars": lambda x: x[5] * np.sum(x * x) + tape.sin(x[9]) * x[1100],
    "small arrays into big ones": lambda x: np.sum(x * np.concatenate([x[:600] * 0.5, np.ones(600)]))
    + np.sum(np.stack([x[:3] * x[4], x[5:8]])) ** 2,
    "maximum, pow, arctan2, hypot": lambda x: np.sum(np.maximum(x, 0.1 * x) ** 2.0 + np.arctan2(x, 1.5 + x * x)
                                                     + np.hypot(x, x[::-1])),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_grad_function_of_array_records(name):
    f = PROGRAMS[name]
    x0 = RNG.normal(size=N)
    F = tape.trace(f, x0)
    assert F.stats()["by_op"].get("array input", 0) == 1, "the program must be array records"
    G = F.grad_function()
    assert len(G) < 12 * len(F) + 50, "a gradient tape of array records has about as many records as F"
    for x in (x0, RNG.normal(size=N)):  # replayed at a new point: records, not constants
        np.testing.assert_allclose(G(x), F.gradient(x), rtol=1e-12, atol=1e-12)
        v = RNG.normal(size=N)
        hv = G.jvp(x, v)  # the Hessian of f by the gradient tape's own tangent sweep
        np.testing.assert_allclose(hv, F.hvp(x, v), rtol=1e-9, atol=1e-9)
        if name != "sort":  # a sort's gradient jumps where two elements swap: differences across it mean nothing
            np.testing.assert_allclose(hv, _central(F.gradient, x, v), rtol=1e-5, atol=1e-5)
        w = RNG.normal(size=N)
        np.testing.assert_allclose(F.vjp_function()((x, 1.7)), 1.7 * F.gradient(x), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(F.jvp_function()((x, w)), F.gradient(x) @ w, rtol=1e-10, atol=1e-10)


def test_vector_outputs_vjp_and_jvp_functions():
    """f: R^N -> R^(40 x 30); the vjp and jvp Functions against the Jacobian by hand."""
    A = RNG.normal(size=(30, 30))

    def f(x):
        return np.tanh(x.reshape(40, 30) @ A) * x.reshape(40, 30)

    x = RNG.normal(size=N)
    F = tape.trace(f, x)
    X, Z = x.reshape(40, 30), np.tanh(x.reshape(40, 30) @ A)
    W = RNG.normal(size=(40, 30))
    # w . f = Σ W * tanh(X A) * X: d/dX = W * tanh + ((W * X) * (1 - tanh²)) Aᵀ
    expected = W * Z + ((W * X) * (1 - Z * Z)) @ A.T
    np.testing.assert_allclose(np.reshape(F.vjp_function()((x, W)), (40, 30)), expected, rtol=1e-12, atol=1e-12)
    V = RNG.normal(size=(40, 30))
    jv = (1 - Z * Z) * (V @ A) * X + Z * V
    np.testing.assert_allclose(np.reshape(F.jvp_function()((x, V.reshape(-1))), (40, 30)), jv, rtol=1e-12,
                               atol=1e-12)


def test_third_derivatives_of_an_mlp_layer():
    """f(W) = Σ tanh(X W): d³f/dW_aj dW_bj dW_cj = Σ_i X_ia X_ib X_ic tanh\'\'\'(z_ij), 0 across columns;
    tanh\'\'\' = -2 (1 - t²)(1 - 3 t²). X W has 1,200 elements (array records). Taken two ways: the Jacobian of
    a nested grad of grad, one direction e_c at a time (JAX's jacfwd(jacrev(grad)) column by column), and
    the Jacobian of the gradient tape's own jvp_function."""
    X = RNG.normal(size=(400, 4)) * 0.5
    W = RNG.normal(size=(4, 3))
    f = lambda w: np.sum(np.tanh(X @ w))  # noqa: E731
    t = np.tanh(X @ W)
    d3 = np.zeros((4, 3, 4, 3, 4, 3))
    for j in range(3):
        d3[:, j, :, j, :, j] = np.einsum("ia,ib,ic,i->abc", X, X, X, -2 * (1 - t[:, j] ** 2) * (1 - 3 * t[:, j] ** 2))
    for c in range(12):
        e = np.eye(12)[c].reshape(4, 3)
        got = tape.jacobian(tape.grad(lambda w, e=e: np.sum(tape.grad(f)(w) * e)))(W)
        np.testing.assert_allclose(np.reshape(got, (4, 3, 4, 3)), d3.reshape(4, 3, 4, 3, 12)[..., c], rtol=1e-10,
                                   atol=1e-10)
    H = tape.trace(f, W).grad_function().jvp_function()
    v = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(np.reshape(H.jacobian((W, v))[0], (4, 3, 4, 3)),  # d(H v)/dW, H v = J(grad) v
                               np.einsum("ajbkcl,cl->ajbk", d3, v), rtol=1e-10, atol=1e-10)


def test_rosenbrock_gradient_tape_is_o_of_ops():
    """A gradient tape of a 10^6-element Rosenbrock has O(array ops) records, and gives the gradient."""
    n = 10 ** 6
    x = RNG.uniform(-1, 1, n)

    def f(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    F = tape.trace(f, x)
    G = F.grad_function()
    assert len(G) < 60, len(G)
    a, b = x[:-1], x[1:]
    expected = np.zeros(n)
    expected[:-1] += -400.0 * a * (b - a * a) - 2.0 * (1.0 - a)
    expected[1:] += 200.0 * (b - a * a)
    np.testing.assert_allclose(G(x), expected, rtol=1e-10, atol=1e-8)


def test_nested_transforms_stay_array_records():
    """tape.grad of tape.grad on a 10^5 array: the inner derivative is array records, not one per element."""
    x = RNG.normal(size=10 ** 5)
    v = RNG.normal(size=10 ** 5)
    f = lambda z: np.sum(np.sin(z) * z) + np.sum(z) ** 2  # noqa: E731
    G = tape.trace(lambda z: (tape.grad(f)(z) * v).sum(), x)
    assert len(G) < 200, len(G)
    np.testing.assert_allclose(G.gradient(x), (2 * np.cos(x) - x * np.sin(x)) * v + 2 * v.sum(), rtol=1e-10,
                               atol=1e-8)


def test_edge_values_keep_the_structural_zero_rule():
    """where(x > 0, sqrt(x), 0) at 0 and negatives: the gradient tape gives the numeric sweep's numbers (the
    unchosen side's inf/NaN never reaches), and NaN and inf inputs give NaN where the numeric sweep does."""
    x = np.abs(RNG.normal(size=N))
    x[:6] = [0.0, -0.0, -1.0, np.inf, np.nan, 1e-300]
    F = tape.trace(lambda z: np.sum(tape.where(z > 0.0, np.sqrt(z), 0.0) * z), np.ones(N))
    G = F.grad_function()
    np.testing.assert_array_equal(G(x), F.gradient(x))
    assert G(x)[0] == 0.0 and G(x)[2] == 0.0


def test_unsupported_kinds_say_so():
    F = tape.trace(lambda z: np.sum(np.cumprod(z * 1e-3 + 1.0)), RNG.normal(size=N))
    with pytest.raises(NotImplementedError, match="cumprod"):
        F.grad_function()


def test_saved_and_loaded(tmp_path):
    F = tape.trace(PROGRAMS["matmul, batched and 1-d"], RNG.normal(size=N))
    G = F.grad_function()
    G.save(tmp_path / "g.tape")
    x = RNG.normal(size=N)
    np.testing.assert_array_equal(tape.load(tmp_path / "g.tape")(x), G(x))


def _hostile(G, tmp_path, name, change):
    buffer = io.BytesIO()
    G.save(buffer)
    buffer.seek(0)
    with np.load(buffer) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    change(arrays[name])
    np.savez(tmp_path / "bad.npz", **arrays)
    return tmp_path / "bad.npz"


def test_a_scatter_place_outside_its_region_is_refused(tmp_path):
    """A gradient tape's scatter (and the permutes of a sort's) in a file: each place is checked before a
    kernel reads it; a scatter's places index its own region, one per element it reads."""
    F = tape.trace(lambda z: np.sum(z[::3] * z[1::3]) + np.sum(np.sort(z) * z), RNG.normal(size=N))
    G = F.grad_function()
    names = G.stats()["by_op"]
    assert "array scatter" in names and "array unsort_as" in names
    x = RNG.normal(size=N)
    G.save(tmp_path / "g.tape")
    np.testing.assert_array_equal(tape.load(tmp_path / "g.tape")(x), G(x))
    k = next(k for k, p in enumerate(G._plans) if p.name == "scatter")
    at = sum(len(p.places) for p in G._plans[:k])  # the scatter's first place in the file's places
    size = G._plans[k].size
    for bad in (size, 10 ** 9, -1):
        with pytest.raises(tape.TapeFormatError, match="place outside"):
            tape.load(_hostile(G, tmp_path, "plan_places", lambda a, bad=bad: a.__setitem__(at, bad)))
    tape.load(_hostile(G, tmp_path, "plan_places", lambda a: a.__setitem__(at, size - 1)))  # inside: loads


def test_every_differentiable_kind_has_its_rules_as_records():
    """Each array op that sends adjoints has an adjoint and a tangent as records beside its numeric rules, or is
    listed here as refused (a kind that forgets them refuses by name at run time; this says so at once)."""
    from tape.kernels.array_ops import ARRAY_OPCODE, RULE
    from tape.kernels.array_rule import Rule

    refused: set[str] = set()  # rules as records not yet written: they refuse by name
    for name, code in ARRAY_OPCODE.items():
        rule = RULE[code]
        if rule.derivative and rule.reads == "views":
            assert type(rule).sparsity is not Rule.sparsity, name  # the default is "reads nothing": never right
            if name not in refused:
                assert type(rule).adjoint is not Rule.adjoint and type(rule).tangent is not Rule.tangent, name


LINALG = {  # A -> a number, A square (symmetric positive definite where the op needs it)
    "solve": lambda A, b: np.sum(np.linalg.solve(A, b) ** 2),
    "solve_triangular lower": lambda A, b: np.sum(np.sin(tape.linalg.solve_triangular(A, b, lower=True))),
    "solve_triangular upper, transposed": lambda A, b: np.sum(np.sin(tape.linalg.solve_triangular(A, b, trans=1))),
    "inv": lambda A, b: np.sum(np.tanh(np.linalg.inv(A))),
    "slogdet": lambda A, b: np.linalg.slogdet(A)[1] * 2.0 + np.sum(A * A) * 1e-3,
    "cholesky": lambda A, b: np.sum(np.linalg.cholesky(A) ** 3),
    "cho_solve": lambda A, b: np.sum(tape.linalg.cho_solve(tape.linalg.cho_factor(A, lower=True), b) ** 2),
    "det": lambda A, b: np.linalg.det(A / np.trace(A) * A.shape[-1]) + np.sum(A[:, :2] * b) * 1e-3,
    "eigh": lambda A, b: np.sum(np.linalg.eigvalsh(A) ** 3) + np.sum(np.linalg.eigh(A)[1][:, :2] ** 2 * b),
    "qr": lambda A, b: np.sum(np.linalg.qr(A[:, :-1])[0] ** 2 * A[:, 1:]) + np.sum(np.linalg.qr(A)[1] ** 3),
    "svd": lambda A, b: np.sum(np.linalg.svd(A[:-1], compute_uv=False) ** 3)
    + np.sum(np.linalg.svd(A[:, :-1], full_matrices=False)[0] ** 2 * b[:, :1])
    + np.sum(np.linalg.svd(A[:-1], full_matrices=False)[2] ** 2 * b[:, 1]),
    "lu": lambda A, b: np.sum(tape.linalg.lu_solve(tape.linalg.lu_factor(A), b) ** 2)
    + np.sum(np.sin(tape.linalg.lu_factor(A)[0])),
}


@pytest.mark.parametrize("n", [3, 40])  # small matrices are packed into one array record too
@pytest.mark.parametrize("name", sorted(LINALG))
def test_linear_algebra_as_records(name, n):
    """Gradient tapes and nested derivatives through linalg records: the gradient against the numeric sweep, the
    gradient tape's tangent (a Hessian-vector product) against central differences of the gradient."""
    M = RNG.normal(size=(n, n))
    A0, b = M @ M.T + n * np.eye(n), RNG.normal(size=(n, 2))
    f = lambda A: LINALG[name](A, b)  # noqa: E731
    F = tape.trace(f, A0)
    G = F.grad_function()
    for x in (A0, A0 + 0.05 * (M + M.T)):
        np.testing.assert_allclose(G(x), F.gradient(x), rtol=1e-12, atol=1e-12)
        v = RNG.normal(size=(n, n))
        hv = np.reshape(G.jvp(x, v), (n, n))
        np.testing.assert_allclose(hv, _central(F.gradient, x, v, 1e-6), rtol=1e-5, atol=1e-6 * np.abs(hv).max())
        nested = tape.grad(lambda A, v=v: np.sum(tape.grad(f)(A) * v))(x)  # the JAX hvp idiom, as records
        np.testing.assert_allclose(nested, hv, rtol=1e-10, atol=1e-12 * np.abs(hv).max())
        np.testing.assert_allclose(np.reshape(F.vjp_function()((x, 1.5)), (n, n)), 1.5 * F.gradient(x), rtol=1e-12,
                                   atol=1e-12 * np.abs(F.gradient(x)).max())
        assert F.jvp_function()((x, v.reshape(-1))) == pytest.approx(F.jvp(x, v), rel=1e-10, abs=1e-12)


NUMBER_SIDE = {"hypot": np.hypot, "fmin": np.fmin, "fmax": np.fmax, "arctan2": np.arctan2, "maximum": np.maximum,
               "minimum": np.minimum, "logaddexp": np.logaddexp}


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("name", sorted(NUMBER_SIDE))
def test_grad_function_of_a_number_against_an_array(name, side):
    """A number (an element read as a scalar) on either side of a binary array op: the recorded partials' wheres on
    the number's comparisons pick arrays (hypot's and fmin's raised TypeError: float() of a VarArray). Against
    F.gradient bit for bit, NaN for NaN, at random and edge values of the number, ties, inf and nan in the array
    (logaddexp to rounding, 1.2e-12 at worst over 10 seeds: an ulp in 1% of its shares, summed into the number's);
    the Hessian's products against F.hvp, nested grads and jvp_function."""
    op = NUMBER_SIDE[name]

    def f(u):
        y = op(u[0], u[1:]) if side == "left" else op(u[1:], u[0])
        return np.sum(y * np.cos(u[1:]))

    rng = np.random.default_rng(26)
    x = rng.uniform(0.5, 1.5, N)
    F = tape.trace(f, x)
    G = F.grad_function()
    points = [x, rng.uniform(-1.5, 1.5, N)]
    for number in (0.0, -0.0, np.inf, -np.inf, np.nan, x[5], 1e300, 5e-324):
        points.append(np.concatenate([[number], x[1:]]))
    for values in (x[0], np.inf, -np.inf, np.nan, 0.0):  # ties with the number; the array's edges
        points.append(x.copy())
        points[-1][1::5] = values
    with np.errstate(all="ignore"):
        for k, point in enumerate(points):
            got, want = G(point), F.gradient(point)
            if name == "logaddexp":
                np.testing.assert_allclose(got, want, rtol=1e-10, atol=0, err_msg=str(k))
            else:
                assert same_bits(got, want), (k, np.flatnonzero(~np.isclose(got, want, equal_nan=True))[:5])
    v = rng.normal(size=N)
    hv = F.hvp(x, v)
    np.testing.assert_allclose(G.jvp(x, v), hv, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(tape.jvp(tape.grad(f), (x,), (v,))[1], hv, rtol=1e-9, atol=1e-9)  # (nested, afresh)
    np.testing.assert_allclose(F.jvp_function()((x, v)), F.jvp(x, v), rtol=1e-12, atol=1e-12)
