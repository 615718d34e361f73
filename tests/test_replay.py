"""Functions: replay equals re-recording, shapes and errors, params, VJP, optimizers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tape

RNG = np.random.default_rng(7)


def mixed(x):
    """A function touching most ops, with constants on both sides."""
    a, b, c = x
    s = tape.sin(a * b) + tape.exp(-c * c) / (1.0 + b * b) - 2.0 ** tape.tanh(a)
    s = s + tape.sqrt(1.0 + a * a) * tape.log(2.0 + tape.cos(c)) + abs(b - 0.3) ** 1.5
    return s + tape.maximum(a, c) * tape.minimum(b, 0.5) + tape.sigmoid(c) * tape.relu(a - b) + tape.tan(0.3 * c)


def record(f, x):
    t = tape.Tape()
    xs = t.vars(x)
    y = f(xs)
    return t, xs, y


def test_replay_equals_rerecording_bit_for_bit():
    F = tape.trace(mixed, [0.3, -0.7, 1.1])
    for _ in range(200):
        x = RNG.uniform(-2, 2, 3)
        t, xs, y = record(mixed, x)
        value, grad = F.value_and_grad(x)
        assert value == y.value
        np.testing.assert_array_equal(grad, t.gradient(y, xs))
        assert F(x) == y.value
        np.testing.assert_array_equal(F.gradient(x), grad)


@pytest.mark.parametrize("stale", [False, True])
def test_values_through_grouped_ops_between_plain_ones(stale):
    """forward_sweep hands the first grouped record it meets to forward_range (tape/sweeps/driver.py,
    tape/function/replay.py), which computes it and every record after it, then the branch checks, and
    forward_partials to forward_partials_from: F(x), Tape.forward and recording a small array against the
    values written out by hand, F's gradient and jvp against central differences of them. A Function that
    knows it has grouped records starts in the _from kernels; stale: one that does not know hands over."""
    def f(v):
        w = tape.log1p(v[0] * v[1] + tape.sin(v[0])) * v[1]  # a grouped op below and above plain ones
        z = tape.hypot(w, v[0]) + w * w  # a grouped pair
        return tape.tanh(z) * v[0] if z > 1.0 else z * 0.5  # a checked branch after them

    def by_hand(x, y):
        w = math.log1p(x * y + math.sin(x)) * y
        z = math.hypot(w, x) + w * w
        return math.tanh(z) * x if z > 1.0 else z * 0.5

    F, J, V = (tape.trace(f, [0.7, 1.3], on_branch_change="retrace") for _ in range(3))  # each its own partials
    G = tape.trace(f, [0.7, 1.3])
    for H in (F, J, V, G):
        assert H._grouped
        H._grouped = not stale
    assert not tape.trace(lambda v: tape.sin(v[0]) * v[1], [0.7, 1.3])._grouped
    for x in ([0.7, 1.3], [0.9, 1.1], [1.4, 0.6], [0.1, 0.2]):
        assert F(x) == pytest.approx(by_hand(*x), rel=1e-15)
        slopes = [(by_hand(*(np.add(x, e))) - by_hand(*(np.subtract(x, e)))) / 2e-6 for e in ([1e-6, 0], [0, 1e-6])]
        assert J.jvp(x, [1.0, -2.0]) == pytest.approx(slopes[0] - 2.0 * slopes[1], rel=1e-7)
        assert V.gradient(x) == pytest.approx(slopes, rel=1e-7)
    with pytest.raises(tape.BranchChanged):  # checked after forward_range: z < 1 at (0.1, 0.2)
        G([0.1, 0.2])
    t = tape.Tape()
    x, y = t.var(0.7), t.var(1.3)
    out = f([x, y])
    t.forward([x, y], [0.9, 1.1])
    assert out.value == pytest.approx(by_hand(0.9, 1.1), rel=1e-15)
    X = np.array([0.7, 0.9, 1.4])
    row = tape.trace(lambda v: (np.hypot(np.log1p(v * 1.3), v) * v).sum(), X)  # scalar blocks at 3 elements
    assert row(X) == pytest.approx(sum(math.hypot(math.log1p(a * 1.3), a) * a for a in X), rel=1e-15)


def test_articles_example_replays():
    def f(v):
        return (tape.sigmoid(v[0] * v[1] + v[2] * v[3] + v[4]) - v[5]) ** 2

    F = tape.trace(f, np.zeros(6))
    value, grad = F.value_and_grad([0.5, 1.2, -0.3, 0.8, 0.1, 1.0])
    assert value == pytest.approx(0.149758, abs=1e-6)
    np.testing.assert_allclose(grad, [-0.22032911, -0.09180379, -0.14688607, 0.05508228, -0.18360759,
                                      0.77397165], atol=5e-9)
    assert (F.n_inputs, F.n_outputs, len(F)) == (6, 1, 13)


def test_vector_outputs_and_vjp():
    def f(x):
        return [x[0] * x[1], tape.sin(x[0]) + x[2], x[1] ** 2, 3.0]

    F = tape.trace(f, [1.0, 2.0, 3.0])
    assert F.n_outputs == 4
    x = np.array([0.4, -1.3, 2.2])
    np.testing.assert_array_equal(F(x), [x[0] * x[1], math.sin(x[0]) + x[2], x[1] ** 2, 3.0])
    w = np.array([0.5, -2.0, 1.5, 7.0])
    jacobian = np.array([[x[1], x[0], 0], [math.cos(x[0]), 0, 1], [0, 2 * x[1], 0], [0, 0, 0]])
    np.testing.assert_allclose(F.vjp(x, w), w @ jacobian, rtol=1e-15)
    with pytest.raises(ValueError, match="one output"):
        F.value_and_grad(x)
    with pytest.raises(ValueError, match="4 output weights"):
        F.vjp(x, [1.0, 2.0])


def test_same_output_twice_sums_its_weights():
    F = tape.trace(lambda x: [x[0] * x[0], x[0] * x[0]], [1.0])
    t = tape.Tape()
    x = t.var(3.0)
    y = x * x
    G = t.function([x], [y, y])
    assert G.vjp([3.0], [1.0, 2.0])[0] == 18.0 and F.vjp([3.0], [1.0, 2.0])[0] == 18.0


def test_scalar_vjp_weight():
    F = tape.trace(lambda x: x[0] * 3.0, [1.0])
    assert F.vjp([2.0], 2.0)[0] == 6.0


def test_input_errors_are_clear():
    F = tape.trace(mixed, [0.3, -0.7, 1.1])
    with pytest.raises(ValueError, match="expected 3 inputs"):
        F([1.0, 2.0])
    with pytest.raises(ValueError, match="expected 3 inputs"):
        F(np.ones((3, 1)))
    with pytest.raises(TypeError, match="real numbers"):
        F(["a", "b", "c"])
    with pytest.raises(ValueError, match="expected 0 params"):
        F([1.0, 2.0, 3.0], params=[1.0])
    value = F([math.nan, 0.0, 0.0])  # non-finite inputs are allowed and propagate
    assert math.isnan(value)
    assert math.isnan(F.gradient([math.nan, 0.1, 0.2])[0])  # NaN partials meet nonzero adjoints


def test_params_change_without_retracing():
    def loss(w, data):
        x, y = data
        return (w[0] * x + w[1] - y) ** 2

    F = tape.trace(loss, [0.5, 0.1], params=[2.0, 3.0])
    assert F.n_params == 2
    for x, y in RNG.uniform(-3, 3, (20, 2)):
        w = RNG.uniform(-1, 1, 2)
        value, grad = F.value_and_grad(w, params=[x, y])
        r = w[0] * x + w[1] - y
        assert value == pytest.approx(r * r, rel=1e-14)
        np.testing.assert_allclose(grad, [2 * r * x, 2 * r], rtol=1e-13)
    assert F.retraces == 0
    # params stay as last set
    assert F([1.0, 0.0]) == pytest.approx((1.0 * x + 0.0 - y) ** 2, rel=1e-14)


def test_function_from_a_hand_recorded_tape():
    t = tape.Tape()
    a, b = t.var(2.0), t.var(3.0)
    scale = t.var(10.0)  # neither input nor param: a baked-in value
    y = a * b * scale
    F = t.function([a, b], y)
    t.rewind(0)  # the Function owns its copy of the records
    assert F([1.0, 4.0]) == 40.0
    np.testing.assert_array_equal(F.gradient([1.0, 4.0]), [40.0, 10.0])
    t2 = tape.Tape()
    c = t2.var(1.0)
    z = c * 2.0
    with pytest.raises(ValueError, match="leaf"):
        t2.function([z], z)
    with pytest.raises(ValueError, match="twice"):
        t2.function([c, c], z)
    with pytest.raises(tape.ForeignHandleError):
        t2.function([c], y)
    with pytest.raises(ValueError, match="both an input and a parameter"):
        t2.function([c], z, params=[c])
    with pytest.raises(ValueError, match="on_branch_change"):
        t2.function([c], z, on_branch_change="sometimes")


@pytest.mark.parametrize("prune", [True, False])
@pytest.mark.parametrize("program", ["chain", "one op"])  # unpruned, regions shared by liveness, and none to share
def test_a_function_and_its_tape_share_no_numbers_of_arrays(program, prune):
    """Tape.function reads the tape's value arena in place (no copy of it): the Function keeps numbers of its
    own, so its replays and the tape recording again over its regions leave each other's numbers be."""
    x0, x1 = np.linspace(-1.0, 1.0, 2048), np.linspace(0.5, -2.0, 2048)
    c = np.cos(np.arange(2048.0))  # data: an array constant, which no forward sweep writes again

    def g(X):
        for _ in range(6 if program == "chain" else 1):
            X = (X + c) * 0.5
        return X

    t = tape.Tape()
    X = t.array(x0)
    Y = g(X)
    F = t.function([X], Y.sum(), prune=prune)
    want = F.value_and_grad(x0)
    assert want[0] == pytest.approx(g(x0).sum(), rel=1e-12)  # (a fused run sums in its own order)
    F.value_and_grad(x1)
    assert np.array_equal(Y.value, g(x0))
    t.rewind(0)
    (t.array(x1) * 7.0 + 1.0).sum()  # new records in the regions of the old ones
    got = F.value_and_grad(x0)
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


def test_stats_and_sizes():
    F = tape.trace(mixed, [0.3, -0.7, 1.1])
    s = F.stats()
    assert s["records"] == len(F) and s["inputs"] == 3 and s["outputs"] == 1
    assert sum(s["by_op"].values()) == len(F) and s["by_op"]["leaf"] == 3
    n = len(F)
    assert s["record_bytes"] == n * (1 + 4 + 4 + 8) + 8 * s["constants"]
    assert s["working_bytes"] == n * (2 * 8 + 2 * 4) + (n + 1) * 8  # partials, targets; adjoints
    assert F.nbytes == s["record_bytes"] + s["working_bytes"]
    assert "3 inputs -> 1 outputs" in repr(F)


def test_trace_rejects_bad_outputs_and_points():
    with pytest.raises(TypeError, match="Vars or numbers"):
        tape.trace(lambda x: "nope", [1.0])
    F = tape.trace(lambda x: x[0][0] * x[1][1], [[1.0], [2.0, 3.0]])  # nested lists: a tree, as given
    assert F([[2.0], [5.0, 7.0]]) == 14.0 and F.gradient([[2.0], [5.0, 7.0]]) == [[7.0], [0.0, 2.0]]
    with pytest.raises(ValueError, match="structure of the x0 traced"):
        F([[2.0, 1.0], [5.0]])
    F = tape.trace(lambda x: 5.0, [1.0])  # a constant output is fine
    assert F([3.0]) == 5.0 and F.gradient([3.0])[0] == 0.0


def test_scipy_minimize_rosenbrock_with_jac_true():
    optimize = pytest.importorskip("scipy.optimize")

    def rosenbrock(x):
        return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))

    x0 = np.array([-1.2, 1.0, -0.5, 0.8, 1.3])
    F = tape.trace(rosenbrock, x0)
    result = optimize.minimize(F.value_and_grad, x0, jac=True, method="BFGS", options={"gtol": 1e-10})
    assert result.success
    np.testing.assert_allclose(result.x, np.ones(5), atol=1e-6)
    assert F.retraces == 0


EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-300, 1e300, -1e300, math.inf, -math.inf, math.nan]


def _same(a, b) -> bool:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def test_function_equals_tape_for_every_op_at_edge_values():
    """The stored-partials sweep and the tape's sweep agree bit for bit, NaN and inf included."""
    from reference import BINARY, OPS_ON_HANDLES, UNARY

    programs = [lambda v, fn=OPS_ON_HANDLES[name]: fn(v[0]) for name in UNARY]
    for name in BINARY:
        fn = OPS_ON_HANDLES[name]
        programs += [lambda v, fn=fn: fn(v[0], v[1]), lambda v, fn=fn: fn(v[0], 0.75),
                     lambda v, fn=fn: fn(-1.5, v[0]), lambda v, fn=fn: fn(v[0], v[0])]
    programs.append(lambda v: tape.where(v[0] > v[1], v[0] * v[1], tape.sqrt(v[0]) / v[1]))
    for program in programs:
        F = tape.trace(program, [0.3, 0.7])
        for a in EDGE:
            for b in EDGE:
                t = tape.Tape()
                xs = t.vars([a, b])
                y = program(xs)
                if len(t._checks):
                    continue  # (where records no checks; nothing here branches)
                value, grad = F.value_and_grad([a, b])
                assert _same(value, y.value), (a, b)
                assert _same(grad, t.gradient(y, xs)), (a, b, grad, t.gradient(y, xs))


def test_trace_takes_a_capacity_hint():
    def f(x):
        total = 0.0
        for k in range(500):
            total = total + x[0] * k
        return total

    small, roomy = tape.trace(f, [1.0], capacity=8), tape.trace(f, [1.0], capacity=4096)
    assert len(small) == len(roomy) and np.array_equal(small._op, roomy._op)
    assert small.gradient([2.0])[0] == roomy.gradient([2.0])[0] == sum(range(500))
    with pytest.raises(ValueError, match="capacity"):
        tape.trace(f, [1.0], capacity=0)
