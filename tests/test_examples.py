"""Every example runs and does what it says."""

import runpy
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_newton_rosenbrock(capsys):
    pytest.importorskip("scipy")
    x = runpy.run_path(str(EXAMPLES / "newton_rosenbrock.py"))["main"]()
    np.testing.assert_allclose(x, np.ones(20), atol=1e-6)
    assert "Hessian-vector products" in capsys.readouterr().out
