"""The kernels' CPython twins (tape/kernels/twins.py) give the compiled kernels' bits: every scalar op, at edge
values, through traces, values, gradients, J v, Jacobians, H v, Hessians, gradient tapes and sparse patterns;
and they stand in only while a kernel is neither compiled nor cached, on small tapes, for a while."""

import ast
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import tape
from tape.analyses import cse, prune
from tape.function import derivatives, maps, replay, sparse_hessian, sparse_jacobian
from tape.kernels import compiling, hessian_sparsity, sparsity, twins
from tape.records import storage
from tape.sweeps import compiled, driver, live, tangents

EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 1e-300,
                  710.0, -745.0, 1e-8, 0.75, -0.3, 7.0])
UNARY = ("exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "log1p", "expm1", "exp2", "log2",
         "log10", "cbrt", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "erf", "erfc",
         "lgamma", "floor", "ceil", "trunc", "rint", "sign", "stop_gradient")
BINARY = ("maximum", "minimum", "arctan2", "hypot", "logaddexp", "fmax", "fmin")


def _terms(x):
    """Every scalar op of the table on pairs of the inputs (and constants), one term each."""
    out = []
    for u, w in ((x[0], x[1]), (x[2], x[3]), (x[1], x[2])):
        out += [u + w, u - w, u * w, u / w, u ** w, u + 2.5, 2.5 - u, u * 2.5, u / 2.5, 2.5 / u, u ** 2.5, u ** 2.0,
                2.5 ** u, tape.maximum(u, 2.5), tape.minimum(u, -0.0), -u, abs(u), tape.where(u < w, u * w, w - u),
                tape.where(u >= 0.5, u, w) + tape.where(u == w, u, 1.0) * tape.where(u != 0.0, w, u)]
        out += [getattr(tape, name)(u) for name in UNARY] + [getattr(tape, name)(u, w) for name in BINARY]
    return out


def _total(x):
    return sum(t * (0.5 + k / 64) for k, t in enumerate(_terms(x)))


def _bits(a):
    """a's bits, every NaN as +NaN: NumPy's scalar nan + -nan is the second's NaN, the kernels' the first's (IEEE
    leaves it open)."""
    a = np.asarray(a)
    return np.where(np.isnan(a), np.nan, a).tobytes() if a.dtype.kind == "f" else a.tobytes()


@tape.jit(cache=False)
def _jitted(xs):
    """tape.jit's first gradient sweeps fresh_reverse, then fresh_reverse_from past the grouped ops (hypot, log1p)."""
    u = xs[0] * xs[1] + tape.sin(xs[2]) / xs[3] - tape.exp(xs[1]) * xs[0] ** xs[3]
    v = tape.log1p(u) * tape.maximum(xs[2], xs[0])
    return tape.hypot(v, xs[0]) * xs[2] + v * v + tape.logaddexp(u, xs[3]) * tape.where(u < v, u, v * xs[1])


def _arrays(F):
    """The bits of every array a Function holds (values, partials, second partials, adjoints, tangents...)."""
    return {k: _bits(v) for k, v in vars(F).items() if isinstance(v, np.ndarray)}


MODULES = (derivatives, maps, replay, sparse_hessian, sparse_jacobian, prune, cse, live, driver, tangents, storage,
           hessian_sparsity, sparsity)


def _sites():
    """(module, name, kernel) where a module binds a Twin (read from its source: a ready Twin puts its kernel there)."""
    out = []
    for m in MODULES:
        for node in ast.walk(ast.parse(inspect.getsource(m))):
            if isinstance(node, ast.Assign) and "Twin(" in ast.unparse(node.value):
                names = node.targets[0].elts if isinstance(node.targets[0], ast.Tuple) else node.targets
                for target in names:
                    value = getattr(m, target.id)
                    out.append((m, target.id, value.kernel if isinstance(value, twins.Twin) else value))
    return out


SITES = _sites()


def test_every_twinned_kernel_is_bound_somewhere():
    assert {kernel.py_func.__name__ for _, _, kernel in SITES} == set(twins.TWINNED)


def _everything(twinned, monkeypatch):
    """Results and held arrays of each kind of first use, by the twins (forced) or by the kernels."""
    monkeypatch.setattr(twins, "ENABLED", twinned)  # (conftest's warmup turned the twins off)
    if twinned:
        for module, name, kernel in SITES:
            twin = twins.Twin(kernel, vars(module))
            monkeypatch.setattr(twin.gate, "ready", lambda: False)
            monkeypatch.setattr(module, name, twin)
    rng = np.random.default_rng(5)
    points = [rng.choice(EDGES, 4) for _ in range(60)] + [rng.normal(size=4) * 10.0 ** rng.integers(-5, 5, 4)
                                                          for _ in range(20)]
    out = []
    with np.errstate(all="ignore"):
        Fv, Fs = tape.trace(_terms, np.full(4, 0.3)), tape.trace(_total, np.full(4, 0.3))
        Fp = tape.trace(_total, np.full(4, 0.3), prune=False, cse=False)
        A = tape.trace(lambda x: (tape.sin(x) * x[0]).sum() * tape.exp(x[1]) + x[2] * x[3], np.full(4, 0.3))  # arrays,
        # scalar records between them
        out += [_arrays(Fv), _arrays(Fs), _arrays(Fp)]
        for x in points:
            v = np.roll(x, 1)
            G = Fs.grad_function()
            results = [Fv(x), Fv.jvp(x, v), Fv.vjp(x, v[:1].repeat(Fv.n_outputs)), Fv.jacobian(x, mode="forward"),
                       Fv.jacobian(x, mode="reverse"), Fs.value_and_grad(x), Fs.hvp(x, v), Fs.hessian(x), G(x),
                       G.jacobian(x), Fp.hvp(x, v), A.hvp(x, v), A.hessian(x), A.value_and_grad(x)]
            out += [_bits(np.asarray(r if not isinstance(r, tuple) else np.hstack(r), float)) for r in results]
            out += [_arrays(Fv), _arrays(Fs), _arrays(Fp), _arrays(G)]
            t = tape.Tape()
            xs = [t.var(float(value)) for value in x]
            g = t.gradient(_total(xs), xs)  # a Tape's sweep: it adds to adjoints (the records it reached)
            out += [_bits(g), _bits(t._adj[:t._n][t._stamp[:t._n] == t._gen])]
            out += [_bits(np.hstack(tape.value_and_grad(_jitted)(x)))]
            X, V = np.stack([x, v]), np.stack([v, x])  # two points: records x points within a map twin's SMALL
            out += [_bits(Fs.map(X)), *map(_bits, Fs.map_value_and_grad(X)), _bits(Fv.map_jvp(X, V)),
                    _bits(Fv.map_vjp(X, np.ones((2, Fv.n_outputs))))]
        S = tape.trace(lambda x: x[0] * x[1] + tape.sin(x[2]) * x[3] ** 2 + x[1] / x[3], np.full(4, 0.3))
        out += [_bits(S.hessian_sparsity().toarray()), _bits(S.jacobian_sparsity().toarray()),
                _bits(S.sparse_hessian(np.arange(1.0, 5.0)).toarray())]
    return out


def test_twins_give_the_kernels_bits(monkeypatch):
    calls = []
    python = twins.python
    monkeypatch.setattr(twins, "python", lambda f: calls.append(f.__name__) or python(f))
    with monkeypatch.context() as m:
        twinned = _everything(True, m)
    assert {"replay", "replay_gradient", "replay_partials", "reverse_vector",
            "tangent_sweep", "merge", "compact", "mark_varying", "mark_reaching", "reach",
            "star_coloring", "recover", "_extend_sets", "gather_rows", "color_columns",
            "reverse_sweep", "reverse_second_range", "reverse_range", "map_values", "map_gradients",
            "map_tangents", "fresh_reverse", "fresh_reverse_from"} <= set(calls)
    compiled = _everything(False, monkeypatch)
    assert len(twinned) == len(compiled)
    for k, (a, b) in enumerate(zip(twinned, compiled, strict=True)):
        assert a == b, k


def test_libm_is_what_numba_calls():
    """Each math function the twins take from libm gives Numba's bits on many values, edges included."""
    import math

    import numba

    rng = np.random.default_rng(3)
    xs = np.concatenate([EDGES, -EDGES, rng.normal(size=3000) * 10.0 ** rng.uniform(-8, 3, 3000)])
    ys = rng.permutation(xs)
    for name in twins.LIBM:
        two = name in ("atan2", "hypot", "pow")
        space = {}
        exec(f"def kernel(a, b):\n    return math.{name}(a{', b' if two else ''})", {"math": math}, space)
        kernel = numba.njit(space["kernel"])
        c = twins._c(name)
        for a, b in zip(xs, ys, strict=True):
            got = c(a, b) if two else c(a)
            want = kernel(a, b)
            assert np.float64(got).tobytes() == np.float64(want).tobytes(), (name, a, b)


def test_twin_stands_in_only_while_it_should(monkeypatch, tmp_path):
    import numba

    def replay(x):  # (a name in TWINNED: tape argument 0, SMALL records)
        x[:] *= 2.0
        return len(x)

    monkeypatch.setattr(twins, "ENABLED", True)
    monkeypatch.setattr(twins, "CLOCK", twins.Clock())
    runs = []
    monkeypatch.setattr(twins, "python", lambda f: lambda *a: runs.append(1) or f(*a))
    kernel = numba.njit(replay)
    space = {}
    space["f"] = twin = twins.Twin(kernel, space)
    x = np.ones(3)
    assert twin(x) == 3 and not kernel.signatures and runs == [1] and x.tobytes() == np.full(3, 2.0).tobytes()
    assert twin(np.ones(twins.SMALL + 1)) == twins.SMALL + 1 and kernel.signatures  # a large tape: the kernel
    assert space["f"] is twin
    assert twin(x) == 3 and runs == [1] and space["f"] is kernel  # compiled: bound where the Twin was, from now on
    late = twins.Twin(numba.njit(replay), {})
    twins.CLOCK.spent = twins.PAYBACK  # the twins have run long enough: compile
    assert late(x) == 3 and late.kernel.signatures and runs == [1]


def test_a_cached_kernel_loads_once_the_twins_ran_a_while(monkeypatch, tmp_path):
    """Cached on disk: the twin runs LOAD seconds first (a small tape's twin costs less than a load), not PAYBACK."""
    from types import SimpleNamespace

    calls, index = [], tmp_path / "index.nbi"
    index.write_text("")

    class Cached:  # a dispatcher's face: cached on disk, not compiled in this process
        signatures, overloads = [], {}
        _cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=index))
        py_func = SimpleNamespace(__name__="replay")

        def compile(self, sig):  # (a load: Gate.call)
            pass

        def __call__(self, *args):
            calls.append("kernel")

    monkeypatch.setattr(twins, "ENABLED", True)
    monkeypatch.setattr(compiling, "EAGER", False)
    monkeypatch.setattr(twins, "CLOCK", twins.Clock())
    monkeypatch.setattr(twins, "python", lambda f: lambda *a: calls.append("twin"))
    twin = twins.Twin(Cached(), {})
    twin(np.ones(2))
    twins.CLOCK.spent = (twins.LOAD + twins.PAYBACK) / 2  # past LOAD, short of PAYBACK
    twin(np.ones(2))
    assert calls == ["twin", "kernel"] and twins.LOAD < twins.PAYBACK
    monkeypatch.setattr(compiling, "EAGER", True)  # a long-running process (tape-bench): a cached kernel at once
    monkeypatch.setattr(twins, "CLOCK", twins.Clock())
    twins.Twin(Cached(), {})(np.ones(2))
    assert calls[2:] == ["kernel"]


def test_the_gate_rents_stand_ins_while_their_next_run_keeps_them_below_the_load(monkeypatch, tmp_path):
    """A ski rental: the kernels once the stand-ins' seconds with their next run (as long as their last) reach the
    payback (one run of 0.6 of it: the kernel at the second call, not the third), and RELOAD a kernel once a Gate's
    kernel has loaded in this process (Numba's first load paid: a later one costs ~10 ms); Gate.call sets that."""
    from types import SimpleNamespace

    index = tmp_path / "index.nbi"
    index.write_text("")

    class Kernel:  # a dispatcher's face: cached on disk (or not), not loaded in this process
        def __init__(self, cached=True):
            self.signatures, self.overloads = [], {}
            self._cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=index if cached else ""))

        def compile(self, sig):
            self.overloads = {sig: "loaded"}

        def __call__(self, *args):
            return "kernel"

    monkeypatch.setattr(compiling, "EAGER", False)
    monkeypatch.setattr(compiling.Gate, "loaded", False)

    def opens_after(*runs, cached=True):
        gate = compiling.Gate((Kernel(cached),), (1.0, 2.0))
        for seconds in runs:
            assert not gate.ready()
            gate.clock.add(seconds)
        return gate.ready()

    assert opens_after(0.6) and not opens_after(0.4) and opens_after(0.4, 0.4) and not opens_after(0.1, 0.1, 0.1)
    gate = compiling.Gate((Kernel(),), (1.0, 2.0))
    assert gate.call(gate.kernels[0], np.ones(2)) == "kernel" and compiling.Gate.loaded
    assert opens_after(compiling.RELOAD / 2 + 1e-9) and not opens_after(compiling.RELOAD / 3)
    assert opens_after(1.0, cached=False) and not opens_after(0.9, cached=False)  # (not cached: a compile's payback)
    monkeypatch.setattr(compiling, "EAGER", True)  # (tape-bench: steady state at once, compiled or loaded)
    assert opens_after(cached=False) and opens_after()


def test_eager_takes_every_kernel_at_its_first_use(monkeypatch):
    """compiling.EAGER (tape-bench's steady state): beside Gate's, the rentals with clocks of their own call their
    kernels at once, compiled there where not cached: a back stretch's, a Function's tables' kernels (compiled.ready's
    wanted), tape.jit's driven rows' (array_calls._kernel_at); without it each stands in first."""
    from types import SimpleNamespace

    from tape.compiled import array_calls
    from tape.sweeps import compiled, stretches

    compiles = []
    kernel = SimpleNamespace(compile=lambda: compiles.append("stretch"), address=1,
                             _cache=SimpleNamespace(_cache_file=SimpleNamespace(_index_path="")))
    monkeypatch.setattr(compiled, "_gate", SimpleNamespace(ready=lambda: True))  # (the drivers: Gate's)
    monkeypatch.setattr(array_calls, "_make", lambda cell: compiles.append("forward"))
    monkeypatch.setattr(array_calls.array_kernels, "make", lambda slots: compiles.append("row"))
    monkeypatch.setattr(array_calls, "_far", set())
    monkeypatch.setattr(array_calls, "CLOCK", compiling.Clock())
    for eager in (False, True):
        monkeypatch.setattr(compiling, "EAGER", eager)
        stretch = stretches.Stretch(("shape",))
        stretch.kernel = kernel
        s = SimpleNamespace(_wanted={-7}, _swept=0.0)  # (a slot neither made nor cached)
        assert (stretch.ready(), compiled.ready(s, {}), array_calls._kernel_at(-7)) == (eager, eager, int(eager))
    assert compiles == ["stretch", "forward", "row"]


def test_a_gate_asked_for_one_kernel_counts_only_that_kernels_cache(monkeypatch, tmp_path):
    """ready(kernel) opens on that kernel's cache alone (LOAD where it is cached, though another kernel of the Gate is
    not), ready() on every kernel's; open (for every kernel) once each has opened, and for good."""
    from types import SimpleNamespace

    index = tmp_path / "index.nbi"
    index.write_text("")

    class Kernel:  # a dispatcher's face, not loaded in this process
        def __init__(self, cached):
            self.signatures = []
            self._cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=index if cached else ""))

    monkeypatch.setattr(compiling, "EAGER", False)
    monkeypatch.setattr(compiling.Gate, "loaded", False)
    forward, reverse = Kernel(cached=False), Kernel(cached=True)
    gate = compiling.Gate((forward, reverse), (1.0, 2.0))
    gate.clock.add(0.6)  # past LOAD (with the next run), short of the compile's payback
    assert not gate.ready() and not gate.ready(forward) and gate.ready(reverse) and not gate.open
    assert gate.ready(reverse) and not gate.ready(forward) and not gate.ready()
    gate.clock.add(0.9)  # past the compile's payback
    assert gate.ready(forward) and gate.open and gate.ready()
    gate.clock.spent = gate.clock.last = 0.0
    assert gate.ready(forward) and gate.ready(reverse)  # (for good)
    forward.signatures = ["compiled"]  # compiled in this process: open, though not cached
    gate = compiling.Gate((forward, reverse), (1.0, 2.0))
    assert gate.ready(forward) and not gate.ready(reverse) and not gate.open


CACHED_REVERSE = """
import sys
import numpy as np
import tape
from tape.kernels import compiling
from tape.sweeps import fused_runs
if sys.argv[1] == "fill":
    fused_runs.Shaped.eager = True  # the shape's kernels at once: an afresh gradient compiles its reverse only
else:
    compiling.EAGER = True  # cached kernels at their first use (a user's: after LOAD seconds of stand-ins)
u = np.random.default_rng(0).normal(size=2**16)  # a tape's reverse fuses runs of TAPE_RUNS elements
tape.value_and_grad(lambda u: (u[1:] * u[:-1] - 0.5 * u[1:]).sum())(u)
print([(bool(s.kernels.forward.overloads), bool(s.kernels.reverse.overloads)) for s in fused_runs.Shaped.made.values()])
"""


def test_a_run_shapes_cached_reverse_loads_though_its_forward_never_compiled(tmp_path):
    """A run shape that only afresh gradients use never compiles its forward kernel: in a fresh process, its cached
    reverse kernel loads (the Gate asks for the kernel the sweep calls), not the stand-ins for a compile's payback."""
    script = tmp_path / "cached_reverse.py"
    script.write_text(CACHED_REVERSE)
    env = {**os.environ, "TAPE_CACHE_DIR": str(tmp_path / "cache")}
    for mode in ("fill", "check"):
        result = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, timeout=300,
                                env=env)
        assert result.returncode == 0 and result.stdout.strip() == "[(False, True)]", (mode, result.stderr[-3000:])


def test_a_map_twin_serves_at_most_small_records_times_points(monkeypatch):
    """A map's work is its records times its points: SMALL of them, not SMALL points of a longer tape."""
    from tape.kernels import _sweeps

    F = tape.trace(lambda x: (x[0] * x[1] + tape.sin(x[0])) * x[1] - x[0] / 3.0, np.zeros(2))
    few = twins.SMALL // len(F._op)
    assert 1 < few < twins.SMALL // 2
    runs, python = [], twins.python
    monkeypatch.setattr(twins, "ENABLED", True)
    monkeypatch.setattr(twins, "python", lambda f: lambda *a: runs.append(len(a[8])) or python(f)(*a))
    twin = twins.Twin(_sweeps.map_values, vars(maps))
    monkeypatch.setattr(twin.gate, "ready", lambda: False)
    monkeypatch.setattr(maps, "map_values", twin)
    for points in (few, few + 1):
        X = np.linspace(-2.0, 3.0, 2 * points).reshape(points, 2)
        assert np.array_equal(F.map(X).ravel(), [F(x) for x in X])
    assert runs == [few]  # few + 1 points: the kernel


def test_numpys_steps_call_reverse_range_where_the_driver_binds_it(monkeypatch):
    """An array program's scalar records between array records reach reverse_range through driver's binding (its
    Twin until the kernel is ready), in NumPy's steps too: a small MLP's first gradient then loads no kernel."""
    calls, kernel = [], driver.reverse_range
    monkeypatch.setattr(driver, "reverse_range", lambda *a: calls.append(1) or kernel(*a))
    monkeypatch.setattr(compiled, "ready", lambda s, runs: False)  # NumPy's steps
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(32, 64)), rng.normal(size=32)

    def mlp(th):  # bench/array_programs.py's mlp
        r = np.tanh(X @ th[:4096].reshape(64, 64) + th[4096:4160]) @ th[4160:] - y
        return (r * r).mean()

    theta = rng.normal(scale=0.1, size=4224)
    tape.trace(mlp, theta).value_and_grad(theta)
    assert calls


@pytest.mark.parametrize("error", [ZeroDivisionError, OverflowError])
def test_an_arithmetic_error_runs_the_kernel_on_the_arrays_as_they_were(monkeypatch, error):
    import numba

    def reverse_sweep(x, adj):  # adds to what it finds, as an adjoint sweep does
        for k in range(len(x)):
            adj[k] += x[k]
        return adj.sum()

    def fails(x, adj):
        adj += 5.0  # (written before the error)
        raise error

    kernel = numba.njit(reverse_sweep)
    twin = twins.Twin(kernel, {})
    monkeypatch.setattr(twins, "ENABLED", True)
    monkeypatch.setattr(twins, "CLOCK", twins.Clock())
    monkeypatch.setattr(twins, "python", lambda f: fails)
    adj = np.full(2, 0.5)
    assert twin(np.ones(2), adj) == 3.0 and adj.tolist() == [1.5, 1.5] and kernel.signatures


FORK_AMID_A_LOAD = """
import faulthandler, importlib.abc, os, sys, threading, time
import numpy as np
from numba.core import caching
import tape
from tape.kernels import twins
from tape.sweeps import compiled, fused_runs

def program(kind):
    if kind == "array":  # the fused kernels' and the array driver's Gates
        F = tape.trace(lambda x: (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum(), np.full(3000, 0.5))
        return lambda k: F.value_and_grad(np.full(3000, 0.5 + k))[1]
    F = tape.trace(lambda v: tape.sin(v[0]) * v[1] + tape.exp(v[2] * v[0]) - v[1] ** 3, [0.1, 0.2, 0.3])
    X = np.random.default_rng(0).normal(size=(16, 3))
    return (lambda k: F.map(X + k)) if kind == "map" else (lambda k: F.value_and_grad(X[0] + k)[1])

call = program(sys.argv[1])
expected = call(1.0)  # stand-ins: every lazy import of the call made, no kernel loaded
loading, paused = threading.Event(), []

def pause():  # the first import or cache load of the thread's hand-over to its kernel: held a while
    if threading.current_thread() is loader and not paused:
        paused.append(1)
        loading.set()
        time.sleep(1.0)

class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, *args):
        pause()

load_overload = caching.Cache.load_overload
caching.Cache.load_overload = lambda self, *args: pause() or load_overload(self, *args)
sys.meta_path.insert(0, Finder())
twins.CLOCK.spent = compiled.CLOCK.spent = 1e9
fused_runs.FORWARD.gate.clock.spent = fused_runs.REVERSE.gate.clock.spent = 1e9
loader = threading.Thread(target=call, args=(2.0,))
loader.start()
assert loading.wait(120), "no kernel loaded in the thread"
pid = os.fork()  # amid the thread's load: the fork waits for it to end
if pid == 0:
    faulthandler.dump_traceback_later(20, exit=True)  # (a child stuck on a lock the load held: exit 1)
    os._exit(0 if np.array_equal(call(1.0), expected) else 3)
status = os.waitpid(pid, 0)[1]
loader.join()
print("child", status)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
@pytest.mark.parametrize("kind", ["map", "value_and_grad", "array"])
def test_a_fork_amid_a_kernels_load_in_another_thread_gets_a_working_child(tmp_path, kind):
    """A thread's first call of a kernel once its Gate opens (a map's, a gradient's, the fused and array driver's) may
    load it while the main thread forks: the child maps and differentiates (it did not inherit the load's locks)."""
    script = tmp_path / "fork.py"
    script.write_text(FORK_AMID_A_LOAD)
    result = subprocess.run([sys.executable, str(script), kind], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "child 0", result.stderr[-3000:]


def test_a_range_kernels_twin_serves_the_records_it_sweeps(monkeypatch):
    """forward_sweep (forward_range, reverse_range, reverse_second_range) sweeps the records between two bounds: its
    twin serves SMALL of those whatever the tape's length (an array program's scalar records between two array
    records: Burgers' first gradient compiled two kernels for its last 2 records, 1.5-2 CPU-s), the kernel more."""
    from tape.kernels import _sweeps

    t = tape.Tape()
    x = t.var(0.5)
    y = x
    for _ in range(twins.SMALL + 100):
        y = y * 1.0001 + 0.1
    n = len(t)
    arrays = [a.copy() for a in (t._op, t._in0, t._in1, t._val, t._consts)]
    runs, python = [], twins.python
    monkeypatch.setattr(twins, "ENABLED", True)
    monkeypatch.setattr(twins, "python", lambda f: lambda *a: runs.append(a[6] - a[5]) or python(f)(*a))
    twin = twins.Twin(_sweeps.forward_sweep, {})
    monkeypatch.setattr(twin.gate, "ready", lambda: False)
    want = arrays[3].copy()
    _sweeps.forward_sweep(*arrays[:3], want, arrays[4], 1, n)
    got = arrays[3].copy()
    got[n - 50:n] = np.nan
    twin(*arrays[:3], got, arrays[4], n - 50, n)
    assert runs == [50] and np.array_equal(got[:n], want[:n])
    twin(*arrays[:3], got, arrays[4], 1, n)  # (more than SMALL: the kernel)
    assert runs == [50] and np.array_equal(got[:n], want[:n])
    assert all(isinstance(twins.TWINNED[name][0], slice) for name in ("forward_sweep", "forward_range",
                                                                        "reverse_range", "reverse_second_range"))
