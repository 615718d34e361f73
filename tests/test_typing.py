"""A type checker sees the public API: mypy on ordinary user code (the examples of README.md and
docs/guide.md), and on the package itself."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tape.kernels.compiling import cache_dir

ROOT = Path(__file__).resolve().parent.parent
CONFIG = """[mypy]
[mypy-numba.*,llvmlite.*,scipy.*,dask.*,distributed.*,matplotlib.*,micrograd.*,casadi.*,jax.*,torch.*]
ignore_missing_imports = True
"""


def installed_layout(site: Path) -> None:
    """tape as pip installs it (kernels/ inside the package), which an editable install hides from mypy."""
    shutil.copytree(ROOT / "tape", site / "tape", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "kernels", site / "tape" / "kernels", ignore=shutil.ignore_patterns("__pycache__"))


def mypy(tmp_path: Path, *targets: str) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy")
    if not (tmp_path / "site").exists():
        installed_layout(tmp_path / "site")
        (tmp_path / "mypy.ini").write_text(CONFIG)
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(tmp_path / "mypy.ini"),
                           "--cache-dir", str(Path(cache_dir()) / "mypy"), *targets],  # kept: rechecks what changed
                          cwd=tmp_path, env={"MYPYPATH": str(tmp_path / "site"), "PATH": ""},
                          capture_output=True, text=True)


def test_user_code_type_checks(tmp_path):
    user_code = shutil.copy(ROOT / "tests" / "typing" / "user_code.py", tmp_path / "user_code.py")
    result = mypy(tmp_path, user_code)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (ROOT / "tape" / "py.typed").exists()


def test_mistakes_in_user_code_are_caught(tmp_path):
    """The types are real, not Any: a wrong use is an error."""
    (tmp_path / "wrong.py").write_text("import tape\nt = tape.Tape()\nname: str = tape.exp(t.var(1.0)) * 2\n"
                                       "also: int = t.array([1.0, 2.0]).sum()\n")
    result = mypy(tmp_path, str(tmp_path / "wrong.py"))
    assert result.returncode == 1 and result.stdout.count("error:") == 2, result.stdout


def test_the_package_type_checks(tmp_path):
    result = mypy(tmp_path, "-p", "tape")
    assert result.returncode == 0, result.stdout + result.stderr


def test_user_code_runs():
    subprocess.run([sys.executable, str(ROOT / "tests" / "typing" / "user_code.py")], check=True,
                   capture_output=True)
