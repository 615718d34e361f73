"""Every example runs and does what it says."""

import runpy
import shutil
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(name):
    return runpy.run_path(str(EXAMPLES / name))["main"]


def test_newton_rosenbrock(capsys):
    pytest.importorskip("scipy")
    x = run("newton_rosenbrock.py")()
    np.testing.assert_allclose(x, np.ones(20), atol=1e-6)
    assert "Hessian-vector products" in capsys.readouterr().out


def test_articles_walkthrough(capsys, tmp_path):
    picture = str(tmp_path / "tape.svg") if shutil.which("dot") else None
    grads = run("articles_walkthrough.py")(picture)
    assert round(grads["w1"], 8) == -0.22032911 and round(grads["y"], 8) == 0.77397165
    out = capsys.readouterr().out
    assert "sigmoid" in out and "#11, #11" in out and "worst relative error" in out


def test_linear_model_sgd(capsys):
    losses = run("linear_model_sgd.py")()
    assert losses[-1] < 0.05 < losses[0]
    assert "w = 1.99" in capsys.readouterr().out


def test_tiny_mlp():
    losses = run("tiny_mlp.py")(steps=150)
    assert losses[-1] < 0.6 * losses[0]


def test_two_ways(capsys, tmp_path):
    sizes = run("two_ways.py")(str(tmp_path) if shutil.which("dot") else None)
    assert sizes == {"(a + b) * (a + b)": 5, "s = a + b; s * s": 4}
    assert capsys.readouterr().out.count("gradient [2.0, 2.0]") == 2


def test_nested_steering(capsys):
    losses, error, (x, y) = run("nested_steering.py")()
    assert error < 1e-7  # the outer gradient through 30 inner gradients, against central differences
    assert losses[-1] < 1e-3 * losses[0] and all(b <= a for a, b in zip(losses, losses[1:], strict=False))
    assert abs(x - 8 / 17) < 1e-9 and abs(y - (2 + 2 / 17)) < 1e-9
    assert "saddle" in capsys.readouterr().out


def test_gp_marginal_likelihood(capsys):
    value, grad = run("gp_marginal_likelihood.py")()  # checks itself against the closed form
    assert np.isfinite(value) and grad.shape == (3,)
    assert "relative difference to the closed form" in capsys.readouterr().out
