"""docs/from_scratch.py, the mini engine people learn from, runs and gets the articles' numbers.

The reference values are the articles' (an independent source), not numbers
printed by the script; the real engine is called here directly.
"""

import runpy
from pathlib import Path

import pytest

import tape

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "from_scratch.py"
NAMES = ("w1", "x1", "w2", "x2", "b", "y")
POINT = (0.50, 1.20, -0.30, 0.80, 0.10, 1.00)
# The articles' worked example prints these six gradients, rounded to 8 digits.
ARTICLE = {"w1": -0.22032911, "x1": -0.09180379, "w2": -0.14688607,
           "x2": 0.05508228, "b": -0.18360759, "y": 0.77397165}


@pytest.fixture(scope="module")
def script():
    namespace = runpy.run_path(str(SCRIPT))
    return namespace, namespace["main"]()


def test_thirteen_records(script):
    _, result = script
    assert result["records"] == 13  # 6 leaves + mul, mul, add, add, sigmoid, sub, mul
    assert result["squared_records"] == 13  # d ** 2 is one record too


def test_gradients_are_the_articles(script):
    _, result = script
    assert round(result["grads"]["w1"], 8) == -0.22032911
    assert round(result["grads"]["y"], 8) == 0.77397165
    for name in NAMES:
        assert round(result["grads"][name], 8) == ARTICLE[name], name
        assert result["squared"][name] == pytest.approx(ARTICLE[name], abs=5e-9), name


def test_agrees_with_the_real_tape(script):
    _, result = script
    t = tape.Tape()
    w1, x1, w2, x2, b, y = leaves = [t.var(v) for v in POINT]
    L = (tape.sigmoid(w1 * x1 + w2 * x2 + b) - y) ** 2
    real = t.gradient(L, leaves)
    for k, name in enumerate(NAMES):
        assert abs(result["grads"][name] - float(real[k])) <= 1e-12, name
        assert abs(result["real"][name] - float(real[k])) <= 1e-12, name


def test_second_backward_gives_the_same_gradients_not_double(script):
    namespace, result = script
    assert result["first_pass"] == result["grads"]
    # and directly on the mini engine: three passes over one tape, no reset in between
    t, leaves, L = namespace["record_loss"](POINT)
    passes = []
    for _ in range(3):
        namespace["backward"](L)
        passes.append([v.grad for v in leaves])
    assert passes[0] == passes[1] == passes[2]
    assert passes[1][0] == pytest.approx(ARTICLE["w1"], abs=5e-9)


def test_central_differences_agree(script):
    namespace, result = script
    assert result["worst_central"] < 1e-6
    h = 1e-6
    for k, name in enumerate(NAMES):  # recomputed here from the script's forward pass only
        up, down = list(POINT), list(POINT)
        up[k] += h
        down[k] -= h
        numeric = (namespace["record_loss"](up)[2].value - namespace["record_loss"](down)[2].value) / (2 * h)
        assert result["grads"][name] == pytest.approx(numeric, rel=1e-6), name


def test_script_length():
    lines = len(SCRIPT.read_text().splitlines())
    assert 100 <= lines <= 200, lines
