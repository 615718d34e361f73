"""Random programs: tape gradients vs forward-mode dual numbers written for the tests."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from reference import BINARY, OPS_ON_HANDLES, UNARY, Dual, dual_function

import tape

N_INPUTS = 4

# One instruction: (op, first operand, second operand, constant, constant side).
# Operands are indices into the values computed so far (taken modulo their count).
instruction = st.tuples(
    st.sampled_from(BINARY + UNARY),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.one_of(st.none(), st.floats(-3, 3, allow_nan=False).filter(lambda c: abs(c) > 1e-3)),
    st.booleans(),
)
program = st.lists(instruction, min_size=1, max_size=25)
point = st.lists(st.floats(-2, 2, allow_nan=False).filter(lambda v: v == 0.0 or abs(v) >= 1e-3), min_size=N_INPUTS,
                 max_size=N_INPUTS)  # (0, or not tiny: at x = 7.7e-47, atan2(x, 0.9 tanh(x))'s two partials of 1e46
# cancel and rounding leaves 1.3e30 where duals give 0, reverse mode's rounding, not a rule's error: the edge values'
# tests check the rules there)


def run(prog, inputs, fn_for):
    """Evaluate ``prog`` on ``inputs`` (Vars or Duals); fn_for(name) gives the op."""
    values = list(inputs)
    for name, i, j, const, const_first in prog:
        x = values[i % len(values)]
        y = values[j % len(values)] if const is None else const
        if name in ("log", "sqrt", "log1p", "log2", "log10"):  # keep the argument positive: log(x*x + 1)
            x = x * x + 1.0
        if name == "lgamma":  # past its zeros at 1 and 2, where Python's and the C library's differ most
            x = x * x + 2.5
        if name == "arccosh":
            x = x * x + 1.5
        if name in ("arcsin", "arccos", "arctanh"):  # inside (-1, 1)
            x = fn_for("tanh")(x) * 0.9
        if name == "tan":  # keep away from the poles
            x = fn_for("tanh")(x)
        if name == "pow":  # positive base; exponent a Var or a constant
            x = x * x + 0.5
            if const is None:
                y = fn_for("tanh")(y) * 2.0
        if name == "div":  # divisor away from zero
            y = y * y + 0.5
        if name in BINARY:
            swap = const is not None and const_first and name != "pow"
            r = fn_for(name)(y, x) if swap else fn_for(name)(x, y)
        else:
            r = fn_for(name)(x)
        values.append(r)
    return values[-1]


def dual_pow(x, y):
    x = Dual.lift(x)
    y = Dual.lift(y)
    value = x.re**y.re
    return Dual(value, value * (y.du * math.log(x.re) + y.re * x.du / x.re))


def dual_op(name):
    return dual_pow if name == "pow" else dual_function(name)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program, point)
def test_random_programs_match_dual_numbers(prog, xs):
    t = tape.Tape()
    handles = t.vars(xs)
    out = run(prog, handles, OPS_ON_HANDLES.__getitem__)
    if not isinstance(out, tape.Var):
        return
    grads = t.gradient(out, handles)
    expected = []
    for k in range(N_INPUTS):
        duals = [Dual(x, 1.0 if i == k else 0.0) for i, x in enumerate(xs)]
        try:
            d = run(prog, duals, dual_op)
        except (OverflowError, ValueError, ZeroDivisionError):
            assume(False)
        assume(math.isfinite(d.re) and math.isfinite(d.du) and abs(d.du) < 1e12)
        assert out.value == d.re or math.isclose(out.value, d.re, rel_tol=1e-12, abs_tol=1e-300)
        expected.append(d.du)
    np.testing.assert_allclose(grads, expected, rtol=1e-9, atol=1e-12)
