"""tape.jit's cache across processes: an unreadable file is compiled again (never a crash), the key covers every
source of tape and its folder, and ``python -m tape warmup`` leaves the common ops of Var arrays cached."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tape import kernels
from tape.bench.programs import JIT_ARRAY_RK4, JIT_NBODY
from tape.compiled import (
    jit_cache,
    warm,  # noqa: F401  # all of tape/compiled imported
)
from tape.compiled.jit_cache import SOURCE_KEY
from tape.kernels.compiling import cache_dir

COMPILES = """
import sys
import numpy as np
from numba.core import event
import tape

compiled = []
class Compiled(event.Listener):
    def on_start(self, ev):
        pass
    def on_end(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)

event.register("numba:compile", Compiled())
"""

LOWERED = COMPILES + """
f = tape.jit(lambda xs: (xs * 2.0 + xs).sum())
print(tape.grad(f)(np.array([1.0, 2.0])).tolist(), sum("binary_array" in name for name in compiled))
"""


def run(source: str, cache: Path) -> list[str]:
    env = dict(os.environ, TAPE_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, check=True,
                          env=env).stdout.split()


@pytest.mark.slow
def test_an_unreadable_cache_file_is_compiled_again_and_saved(tmp_path):
    cache = tmp_path / "cache"
    assert run(LOWERED, cache)[:2] == ["[3.0,", "3.0]"]
    files = sorted((cache / "jit" / SOURCE_KEY).glob("arrays.binary_array.*"))
    data, index = [p for p in files if p.suffix == ".nbc"], [p for p in files if p.suffix == ".nbi"]
    assert data and index
    for path in data:
        path.write_bytes(path.read_bytes()[:100])  # cut short
    assert run(LOWERED, cache)[2] != "0"  # the data unreadable: compiled again
    for path in index:
        path.write_bytes(b"not an index")
    first, second = run(LOWERED, cache), run(LOWERED, cache)
    assert first[:2] == second[:2] == ["[3.0,", "3.0]"]
    assert first[2] != "0" and second[2] == "0"  # compiled again, then saved and loaded


KEY = "import tape.compiled.jit_cache as c; print(c.SOURCE_KEY)"


def test_the_jit_cache_key_covers_every_source_of_tape_and_its_folder(tmp_path):
    """SOURCE_KEY changes with an edit of any Python file of tape (one outside tape/compiled: compiled code inlines what
    its callees read anywhere in the package, and Numba checks only a function's own file; tape.kernels' files are
    read too) and with the folder of the sources (two checkouts' processes at once overwrote each other's cache
    files); the same sources at the same place give the same key."""
    root = Path(__file__).resolve().parents[1]
    copies = [tmp_path / name for name in ("a", "b")]
    for copy in copies:
        for part in ("tape", "kernels"):
            shutil.copytree(root / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))

    def key(where: Path) -> str:
        env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
        return subprocess.run([sys.executable, "-c", KEY], cwd=where, capture_output=True, text=True, check=True,
                              env=env).stdout.strip()

    a, b = key(copies[0]), key(copies[1])
    assert len(a) == 16 and a != b and key(copies[0]) == a
    with open(copies[1] / "tape" / "sweeps" / "layout.py", "a") as file:
        file.write("\n# an edit\n")
    assert key(copies[1]) not in (a, b)
    assert SOURCE_KEY != a  # (this checkout's: another folder)
    assert str(Path(kernels.__file__).parent / "special.py") in jit_cache._package_sources()


WARMED = COMPILES + f"""
import numba
rk4 = (r'''{JIT_ARRAY_RK4}''', np.array([1.1, 0.4]), (3, 0.01, np.array([0.7, -0.4]), np.array([-0.3, 0.2])))
nbody = (r'''{JIT_NBODY}''', np.array([[0.0, 0.0], [1.0, 0.2], [-0.3, 0.9]]), (2, 0.01, np.ones(3)))
for source, x, data in (rk4, nbody):
    space = {{"tape": tape, "np": np}}
    exec(source.replace("    return y\\n", "    return y.sum()\\n"), space)
    if "rhs" in space:
        space["rhs"] = numba.njit(space["rhs"])
    tape.value_and_grad(tape.jit(space["f"]))(x, *data)
print(" ".join(sorted(set(compiled))))
"""


def test_warmup_leaves_the_ops_of_rk4_and_n_body_cached():
    """conftest ran ``python -m tape warmup``: only the programs themselves and their drivers compile."""
    assert set(run(WARMED, Path(cache_dir()))) <= {"f", "rhs", "_driver.<locals>.drive"}


def test_two_processes_saving_closures_of_one_function_never_cross_their_code(tmp_path, monkeypatch):
    """tape.jit's overloads are closures of one function, sharing one index file. Two processes compiling two of
    them at once each read the index before the other wrote it; whatever order their writes land in, an entry
    loads its own code or is a miss, never the other's (Numba's count-named data files gave the other's: wrong
    records in a later process)."""
    from numba.core import caching

    monkeypatch.setenv("TAPE_CACHE_DIR", str(tmp_path))
    folder = tmp_path / "closures"
    folder.mkdir()
    a, b = (caching.IndexDataCacheFile(str(folder), "impl-12.py311", ("stamp", 1)) for _ in range(2))
    for saver in (a, b):
        monkeypatch.setattr(saver, "_load_index", lambda: {})  # each read the index before the other saved
    late: list = []
    real_write = b._save_data
    monkeypatch.setattr(b, "_save_data", lambda name, data: late.append((name, data)))  # b's data lands last
    b.save("arccos", "code of arccos")
    a.save("arcsin", "code of arcsin")
    real_write(*late[0])
    fresh = caching.IndexDataCacheFile(str(folder), "impl-12.py311", ("stamp", 1))
    assert fresh.load("arcsin") in (None, "code of arcsin") and fresh.load("arccos") in (None, "code of arccos")
    assert fresh.load("arcsin") or fresh.load("arccos")


def test_each_cached_function_of_tape_compiled_has_its_own_name():
    """Closures of one factory (the reductions of each op) are named by what they are (own_name), and no two
    lambdas share a module: a shared name shares symbols, and one could load another's code in a cold cache."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    cached = {id(v): v for name, module in list(sys.modules.items()) if name.startswith("tape.compiled.")
              for v in vars(module).values() if isinstance(v, CPUDispatcher) and not isinstance(v._cache, NullCache)}
    names = [f"{v.py_func.__module__}.{v.py_func.__qualname__}" for v in cached.values()]
    assert len(cached) > 20 and len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)


UNARY = COMPILES + """
x = np.array([0.2, 0.4, 0.7])
terms = [f"{k + 1}.0 * np.{name}(xs).sum()" for k, name in enumerate(sys.argv[1:])]
f = tape.jit(eval("lambda xs: " + " + ".join(terms)))
value, grad = tape.value_and_grad(f)(x)
print(float(value), *grad.tolist())
print(";".join(sorted(set(compiled))))
"""


def weighted(names: list[str], x: np.ndarray) -> float:
    return sum((k + 1) * getattr(np, name)(x).sum() for k, name in enumerate(names))


@pytest.mark.slow
def test_two_processes_compiling_into_one_empty_cache_never_cross_their_code(tmp_path):
    """Two processes compile tape.jit's overloads of different ufuncs at once into one empty cache (closures of one
    factory, compiled in the same order: the same qualified name and per-process counter); a third loads them all
    into one function, and each records its own op (they shared a cache file and symbol names: arccos recorded
    arcsin)."""
    env = dict(os.environ, TAPE_CACHE_DIR=str(tmp_path))
    pair = [subprocess.Popen([sys.executable, "-c", UNARY, *names], env=env, stdout=subprocess.DEVNULL)
            for names in (["arcsin", "tan"], ["arccos", "log"])]
    assert [p.wait() for p in pair] == [0, 0]
    names = ["arcsin", "arccos", "tan", "log"]
    line, loaded = subprocess.run([sys.executable, "-c", UNARY, *names], capture_output=True, text=True, check=True,
                                  env=env).stdout.splitlines()
    x, h, got = np.array([0.2, 0.4, 0.7]), 1e-6, [float(v) for v in line.split()]
    assert got[0] == pytest.approx(weighted(names, x), rel=1e-14)
    differences = [(weighted(names, x + h * e) - weighted(names, x - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(got[1:], differences, rtol=1e-7)
    assert "impl" not in loaded, "the overloads loaded from the cache the two processes wrote"


GROWS = """
import glob, os
import tape

def grows():  # the growth cfuncs in the jit cache (saved as they compile)
    return len(glob.glob(os.path.join(os.environ["TAPE_CACHE_DIR"], "jit", "*", "*_grow*.nbi")))

f = tape.jit(lambda xs: (xs[0] * xs[1]) * 2.0 + xs[0])
small = list(tape.grad(f)([0.5, 1.5]))
before = grows()
t = tape.Tape(capacity=1)  # full at once: grown inside Numba
y = f(t.vars([0.5, 1.5]))
print(small == [4.0, 1.0], before, grows(), len(t), t.capacity >= len(t))
"""


@pytest.mark.slow
def test_the_growth_functions_compile_at_the_first_growth_not_before(tmp_path):
    """A tape that never grows does not wait for the growth cfuncs to compile (1.5 s cold); the first growth
    compiles them, and the tape keeps every record."""
    small, before, after, n, fits = run(GROWS, tmp_path)
    assert small == "True" and before == "0" and int(after) >= 1 and int(n) >= 5 and fits == "True"


DEFAULT = '''
import sys
import tape

@tape.jit
def f(xs):
    y = xs[0] * xs[1]
    if y > 0.5:
        return tape.sin(y) + xs[0] ** 2 * 0.25
    return y

g = tape.grad(f)([0.5, 1.5])
print(g == tape.grad(f.py_func)([0.5, 1.5]), g, sum(f._drive.stats.cache_hits.values()),
      "numba.np.arraymath" in sys.modules)
'''


@pytest.mark.slow  # four fresh processes
def test_a_jitted_f_with_a_file_is_cached_by_default_and_an_edit_of_its_file_compiles_again(tmp_path):
    """A second process loads f's driver (f inside) and starts none of Numba's compiler (its registries, SciPy's
    BLAS); an edit that keeps the file's size and stamp (a copy that keeps times) is still compiled again."""
    script = tmp_path / "default_f.py"
    script.write_text(DEFAULT)
    first, loaded = run_file(script, tmp_path), run_file(script, tmp_path)
    stamp = os.stat(script)
    script.write_text(DEFAULT.replace("0.25", "0.75"))  # the same size
    os.utime(script, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    edited, again = run_file(script, tmp_path), run_file(script, tmp_path)
    assert first[0] == loaded[0] == edited[0] == again[0] == "True"  # the Python recorder's gradient, bit for bit
    assert first[1:3] == loaded[1:3] != edited[1:3] == again[1:3]
    assert (first[-2], loaded[-2], edited[-2], again[-2]) == ("0", "1", "0", "1")
    assert loaded[-1] == again[-1] == "False"


def run_file(script: Path, tmp_path: Path) -> list[str]:
    env = dict(os.environ, TAPE_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, env=env,
                          cwd=tmp_path).stdout.split()


COMPOSED = """
import numpy as np
import tape
f = tape.jit(lambda x: (tape.softmax(x.reshape(40, 30), axis=-1) * x.reshape(40, 30)).sum() + np.square(x).sum())
print(float(tape.grad(f)(np.linspace(-1.0, 1.0, 1200))[7]))
"""


def test_the_python_recorder_s_functions_are_cached_by_every_source_of_tape(tmp_path):
    """tape.jit compiles the Python recorder's own functions (tape.softmax, np.square's: tape/api, tape/arrays), which
    inline array_overloads' code: they are kept in the folder of every source's key, never in their own file's
    __pycache__, which Numba keys by that file alone (an edit of array_overloads.py left tape.softmax's old machine
    code there: its logsumexp along axis 2 read as axes 0 and 1, a silent wrong value)."""
    package = Path(jit_cache.__file__).parent.parent
    before = set(package.rglob("*.nbi"))
    cache = tmp_path / "cache"
    assert run(COMPOSED, cache) == run(COMPOSED, cache)
    assert set(package.rglob("*.nbi")) == before
    kept = {p.name.split("-")[0] for p in (cache / "jit" / SOURCE_KEY).glob("*.nbi")}
    assert {"composed.softmax", "composed.log_softmax", "ufuncs.square"} <= kept, kept
