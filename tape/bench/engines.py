"""The engines ``tape-bench --compare`` runs beside tape, each optional.

Every engine offers the workloads it can run in one or both modes:

- ``dynamic``: record the program and compute value and gradient from
  scratch, as a user of an operator-overloading engine does at each new point;
- ``compiled``: a one-time setup (tape.trace, CasADi Function, jax.jit), then
  one value-and-gradient call at a new point: timed per call, setup apart.

Either returns a callable that computes value and gradient and returns the
gradient (in the engine's own types).
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tape
from tape.bench import baseline, programs

SCALAR_PROGRAMS: dict[str, Callable[..., Any]] = {
    "rdag": programs.rdag, "chain": programs.chain, "rosenbrock": programs.rosenbrock, "seed": programs.seed,
    "mlp": programs.mlp}


def run_program(workload: str, plan: dict, leaves: list, fn: dict, far: Callable | None = None,
                store: list | None = None):
    """The workload's scalar program on any engine's leaves."""
    if workload == "rdag":
        assert far is not None, "the rdag reads far inputs through far(i)"
        return programs.rdag(plan, leaves, far, store, fn)
    return SCALAR_PROGRAMS[workload](plan, leaves, fn)


@dataclass
class Engine:
    name: str
    module: str | None  # the import that must succeed, or None
    workloads: tuple[str, ...]
    cap: dict[str, int] = field(default_factory=dict)  # largest size per workload (slow engines)
    dynamic: Callable | None = None  # (workload, plan) -> callable doing one value+gradient from scratch
    compiled: Callable | None = None  # (workload, plan) -> callable doing one replayed value+gradient
    note: str = ""

    def missing(self) -> str | None:
        if self.module and importlib.util.find_spec(self.module) is None:
            return f"{self.name}: not installed (pip install {self.module})"
        return None


# -- tape ---------------------------------------------------------------------------------


TAPE_FN = {"sin": tape.sin, "cos": tape.cos, "tanh": tape.tanh, "sigmoid": tape.sigmoid, "relu": tape.relu}


def tape_record(workload: str, plan: dict, keep_all: bool = False):
    """Record the workload on a fresh tape: (tape, leaves, output)."""
    t = tape.Tape(capacity=4096)
    xs = t.vars(plan["x"])
    store = list(xs) if keep_all else None
    far = store.__getitem__ if store is not None else t.__getitem__
    return t, xs, run_program(workload, plan, xs, TAPE_FN, far, store)


_JITTED: dict[str, Any] = {}


def tape_jitted(workload: str):
    """The workload's tape.jit program (programs.JITTED), compiled on its first call (cache=True)."""
    if workload not in _JITTED:
        _JITTED[workload] = tape.jit(programs.JITTED[workload], cache=True)
    return _JITTED[workload]


def tape_jit_record(workload: str, plan: dict, data: tuple | None = None):
    """Record the workload's jitted program on a fresh tape: (tape, leaves, output)."""
    t = tape.Tape(capacity=4096)
    xs = t.vars(plan["x"])
    return t, xs, tape_jitted(workload)(xs, *(programs.jit_data(workload, plan) if data is None else data))


def tape_jit_gradient(workload: str, plan: dict, data: tuple):
    """tape.value_and_grad of the workload's jitted program: record and one reverse sweep per call."""
    vg, x = tape.value_and_grad(tape_jitted(workload)), [float(v) for v in plan["x"]]
    return lambda: vg(x, *data)


def tape_array_record(workload: str, plan: dict):
    """Record the vectorized program through the array API: (tape, leaves, output)."""
    t = tape.Tape(capacity=4096)
    X = t.array(plan["x"])
    if workload == "rosenbrock":
        out = programs.rosenbrock_vectorized(X)
    else:
        out = _mlp_vectorized(X, plan["X"], plan["Y"], plan["shapes"], tape.tanh, lambda a: a.reshape(-1),
                              lambda a: a.mean())
    return t, X, out


def _dynamic(record: Callable):
    """Engine mode "dynamic" for a tape recorder: record and sweep at every call."""
    def factory(workload: str, plan: dict):
        def run():
            t, xs, out = record(workload, plan)
            return t.gradient(out, xs)

        return run

    return factory


def _compiled(record: Callable):
    """Engine mode "compiled" for a tape recorder: record once, replay value_and_grad."""
    def factory(workload: str, plan: dict):
        t, xs, out = record(workload, plan)
        F = t.function(xs, out)
        x = np.asarray(plan["x"], dtype=np.float64)
        return lambda: F.value_and_grad(x)[1]

    return factory


def tape_grad(workload: str, plan: dict):
    """One ``tape.grad(f)(x)`` call of a wrapper made once, as users write it (a flat list of floats)."""
    g = tape.grad(lambda v: run_program(workload, plan, v, TAPE_FN))
    x = [float(v) for v in plan["x"]]
    return lambda: g(x)


def tape_record_unpaced(workload: str, plan: dict, keep_all: bool = True):
    """tape_record with tape.pace_gc(False): the cost of CPython's full collections, for comparison."""
    previous = tape.pace_gc(False)
    try:
        return tape_record(workload, plan, keep_all)
    finally:
        tape.pace_gc(previous)


tape_dynamic, tape_compiled = _dynamic(tape_record), _compiled(tape_record)
tape_array_dynamic, tape_array_compiled = _dynamic(tape_array_record), _compiled(tape_array_record)


# -- scalar engines of other libraries ------------------------------------------------------


def plain_floats(workload: str, plan: dict):
    """The program over Python floats: no graph and no gradient (returns the value), the floor."""
    fn = {"sin": math.sin, "cos": math.cos, "tanh": math.tanh, "relu": lambda a: max(a, 0.0),
          "sigmoid": lambda a: 1.0 / (1.0 + math.exp(-a))}

    def run():
        leaves = list(map(float, plan["x"]))
        store = list(leaves)
        return run_program(workload, plan, leaves, fn, store.__getitem__, store)

    return run


def baseline_dynamic(workload: str, plan: dict):
    def run():
        leaves = [baseline.Node(float(v)) for v in plan["x"]]
        store = list(leaves)
        out = run_program(workload, plan, leaves, baseline.FUNCTIONS, store.__getitem__, store)
        baseline.backward(out)
        return [x.grad for x in leaves]

    return run


def micrograd_dynamic(workload: str, plan: dict):
    from micrograd.engine import Value

    def run():
        leaves = [Value(float(v)) for v in plan["x"]]
        out = run_program(workload, plan, leaves, {"relu": Value.relu})
        out.backward()
        return [x.grad for x in leaves]

    return run


def torch_dynamic(workload: str, plan: dict):
    import torch

    fn = {"sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": torch.relu}

    def run():
        leaves = [torch.tensor(float(v), dtype=torch.float64, requires_grad=True) for v in plan["x"]]
        store = list(leaves)
        out = run_program(workload, plan, leaves, fn, store.__getitem__, store)
        return torch.autograd.grad(out, leaves)

    return run


def casadi_compiled(workload: str, plan: dict):
    import casadi

    n = len(plan["x"])
    x = casadi.SX.sym("x", n)
    leaves = [x[i] for i in range(n)]
    store = list(leaves)
    fn = {"sin": casadi.sin, "cos": casadi.cos, "tanh": casadi.tanh,
          "sigmoid": lambda z: 1.0 / (1.0 + casadi.exp(-z)), "relu": lambda z: casadi.fmax(z, 0.0)}
    out = run_program(workload, plan, leaves, fn, store.__getitem__, store)
    f = casadi.Function("f", [x], [out, casadi.gradient(out, x)])
    point = np.asarray(plan["x"], dtype=np.float64)
    return lambda: f(point)[1]


# -- vectorized programs (what a NumPy, PyTorch or JAX user writes) ------------------------------


def numpy_rosenbrock(workload: str, plan: dict):
    return lambda: programs.rosenbrock_gradient_numpy(plan["x"])[1]


def torch_vectorized(workload: str, plan: dict):
    import torch

    x0 = torch.tensor(plan["x"], dtype=torch.float64)
    if workload == "rosenbrock":
        f = programs.rosenbrock_vectorized
    else:
        X = torch.tensor(plan["X"], dtype=torch.float64)
        Y = torch.tensor(plan["Y"], dtype=torch.float64)

        def f(w):
            return _mlp_vectorized(w, X, Y, plan["shapes"], torch.tanh, lambda a: a.reshape(-1), torch.mean)

    def run():
        x = x0.clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(f(x), x)
        return grad

    return run


def jax_compiled(workload: str, plan: dict):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    if workload == "rosenbrock":
        f = programs.rosenbrock_vectorized
    elif workload == "mlp":
        X, Y = jnp.asarray(plan["X"]), jnp.asarray(plan["Y"])

        def f(w):
            return _mlp_vectorized(w, X, Y, plan["shapes"], jnp.tanh, lambda a: a.reshape(-1), jnp.mean)
    else:
        fn = {"sigmoid": jax.nn.sigmoid}

        def f(x):
            return programs.seed(plan, [x[i] for i in range(len(plan["x"]))], fn)

    step = jax.jit(jax.value_and_grad(f))
    point = jnp.asarray(plan["x"])
    step(point)[1].block_until_ready()  # compile outside the timing
    return lambda: step(point)[1].block_until_ready()


def _mlp_vectorized(w, X, Y, shapes, tanh, flat, mean):
    """programs.mlp written with whole arrays (same weights layout, same loss)."""
    parts, k = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        parts.append(w[k: k + size].reshape(shape))
        k += size
    W1, b1, W2, b2, W3, b3 = parts
    a1 = tanh(X @ W1.T + b1)
    a2 = tanh(a1 @ W2.T + b2)
    e = flat(a2 @ W3.T + b3) - Y
    return mean(e * e)


SCALAR = ("rdag", "chain", "rosenbrock", "seed", "mlp")
ENGINES = [
    Engine("tape", None, SCALAR, dynamic=tape_dynamic, compiled=tape_compiled),
    Engine("plain floats (no gradient)", None, SCALAR, dynamic=plain_floats,
           note="the same loop over floats: the floor of any recorder"),
    Engine("articles' Node engine", None, SCALAR, cap={"rdag": 300_000, "chain": 300_000},
           dynamic=baseline_dynamic, note="tape/bench/baseline.py"),
    Engine("micrograd", "micrograd", ("rosenbrock",), cap={"rosenbrock": 20_000}, dynamic=micrograd_dynamic,
           note="micrograd 0.1.0 has no sin/cos/tanh/sigmoid; its recursive backward limits depth"),
    Engine("PyTorch scalar autograd", "torch", SCALAR, dynamic=torch_dynamic,
           cap={"rdag": 30_000, "chain": 30_000, "rosenbrock": 5_000, "mlp": 4}),
    Engine("CasADi SX", "casadi", SCALAR, compiled=casadi_compiled,
           cap={"rdag": 200_000, "chain": 200_000, "rosenbrock": 50_000, "mlp": 16}),
    Engine("tape, array API (VarArray)", None, ("rosenbrock", "mlp"), dynamic=tape_array_dynamic,
           compiled=tape_array_compiled, note="the vectorized program recorded a block per op"),
    Engine("NumPy, hand-written gradient", None, ("rosenbrock",), compiled=numpy_rosenbrock),
    Engine("PyTorch vectorized", "torch", ("rosenbrock", "mlp"), dynamic=torch_vectorized),
    Engine("JAX jit(value_and_grad)", "jax", ("rosenbrock", "mlp", "seed"), compiled=jax_compiled),
]


def timed_setup(factory: Callable, workload: str, plan: dict) -> tuple[float, Callable]:
    start = time.perf_counter()
    run = factory(workload, plan)
    return time.perf_counter() - start, run
