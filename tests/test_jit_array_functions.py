"""cumsum, cumprod, sort and np.linalg (solve, inv, det, slogdet, cholesky) inside tape.jit, one array record each
(tape/compiled/array_overloads.py's ``along``, tape/compiled/array_linalg.py), and np.einsum (array_einsum.py): on
inputs below array records' SMALL (packed into one array record) against the Python recorder, closed forms computed by
NumPy and central differences, second order too; NumPy's errors for bad input; Var arrays (list inputs) refused by
name. Transposes of any axes, swapaxes, moveaxis and reshapes NumPy copies (tape/compiled/array_views.py): NumPy's
views and errors. Array records of 1,024 elements and more: tests/jit_array_programs.py's "scans", "linalg", "heads",
"axes" and "einsum" (tapes bit for bit, JAX float64)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tape

rng = np.random.default_rng(20261206)
X = rng.normal(size=12)
W = rng.normal(size=12)
C = rng.normal(size=(3, 3))


def square(x):
    return x[:9].reshape(3, 3) + 4.0 * np.eye(3)


def _inverse(x):
    return np.linalg.inv(square(x))


def _sorted_slope(x):
    g = np.zeros(12)
    g[np.argsort(x, kind="stable")[:4]] = W[:4]
    return g


def _padded(g):
    return np.concatenate([g.ravel(), np.zeros(12 - g.size)])


CASES = {  # name: (f, its gradient in closed form, by NumPy)
    "cumsum": (lambda x: (np.cumsum(x) * W).sum(), lambda x: np.cumsum(W[::-1])[::-1]),
    "cumprod": (lambda x: (np.cumprod(x.reshape(3, 4), axis=1) * W.reshape(3, 4)).sum(),
                lambda x: np.array([sum(W.reshape(3, 4)[r, k] * np.prod(x.reshape(3, 4)[r, :k + 1]) / x.reshape(3, 4)[
                    r, j] for k in range(j, 4)) for r in range(3) for j in range(4)])),
    "sort": (lambda x: (np.sort(x)[:4] * W[:4]).sum(), _sorted_slope),
    "det": (lambda x: np.linalg.det(square(x)), lambda x: _padded(np.linalg.det(square(x)) * _inverse(x).T)),
    "slogdet": (lambda x: np.linalg.slogdet(square(x))[1] * 2.0, lambda x: _padded(2.0 * _inverse(x).T)),
    "inv": (lambda x: (np.linalg.inv(square(x)) * C).sum(), lambda x: _padded(-_inverse(x).T @ C @ _inverse(x).T)),
    "solve": (lambda x: np.linalg.solve(square(x), x[9:]).sum(),
              lambda x: _padded(-np.outer(_inverse(x).T @ np.ones(3), _inverse(x) @ x[9:])) + np.concatenate(
                  [np.zeros(9), _inverse(x).T @ np.ones(3)])),
    "cholesky": (lambda x: (np.linalg.cholesky(square(x) @ square(x).T) * C).sum(), None),
    "einsum": (lambda x: (np.einsum("ij,jk->ik", x[:6].reshape(2, 3), x[6:].reshape(3, 2)) * C[:2, :2]).sum(),
               lambda x: np.concatenate([(C[:2, :2] @ x[6:].reshape(3, 2).T).ravel(),
                                         (x[:6].reshape(2, 3).T @ C[:2, :2]).ravel()])),
}


@pytest.mark.parametrize("name", CASES)
def test_gradients_as_python_closed_forms_and_central_differences(name):
    f, closed = CASES[name]
    jf = tape.jit(f, cache=False)
    vp, gp = tape.value_and_grad(f)(X)
    vj, gj = tape.value_and_grad(jf)(X)
    assert jf._arrays is True  # (its Var arrays do not type: packed into one array record)
    assert np.isclose(vj, f(X), rtol=1e-13, atol=0) and np.isclose(vj, vp, rtol=1e-13, atol=0)
    assert np.allclose(gj, gp, rtol=1e-12, atol=1e-13)
    if closed is not None:
        assert np.allclose(gj, closed(X), rtol=1e-11, atol=1e-12)
    h = 1e-6
    for d in np.eye(12)[::2]:
        assert np.isclose((f(X + h * d) - f(X - h * d)) / (2 * h), gj @ d, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["cumprod", "det", "slogdet", "inv", "solve", "cholesky", "einsum"])
def test_hessians_as_python_and_central_differences_of_the_gradient(name):
    f = CASES[name][0]
    hp, hj = tape.hessian(f)(X), tape.hessian(tape.jit(f, cache=False))(X)
    assert np.allclose(hj, hp, rtol=1e-11, atol=1e-12) and np.allclose(hj, hj.T, rtol=1e-11, atol=1e-12)
    grad, h = tape.grad(f), 1e-5
    for k in (0, 4, 10):
        d = np.eye(12)[k]
        assert np.allclose((grad(X + h * d) - grad(X - h * d)) / (2 * h), hj[k], rtol=1e-5, atol=1e-6)


def test_einsum_tape_jit_does_not_run_is_refused_by_name():
    """An operand summed to one number before its pair ('ij,kk->ij': a Var in tape.jit, a 0-d VarArray in the Python
    recorder) and subscripts that do not fit: a JitError naming einsum (the Python recorder: its value; NumPy's
    ValueError); labels of two sizes: NumPy's ValueError in both. A diagonal is a view in both (jit_array_programs'
    einsum case)."""
    x = np.linspace(-1.0, 1.0, 1100)
    summed = lambda x: np.einsum("ij,kk->ij", x[:1024].reshape(32, 32), x[:25].reshape(5, 5)).sum()  # noqa: E731
    assert tape.value_and_grad(summed)(x)[0] == pytest.approx(x[:1024].sum() * x[:25].reshape(5, 5).trace())
    for f in (summed, lambda x: np.einsum("ij,jk->ik", x[:1024].reshape(32, 32)).sum()):
        with pytest.raises(tape.JitError, match="einsum"):
            tape.grad(tape.jit(f, cache=False))(x)
    sizes = lambda x: np.einsum("ij,jk->ik", x[:1024].reshape(32, 32), x[:1000].reshape(20, 50)).sum()  # noqa: E731
    for f in (sizes, tape.jit(sizes, cache=False)):
        with pytest.raises(ValueError, match="sizes"):
            tape.grad(f)(x)


@pytest.mark.filterwarnings("ignore::tape.TracingWarning")  # (the Python recorder's argmax reads values, as argsort)
def test_what_numba_reads_of_arrays_is_a_refusal_by_name():
    """Numba's np.argmax and argmin read ``a.dtype`` of whatever they are given: of an array record or a Var array that
    was an AttributeError out of typing; now a JitError naming them (the Python recorder answers from the values)."""
    x = np.linspace(-2.0, 2.0, 1100)
    for f, name in ((lambda u: u[np.argmax(u)] * 2.0, "argmax"), (lambda u: np.argmin(u[:5]) * u[0], "argmin")):
        assert tape.grad(f)(x)[np.argmax(x) if name == "argmax" else 0] == (2.0 if name == "argmax" else 0.0)
        for given in (x, x.tolist()):
            with pytest.raises(tape.JitError, match=name):
                tape.grad(tape.jit(f, cache=False))(given)


def test_var_arrays_refuse_by_name():
    """A list's Var arrays have no scan, sort or factorization inside tape.jit (an ndarray's are packed: above): a
    JitError naming the function."""
    for f, name in ((lambda x: np.cumsum(x).sum(), "cumsum"), (lambda x: np.sort(x)[0], "sort"),
                    (lambda x: np.linalg.det(x[:9].reshape(3, 3)), "det")):
        with pytest.raises(tape.JitError, match=name):
            tape.grad(tape.jit(f, cache=False))(X.tolist())


BAD = textwrap.dedent('''
    import numpy as np
    import tape
    source = """
    def f(u, n, k):
        A = u[:1024].reshape(32, 32)
        if n == 0:
            return np.linalg.solve(A * 0.0, u[:32]).sum()
        if n == 1:
            return np.linalg.inv(A[:, :k] + 1.0).sum()
        if n == 2:
            return np.linalg.cholesky(A * 0.0 - 1.0).sum()
        if n == 3:
            return np.linalg.solve(A, u[:k]).sum()
        if n == 4:
            return np.linalg.det(A[:k]) * 1.0
        if n == 5:
            return np.linalg.solve(A, u[:1024].reshape(4, 8, 32)).sum()
        if n == 6:
            return np.cumsum(A, axis=k).sum()
        if n == 7:
            return np.sort(A, k).sum()
        if n == 8:
            return np.linalg.inv(u).sum()
        if n == 10:
            return np.linalg.eigh(A[:, :k])[0].sum()
        if n == 11:
            return np.linalg.qr(A[:k])[0].sum()
        if n == 12:
            return np.linalg.svd(A[:k])[1].sum()
        if n == 13:
            return np.linalg.eigh(A, "X")[0].sum()
        if n == 14:
            return np.linalg.eigvalsh(u).sum()
        return np.linalg.det(A * 0.0)
    """
    namespace = {"np": np}
    exec(source, namespace)
    f = namespace["f"]
    jf = tape.jit(f, cache=False)
    u = np.random.default_rng(0).normal(size=1100)
    for n, k in ((0, 0), (1, 31), (2, 0), (3, 31), (4, 31), (5, 0), (6, 2), (7, -3), (8, 0), (10, 31), (11, 5),
                 (12, 5), (13, 0), (14, 0), (9, 0)):
        for g in (f, jf):
            t = tape.Tape()
            x = t.array(u)
            before = len(t)
            try:
                print(type(g(x, n, k)).__name__)
            except (np.linalg.LinAlgError, ValueError, NotImplementedError) as e:
                print(type(e).__name__, len(t) - before if g is jf else "")
    print(jf._arrays, "done")
''')


def test_bad_input_raises_as_python():
    """A singular matrix (solve, inv), one not square, not positive definite (cholesky), of one axis; a solve's b of
    another length; an axis out of bounds; eigh of a matrix not square, or UPLO not 'L' nor 'U'; qr of a wide matrix
    and svd's full U of one not square (NotImplementedError, as the Python recorder's): NumPy's LinAlgError, ValueError
    or AxisError as the Python recorder raises, the tape as it was, never a crash (a subprocess: a crash would take the
    test run with it); the determinant of a singular matrix is 0, no error."""
    run = subprocess.run([sys.executable, "-c", BAD], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1] == "True done" and len(lines) == 31  # (never fell back to scalar records)
    python, jitted = lines[:-1:2], lines[1:-1:2]
    assert python == ["LinAlgError "] * 3 + ["ValueError "] + ["LinAlgError "] + ["ValueError "] + [
        "AxisError "] * 2 + ["LinAlgError "] * 2 + ["NotImplementedError "] * 2 + ["ValueError ", "LinAlgError ",
                                                                                   "Var"]
    assert jitted == [line.replace(" ", " 0") for line in python[:-1]] + ["Var"]


VIEWS = textwrap.dedent('''
    import numpy as np
    import tape
    source = """
    def f(u, n, k):
        Y = u[:2400].reshape(4, 6, 100)
        if n == 0:
            return Y.transpose(0, k, 1).sum()
        if n == 1:
            return Y.transpose((2, 1, k)).sum()
        if n == 2:
            return Y.transpose(1, 0).sum()
        if n == 3:
            return np.swapaxes(Y, 0, k).sum()
        if n == 4:
            return np.moveaxis(Y, k, 0).sum()
        if n == 5:
            return Y.transpose(2, 0, 1).reshape(k, 7).sum()
        if n == 7:
            return Y.sum(axis=(0, k)).sum()
        return np.transpose(Y, (0, 2, k))[:, :, ::2].reshape(4, -1, 2)[1, 3, 1] * 1.0
    """
    namespace = {"np": np}
    exec(source, namespace)
    f = namespace["f"]
    jf = tape.jit(f, cache=False)
    u = np.random.default_rng(0).normal(size=2400)
    for n, k in ((0, 3), (0, -4), (1, 2), (1, 0), (2, 0), (3, 3), (4, -4), (5, 13), (6, 1), (6, 3), (7, -3), (7, 3)):
        for g in (f, jf):
            try:
                print(float(g(tape.Tape().array(u), n, k).value))
            except (IndexError, ValueError) as e:
                print(type(e).__name__)
    print(jf._arrays, "done")
''')


def test_bad_axes_and_shapes_of_views_raise_as_numpy():
    """A transpose's axis out of bounds (the Python recorder read it modulo ndim: a silent wrong view), repeated, or
    too few; swapaxes and moveaxis out of bounds; a copying reshape to another size; a sum's tuple of axes with one
    repeated or out of bounds: NumPy's AxisError or ValueError in
    both recorders, the same values where the axes are good (a subprocess: a crash would take the test run with it)."""
    run = subprocess.run([sys.executable, "-c", VIEWS], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1] == "True done" and len(lines) == 25
    python, jitted = lines[:-1:2], lines[1:-1:2]
    assert python == jitted
    errors = [k for k in range(12) if k not in (3, 8)]
    assert [python[k] for k in errors] == ["AxisError", "AxisError", "ValueError", "ValueError", "AxisError",
                                           "AxisError", "ValueError", "AxisError", "ValueError", "AxisError"]
    Y = np.random.default_rng(0).normal(size=2400).reshape(4, 6, 100)
    assert float(python[3]) == Y.transpose((2, 1, 0)).sum()
    assert float(python[8]) == np.transpose(Y, (0, 2, 1))[:, :, ::2].reshape(4, -1, 2)[1, 3, 1]
