"""Finding where a NaN or inf started: tape.debug_nans() and Function.check_finite."""

import math

import pytest

import tape


def test_first_non_finite_value_is_named_with_its_line():
    with tape.debug_nans():
        t = tape.Tape()
        x, y = t.var(0.0), t.var(2.0)
        z = tape.log(x) * y  # the line that makes -inf
        line = z.index  # noqa: F841
        w = z + 1.0
        with pytest.raises(tape.NonFiniteError) as info:
            t.backward(w)
    message = str(info.value)
    assert info.value.row == 2 and "record #2 (log, inputs #0 = 0.0)" in message
    assert "test_debug.py:14" in message


def test_first_non_finite_adjoint_and_where_it_came_through():
    with tape.debug_nans():
        t = tape.Tape()
        x = t.var(0.0)
        y = tape.sqrt(x) * 3.0
        with pytest.raises(tape.NonFiniteError, match=r"adjoint inf first appears at record #0 .*came through "
                                                      r"record #1 \(sqrt"):
            t.backward(y)


def test_function_check_finite_and_forward_replay():
    F = tape.trace(lambda v: tape.log(v[0]) + v[1], [1.0, 2.0])
    assert math.isinf(F([0.0, 1.0]))  # off by default: IEEE results
    F.check_finite = True
    with pytest.raises(tape.NonFiniteError, match=r"record #2 \(log"):
        F([0.0, 1.0])
    with pytest.raises(tape.NonFiniteError):
        F.value_and_grad([0.0, 1.0])
    assert F.value_and_grad([1.0, 1.0])[0] == 1.0
    with tape.debug_nans():
        G = tape.trace(lambda v: tape.sqrt(v[0]) * v[1], [1.0, 2.0])
    G.check_finite = True
    with pytest.raises(tape.NonFiniteError, match="test_debug.py"):
        G.value_and_grad([0.0, 2.0])


def test_recording_outside_the_context_keeps_no_lines():
    t = tape.Tape()
    t.var(1.0) * 2.0
    assert t._lines is None
    with tape.debug_nans():
        u = tape.Tape()
        u.array([1.0, 2.0]) * 2.0
    assert len(u._lines) == 4 and all("test_debug.py" in where for where in u._lines.values())


def test_gradcheck_report_for_functions_and_vector_outputs():
    F = tape.trace(lambda v: [v[0] * v[1], tape.sin(v[0]) + v[2] ** 2], [0.3, 0.5, 0.7])
    report = tape.gradcheck(F, [0.4, -0.2, 0.9])
    assert report < 1e-8 and report.analytic.shape == (2, 3) and report.numeric.shape == (2, 3)
    assert len(report.relative_error) == 3 and len(report.dot_products) == 3
    assert all(e < 1e-8 for _, _, e in report.dot_products)
    text = str(report)
    assert "<- worst" in text and "dot-product test" in text and "worst relative error" in text


def test_gradcheck_flags_a_derivative_that_is_wrong_for_the_differences():
    # a jump at 0: the tape's derivative (1) is right on each side, the differences straddle the jump
    report = tape.gradcheck(lambda v: tape.where(v[0] > 0.0, v[0], v[0] + 1.0), [1e-7])
    assert report > 0.5 and report.worst_input == 0
