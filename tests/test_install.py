"""What an install leaves where: one import name, the Numba cache outside the package, one notice."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tape
from tape.kernels import _sweeps, compiling

ROOT = Path(__file__).resolve().parent.parent


def test_one_top_level_import_name():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert {name.split(".")[0] for name in config["packages"]} == {"tape"}
    assert config["package-dir"]["tape.kernels"] == "kernels"


def test_kernels_are_cached_outside_the_package(tmp_path):
    locator = compiling.TapeCacheLocator.from_function(_sweeps.forward_sweep.py_func, _sweeps.__file__)
    package = os.path.dirname(os.path.abspath(tape.__file__))
    assert not locator.get_cache_path().startswith(package)
    assert not locator.get_cache_path().startswith(os.path.dirname(os.path.abspath(_sweeps.__file__)))
    assert locator.get_cache_path().startswith(compiling.cache_dir())
    assert compiling.TapeCacheLocator.from_function(test_one_top_level_import_name, __file__) is None  # not ours


def run(code, cache):
    env = {**os.environ, "TAPE_CACHE_DIR": str(cache)}
    env.pop("NUMBA_CACHE_DIR", None)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          cwd=cache.parent)


def test_first_compile_says_so_once_then_loads_from_the_cache(tmp_path):
    cache = tmp_path / "cache"
    code = "import tape; print(tape.exp(0.0), tape.log(1.0))"  # compiles one small kernel (eval_op)
    first = run(code, cache)
    assert first.stdout.split() == ["1.0", "0.0"]
    assert first.stderr.count("tape: compiling Numba kernels") == 1 and str(cache) in first.stderr
    assert any(cache.rglob("*.nbi"))
    second = run(code, cache)
    assert "compiling" not in second.stderr
    in_tree = [p for p in Path(_sweeps.__file__).parent.rglob("*.nb[ic]")]
    assert not in_tree, "Numba wrote its cache into the package"


@pytest.mark.slow
def test_an_unreadable_kernel_cache_file_is_compiled_again_and_saved(tmp_path):
    cache = tmp_path / "cache"
    code = "import tape; print(tape.exp(0.0), tape.log(1.0))"
    run(code, cache)
    for suffix, spoil in (".nbc", lambda data: data[:100]), (".nbi", lambda data: b"not an index"):
        files = list(cache.rglob("*" + suffix))
        assert files
        for path in files:
            path.write_bytes(spoil(path.read_bytes()))  # cut short, then garbage
        again = run(code, cache)  # check=True: Numba's own load raised here
        assert again.stdout.split() == ["1.0", "0.0"] and "tape: compiling" in again.stderr
    last = run(code, cache)
    assert last.stdout.split() == ["1.0", "0.0"] and "compiling" not in last.stderr  # saved again


def test_cache_command(tmp_path):
    cache = tmp_path / "cache"
    shown = run("import sys; from tape.__main__ import main; sys.exit(main(['cache']))", cache)
    assert shown.stdout.strip() == str(cache)
    assert cache.exists()  # importing tape made it (Numba checks that its cache folder is writable)
    cleared = run("import sys; from tape.__main__ import main; sys.exit(main(['cache', '--clear']))", cache)
    assert "removed" in cleared.stdout and not cache.exists()


def test_warmup_compiles_every_kernel():
    from tape.__main__ import warmup

    warmup()
    called = set()  # the kernels tape calls from Python (the rest run inside them)
    for path in (ROOT / "tape").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "tape.kernels._sweeps":
                called |= {alias.name for alias in node.names}
            elif isinstance(node, ast.Call) and ast.unparse(node).startswith("Twin(_sweeps."):  # its kernels too
                called.add(node.args[0].attr)
    assert len(called) > 10
    idle = [name for name in sorted(called) if not getattr(_sweeps, name).signatures]
    assert not idle, f"python -m tape warmup leaves {idle} to compile at first use"


def test_a_source_checkout_imports_as_the_install_does(tmp_path):
    """From the repository root Python finds tape/ before any install; kernels/ then still
    becomes tape.kernels."""
    for folder in ("tape", "kernels"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    site = os.path.dirname(os.path.dirname(np.__file__))  # NumPy's and Numba's, without .pth files (-S):
    code = (f"import sys; sys.path.append({site!r}); "  # no editable install to find kernels/ elsewhere
            "import tape, tape.kernels.ops; t = tape.Tape(); x = t.var(2.0); "
            "print(tape.kernels.__file__, t.gradient(x * x, x))")
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "TAPE_CACHE_DIR": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr
    where, gradient = out.stdout.split()
    assert where == str(tmp_path / "kernels" / "__init__.py") and float(gradient) == 4.0
