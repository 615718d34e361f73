"""tape-bench's array workloads: whole-array programs at real sizes, against hand-written NumPy.

Each workload is a function of one NumPy array, written once with NumPy operators
(it runs on VarArrays, which record one array record per op), a hand-derived
NumPy value-and-gradient (the floor for any AD), and where installed the same
function under PyTorch autograd and JAX's jit(value_and_grad), each on one thread.
Every row is timed interleaved with the others in one process; ratios are to the
hand-written NumPy (lower is better, 1.0 is the floor). The rows are steady state: the first calls (reported
apart) compile or load every kernel they use, with no stand-in before it (compiling.EAGER, set by tape-bench).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tape
from tape.bench import programs


def rosenbrock(size: int) -> dict:
    x = np.random.default_rng(0).uniform(-1.0, 1.0, size)
    return {"x": x, "f": programs.rosenbrock_vectorized, "hand": programs.rosenbrock_gradient_numpy,
            "torch": programs.rosenbrock_vectorized, "jax": programs.rosenbrock_vectorized}


def mlp(batch: int) -> dict:
    """784-512-10 tanh network, softmax cross-entropy over a batch: one training step."""
    rng = np.random.default_rng(0)
    X, onehot = rng.normal(size=(batch, 784)), np.eye(10)[rng.integers(0, 10, batch)]
    sizes = [(784, 512), (512,), (512, 10), (10,)]
    cuts = np.cumsum([0] + [int(np.prod(s)) for s in sizes]).tolist()
    theta = np.concatenate([rng.normal(scale=0.05, size=s).ravel() for s in sizes])

    def unpack(th: Any) -> list:
        return [th[cuts[k]:cuts[k + 1]].reshape(sizes[k]) for k in range(4)]

    def f(th: Any, lse: Callable = tape.logsumexp, tanh: Callable = tape.tanh, data: tuple = (X, onehot)) -> Any:
        W1, b1, W2, b2 = unpack(th)
        logits = tanh(data[0] @ W1 + b1) @ W2 + b2
        return (lse(logits, axis=1) - (logits * data[1]).sum(axis=1)).mean()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        W1, b1, W2, b2 = unpack(th)
        h = np.tanh(X @ W1 + b1)
        z = h @ W2 + b2
        e = np.exp(z - z.max(axis=1, keepdims=True))
        s = e.sum(axis=1, keepdims=True)
        value = float(np.mean(np.log(s[:, 0]) + z.max(axis=1) - (z * onehot).sum(axis=1)))
        dz = (e / s - onehot) / batch
        da = (dz @ W2.T) * (1.0 - h * h)
        return value, np.concatenate([(X.T @ da).ravel(), da.sum(0), (h.T @ dz).ravel(), dz.sum(0)])

    def torch_f(th: Any) -> Any:
        import torch
        data = (torch.as_tensor(X), torch.as_tensor(onehot))
        return f(th, lambda z, axis: torch.logsumexp(z, dim=axis), torch.tanh, data)

    def jax_f(th: Any) -> Any:
        import jax
        return f(th, lambda z, axis: jax.scipy.special.logsumexp(z, axis=axis), jax.numpy.tanh, (X, onehot))

    return {"x": theta, "f": f, "hand": hand, "torch": torch_f, "jax": jax_f}


def stencil(n: int) -> dict:
    """Half the squared residual of -Δu = 1 on an n x n grid, the 5-point stencil: a PDE least-squares loss."""
    m = max(int(round(n ** 0.5)), 3)
    u0 = np.random.default_rng(0).normal(size=(m, m))

    def f(u: Any) -> Any:
        r = 4.0 * u[1:-1, 1:-1] - u[2:, 1:-1] - u[:-2, 1:-1] - u[1:-1, 2:] - u[1:-1, :-2] - 1.0
        return 0.5 * (r * r).sum()

    def hand(u: np.ndarray) -> tuple[float, np.ndarray]:
        r = 4.0 * u[1:-1, 1:-1] - u[2:, 1:-1] - u[:-2, 1:-1] - u[1:-1, 2:] - u[1:-1, :-2] - 1.0
        g = np.zeros_like(u)
        g[1:-1, 1:-1] += 4.0 * r
        g[2:, 1:-1] -= r
        g[:-2, 1:-1] -= r
        g[1:-1, 2:] -= r
        g[1:-1, :-2] -= r
        return 0.5 * float((r * r).sum()), g

    return {"x": u0, "f": f, "hand": hand, "torch": f, "jax": f}


def logistic(samples: int) -> dict:
    """Mean logistic loss of a linear model with 100 features over ``samples`` labelled points."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(samples, 100)) / 10.0
    y = np.where(rng.random(samples) < 0.5, -1.0, 1.0)
    w0 = rng.normal(size=100)

    def f(w: Any, exp: Callable = tape.exp, log: Callable = tape.log, data: tuple = (X, y)) -> Any:
        return log(1.0 + exp(-data[1] * (data[0] @ w))).mean()

    def hand(w: np.ndarray) -> tuple[float, np.ndarray]:
        m = y * (X @ w)
        e = np.exp(-m)
        return float(np.mean(np.log1p(e))), -(X.T @ (y * e / (1.0 + e))) / samples

    def torch_f(w: Any) -> Any:
        import torch
        return f(w, torch.exp, torch.log, (torch.as_tensor(X), torch.as_tensor(y)))

    def jax_f(w: Any) -> Any:
        import jax
        return f(w, jax.numpy.exp, jax.numpy.log)

    return {"x": w0, "f": f, "hand": hand, "torch": torch_f, "jax": jax_f}


DEFAULT_ARRAYS = ("rosenbrock-array", "mlp-array")  # in tape-bench's default mix
ARRAY_WORKLOADS = {  # name: (default size, unit of size, bytes per unit while recording, builder)
    "rosenbrock-array": (1_000_000, "variables", 400, rosenbrock),
    "mlp-array": (256, "batch", 60_000, mlp),
    "stencil": (1_000_000, "grid points", 300, stencil),
    "logistic": (100_000, "samples", 3_000, logistic),
}


def _torch(fn: Callable, x: np.ndarray) -> Callable[[], object] | str:
    if importlib.util.find_spec("torch") is None:
        return "PyTorch not installed (pip install torch)"
    import torch
    torch.set_num_threads(1)
    t = torch.tensor(x, requires_grad=True)

    def step() -> object:
        t.grad = None
        y = fn(t)
        y.backward()
        return t.grad

    return step


def _jax(fn: Callable, x: np.ndarray) -> Callable[[], object] | str:
    if importlib.util.find_spec("jax") is None:
        return "JAX not installed (pip install jax)"
    import jax
    jax.config.update("jax_enable_x64", True)
    vg = jax.jit(jax.value_and_grad(fn))
    xj = jax.numpy.asarray(x)
    return lambda: jax.block_until_ready(vg(xj))


def bench_array(name: str, size: int, repeat: int, compare: bool, progress: Callable[[str], None]) -> dict:
    """Ours (replayed and recorded afresh) beside hand NumPy (and PyTorch, JAX), interleaved."""
    w = ARRAY_WORKLOADS[name][3](size)
    x, f = w["x"], w["f"]
    progress(f"{name} {size:,}: tracing, first calls (on a fresh machine they compile the kernels they use)")
    start = time.perf_counter()
    F = tape.trace(f, x)
    trace_s = time.perf_counter() - start
    start = time.perf_counter()
    value, grad = F.value_and_grad(x)
    first = {"replayed": time.perf_counter() - start}
    hand_value, hand_grad = w["hand"](x)
    afresh = tape.value_and_grad(f)
    start = time.perf_counter()
    afresh(x)
    first["recorded afresh"] = time.perf_counter() - start
    rows: dict[str, Callable[[], object]] = {"hand-written NumPy": lambda: w["hand"](x),
                                              "tape: replayed F.value_and_grad": lambda: F.value_and_grad(x),
                                              "tape: recorded afresh, value_and_grad(f)": lambda: afresh(x)}
    notes = []
    if compare:
        for label, key, make in (("PyTorch autograd (1 thread)", "torch", _torch),
                                 ("JAX jit(value_and_grad)", "jax", _jax)):
            step = make(w[key], x)
            if isinstance(step, str):
                notes.append(step)
            else:
                rows[label] = step
    seconds: dict[str, list[float]] = {label: [] for label in rows}
    for fn in rows.values():
        fn()
    for k in range(repeat):
        progress(f"{name} {size:,}: run {k + 1}/{repeat}")
        for label, fn in rows.items():
            t0 = time.perf_counter()
            fn()
            seconds[label].append(time.perf_counter() - t0)
    medians = {label: float(np.median(s)) for label, s in seconds.items()}
    stats = F.stats()
    elements = len(F._aval)
    return {"workload": name, "size": size, "trace_s": trace_s, "first_call_s": first, "records": stats["records"],
            "array_records": sum(c for op, c in stats["by_op"].items() if op.startswith("array ")),
            "elements": elements, "bytes": F.nbytes,
            "value_error": abs(value - hand_value) / max(1.0, abs(hand_value)),
            "gradient_error": float(np.max(np.abs(grad - hand_grad)) / max(1.0, float(np.max(np.abs(hand_grad))))),
            "median_s": medians, "ratio": {k: v / medians["hand-written NumPy"] for k, v in medians.items()},
            "notes": notes}


def report_array(r: dict) -> str:
    unit = ARRAY_WORKLOADS[r["workload"]][1]
    lines = [f"\n{r['workload']} (size {r['size']:,} {unit}): {r['records']} records ({r['array_records']} array "
             f"records), {r['elements']:,} arena elements, {r['bytes'] / 2**20:.1f} MiB as a Function; traced in "
             f"{r['trace_s']:.2f} s; value and gradient agree with the hand-written ones to "
             f"{max(r['value_error'], r['gradient_error']):.1e} (relative); first calls, compiling (or loading) "
             f"the kernels they use: replayed {r['first_call_s']['replayed']:.2f} s, recorded afresh "
             f"{r['first_call_s']['recorded afresh']:.2f} s",
             f"  {'value and gradient, median of runs':<48}{'ms':>10}{'x hand NumPy':>15}"]
    for label, sec in r["median_s"].items():
        lines.append(f"  {label:<48}{1e3 * sec:>10.2f}{r['ratio'][label]:>15.2f}")
    lines += [f"  note: {note}" for note in r["notes"]]
    return "\n".join(lines)
