"""Issue 29's unclear errors: NumPy scalars as numbers, empty arrays, a Var's 0-d array methods,
tape.jit's refusals, pytree messages and argument checks, tape.where of plain arrays."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import tape

NUMPY_SCALARS = [np.True_, np.False_, np.int64(3), np.int8(-2), np.float32(2.5), np.float64(0.75), np.uint16(4)]
BINARY = {"mul": lambda a, b: a * b, "add": lambda a, b: a + b, "sub": lambda a, b: a - b,
          "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "max": np.maximum, "arctan2": np.arctan2,
          "hypot": np.hypot}


def _central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("c", NUMPY_SCALARS, ids=lambda c: f"{type(c).__name__}({c})")
@pytest.mark.parametrize("name", sorted(BINARY))
def test_numpy_scalars_are_numbers_in_both_orders(name, c):
    op = BINARY[name]
    x0, X0 = 1.5, np.array([0.5, 1.25, 2.0])
    with np.errstate(all="ignore"):
        for value, in_numbers in ((x0, np.float64(x0)), (X0, X0)):  # float64, as tape computes
            for order in (lambda v: op(v, c), lambda v: op(c, v)):
                t = tape.Tape()
                v = t.var(value) if np.ndim(value) == 0 else t.array(value)
                out = order(v)
                expected = order(in_numbers)
                np.testing.assert_allclose(out.value, expected, rtol=1e-15, equal_nan=True)
                if np.ndim(value) == 0 and np.isfinite(expected):
                    slope = _central(lambda s, order=order: float(order(np.float64(s))), x0)
                    assert t.gradient(out, v) == pytest.approx(slope, rel=1e-6, abs=1e-8)


def test_numpy_bool_does_not_recurse():
    """The RecursionError of Var * np.True_, in a subprocess (a deep recursion could crash it)."""
    code = ("import numpy as np, tape\nt = tape.Tape(); x = t.var(2.0)\n"
            "assert (x * np.True_).value == 2.0 and (np.True_ * x).value == 2.0\n"
            "assert (x + np.False_).value == 2.0 and (np.False_ - x).value == -2.0\nprint('ok')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


@pytest.mark.parametrize("c", NUMPY_SCALARS, ids=lambda c: f"{type(c).__name__}({c})")
def test_numpy_scalars_in_functions_comparisons_and_where(c):
    t = tape.Tape()
    x, X = t.var(1.5), t.array(np.array([0.5, 1.5, 2.5]))
    assert tape.maximum(x, c).value == max(1.5, float(c)) and tape.minimum(c, x).value == min(1.5, float(c))
    assert bool(x > c) == (1.5 > c) and bool(c < x) == (c < 1.5)
    np.testing.assert_array_equal(tape.where(X > c, X, c).value, np.where(X.value > c, X.value, c))
    assert tape.where(x > 1.0, c, x).value == float(c)
    assert tape.exp(c) == pytest.approx(np.exp(float(c)))
    F = tape.trace(lambda v: v * c + c ** 2, 1.0)
    assert F.gradient(1.0) == pytest.approx(float(c))


# -- empty arrays: NumPy's result, NumPy's warning or NumPy's error, never a ZeroDivisionError ---------

EMPTY_CASES = {
    "sum": lambda A: A.sum(), "sum0": lambda A: A.sum(axis=0), "sum1": lambda A: A.sum(axis=1),
    "sum_keepdims": lambda A: A.sum(axis=1, keepdims=True), "prod": lambda A: A.prod(),
    "prod0": lambda A: A.prod(axis=0), "mean": lambda A: A.mean(), "mean0": lambda A: A.mean(axis=0),
    "mean1": lambda A: np.mean(A, axis=-1), "mean_keepdims": lambda A: A.mean(axis=0, keepdims=True),
    "var": lambda A: A.var(), "var0": lambda A: A.var(axis=0), "std": lambda A: A.std(),
    "std1": lambda A: np.std(A, axis=1), "max": lambda A: A.max(), "max1": lambda A: A.max(axis=-1),
    "min0": lambda A: np.min(A, axis=0), "matmul": lambda A: A @ np.ones((A.shape[-1], 2)),
    "rmatmul": lambda A: np.ones((2, A.shape[-2])) @ A, "matvec": lambda A: A @ np.ones(A.shape[-1]),
    "gram": lambda A: A @ A.T, "gram_t": lambda A: A.T @ A, "dot": lambda A: np.dot(A, np.ones((A.shape[1], 3))),
    "einsum_all": lambda A: np.einsum("ij->", A), "einsum_rows": lambda A: np.einsum("ij,ij->i", A, A),
    "einsum_outer": lambda A: np.einsum("ij,kj->ik", A, A), "cumsum": lambda A: np.cumsum(A, axis=-1),
    "sort": lambda A: np.sort(A, axis=0), "norm": lambda A: np.linalg.norm(A), "trace": lambda A: np.trace(A),
    "concatenate": lambda A: np.concatenate([A, A]).sum(axis=0), "pad": lambda A: np.pad(A, 1),
    "tile": lambda A: np.tile(A, 2), "roll": lambda A: np.roll(A, 1),
    "where": lambda A: np.where(A > 0, A, 1.0), "logsumexp": lambda A: (
        np.logaddexp.reduce(A, axis=-1) if isinstance(A, np.ndarray) else tape.logsumexp(A, axis=-1)),
}


def _outcome(f, A):
    """(value, error, warning messages) of f(A)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out, error = f(A), None
        except Exception as exc:  # noqa: BLE001  # compared with NumPy's
            out, error = None, exc
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    return getattr(out, "value", out), error, messages


@pytest.mark.parametrize("n", [3, 400], ids=["small", "large"])
@pytest.mark.parametrize("shape", [(0, 1), (1, 0), (0, 0)], ids=str)
@pytest.mark.parametrize("name", sorted(EMPTY_CASES))
def test_empty_arrays_give_numpys_result(name, shape, n):
    shape = tuple(n if s else 0 for s in shape)
    values = np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)
    expected, numpy_error, numpy_warnings = _outcome(EMPTY_CASES[name], values)
    got, error, messages = _outcome(EMPTY_CASES[name], tape.Tape().array(values))
    if numpy_error is not None:
        assert type(error) is type(numpy_error), (error, numpy_error)
        return
    assert error is None, error
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_array_equal(got, expected)
    assert messages == numpy_warnings[:1]  # NumPy's first warning says why ("Mean of empty slice")


@pytest.mark.parametrize("n", [3, 400], ids=["small", "large"])
def test_the_issues_empty_programs(n):
    values = np.linspace(1.0, 2.0, 3 * n).reshape(n, 3)
    X = tape.Tape().array(values)
    for method in ("mean", "std"):
        with pytest.warns(RuntimeWarning):
            assert np.isnan(getattr(X[:0], method)().value)
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        assert np.isnan(X[:0].var(axis=0).value).all() and X[:0].var(axis=0).shape == (3,)
    M = np.ones((3, 2))
    assert (X[:0] @ M).shape == (0, 2) and (M.T @ X[:0].T).shape == (2, 0)
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        X[:0].max()

    def f(A):  # empty pieces on the way do not change a gradient
        return (A * A).sum() + (A[:0] @ M).sum() + A[:0].mean(axis=1).sum() + A[:0].sum(axis=0).sum()

    F = tape.trace(f, values)
    assert F(values) == pytest.approx(f(values))
    np.testing.assert_allclose(F.gradient(values), 2 * values, rtol=1e-14)
    # a variance over fewer elements than ddof: as NumPy (inf or NaN), never a negative variance
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        got = tape.Tape().array(values[:2]).var(axis=0, ddof=3).value
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(got, values[:2].var(axis=0, ddof=3))


# -- a Var is NumPy's 0-d result: it answers a 0-d array's methods ---------------------------------

ZERO_D = {
    "reshape(-1)": lambda v: v.reshape(-1), "reshape(1, 1)": lambda v: v.reshape(1, 1),
    "reshape(())": lambda v: v.reshape(()), "[None]": lambda v: v[None], "[None, None]": lambda v: v[None, None],
    "[()]": lambda v: v[()], "[...]": lambda v: v[...], "ravel": lambda v: v.ravel(),
    "flatten": lambda v: v.flatten(), "squeeze": lambda v: v.squeeze(), "T": lambda v: v.T,
    "transpose": lambda v: v.transpose(), "copy": lambda v: v.copy(), "astype(float)": lambda v: v.astype(float),
    "sum": lambda v: v.sum(), "mean": lambda v: v.mean(), "max": lambda v: v.max(), "min": lambda v: v.min(),
    "prod": lambda v: v.prod(), "var": lambda v: v.var(), "std": lambda v: v.std(),
    "np.reshape": lambda v: np.reshape(v, (1,)), "np.ravel": lambda v: np.ravel(v),
    "np.expand_dims": lambda v: np.expand_dims(v, 0), "np.broadcast_to": lambda v: np.broadcast_to(v, (2, 3)),
    "np.repeat": lambda v: np.repeat(v, 3), "np.tile": lambda v: np.tile(v, (2, 2)),
    "np.squeeze": lambda v: np.squeeze(v), "np.sum": lambda v: np.sum(v),
}


@pytest.mark.parametrize("name", sorted(ZERO_D))
def test_a_var_answers_the_methods_of_a_0d_array(name):
    f = ZERO_D[name]
    x0 = 1.75
    expected = np.asarray(f(np.array(x0)))
    t = tape.Tape()
    x = t.var(x0)
    got = f(x)
    assert type(got) is (tape.Var if expected.ndim == 0 else tape.VarArray)
    assert got.shape == expected.shape and got.ndim == expected.ndim and got.size == expected.size
    np.testing.assert_array_equal(got.value, expected)
    # derivatives through it: d/dx of sum(f(x) * x), against central differences
    F = tape.trace(lambda v: (f(v) * v).sum(), x0)
    slope = _central(lambda s: float((f(np.array(s)) * s).sum()), x0)
    assert F.gradient(x0) == pytest.approx(slope, rel=1e-7)


def test_the_issues_0d_programs():
    a0 = np.array([0.5, -1.0, 2.0])
    for form in (a0, np.linspace(0.5, 2.0, 400)):
        X = tape.Tape().array(form)
        np.testing.assert_array_equal(X.sum().reshape(-1).value, form.sum().reshape(-1))
        np.testing.assert_allclose(np.einsum("i,i->", X, X)[None].value, np.einsum("i,i->", form, form)[None],
                                   rtol=1e-14)
    F = tape.trace(lambda a: (np.einsum("i,i->", a, a)[None] * a).sum() + a.sum().reshape(-1)[0] ** 2, a0)
    h = 1e-6
    numeric = [(F(a0 + h * e) - F(a0 - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(F.gradient(a0), numeric, rtol=1e-7)


def test_a_var_refuses_what_a_0d_array_refuses():
    t = tape.Tape()
    x = t.var(2.0)
    assert x.item() == 2.0 and x.tolist() == 2.0 and type(x.tolist()) is float
    assert (x.shape, x.ndim, x.size) == ((), 0, 1)
    with pytest.raises(IndexError, match="0-dimensional"):
        x[0]
    with pytest.raises(TypeError, match="not iterable"):
        list(x)
    with pytest.raises(TypeError, match=r"astype\(<class 'int'>\) would lose its derivative"):
        x.astype(int)
    with pytest.raises(np.exceptions.AxisError, match="squeeze"):
        x.squeeze(0)
    with pytest.raises(ValueError, match="axes don't match"):
        x.transpose(1, 0)
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        assert np.isnan(x.var(ddof=1).value)


# -- tape.jit: mixed tuples, data and returns Numba cannot take, recursion in an unregistered module --


@tape.jit
def _mixed(xs):
    return (xs[0] * 2.0, 3.0, xs[1])


def _mixed_py(xs):
    return (xs[0] * 2.0, 3.0, xs[1])


def test_jit_returns_a_tuple_of_vars_and_numbers():
    F, G = tape.trace(_mixed, [1.5, -2.0]), tape.trace(_mixed_py, [1.5, -2.0])
    for x in ([1.5, -2.0], [0.25, 4.0]):
        np.testing.assert_array_equal(F(x), [2 * x[0], 3.0, x[1]])
        np.testing.assert_array_equal(F.jacobian(x), G.jacobian(x))
    t = tape.Tape()
    out = _mixed(t.vars([1.0, 2.0]))
    assert type(out[0]) is tape.Var and out[1] == 3.0 and type(out[1]) is float and out[2].value == 2.0


@tape.jit
def _scaled(xs, scale):
    return xs[0] * 2.0


def test_jit_names_data_numba_cannot_take():
    with pytest.raises(tape.JitError, match=r"argument 'scale' of _scaled .*is a dict.*data must be NumPy "
                                            r"arrays, numbers or tuples"):
        tape.grad(_scaled)([1.0, 2.0], {"a": 1.0})
    assert tape.grad(_scaled)([1.0, 2.0], 4.0) == [2.0, 0.0]


@tape.jit
def _returns_dict(xs):
    y = xs[0] * 2.0
    return {"y": y}  # the line named


@tape.jit
def _returns_none(xs):
    y = xs[0] * 2.0  # noqa: F841
    return None  # the line named


@pytest.mark.parametrize(("f", "kind"), [(_returns_dict, "DictType"), (_returns_none, "none")])
def test_jit_names_the_line_of_a_return_it_refuses(f, kind):
    import inspect
    lines, first = inspect.getsourcelines(f.py_func)
    line = first + next(k for k, text in enumerate(lines) if text.strip().startswith("return"))
    with pytest.raises(tape.JitError, match=rf"f returns {kind}.*at {__file__}:{line} \(its return\)"):
        tape.grad(f)([1.0])


def test_recursive_jit_in_a_module_not_in_sys_modules(tmp_path):
    """Numba named the recursive call by inspect.getmodule (none: "<dynamic>") and the function by
    f.__module__: an unresolved symbol killed the call. In a subprocess: it aborted in Numba."""
    (tmp_path / "recursive_power.py").write_text(
        "import tape\n\n@tape.jit\ndef power(xs, n):\n    if n == 0:\n        return xs[0] * 0.0 + 1.0\n"
        "    return xs[0] * power(xs, n - 1)\n")
    path = str(tmp_path / "recursive_power.py")
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('not_registered', {path!r})\n"
            "m = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\n"
            "assert 'not_registered' not in sys.modules\nimport tape\n"
            "print(tape.value_and_grad(m.power)([1.5], 3))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    value, grad = eval(run.stdout.strip())  # noqa: S307  # our own subprocess's print
    assert value == pytest.approx(1.5 ** 3) and grad == pytest.approx([3 * 1.5 ** 2])


# -- pytree messages name the first place that differs; argnums, block and step are checked ---------


@pytest.mark.parametrize(("bad", "message"), [
    ({"w": 1.0, "b": 1.0}, r"at x\['w'\] the x0 traced had an array of shape \(3,\), got a number"),
    ({"w": np.ones(3), "b": np.ones(2)}, r"at x\['b'\] the x0 traced had a number, got an array of shape \(2,\)"),
    ({"w": np.ones(4), "b": 1.0}, r"at x\['w'\] the x0 traced had an array of shape \(3,\), got an array of shape "
                                  r"\(4,\)"),
    ({"w": np.ones(3)}, r"at x the x0 traced had a dict with keys 'b', 'w', got a dict with keys 'w' \(missing 'b'\)"),
    ({"w": [1.0, 2.0, 3.0], "b": 1.0}, r"at x\['w'\] the x0 traced had an array of shape \(3,\), got a list of 3"),
    ({"w": np.ones(3), "b": 1.0, "c": 2.0}, r"at x the x0 traced .* \(not in x0: 'c'\)"),
])
def test_a_structure_message_names_the_first_place_that_differs(bad, message):
    F = tape.trace(lambda p: (p["w"] * 2.0).sum() + p["b"], {"w": np.ones(3), "b": 1.0})
    with pytest.raises(ValueError, match="inputs must have the structure of the x0 traced: " + message):
        F(bad)


@pytest.mark.parametrize(("tangent", "message"), [
    ((1.0, (np.ones(2),)), r"at x\[1\]\[0\] the x0 traced had a number, got an array of shape \(2,\)"),
    ((1.0, 2.0), r"at x\[1\] the x0 traced had a tuple of 1 element, got a number"),
    ((1.0, (2.0, 3.0)), r"at x\[1\] the x0 traced had a tuple of 1 element, got a tuple of 2 elements"),
    ([[1.0], {"a": 1.0}], r"at x\[0\] the x0 traced had a number, got a list of 1 element"),
])
def test_a_tangent_message_names_the_first_place_that_differs(tangent, message):
    G = tape.trace(lambda x: x[0] * x[1][0], (1.0, (2.0,)))
    with pytest.raises(ValueError, match=message):
        G.jvp((1.0, (2.0,)), tangent)
    assert G.jvp((1.0, (2.0,)), (1.0, (0.0,))) == 2.0


@pytest.mark.parametrize("argnums", [0.5, "0", None, (0, 1.0), (True,)])
def test_argnums_of_the_wrong_kind_is_a_clear_type_error(argnums):
    for transform in (tape.grad, tape.value_and_grad):
        with pytest.raises(TypeError, match=r"argnums must be an int or a tuple of ints .*got " + repr(
                argnums).replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            transform(lambda a, b: a * b, argnums=argnums)(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints"):
        tape.jacobian(lambda a, b: a * b, argnums=argnums)(1.0, 2.0)


@pytest.mark.parametrize(("block", "error"), [(2.5, TypeError), (True, TypeError), ("2", TypeError),
                                              (0, ValueError), (-1, ValueError)])
def test_jacobian_block_must_be_a_positive_int(block, error):
    F = tape.trace(lambda x: x * 2.0, np.ones(3))
    for call in (lambda: F.jacobian(np.ones(3), block=block), lambda: F.sparse_jacobian(np.ones(3), block=block)):
        with pytest.raises(error, match=f"block must be a positive int, got {block!r}"):
            call()
    np.testing.assert_array_equal(F.jacobian(np.ones(3), block=np.int64(2)), 2.0 * np.eye(3))


@pytest.mark.parametrize(("step", "error"), [(0, ValueError), (0.0, ValueError), (-1e-3, ValueError),
                                             (float("nan"), ValueError), (float("inf"), ValueError),
                                             ("1e-6", TypeError), (None, None)])
def test_gradcheck_step_must_be_positive_and_finite(step, error):
    if error is None:
        assert tape.gradcheck(lambda x: x * x, 1.0, step=step) < 1e-8
        return
    with pytest.raises(error, match=f"gradcheck: step must be a positive finite number, got {step!r}"):
        tape.gradcheck(lambda x: x * x, 1.0, step=step)


# -- tape.where of plain arrays: NumPy's np.where, nothing recorded --------------------------------


@pytest.mark.parametrize(("a", "b"), [(np.arange(3.0), -np.arange(3.0)), (1.0, -np.arange(3.0)), (1, 2),
                                      (np.arange(3), 0.5), (np.True_, np.float32(2.5))])
def test_where_of_plain_numbers_is_numpys(a, b):
    mask = np.array([True, False, True])
    got, expected = tape.where(mask, a, b), np.where(mask, a, b)
    assert type(got) is np.ndarray and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(TypeError, match="branches must be .* got str and ndarray"):
        tape.where(mask, "a", np.ones(3))


def test_a_refused_jit_call_keeps_no_tape_alive():
    """Numba keeps a TypingError it raised; its traceback once held the frame with the call's tape."""
    import gc

    def tapes():
        gc.collect()
        return sum(type(o) is tape.Tape for o in gc.get_objects())

    before = tapes()
    for _ in range(3):
        with pytest.raises(tape.JitError):
            tape.grad(_scaled)([1.0, 2.0], {"a": 1.0})
        with pytest.raises(tape.JitError):
            tape.grad(_returns_none)([1.0])
    assert tapes() == before
