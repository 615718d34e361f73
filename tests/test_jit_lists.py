"""tape.jit: a list made of numbers that later holds Vars (``state = [0.0] * n; state[i] = xs[i] * w``), as Python
allows (issue 31; tape/compiled/var_lists.py).

Each program runs through the Python recorder and tape.jit on the same source: records equal bit for bit (elements
never written read as their numbers, in arithmetic, comparisons and outputs), and one gradient against central
differences. A list that a function did not make (its argument) still cannot take a Var: refused.
"""

import numpy as np
import pytest
from test_jit_arrays import central, namespace, same_records

import tape

PROGRAMS = {
    "idiom": """
def f(xs, w):
    n = len(xs)
    state = [0.0] * n
    for i in range(n - 1):
        state[i] = xs[i] * w
    total = 0.0
    for i in range(n):
        total = total + state[i] * state[i]
    return total
""",
    "made_otherwise": """
def f(xs, w):
    n = len(xs)
    s2 = [0.0 for _ in range(n)]
    s2[1] = xs[0] * w + 1.0
    s3 = [1.0, 2.0] + [0.5] * 2
    s3[3] = s2[1] * s3[0]
    s3[0] = 2.5
    return s3[3] * s3[0] + s2[0] + s3[2]
""",
    "aliased_inplace_branch": """
def f(xs, w):
    n = len(xs)
    s = [0.0] * n
    b = s
    for k in range(3):
        for i in range(n):
            b[i] += xs[i] * s[(i + 1) % n] + w
    if s[0] > 1.0:
        return s[0]
    return sum(s)
""",
    "returned_unwritten": """
def f(xs, w):
    s = [0.0] * 3
    s[0] = xs[0] * w
    if s[1] > -1.0:
        s[2] = s[0] * 3.0
    return s
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_list_of_numbers_taking_vars_records_as_python(name):
    py, jn = namespace(PROGRAMS[name])
    x0 = np.array([0.5, 1.5, -0.25, 2.0])
    tapes = []
    for g in (py["f"], jn["f"]):
        t = tape.Tape()
        tapes.append((t, g(t.array(x0), 2.0)))
    (tp, yp), (tj, yj) = tapes
    same_records(tp, tj)
    assert len(tj) > 4 and repr(yp) == repr(yj)


def test_a_list_of_numbers_taking_vars_has_the_gradient_of_its_values():
    jf = namespace(PROGRAMS["idiom"])[1]["f"]
    x0 = np.array([0.5, 1.5, -0.25, 2.0])
    _, grad = tape.value_and_grad(jf)(x0, 2.0)
    assert np.allclose(grad, central(lambda x: jf(x, 2.0), x0), rtol=1e-7, atol=1e-9)
    assert grad[-1] == 0.0  # never stored into the list


def test_a_list_a_function_did_not_make_is_refused():
    @tape.jit
    def f(xs, s):
        s[0] = xs[0]
        return xs[0]

    with pytest.raises(tape.JitError, match=r"^tape.jit: storing a Var into a list of float64 not made by this "
                                            r"function \(an argument\) is not supported"):
        f(tape.Tape().array(np.arange(3.0)), [0.0, 0.0])
