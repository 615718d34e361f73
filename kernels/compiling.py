"""How tape's kernels are compiled: the jit options, where Numba caches them, and a notice.

Cache. Numba would write its cache next to the source, into the installed package
(``site-packages/tape/kernels/__pycache__``); a reinstall or ``pip uninstall`` leaves that
folder behind, and a folder without ``__init__.py`` then shadows the next install as a
namespace package. So tape's kernels are cached outside the package, in the user's cache
directory (``~/.cache/tape`` on Linux), or in ``$TAPE_CACHE_DIR`` when set;
``$NUMBA_CACHE_DIR``, when set, is used as Numba always does. Every installed copy of tape
gets its own subfolder (keyed by its path), and Numba checks the source of every entry.
A file of tape's caches (``OWN``: the kernels', tape.jit's) that cannot be loaded (cut short, garbage, written by
other code) is a miss: its index is removed and the kernel compiled and saved again, where Numba's load would raise.

Readiness. A kernel with a stand-in (a NumPy or CPython twin that gives its bits) is called once a ``Gate`` opens:
the kernel is compiled in this process, or its stand-ins have run for a payback of seconds, one for a kernel
cached on disk (``LOAD``: about what its load costs) and one for a kernel not (about its compile).

Forks. A kernel's first load (or compile) lands in whichever thread calls it once its Gate opens, maybe while another
thread forks: the child would get the locks the load held (an import's, Numba's, LLVM's) held for good, and hang at
its own first call. So a Gate's kernel is typed and loaded under Numba's compiler lock (``Gate.call``), and a
fork waits for that lock (``os.register_at_fork`` below): it never copies a load half done.

Threads. Numba's threading layer (launched by ``numba.get_num_threads``, which the maps read for their count of
threads, and by a user's parallel kernels) is a fork-safe one (set below, unless ``NUMBA_THREADING_LAYER`` says
otherwise), so processes forked after a map can map too.

Notice. The first call of each kernel in an environment compiles it (80 s for all, once);
the first compilation in a process prints one line to stderr saying so, and
``python -m tape warmup`` compiles every kernel ahead.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from numba import njit, typeof
from numba.core import caching, event
from numba.core import config as _config
from numba.core.compiler_lock import global_compiler_lock
from numba.core.runtime import rtsys
from numba.core.typing.typeof import Purpose
from numba.misc.appdirs import AppDirs

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = HERE  # the kernels folder (tape/kernels/ once installed): only kernels are cached

jit = njit(cache=True, nogil=True, error_model="numpy")
inline = njit(cache=True, nogil=True, error_model="numpy")  # the op table's helpers: compiled once, LLVM inlines
# them into the sweeps; Numba's inline="always" compiled each again at every call (an hvp's first use +20%)


def cache_dir() -> str:
    """The folder that holds the compiled kernels of every installed copy of tape."""
    return os.environ.get("TAPE_CACHE_DIR") or AppDirs(appname="tape", appauthor=False).user_cache_dir


# public names since Numba 0.62, underscored before
_UserWide: Any = vars(caching).get("UserWideCacheLocator") or vars(caching)["_UserWideCacheLocator"]
_CacheImpl: Any = vars(caching).get("CacheImpl") or vars(caching)["_CacheImpl"]


def shaped_dir() -> str:
    """The folder of the fused runs' generated kernels (kernels/shaped.py), cached as tape's own."""
    return os.path.join(cache_dir(), "shaped")


class TapeCacheLocator(_UserWide):  # type: ignore[misc]
    """Numba's user-wide locator, for tape's own source files (and its generated ones), pointed at ``cache_dir()``."""

    def __init__(self, py_func: Any, py_file: str):
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(cache_dir(), self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        path = os.path.abspath(py_file)
        if not path.startswith(PACKAGE + os.sep) and not path.startswith(os.path.abspath(shaped_dir()) + os.sep):
            return None
        return super().from_function(py_func, py_file)


OWN: list[type] = [TapeCacheLocator]  # locators of tape's caches (tape.jit adds its own)
_numba_load = caching.Cache.load_overload


def _load_overload(self: Any, sig: Any, target_context: Any) -> Any:
    """Numba's load of a cached entry; in tape's caches, an unreadable entry is a miss (its index removed), and the
    load starts only Numba's runtime (NRT), which loaded code calls: Numba refreshes its whole target first (imports
    its typing and lowering registries, SciPy's BLAS: 0.3-0.4 CPU-s in a process's first load), which only a compile
    reads, and a compile refreshes it itself (``CompilerBase``)."""
    if not isinstance(self._impl.locator, tuple(OWN)):
        return _numba_load(self, sig, target_context)
    try:
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
    except Exception:
        with contextlib.suppress(OSError):
            os.remove(self._cache_file._index_path)
        return None


_numba_save = caching.IndexDataCacheFile.save


def _save(self: Any, key: Any, data: Any) -> None:
    """Numba's save; in tape's caches an entry's data file is named by its key, not by a count, and written before
    the index names it. tape.jit's overloads are closures of one function sharing one index: two processes saving two
    of them at once would both take data file 1, and the index could name the other's code (wrong records)."""
    if not os.path.abspath(self._cache_path).startswith(os.path.abspath(cache_dir()) + os.sep):
        return _numba_save(self, key, data)
    name = self._data_name_pattern.replace("{number:d}", hashlib.sha256(repr(key).encode()).hexdigest()[:24])
    self._save_data(name, data)
    overloads = self._load_index()
    if overloads.get(key) != name:
        overloads[key] = name
        self._save_index(overloads)
    return None


def _install_locator() -> None:
    """Put TapeCacheLocator after Numba's NUMBA_CACHE_DIR locator and before its in-tree one."""
    classes = _CacheImpl._locator_classes
    if TapeCacheLocator not in classes:
        classes.insert(1, TapeCacheLocator)
    caching.Cache.load_overload = _load_overload  # type: ignore[method-assign]
    caching.IndexDataCacheFile.save = _save  # type: ignore[method-assign]


LOAD = 0.3  # seconds of stand-ins' runs before cached kernels load: a first load costs 0.3-0.4 CPU-s (Numba's typing
# and target registries, SciPy's BLAS, each kernel's index and types); a small tape's CPython twin runs in ~1 ms, the
# fused kernels' NumPy twins a 10^6-element Rosenbrock's value_and_grad in 0.13 s
RELOAD = 0.03  # seconds a kernel, once another has loaded in this process: a later load costs 0.006-0.018 CPU-s (the
# sweeps, the fused kernels, a map), the array driver's two 0.065 (s8's notes)
EAGER = False  # set in a process that times steady state (tape-bench): every kernel at its first use, loaded or
# compiled there, no stand-in before it (Gate, the back stretches, the driver's tables, tape.jit's rows)


class Clock:
    """Seconds the stand-ins that share it have run in this process, and their last run's (what the next one will
    likely cost)."""

    def __init__(self) -> None:
        self.spent = self.last = 0.0

    def add(self, seconds: float) -> None:
        self.spent += seconds
        self.last = seconds


class Gate:
    """Whether to call kernels yet, rather than their stand-in: once they are compiled in this process, or once the
    stand-ins on ``clock`` would pass, with their next run (as long as their last), ``payback[0]`` seconds where the
    kernels are cached on disk (each looked for once), ``payback[1]`` where not: a ski rental, renting while the
    stand-ins' cost stays below the kernels' load or compile. Where cached, ``RELOAD`` a kernel once a Gate's kernel has
    loaded in this process (``loaded``); at once, cached or not, if ``EAGER``. ``ready(kernel)`` counts only the kernel
    a sweep calls: a run shape's cached reverse loads though its forward, which afresh gradients never call, was never
    compiled (their loop ran the stand-ins 1 s a shape in every process). Open for good once open (``open``: every
    kernel)."""

    loaded = False  # whether a Gate's kernel has loaded (or compiled) in this process: Numba's first load paid

    def __init__(self, kernels: Sequence[Any], payback: tuple[float, float], clock: Clock | None = None):
        self.kernels, self.payback, self.clock = tuple(kernels), payback, clock or Clock()
        self.open = False
        self.opened: set[int] = set()  # the kernels (ids) open
        self.on_disk: dict[int, bool] = {}  # by kernel id, looked for once

    def ready(self, kernel: Any = None) -> bool:
        """Whether ``kernel`` (else every kernel of the Gate) is to be called now."""
        if self.open or id(kernel) in self.opened:
            return True
        kernels = self.kernels if kernel is None else (kernel,)
        self.on_disk.update({id(k): os.path.exists(_index(k)) for k in kernels if id(k) not in self.on_disk})
        cached = RELOAD * len(kernels) if Gate.loaded else self.payback[0]
        payback = 0.0 if EAGER else cached if all(self.on_disk[id(k)] for k in kernels) else self.payback[1]
        if all(k.signatures for k in kernels) or self.clock.spent + self.clock.last >= payback:
            self.opened.update(map(id, kernels))
            self.open = self.opened.issuperset(map(id, self.kernels))
        return self.open or id(kernel) in self.opened

    def call(self, kernel: Any, *args: Any) -> Any:
        """kernel(*args), typed and loaded first under Numba's compiler lock (a fork waits for it) where it has no
        machine code in this process yet (a first call's typing can import: NumPy's ``np.ma``, outside that lock)."""
        if not kernel.overloads:
            with global_compiler_lock:
                kernel.compile(tuple(typeof(a, Purpose.argument) for a in args))
            Gate.loaded = True
        return kernel(*args)

    def timed(self, stand_in: Callable[..., Any], *args: Any) -> Any:
        """stand_in(*args), its seconds on the clock."""
        start = time.perf_counter()
        try:
            return stand_in(*args)
        finally:
            self.clock.add(time.perf_counter() - start)


def _index(kernel: Any) -> str:
    """The file that lists a kernel's cached entries ("" where it has no cache)."""
    return getattr(getattr(kernel._cache, "_cache_file", None), "_index_path", "")


class _FirstCompile(event.Listener):
    """Prints one line at the first compilation of a tape kernel in this process."""

    said = False

    def on_start(self, ev: Any) -> None:
        if self.said:
            return
        module = getattr(ev.data["dispatcher"].py_func, "__module__", "") or ""
        if module.startswith(__package__ or "tape.kernels"):
            self.said = True
            print(f"tape: compiling Numba kernels for this environment, once (about 2 s for a first gradient, "
                  f"arrays too, 80 s for every kernel; then loaded from {cache_dir()}; `python -m tape warmup` "
                  "compiles them ahead)",
                  file=sys.stderr)

    def on_end(self, ev: Any) -> None:
        pass


_install_locator()
if hasattr(os, "register_at_fork"):  # a fork waits for a load or compile in another thread (Gate.call)
    os.register_at_fork(before=global_compiler_lock.acquire, after_in_parent=global_compiler_lock.release,
                        after_in_child=global_compiler_lock.release)
event.register("numba:compile", _FirstCompile())

# Numba's threading layer: a fork-safe one unless the user chose (NUMBA_THREADING_LAYER).
# GNU OpenMP, Numba's pick on Linux without TBB, kills a fork child that maps once the parent has
# mapped; "forksafe" picks TBB if installed, else workqueue, which maps as fast here (measured: seed
# example 17.0 M points/s on 2 threads either way, a 10^4-record tape 13.6k vs 14.0k points/s).
config: Any = _config  # numba's settings module (its attributes are made at run time)
if not os.environ.get("NUMBA_THREADING_LAYER") and config.THREADING_LAYER == "default":
    config.THREADING_LAYER = "forksafe"
