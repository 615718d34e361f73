"""Branch safety: checked comparisons, the three policies, and tape.where."""

from __future__ import annotations

import io
import math
import operator
import os

import numpy as np
import pytest

import tape

COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
               "==": operator.eq, "!=": operator.ne}
HERE = os.path.basename(__file__)


def branchy(compare, form):
    """f(x) = x0 * x1 if the comparison holds else x0 - x1, for three operand forms."""

    def f(x):
        if form == "var-var":
            cond = compare(x[0], x[1])
        elif form == "var-const":
            cond = compare(x[0], 1.0)
        else:
            cond = compare(1.0, x[0])
        if cond:
            return x[0] * x[1]
        return x[0] - x[1]

    return f


def holds(compare, form, x) -> bool:
    lhs, rhs = {"var-var": (x[0], x[1]), "var-const": (x[0], 1.0), "const-var": (1.0, x[0])}[form]
    return bool(compare(lhs, rhs))


@pytest.mark.parametrize("form", ["var-var", "var-const", "const-var"])
@pytest.mark.parametrize("symbol", list(COMPARISONS))
def test_every_comparison_is_checked_at_replay(symbol, form):
    compare = COMPARISONS[symbol]
    f = branchy(compare, form)
    points = [np.array(p) for p in ([0.5, 2.0], [2.0, 0.5], [1.0, 1.0], [1.0, 3.0])]
    for x0 in points:
        F = tape.trace(f, x0)
        assert F.stats()["comparisons_checked"] == 1
        flips = 0
        for x in points:
            if holds(compare, form, x) == holds(compare, form, x0):
                assert F(x) == (x[0] * x[1] if holds(compare, form, x) else x[0] - x[1])
            else:
                flips += 1
                with pytest.raises(tape.BranchChanged) as info:
                    F(x)
                with pytest.raises(tape.BranchChanged):
                    F.value_and_grad(x)
                assert info.value.where.startswith(os.path.abspath(__file__)) or HERE in info.value.where
                assert f"record #{info.value.row}" in str(info.value)
        assert flips > 0


def test_branch_changed_names_the_source_line():
    def f(x):
        if x[0] > 0.0:  # the line to be named
            return x[0]
        return -x[0]

    line = f.__code__.co_firstlineno + 1
    F = tape.trace(f, [1.0])
    with pytest.raises(tape.BranchChanged) as info:
        F([-1.0])
    assert info.value.where == f"{__file__}:{line}"
    assert f"{HERE}:{line}" in str(info.value) and "#0 > 0.0" in str(info.value)
    assert "was True when traced and is False" in str(info.value)


def piecewise(x):
    if x[0] < 0.0:
        return x[0] * x[0] * x[1]
    if x[0] < 1.0:
        return tape.sin(x[0]) + x[1]
    return tape.exp(x[0]) * x[1]


def piecewise_reference(x):
    a, b = x
    if a < 0:
        return a * a * b, np.array([2 * a * b, a * a])
    if a < 1:
        return math.sin(a) + b, np.array([math.cos(a), 1.0])
    return math.exp(a) * b, np.array([math.exp(a) * b, math.exp(a)])


def test_retrace_gives_the_right_answer_on_a_piecewise_function():
    F = tape.trace(piecewise, [0.5, 2.0], on_branch_change="retrace")
    rng = np.random.default_rng(3)
    flips = 0
    previous = 0.5
    for a in rng.uniform(-2, 3, 60):
        x = np.array([a, 1.5])
        value, grad = F.value_and_grad(x)
        ref_value, ref_grad = piecewise_reference(x)
        assert value == pytest.approx(ref_value, rel=1e-14)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-14)
        assert F(x) == pytest.approx(ref_value, rel=1e-14)
        flips += (a < 0) != (previous < 0) or (a < 1) != (previous < 1)
        previous = a
    assert F.retraces == flips > 0


def test_retrace_keeps_params():
    def f(x, p):
        return x[0] * p[0] if x[0] > 0.0 else -x[0] * p[0]

    F = tape.trace(f, [1.0], params=[3.0], on_branch_change="retrace")
    assert F([-2.0], params=[5.0]) == 10.0 and F.retraces == 1
    assert F([4.0]) == 20.0 and F.retraces == 2


def test_ignore_replays_the_recorded_branch():
    F = tape.trace(piecewise, [0.5, 2.0], on_branch_change="ignore")
    assert F([-1.0, 2.0]) == math.sin(-1.0) + 2.0  # the traced branch, on purpose


def test_loaded_function_cannot_retrace(tmp_path):
    F = tape.trace(piecewise, [0.5, 2.0], on_branch_change="retrace")
    F.save(tmp_path / "f.npz")
    with pytest.raises(ValueError, match="needs the Python function"):
        tape.load(tmp_path / "f.npz", on_branch_change="retrace")
    G = tape.load(tmp_path / "f.npz")  # the saved "retrace" loads as "raise"
    assert G.on_branch_change == "raise"
    with pytest.raises(tape.BranchChanged):
        G([2.0, 1.0])
    with pytest.raises(ValueError, match="needs the Python function"):
        G.on_branch_change = "retrace"


def test_nan_comparisons_replay_consistently():
    def f(x):
        return x[0] * 2.0 if x[0] > 0.0 else x[0] * 3.0

    F = tape.trace(f, [math.nan])
    assert math.isnan(F([math.nan]))
    assert F([-1.0]) == -3.0
    with pytest.raises(tape.BranchChanged):
        F([1.0])


def test_bool_twice_records_one_check_and_conditions_are_lazy():
    t = tape.Tape()
    x = t.var(2.0)
    cond = x > 1.0
    assert len(t) == 1 and repr(cond) == "Condition(#0 > 1.0)"
    assert bool(cond) and bool(cond)
    assert len(t) == 2 and len(t._checks) == 1


def test_equality_returns_a_condition_and_identity_still_works():
    t = tape.Tape()
    x, y = t.var(1.0), t.var(1.0)
    assert isinstance(x == y, tape.Condition) and bool(x == y)
    assert x in [x] and {x: 1}[x] == 1
    assert not bool(x != y)


# -- tape.where -------------------------------------------------------------------------


def test_where_is_branch_free_and_differentiates_the_chosen_side():
    F = tape.trace(lambda x: tape.where(x[0] > 0.0, x[0] * x[1], tape.sin(x[1])), [1.0, 2.0])
    assert F.stats()["comparisons_checked"] == 0 and F.stats()["selects"] == 1
    for a, b in [(1.5, 2.0), (-1.5, 2.0), (0.0, 0.7)]:
        value, grad = F.value_and_grad([a, b])
        if a > 0:
            assert value == a * b and list(grad) == [b, a]
        else:
            assert value == math.sin(b) and list(grad) == [0.0, math.cos(b)]


def test_where_keeps_nan_of_the_unselected_branch_out_of_the_gradient():
    def f(x):
        return tape.where(x[1] > 1.0, x[0] / x[1], 0.0)

    F = tape.trace(f, [1.0, 2.0])
    value, grad = F.value_and_grad([1.0, 0.0])
    assert value == 0.0 and np.all(np.isfinite(grad)) and list(grad) == [0.0, 0.0]
    t = tape.Tape()
    x, y = t.var(1.0), t.var(0.0)
    z = tape.where(y > 1.0, x / y, 0.0)
    assert list(t.gradient(z, [x, y])) == [0.0, 0.0]
    value, grad = F.value_and_grad([3.0, 2.0])
    assert value == 1.5 and list(grad) == [0.5, -0.75]


def test_where_with_numbers_and_bools():
    t = tape.Tape()
    x = t.var(-2.0)
    assert tape.where(True, x, 1.0) is x and tape.where(np.bool_(False), x, 1.0) == 1.0
    y = tape.where(x < 0.0, 5.0, x)
    z = tape.where(x >= 0.0, 1.0, 2.0)
    assert y.value == 5.0 and z.value == 2.0
    F = t.function([x], [y, z])
    np.testing.assert_array_equal(F([3.0]), [3.0, 1.0])
    np.testing.assert_array_equal(F.vjp([3.0], [1.0, 1.0]), [1.0])
    np.testing.assert_array_equal(F.vjp([-3.0], [1.0, 1.0]), [0.0])


def test_where_errors():
    t, u = tape.Tape(), tape.Tape()
    x, y = t.var(1.0), u.var(1.0)
    with pytest.raises(TypeError, match="comparison"):
        tape.where(x, x, x)
    with pytest.raises(TypeError, match="Vars or real numbers"):
        tape.where(x > 0.0, "a", x)
    with pytest.raises(tape.ForeignHandleError):
        tape.where(x > 0.0, y, x)


def test_comparisons_have_no_derivative():
    t = tape.Tape()
    x = t.var(0.0)
    s = tape.sqrt(x)  # infinite slope at 0
    z = tape.where(s > 1.0, x, x * 2.0)
    assert t.gradient(z, x) == 2.0  # the comparison on sqrt(x) sends nothing back


def test_tape_forward_replay_checks_branches_too():
    t = tape.Tape()
    x = t.var(1.0)
    y = x * 2.0 if x > 0.0 else x * 3.0
    t.forward([x], [2.0])
    assert y.value == 4.0
    with pytest.raises(tape.BranchChanged, match="#0 > 0.0"):
        t.forward([x], [-1.0])
    t.rewind(1)  # dropping the comparison's record drops its check
    t.forward([x], [-1.0])


def test_an_unknown_policy_is_a_value_error_at_every_entry_point():
    """A bad argument is a ValueError (a file's bad policy alone is a TapeFormatError)."""
    F = tape.trace(lambda x: x[0] * x[1], [1.0, 2.0])
    t = tape.Tape()
    x = t.var(1.0)
    buffer = io.BytesIO()
    F.save(buffer)
    calls = [lambda: tape.trace(lambda x: x[0] * x[1], [1.0, 2.0], on_branch_change="bogus"),
             lambda: t.function([x], x * x, on_branch_change="bogus"),
             lambda: setattr(F, "on_branch_change", "bogus"),
             lambda: tape.load(io.BytesIO(buffer.getvalue()), on_branch_change="bogus")]
    for call in calls:
        with pytest.raises(ValueError, match="on_branch_change must be one of") as info:
            call()
        assert not isinstance(info.value, tape.TapeFormatError)
