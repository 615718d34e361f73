"""The adversarial pass's findings (issue 13), each as a test; crash reproductions in a subprocess."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tape


def run_isolated(code: str) -> subprocess.CompletedProcess:
    """Run code in a fresh interpreter: a segfault there is a failed test here, not a dead run."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def assert_raises_cleanly(code: str, error: str) -> None:
    result = run_isolated(code)
    assert result.returncode == 1 and f"{error}" in result.stderr.splitlines()[-1], (result.returncode,
                                                                                     result.stderr[-2000:])


# -- C3: nothing a user can assign reaches a kernel unchecked --------------------------------------


def test_c3_a_handle_index_is_read_only():
    assert_raises_cleanly("""
        import tape
        t = tape.Tape()
        h = t.var(1.0)
        h.index = 10**9
        """, "AttributeError")


@pytest.mark.parametrize("index", [10**9, 5, -1])
def test_c3_a_tampered_private_index_is_refused_before_any_kernel(index):
    assert_raises_cleanly(f"""
        import tape
        t = tape.Tape()
        h = t.var(1.0)
        h._index = {index}
        t.backward(h)
        """, "IndexError")


def test_c3_records_pointing_past_themselves_never_reach_a_function_kernel():
    assert_raises_cleanly("""
        import tape
        t = tape.Tape(capacity=64)
        x = t.var(1.0)
        h = t.var(2.0)
        h._index = 40  # inside the arrays' capacity, past the records
        y = x * h
        F = t.function([x], y)
        F.map([[1.0]] * 1000)
        """, "TapeFormatError: record 2 (mul): second input not before its record")


# -- C1: an ArrayCondition is revalidated like every holder of record indices ------------------------


def test_c1_a_condition_of_discarded_records_is_stale():
    assert_raises_cleanly("""
        import numpy as np
        import tape
        t = tape.Tape()
        X = t.array(np.ones(4))
        m = len(t)
        Y = t.array(np.arange(100_000.0))
        C = Y > 0
        t.rewind(m)
        F = t.function(list(X), tape.where(C, X, -X))
        F.map(np.ones((10, 4)))
        """, "StaleHandleError: records this comparison reads were discarded by Tape.rewind(4)")


def test_c1_a_condition_below_the_mark_survives_a_rewind():
    t = tape.Tape()
    X = t.array(np.array([-1.0, 2.0]))
    C = X > 0
    m = len(t)
    t.array(np.ones(3))
    t.rewind(m)
    y = tape.where(C, X, 0.0 * X).sum()
    assert y.value == 2.0 and t.gradient(y, X).tolist() == [0.0, 1.0]


# -- P3: rewinding in a loop runs in constant memory ----------------------------------------------------


def test_p3_rewinds_keep_constant_memory_and_stale_checks_stay_exact():
    t = tape.Tape()
    w = t.var(0.5)
    mark = len(t)
    for _ in range(10_000):
        t.rewind(mark)
        y = w * w
    assert len(t._rewind_marks) == 1 and y.value == 0.25
    old = y
    t.rewind(mark)
    inner = t.var(1.0)
    t.rewind(mark + 1)  # keeps inner, and nothing recorded later
    t.rewind(0)
    for handle in (old, inner, w):
        with pytest.raises(tape.StaleHandleError, match="clear"):
            _ = handle.value
    t2 = tape.Tape()
    a = t2.var(1.0)
    b = t2.var(2.0)
    t2.rewind(2)
    c = t2.var(3.0)
    t2.rewind(3)  # a later, higher mark: a and b survive both; c survives too
    assert (a.value, b.value, c.value) == (1.0, 2.0, 3.0)
    t2.rewind(1)
    assert a.value == 1.0
    for handle in (b, c):
        with pytest.raises(tape.StaleHandleError, match=r"rewind\(1\)"):
            _ = handle.value


# -- W2, W3, W7, W8: one structural-zero rule in every sweep; the conventions hold inside programs ---


def every_first_derivative(f, x):
    """The derivative at x of f(v) by every sweep of its Function, and by the tape."""
    F = tape.trace(lambda v: f(v[0]), [0.7])
    t = tape.Tape()
    v = t.var(x)
    y = f(v)
    return {
        "tape.gradient": t.gradient(y, v),
        "gradient": F.gradient([x])[0],
        "vjp": F.vjp([x], [1.0])[0],
        "jvp": F.jvp([x], [1.0]),
        "jacobian forward": F.jacobian([x], mode="forward")[0],
        "jacobian reverse": F.jacobian([x], mode="reverse")[0],
        "map_value_and_grad": F.map_value_and_grad([[x]])[1][0, 0],
        "map_jvp": F.map_jvp([[x]], [[1.0]])[0],
        "map_vjp": F.map_vjp([[x]], [[1.0]])[0, 0],
    }


@pytest.mark.parametrize("f, x, expected", [
    (lambda v: tape.sqrt(tape.relu(v)), -1.0, 0.0),  # W2: inf partial after a zero partial
    (lambda v: tape.sqrt(v) * 0.0, 0.0, 0.0),
    (lambda v: tape.sqrt(tape.maximum(v, 0.0)) + v, -2.0, 1.0),
    (lambda v: tape.log(tape.relu(v) + 0.0) * 0.0 + 3.0 * v, -1.0, 3.0),
    (lambda v: tape.sqrt(v), 0.0, np.inf),  # an infinite derivative stays infinite
    (lambda v: tape.sqrt(v), -0.0, np.inf),  # W7: -0.0 is 0 for sqrt' and log'
    (lambda v: tape.log(v), -0.0, np.inf),
    (lambda v: tape.sqrt(v) + 1.0, 0.0, np.inf),
])
def test_every_sweep_gives_the_same_derivative(f, x, expected):
    found = every_first_derivative(f, x)
    assert all(value == expected for value in found.values()), found


@pytest.mark.parametrize("f, x, expected", [
    (lambda v: tape.sqrt(v) + 1.0, 0.0, -np.inf),  # W3: the table's sqrt''(0) inside a program
    (lambda v: 2.0 * tape.sqrt(v) - v, 0.0, -np.inf),
    (lambda v: tape.sqrt(v), -0.0, -np.inf),
    (lambda v: tape.log(v) * 1.0, 0.0, -np.inf),
    (lambda v: tape.sqrt(tape.relu(v)) + v * v, -1.0, 2.0),
])
def test_second_derivatives_keep_the_conventions_inside_programs(f, x, expected):
    F = tape.trace(lambda v: f(v[0]), [0.7])
    assert F.hessian([x])[0, 0] == expected and F.hvp([x], [1.0])[0] == expected


def test_gradcheck_flags_a_nan_derivative():
    report = tape.gradcheck(lambda v: tape.sqrt(v[0]) - tape.sqrt(v[0]), [0.0])
    assert np.isnan(report.analytic[0, 0]) and report == np.inf
    assert tape.gradcheck(lambda v: v[0] * v[0], [0.5]) < 1e-8


def test_w8_tape_and_function_gradients_agree_bit_for_bit_with_signed_zeros():
    rng = np.random.default_rng(8)

    def f(v):
        a, b, c = v
        return (a * b - tape.relu(c) * a + tape.maximum(a, b) * c - tape.minimum(b, 0.0) * -c
                + abs(a) * b * 0.0 - c * tape.tanh(b) + tape.where(a > b, a * c, -b))

    points = rng.choice([0.0, -0.0, 1.0, -1.0, 0.5, -2.0], size=(3200, 3))
    F = tape.trace(f, points[0])  # where() records no branch: one trace serves every point
    differ = 0
    for p in points:
        t = tape.Tape()
        xs = t.vars(p)
        g = t.gradient(f(xs), xs)
        G = F.value_and_grad(p)[1]
        differ += not (np.array_equal(g, G) and np.array_equal(np.signbit(g), np.signbit(G)))
    assert differ == 0
    t = tape.Tape()  # an underflowing product is the one way a nonzero adjoint sends a zero: -0.0
    x = t.var(1.0)
    g = t.gradient((x * -1e-200) * 1e-200, x)
    G = tape.trace(lambda v: (v[0] * -1e-200) * 1e-200, [1.0]).gradient([1.0])[0]
    assert g == G == 0.0 and not np.signbit(g) and not np.signbit(G)


# -- W9: a gradient of the tape being recorded is refused, not baked in as a constant ---------------


def test_w9_gradient_inside_a_traced_function_raises():
    def f(xs):
        w, x = xs
        g = w.tape.gradient(w * x * x, x)
        return g * w

    for call in (lambda: tape.trace(f, [0.5, 2.0]), lambda: tape.grad(f)([0.5, 2.0]),
                 lambda: tape.value_and_grad(f)([0.5, 2.0])):
        with pytest.raises(tape.TapeError, match="inside a traced function"):
            call()


def test_w9_a_gradient_on_a_plain_tape_is_a_constant_later_stop_gradient():
    t = tape.Tape()
    w, x = t.var(0.5), t.var(2.0)
    g = t.gradient(w * x * x, x)  # 2 w x = 2.0, a number from here on
    y = g * w
    assert t.gradient(y, [w, x]).tolist() == [2.0, 0.0]


# -- U: clear errors for bad input, one validation for numbers from outside -------------------------


@pytest.mark.parametrize("bad", [None, [None, 1.0], ["1.5", "2"], [1 + 2j, 1.0], [[1.0], [1.0, 2.0]]])
def test_u2_every_entry_point_refuses_what_is_not_real_numbers(bad):
    F = tape.trace(lambda v: v[0] * v[1], [1.0, 2.0])
    calls = [lambda: F(bad), lambda: F.value_and_grad(bad), lambda: F.jvp([1.0, 2.0], bad),
             lambda: F.map([bad, bad]), lambda: F.map_value_and_grad([bad]), lambda: tape.Tape().vars(bad)]
    if bad != [[1.0], [1.0, 2.0]]:  # to trace and tape.grad, nested lists are a tree (f gets lists of Vars)
        calls += [lambda: tape.grad(lambda v: v[0])(bad), lambda: tape.trace(lambda v: v[0], bad)]
    for call in calls:
        with pytest.raises(TypeError, match="real numbers"):
            call()


def test_u3_capacity_above_the_index_limit_is_refused_before_allocating():
    with pytest.raises(ValueError, match="32-bit"):
        tape.Tape(capacity=2**32)


def test_u5_errors_name_what_was_wrong():
    t = tape.Tape()
    y = t.var(1.0) * 2.0
    with pytest.raises(TypeError, match="expected a Var, a sequence of Vars or a VarArray, got float"):
        t.gradient(y, 1.0)
    F = tape.trace(lambda v: v[0] * 2.0, [1.0])
    with pytest.raises(TypeError, match="dask.distributed.Client"):
        F.map_value_and_grad([[1.0]], client="x")


def saved_members(tmp_path):
    import zipfile

    path = tmp_path / "f.npz"
    tape.trace(lambda v: tape.sin(v[0]) * v[1], [0.5, 2.0]).save(path)
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def write_zip(path, members):
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members:
            archive.writestr(name, data)
    return path


def test_u1_u7_members_that_are_not_arrays_or_appear_twice_are_format_errors(tmp_path):
    import warnings

    members = saved_members(tmp_path)
    not_npy = [(n.replace("op.npy", "op") if n == "op.npy" else n, d) for n, d in members.items()]
    empty = [(n, b"" if n == "val.npy" else d) for n, d in members.items()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name it writes
        twice = write_zip(tmp_path / "twice.npz", [*members.items(), ("consts.npy", members["consts.npy"])])
    for path in (write_zip(tmp_path / "raw.npz", not_npy), write_zip(tmp_path / "empty.npz", empty), twice):
        with pytest.raises(tape.TapeFormatError):
            tape.load(path)


def test_p1_a_file_claiming_huge_arrays_is_refused_before_reading(tmp_path):
    import io

    members = saved_members(tmp_path)
    huge = io.BytesIO()  # a header claiming 80 GB, in a member of 200 bytes
    np.lib.format.write_array_header_1_0(huge, {"descr": "<f8", "fortran_order": False, "shape": (10**10,)})
    header = huge.getvalue() + bytes(80)
    path = write_zip(tmp_path / "bomb.npz", [(n, header if n == "val.npy" else d) for n, d in members.items()])
    with pytest.raises(tape.TapeFormatError, match="claims shape"):
        tape.load(path)
    with pytest.raises(tape.TapeFormatError, match="max_bytes"):
        tape.load(tmp_path / "f.npz", max_bytes=100)
    assert tape.load(tmp_path / "f.npz")([0.5, 2.0]) == np.sin(0.5) * 2.0


# -- C2: maps in processes forked, spawned or served after the parent mapped, and forks during a map --

FORK_SCRIPT = """
import multiprocessing as mp
import os
import sys
import threading

import numpy as np

import tape

PATH = sys.argv[1]
X = np.random.default_rng(0).normal(size=(64, 3))


def work(k):
    return float(tape.load(PATH).map(X + k).sum())


if __name__ == "__main__":
    F = tape.trace(lambda v: tape.sin(v[0]) * v[1] + v[2] ** 2, [0.1, 0.2, 0.3])
    F.save(PATH)
    expected = [float(F.map(X + k).sum()) for k in range(4)]  # the parent maps first
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(2) as pool:
            assert pool.map(work, range(4)) == expected, method
    stop = threading.Event()

    def keep_mapping():
        while not stop.is_set():
            F.map(X)

    mapper = threading.Thread(target=keep_mapping)
    mapper.start()
    for _ in range(20):  # fork while another thread maps (and may hold the map lock)
        pid = os.fork()
        if pid == 0:
            os._exit(0 if work(1) == expected[1] else 3)
        assert os.waitpid(pid, 0)[1] == 0
    stop.set()
    mapper.join()
    print("ok", tape.Function.__module__)
"""


def test_c2_maps_work_in_forked_spawned_and_served_processes(tmp_path):
    script = tmp_path / "forks.py"
    script.write_text(FORK_SCRIPT)
    result = subprocess.run([sys.executable, str(script), str(tmp_path / "f.npz")], capture_output=True, text=True,
                            timeout=600, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("ok"), result.stderr[-3000:]


# -- W4: check_finite and debug_nans hold in every method -----------------------------------------------


def every_method(F, x):
    n, m = F.n_inputs, F.n_outputs
    return {
        "call": lambda: F(x), "value_and_grad": lambda: F.value_and_grad(x), "vjp": lambda: F.vjp(x, np.ones(m)),
        "jvp": lambda: F.jvp(x, np.ones(n)), "jacobian forward": lambda: F.jacobian(x, mode="forward"),
        "jacobian reverse": lambda: F.jacobian(x, mode="reverse"), "hvp": lambda: F.hvp(x, np.ones(n)),
        "hessian": lambda: F.hessian(x), "map": lambda: F.map([x, x]),
        "map_value_and_grad": lambda: F.map_value_and_grad([x, x]), "map_jvp": lambda: F.map_jvp([x, x], [x, x]),
        "map_vjp": lambda: F.map_vjp([x, x], np.ones((2, m))),
    }


def test_w4_every_method_stops_at_the_first_non_finite_number():
    F = tape.trace(lambda v: tape.log(v[0]) * v[1] + v[1] * v[1], [1.0, 2.0])
    for name, call in every_method(F, [1.0, 2.0]).items():
        F.check_finite = True
        call()  # finite everywhere: nothing raised
        for switch in ("check_finite", "debug_nans"):
            F.check_finite = switch == "check_finite"
            bad = every_method(F, [-1.0, 2.0])[name]
            with pytest.raises(tape.NonFiniteError, match=r"value nan first appears at record #2 \(log"):
                if switch == "debug_nans":
                    with tape.debug_nans():
                        bad()
                else:
                    bad()


def test_w4_an_infinite_derivative_is_named_in_forward_and_reverse_mode():
    F = tape.trace(lambda v: tape.sqrt(v[0]) + v[0], [1.0])
    F.check_finite = True
    with pytest.raises(tape.NonFiniteError, match=r"tangent inf first appears at record #1 \(sqrt"):
        F.jvp([0.0], [1.0])
    with pytest.raises(tape.NonFiniteError, match=r"adjoint inf first appears at record #0"):
        F.jacobian([0.0], mode="reverse")
    with pytest.raises(tape.NonFiniteError, match="point 1 of the 2 given"):
        F.map_jvp([[1.0], [0.0]], [[1.0], [1.0]])


# -- W5: one Function shared by threads gives every thread its own right answers --------------------


def test_w5_a_function_shared_by_threads_is_never_wrong():
    import threading

    F = tape.trace(lambda v: tape.sin(v[0]) * v[1] + tape.exp(v[1] * v[0]) - v[0] ** 3, [0.3, 0.4])
    rng = np.random.default_rng(5)
    points = rng.normal(size=(4, 3000, 2))
    wrong = []

    def work(k):
        for x in points[k]:
            a, b = x
            value, grad = F.value_and_grad(x)
            exact = np.sin(a) * b + np.exp(a * b) - a**3
            slope = [np.cos(a) * b + b * np.exp(a * b) - 3 * a * a, np.sin(a) + a * np.exp(a * b)]
            if abs(value - exact) > 1e-12 * max(1.0, abs(exact)) or not np.allclose(grad, slope, rtol=1e-12):
                wrong.append((k, tuple(x)))
            if abs(F(x) - exact) > 1e-12 * max(1.0, abs(exact)):
                wrong.append((k, tuple(x), "value"))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong, f"{len(wrong)} of 24000 calls wrong"


# -- Also: files keep the Function's options and no folders; version 1 files still load ---------------


def test_save_keeps_options_and_stores_no_folders(tmp_path):
    def f(v):
        return v[0] * 2.0 if v[0] > 0 else v[0] * 3.0

    F = tape.trace(f, [1.0], on_branch_change="ignore")
    F.check_finite = True
    F.save(tmp_path / "f.npz")
    G = tape.load(tmp_path / "f.npz")
    assert G.on_branch_change == "ignore" and G.check_finite
    assert G([-1.0]) == -2.0  # the traced branch, as "ignore" says
    assert tape.load(tmp_path / "f.npz", on_branch_change="raise").on_branch_change == "raise"
    with np.load(tmp_path / "f.npz") as npz:
        where = str(npz["check_where"][0])
    assert where.startswith("test_adversarial.py:") and "/" not in where


def test_version_1_and_2_files_still_load(tmp_path):
    F = tape.trace(lambda v: tape.sin(v[0]) * v[1], [0.5, 2.0])
    F.save(tmp_path / "f.npz")
    version_3 = ("plans", "plan_places", "arena", "input_shape", "output_shape",  # and versions 4, 5
                 "input_tree", "input_keys")
    with np.load(tmp_path / "f.npz") as npz:
        v2 = {name: npz[name] for name in npz.files if name not in version_3}
        arrays = {name: npz[name] for name in npz.files if name not in ("on_branch_change", "check_finite",
                                                                      *version_3)}
    v2["format_version"] = np.array(2, np.int64)
    np.savez(tmp_path / "two.npz", **v2)
    assert tape.load(tmp_path / "two.npz").value_and_grad([0.5, 2.0])[1].tolist() == F.gradient([0.5, 2.0]).tolist()
    arrays["format_version"] = np.array(1, np.int64)
    np.savez(tmp_path / "v1.npz", **arrays)
    G = tape.load(tmp_path / "v1.npz")
    assert G([0.5, 2.0]) == F([0.5, 2.0]) and G.on_branch_change == "raise" and not G.check_finite
    arrays["format_version"] = np.array(2, np.int64)  # version 2 without its options
    np.savez(tmp_path / "v2.npz", **arrays)
    with pytest.raises(tape.TapeFormatError):
        tape.load(tmp_path / "v2.npz")


# -- W6: reading .value inside a trace warns; U6: a cluster without workers is named at once ----------


def test_w6_reading_value_inside_a_trace_warns():
    def f(v):
        return v[0] * 2 if v[0].value > 0 else v[0] * 3

    with pytest.warns(tape.TracingWarning, match="every replay"):
        tape.trace(f, [1.0])
    t = tape.Tape()
    x = t.var(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.value == 1.0 and tape.where(x > 0, x, 2.0 * x).value == 1.0  # outside a trace: silent
        tape.trace(lambda v: tape.where(v[0] > 0, v[0], 0.5 * v[0]), [1.0])  # where reads no .value


def _writes_its_argument(xs):
    xs[0] = xs[1] * 3.0  # f writes into the array it is given: it no longer depends on xs[0]
    return xs * xs[2]


def _writes_a_copy(xs):
    return _writes_its_argument(xs * 1.0)


@pytest.mark.parametrize("size", [6, 1200])  # scalar records; an array record
@pytest.mark.parametrize("jit", [False, True])
def test_w7_a_function_that_writes_into_its_argument_has_the_derivative_of_its_input(size, jit):
    """The derivative of f at x is read at x's leaves as f was given them, not at what f wrote into x: the gradient
    was the adjoint of the record written there (d/dx0 of sum(x0 * x0) after x0 = 3 x1: 6 x1, not 0), tape.trace and
    the other transforms refused ('inputs must be leaf records'). Each transform equals the same one of f on a copy,
    the gradient central differences of f on plain numbers."""
    x = np.linspace(-1.0, 1.0, size)
    d = np.linspace(0.5, 1.5, size)
    v, v_copy = (tape.jit(g) if jit else g for g in (_writes_its_argument, _writes_a_copy))
    f, f_copy = (lambda xs, g=g: (g(xs) * d).sum() for g in (v, v_copy))
    plain = lambda x: float((_writes_its_argument(x.copy()) * d).sum())  # noqa: E731
    grad = tape.grad(f)(x.copy())
    central = np.array([(plain(x + 1e-6 * e) - plain(x - 1e-6 * e)) / 2e-6 for e in np.eye(size)[:4]])
    assert grad[0] == 0.0 and np.allclose(grad[:4], central, rtol=1e-7, atol=1e-9)
    transforms = [lambda g: tape.grad(g)(x.copy()), lambda g: tape.trace(g, x.copy()).value_and_grad(x * 0.5)[1],
                  lambda g: tape.trace(g, x.copy()).hvp(x * 0.5, d), lambda g: tape.vjp(g, x.copy())[1](1.0)]
    if size < 100:
        transforms += [lambda g: tape.hessian(g)(x.copy()), lambda g: tape.sparse_hessian(g)(x.copy()).toarray()]
    for transform in transforms:
        assert np.array_equal(transform(f), transform(f_copy))
    for transform in [lambda g: tape.jvp(g, (x.copy(),), (d,))[1], lambda g: tape.vjp(g, x.copy())[1](d)] + (
            [lambda g: tape.jacobian(g)(x.copy()), lambda g: tape.sparse_jacobian(g)(x.copy()).toarray()]
            if size < 100 else []):
        assert np.array_equal(transform(v), transform(v_copy))


def test_w6_a_read_inside_tape_names_the_users_line():
    """argmax, argmin and argsort of a VarArray read its values (a replay keeps the index found now): the warning names
    the user's line that called them, once per line, not tape's line that read them (once per process, in tape)."""
    def f(v):
        first = v[np.argmax(v)]
        second = v[np.argsort(v)[0]] + v[v.argmin()]
        return first * second

    lines = [f.__code__.co_firstlineno + 1, f.__code__.co_firstlineno + 2]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in (np.array([1.0, 3.0, 2.0]), np.array([2.0, 1.0, 3.0])):
            tape.trace(f, x)
    found = [w for w in caught if issubclass(w.category, tape.TracingWarning)]
    assert [(w.filename, w.lineno) for w in found] == [(__file__, line) for line in lines]
    with pytest.raises(tape.TracingError, match=f"{__file__}:{lines[0]}: reading .value"):
        tape.trace(f, np.array([1.0, 3.0, 2.0]), strict=True)


def test_w6_value_warns_once_per_line_raises_under_strict_and_item_reads_on_purpose():
    def f(v):
        frozen = v[0].value  # the line named below
        return v[0] * frozen

    line = f.__code__.co_firstlineno + 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in (1.0, 2.0, 3.0):
            tape.grad(f)([x])  # a derivative without the frozen factor's part: warned, once for this line
            tape.trace(f, [x])
    found = [w for w in caught if issubclass(w.category, tape.TracingWarning)]
    assert len(found) == 1 and found[0].lineno == line and found[0].filename == __file__
    assert "x.item() reads it on purpose" in str(found[0].message)
    for strict_call in (lambda: tape.trace(f, [1.0], strict=True), lambda: tape.grad(f, strict=True)([1.0]),
                        lambda: tape.value_and_grad(f, strict=True)([1.0])):
        with pytest.raises(tape.TracingError, match=f"{__file__}:{line}: reading .value"):
            strict_call()
    F = tape.trace(lambda v: (v ** 2).sum(), np.array([1.0, 2.0]), strict=True)  # no read: fine
    with pytest.raises(tape.BranchChanged):  # strict retraces are strict too; here a branch, checked
        tape.trace(lambda v: v[0] if v[0] > 0 else -v[0], [1.0], strict=True)([-1.0])
    assert F([3.0, 4.0]) == 25.0

    def on_purpose(v):
        logged.append((v[0].item(), v.tolist(), (v * 2.0).item() if v.size == 1 else None))
        return (v * v).sum()

    logged = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape.trace(on_purpose, np.array([1.5]), strict=True)
        tape.grad(on_purpose, strict=True)(np.array([2.5]))
    assert logged == [(1.5, [1.5], 3.0), (2.5, [2.5], 5.0)]
    with pytest.raises(ValueError, match="size 1"):
        tape.trace(lambda v: v.item() * v.sum(), np.ones(2))


def test_u6_a_cluster_without_workers_is_named_at_once():
    class NoWorkers:
        def nthreads(self):
            return {}

        submit = map = None

    F = tape.trace(lambda v: v[0] * 2.0, [1.0])
    with pytest.raises(tape.DistributedError, match="no workers"):
        F.map_value_and_grad([[1.0]], client=NoWorkers())


def test_a_nan_in_a_function_traced_outside_debug_nans_still_names_its_line():
    def f(v):
        a = v[0] * 2.0
        return tape.log(a) + v[0]  # the line the error must name

    F = tape.trace(f, [1.0])
    with tape.debug_nans(), pytest.raises(tape.NonFiniteError, match=r"test_adversarial.py:\d+") as info:
        F([-1.0])
    assert "unknown" not in str(info.value)


def test_tape_forward_refuses_what_is_not_real_numbers():
    t = tape.Tape()
    x = t.var(1.0)
    with pytest.raises(TypeError, match="real numbers"):
        t.forward([x], [None])


# -- W1: f gets the kind of input it was first given, in every retrace and in gradcheck ---------------


@pytest.mark.parametrize("x0, kind", [([1.0, 2.0], list), (np.array([1.0, 2.0]), tape.VarArray)])
def test_w1_retraces_and_gradcheck_pass_what_the_caller_passed(x0, kind):
    def f(v):
        assert type(v) is kind, type(v)
        return v[0] * v[1] if v[0] > 0 else v[0] * 3.0

    F = tape.trace(f, x0, on_branch_change="retrace")
    assert F([-1.0, 2.0]) == -3.0 and F.retraces == 1
    assert tape.gradcheck(f, x0) < 1e-8


# -- every sweep gives the same first derivatives, bit for bit, for every op at edge values -----------


def test_every_sweep_agrees_bit_for_bit_for_every_op_at_edge_values():
    """Reverse (tape and Function), vjp, forward mode (jvp, Jacobian both ways) and the three maps run
    one structural-zero rule, so at 0, -0.0, huge, tiny, inf and NaN they give the same bits."""
    from reference import BINARY, OPS_ON_HANDLES, UNARY
    from test_replay import EDGE

    def same(a, b):
        a, b = np.asarray(a, float), np.asarray(b, float)
        return bool(np.all(((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))))

    programs = {name: (lambda v, fn=OPS_ON_HANDLES[name]: fn(v[0])) for name in UNARY}
    for name in BINARY:
        fn = OPS_ON_HANDLES[name]
        programs.update({f"{name}(x, y)": lambda v, fn=fn: fn(v[0], v[1]),
                         f"{name}(x, c)": lambda v, fn=fn: fn(v[0], 0.75),
                         f"{name}(c, x)": lambda v, fn=fn: fn(-1.5, v[0]),
                         f"{name}(x, x)": lambda v, fn=fn: fn(v[0], v[0])})
    e0, e1 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    for name, program in programs.items():
        F = tape.trace(program, [0.3, 0.7])
        X = np.array([[a, b] for a in EDGE for b in EDGE])
        grads = F.map_value_and_grad(X)[1]
        sweeps = {"map_vjp": F.map_vjp(X, np.ones((len(X), 1))),
                  "map_jvp": np.stack([F.map_jvp(X, np.tile(e, (len(X), 1))) for e in (e0, e1)], axis=1)}
        for k, x in enumerate(X):
            t = tape.Tape()
            xs = t.vars(x)
            found = {"tape": t.gradient(program(xs), xs), "gradient": F.gradient(x), "vjp": F.vjp(x, [1.0]),
                     "jvp": [F.jvp(x, e0), F.jvp(x, e1)], "jacobian forward": F.jacobian(x, mode="forward"),
                     "jacobian reverse": F.jacobian(x, mode="reverse"), "map_value_and_grad": grads[k],
                     **{sweep: values[k] for sweep, values in sweeps.items()}}
            differ = [sweep for sweep, g in found.items() if not same(g, found["gradient"])]
            assert not differ, (name, tuple(x), {s: found[s] for s in differ}, found["gradient"])
