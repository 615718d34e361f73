"""The articles' worked example: L = (sigmoid(w1*x1 + w2*x2 + b) - y)^2, 13 records."""

import numpy as np
import pytest

import tape

POINT = {"w1": 0.5, "x1": 1.2, "w2": -0.3, "x2": 0.8, "b": 0.1, "y": 1.0}
# printed in the first article (8 decimals), with its central-difference check
ARTICLE_GRADIENTS = [-0.22032911, -0.09180379, -0.14688607, 0.05508228, -0.18360759, 0.77397165]
# the article's node table: (id, op, value to 4 decimals, inputs)
ARTICLE_TABLE = [
    (6, "mul", 0.6000, (0, 1)),
    (7, "mul", -0.2400, (2, 3)),
    (8, "add", 0.3600, (6, 7)),
    (9, "add", 0.4600, (8, 4)),
    (10, "sigmoid", 0.6130, (9,)),
    (11, "sub", -0.3870, (10, 5)),
    (12, "mul", 0.1498, (11, 11)),
]


def record():
    t = tape.Tape()
    w1, x1, w2, x2, b, y = (t.var(v) for v in POINT.values())
    d = tape.sigmoid(w1 * x1 + w2 * x2 + b) - y
    L = d * d  # the same record used twice: fan-out
    return t, L, [w1, x1, w2, x2, b, y]


def test_thirteen_records_with_the_articles_ids_and_inputs():
    t, L, leaves = record()
    assert len(t) == 13 and L.index == 12
    assert [v.index for v in leaves] == [0, 1, 2, 3, 4, 5]
    for index, op, value, inputs in ARTICLE_TABLE:
        rec = t.record(index)
        assert (rec.op, rec.inputs, rec.constant) == (op, inputs, None)
        assert round(rec.value, 4) == pytest.approx(value, abs=1e-12)


def test_the_six_gradients():
    t, L, leaves = record()
    g = t.gradient(L, leaves)
    np.testing.assert_allclose(g, ARTICLE_GRADIENTS, atol=5e-9)
    # the fan-out of d*d: dL/dd = 2d, both edges summed
    d = t[11]
    assert d.grad == pytest.approx(2 * d.value, rel=1e-15)


def test_backward_then_grad_gives_the_same_numbers():
    t, L, leaves = record()
    g = t.gradient(L, leaves)
    L.backward()
    assert [v.grad for v in leaves] == list(g)


def test_table_shows_ids_ops_values_inputs_adjoints():
    t, L, leaves = record()
    L.backward()
    text = t.table()
    lines = text.splitlines()
    assert lines[0].split() == ["id", "op", "value", "inputs", "adjoint", "note"]
    assert len(lines) == 14
    assert lines[13].split()[:4] == ["12", "mul", "0.149758", "#11,"]
    assert "#11, #11" in lines[13] and lines[13].split()[-1] == "1"
    assert lines[1].split()[:2] == ["0", "leaf"] and float(lines[1].split()[-1]) == pytest.approx(-0.220329)


def test_gradcheck_matches_the_articles_check():
    def f(v):
        return (tape.sigmoid(v[0] * v[1] + v[2] * v[3] + v[4]) - v[5]) ** 2

    assert tape.gradcheck(f, list(POINT.values())) < 1e-8
    value, g = tape.value_and_grad(f)(list(POINT.values()))
    assert value == pytest.approx(0.149758, abs=1e-6)
    np.testing.assert_allclose(g, ARTICLE_GRADIENTS, atol=5e-9)
    np.testing.assert_array_equal(tape.grad(f)(list(POINT.values())), g)
