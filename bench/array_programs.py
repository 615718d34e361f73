"""Issue 26's array programs, more of their kinds and kinds no one tuned to: tape afresh, replayed, hand NumPy.

Each program is a function of one flat vector written with NumPy calls (it records array records
on VarArrays) and a hand-derived NumPy value and gradient, checked against each other first.
Run: ``python bench/array_programs.py [--repeat N] [--only NAME ...] [--memory] [--jit]``; it prints
medians (ms) of tape.value_and_grad(f) (recorded afresh), F.value_and_grad (a Function from
tape.trace, replayed; first called as a long run would have, its kernels ready: long_run) and the hand NumPy,
with the ratio afresh / replayed. ``--memory`` runs each program's recording, tracing and replay in fresh processes
(``--warm``: each after one untimed call) and reports peak tracemalloc bytes per element of the program's state (a
heat step's u, a GRU's hidden state).
``--jax PYTHON`` alternates rounds of this process and of PYTHON (one with JAX; tape is not
imported there) running the same source on jax.numpy as ``jax.jit(jax.value_and_grad(f))``,
checked against the hand gradient; it prints the medians over rounds and JAX's first call.
``--jit`` adds tape.value_and_grad(tape.jit(f)) (checked as the others; its first call's CPU-s, f
compiled; whether it wrote array records or fell back to scalar ones) or says that tape.jit cannot compile f.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (bench/user_programs.py, where loaded by its path)
import user_programs  # noqa: E402

xp: Any = np  # what the programs call: NumPy (which records on VarArrays), or jax.numpy
nn: Any = None  # sigmoid and logsumexp: tape's or JAX's (engine)


def engine(name: str) -> Any:
    """Point the programs at tape or at JAX (imported only here, so each runs without the other)."""
    global xp, nn
    if name == "jax":
        import jax
        import jax.scipy.special

        jax.config.update("jax_enable_x64", True)
        xp = jax.numpy
        nn = SimpleNamespace(sigmoid=jax.nn.sigmoid, logsumexp=jax.scipy.special.logsumexp,
                             loop=lambda n, body, carry: jax.lax.fori_loop(0, n, body, carry))
        return jax
    import tape
    from tape.kernels import compiling

    compiling.EAGER = True  # replay as a long run sees it: cached kernels at once, not after LOAD s of stand-ins
    xp, nn = np, SimpleNamespace(sigmoid=tape.sigmoid, logsumexp=tape.logsumexp, loop=loop)
    return tape


def loop(n: int, body: Callable[[int, Any], Any], carry: Any) -> Any:
    """carry = body(t, carry) for t < n: a Python loop for tape, jax.lax.fori_loop for JAX (as its users write it)."""
    for t in range(n):
        carry = body(t, carry)
    return carry


def jitable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn, which Numba (so tape.jit, compiling a program's f) may call too where the engine is tape's (the JAX Python
    has no Numba)."""
    if xp is not np:
        return fn
    from numba.extending import register_jitable

    return register_jitable(fn)


def looped(n: int, body: Callable[[int, Any], Any]) -> Callable[[Any], Any]:
    """carry -> nn.loop(n, body, carry), as a function f calls; on tape a Python loop that tape.jit compiles too
    (Numba passes no closure to a function: nn.loop)."""
    if xp is not np:
        return lambda carry: nn.loop(n, body, carry)
    body = jitable(body)

    def run(carry: Any) -> Any:
        for t in range(n):
            carry = body(t, carry)
        return carry

    return jitable(run)


class _Engine:
    """xp and nn as engine() last set them, read by bench/user_programs.py's programs at each call."""

    xp = property(lambda self: xp)
    nn = property(lambda self: nn)


ENGINE = _Engine()
Program = tuple[np.ndarray, Callable[[Any], Any], Callable[[np.ndarray], tuple[float, np.ndarray]], int]


def mlp(batch: int = 32, width: int = 64) -> Program:
    """Squared error of a one-hidden-layer tanh network: params W1 (width, width), b1, w2."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(batch, width)), rng.normal(size=batch)
    cuts = (width * width, width * width + width)
    theta = rng.normal(scale=0.1, size=cuts[1] + width)

    def f(th: Any) -> Any:
        W1, b1, w2 = th[:cuts[0]].reshape(width, width), th[cuts[0]:cuts[1]], th[cuts[1]:]
        r = xp.tanh(X @ W1 + b1) @ w2 - y
        return (r * r).mean()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        W1, b1, w2 = th[:cuts[0]].reshape(width, width), th[cuts[0]:cuts[1]], th[cuts[1]:]
        h = np.tanh(X @ W1 + b1)
        r = h @ w2 - y
        dr = 2.0 * r / batch
        da = np.outer(dr, w2) * (1.0 - h * h)
        return float((r * r).mean()), np.concatenate([(X.T @ da).ravel(), da.sum(0), h.T @ dr])

    return theta, f, hand, batch * width


def attention(seq: int = 128, d: int = 64) -> Program:
    """Half the squared norm of one softmax attention head's output; the query weights are the params."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(seq, d))
    w = rng.normal(scale=0.1, size=d * d)

    def f(wq: Any) -> Any:
        S = (X @ wq.reshape(d, d)) @ X.T / np.sqrt(d)
        P = xp.exp(S - nn.logsumexp(S, axis=1, keepdims=True))
        Y = P @ X
        return 0.5 * (Y * Y).sum()

    def hand(wq: np.ndarray) -> tuple[float, np.ndarray]:
        S = (X @ wq.reshape(d, d)) @ X.T / np.sqrt(d)
        E = np.exp(S - S.max(axis=1, keepdims=True))
        P = E / E.sum(axis=1, keepdims=True)
        Y = P @ X
        dP = Y @ X.T
        dS = P * (dP - (dP * P).sum(axis=1, keepdims=True)) / np.sqrt(d)
        return 0.5 * float((Y * Y).sum()), (X.T @ dS @ X).ravel()

    return w, f, hand, seq * d


def gru(steps: int = 50, batch: int = 64, hidden: int = 32) -> Program:
    """A GRU cell run over a sequence; the recurrent weights (Uz, Ur, Un) are the params, the
    input projections data; loss half the squared final state."""
    rng = np.random.default_rng(2)
    xz, xr, xn = (rng.normal(scale=0.5, size=(steps, batch, hidden)) for _ in range(3))
    n2 = hidden * hidden
    u = rng.normal(scale=0.3, size=3 * n2)

    def f(th: Any) -> Any:
        Uz, Ur, Un = (th[k * n2:(k + 1) * n2].reshape(hidden, hidden) for k in range(3))
        az, ar, an = xp.asarray(xz), xp.asarray(xr), xp.asarray(xn)  # NumPy's unchanged; JAX indexes them by a tracer

        def step(t: Any, h: Any) -> Any:
            z = nn.sigmoid(az[t] + h @ Uz)
            r = nn.sigmoid(ar[t] + h @ Ur)
            n = xp.tanh(an[t] + (r * h) @ Un)
            return (1.0 - z) * n + z * h

        h = nn.loop(steps, step, xp.zeros((batch, hidden)))
        return 0.5 * (h * h).sum()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        Uz, Ur, Un = (th[k * n2:(k + 1) * n2].reshape(hidden, hidden) for k in range(3))
        h, saved = np.zeros((batch, hidden)), []
        for t in range(steps):
            z = 1.0 / (1.0 + np.exp(-(xz[t] + h @ Uz)))
            r = 1.0 / (1.0 + np.exp(-(xr[t] + h @ Ur)))
            n = np.tanh(xn[t] + (r * h) @ Un)
            saved.append((h, z, r, n))
            h = (1.0 - z) * n + z * h
        value, dh = 0.5 * float((h * h).sum()), h.copy()
        gz, gr, gn = (np.zeros((hidden, hidden)) for _ in range(3))
        for h, z, r, n in reversed(saved):
            dn = dh * (1.0 - z) * (1.0 - n * n)
            dz = dh * (h - n) * z * (1.0 - z)
            drh = dn @ Un.T
            dr = drh * h * r * (1.0 - r)
            gz += h.T @ dz
            gr += h.T @ dr
            gn += (r * h).T @ dn
            dh = dh * z + dz @ Uz.T + dr @ Ur.T + drh * r
        return value, np.concatenate([gz.ravel(), gr.ravel(), gn.ravel()])

    return u, f, hand, batch * hidden


def filter1d(n: int = 100_000, passes: int = 10) -> Program:
    """A 3-tap smoothing filter by slicing, applied passes times; loss half the squared result."""
    u0 = np.random.default_rng(3).normal(size=n)

    def f(u: Any) -> Any:
        for _ in range(passes):
            u = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
        return 0.5 * (u * u).sum()

    def hand(u: np.ndarray) -> tuple[float, np.ndarray]:
        for _ in range(passes):
            u = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
        g = u.copy()
        for _ in range(passes):
            back = np.zeros(len(g) + 2)
            back[:-2] += 0.25 * g
            back[1:-1] += 0.5 * g
            back[2:] += 0.25 * g
            g = back
        return 0.5 * float((u * u).sum()), g

    return u0, f, hand, n


def mixture(points: int = 10_000, k: int = 16) -> Program:
    """Log-likelihood of 1-d points under a Gaussian mixture; params means, log scales, logits."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(points, 1)) * 2.0
    theta = np.concatenate([rng.normal(size=k), rng.normal(scale=0.1, size=k), np.zeros(k)])

    def f(th: Any) -> Any:
        mu, logs, logits = th[:k], th[k:2 * k], th[2 * k:]
        logw = logits - nn.logsumexp(logits)
        z = (x - mu) * xp.exp(-logs)
        return nn.logsumexp(logw - 0.5 * z * z - logs, axis=1).sum()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        mu, logs, logits = th[:k], th[k:2 * k], th[2 * k:]
        m = logits.max()
        logw = logits - m - np.log(np.exp(logits - m).sum())
        z = (x - mu) * np.exp(-logs)
        a = logw - 0.5 * z * z - logs
        top = a.max(axis=1, keepdims=True)
        e = np.exp(a - top)
        s = e.sum(axis=1, keepdims=True)
        resp = e / s
        dmu = (resp * z * np.exp(-logs)).sum(0)
        dlogs = (resp * (z * z - 1.0)).sum(0)
        dlogits = resp.sum(0) - points * np.exp(logw)
        return float((np.log(s) + top).sum()), np.concatenate([dmu, dlogs, dlogits])

    return theta, f, hand, points


def mixture2d(points: int = 5_000, k: int = 32) -> Program:
    """Log-likelihood of 2-d points under a diagonal Gaussian mixture (the mixture's kind, not tuned to: s19 B);
    params means and log scales per axis, logits."""
    rng = np.random.default_rng(9)
    x = rng.normal(size=(points, 2)) * 1.5
    x1, x2 = x[:, :1].copy(), x[:, 1:].copy()
    theta = np.concatenate([rng.normal(size=2 * k), rng.normal(scale=0.1, size=2 * k), rng.normal(scale=0.1, size=k)])

    def f(th: Any) -> Any:
        m1, m2, l1, l2, logits = th[:k], th[k:2 * k], th[2 * k:3 * k], th[3 * k:4 * k], th[4 * k:]
        logw = logits - nn.logsumexp(logits)
        z1, z2 = (x1 - m1) * xp.exp(-l1), (x2 - m2) * xp.exp(-l2)
        return nn.logsumexp(logw - 0.5 * (z1 * z1 + z2 * z2) - (l1 + l2), axis=1).sum()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        m1, m2, l1, l2, logits = th[:k], th[k:2 * k], th[2 * k:3 * k], th[3 * k:4 * k], th[4 * k:]
        m = logits.max()
        logw = logits - m - np.log(np.exp(logits - m).sum())
        z1, z2 = (x1 - m1) * np.exp(-l1), (x2 - m2) * np.exp(-l2)
        a = logw - 0.5 * (z1 * z1 + z2 * z2) - (l1 + l2)
        top = a.max(axis=1, keepdims=True)
        e = np.exp(a - top)
        s = e.sum(axis=1, keepdims=True)
        resp = e / s
        grads = [(resp * z1 * np.exp(-l1)).sum(0), (resp * z2 * np.exp(-l2)).sum(0), (resp * (z1 * z1 - 1.0)).sum(0),
                 (resp * (z2 * z2 - 1.0)).sum(0), resp.sum(0) - points * np.exp(logw)]
        return float((np.log(s) + top).sum()), np.concatenate(grads)

    return theta, f, hand, points


def heat(n: int = 10_000, steps: int = 500, pad: bool = False) -> Program:
    """Explicit periodic heat equation (np.concatenate, or np.pad 'wrap', for the neighbours);
    loss half the squared final state."""
    u0 = np.random.default_rng(5).normal(size=n)
    c = 0.2

    def update(_: Any, u: Any) -> Any:
        if pad:
            w = xp.pad(u, 1, mode="wrap")
            return u + c * (w[2:] + w[:-2] - 2.0 * u)
        return u + c * (xp.concatenate([u[1:], u[:1]]) + xp.concatenate([u[-1:], u[:-1]]) - 2.0 * u)

    run = looped(steps, update)

    def f(u: Any) -> Any:
        u = run(u)
        return 0.5 * (u * u).sum()

    def step(u: np.ndarray) -> np.ndarray:  # symmetric: its own adjoint
        return u + c * (np.roll(u, -1) + np.roll(u, 1) - 2.0 * u)

    def hand(u: np.ndarray) -> tuple[float, np.ndarray]:
        for _ in range(steps):
            u = step(u)
        g = u.copy()
        for _ in range(steps):
            g = step(g)
        return 0.5 * float((u * u).sum()), g

    return u0, f, hand, n


def stencil5(n: int = 50_000, passes: int = 8) -> Program:
    """A 5-tap filter with a pointwise nonlinearity between passes (slicing); loss sum of squares."""
    u0 = np.random.default_rng(7).normal(size=n)
    w = (0.1, 0.2, 0.4, 0.2, 0.1)

    def f(u: Any) -> Any:
        for _ in range(passes):
            u = w[0] * u[:-4] + w[1] * u[1:-3] + w[2] * u[2:-2] + w[3] * u[3:-1] + w[4] * u[4:]
            u = u * 0.9
        return (u * u).sum()

    def hand(u: np.ndarray) -> tuple[float, np.ndarray]:
        for _ in range(passes):
            u = 0.9 * (w[0] * u[:-4] + w[1] * u[1:-3] + w[2] * u[2:-2] + w[3] * u[3:-1] + w[4] * u[4:])
        g = 2.0 * u
        for _ in range(passes):
            g = 0.9 * g
            back = np.zeros(len(g) + 4)
            for k in range(5):
                back[k:len(back) - 4 + k] += w[k] * g
            g = back
        return float((u * u).sum()), g

    return u0, f, hand, n


def mlp2(batch: int = 16, width: int = 32, out: int = 8) -> Program:
    """Two hidden tanh layers and a softmax-free linear head; squared error; params W1, b1, W2, b2, W3."""
    rng = np.random.default_rng(8)
    X, Y = rng.normal(size=(batch, width)), rng.normal(size=(batch, out))
    sizes = [width * width, width, width * width, width, width * out]
    cuts = np.cumsum(sizes)
    theta = rng.normal(scale=0.15, size=int(cuts[-1]))

    @jitable
    def parts(th: Any) -> tuple:
        W1 = th[:cuts[0]].reshape(width, width)
        b1 = th[cuts[0]:cuts[1]]
        W2 = th[cuts[1]:cuts[2]].reshape(width, width)
        b2 = th[cuts[2]:cuts[3]]
        W3 = th[cuts[3]:].reshape(width, out)
        return W1, b1, W2, b2, W3

    def f(th: Any) -> Any:
        W1, b1, W2, b2, W3 = parts(th)
        h1 = xp.tanh(X @ W1 + b1)
        h2 = xp.tanh(h1 @ W2 + b2)
        r = h2 @ W3 - Y
        return (r * r).sum() / batch

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        W1, b1, W2, b2, W3 = parts(th)
        h1 = np.tanh(X @ W1 + b1)
        h2 = np.tanh(h1 @ W2 + b2)
        r = h2 @ W3 - Y
        dr = 2.0 * r / batch
        dW3 = h2.T @ dr
        d2 = (dr @ W3.T) * (1.0 - h2 * h2)
        dW2, db2 = h1.T @ d2, d2.sum(0)
        d1 = (d2 @ W2.T) * (1.0 - h1 * h1)
        dW1, db1 = X.T @ d1, d1.sum(0)
        return float((r * r).sum() / batch), np.concatenate([dW1.ravel(), db1, dW2.ravel(), db2, dW3.ravel()])

    return theta, f, hand, batch * width


PROGRAMS: dict[str, Callable[[], Program]] = {
    "mlp": mlp, "attention": attention, "gru": gru, "filter": filter1d, "mixture": mixture,
    "heat-concatenate": heat, "heat-pad": lambda: heat(pad=True),
    "stencil5": stencil5, "mlp2": mlp2,  # two more of the filter's and the MLP's kinds (s13 E: not tuned to)
    "mixture2d": mixture2d,  # and of the mixture's (s19 B)
    **{name: functools.partial(make, ENGINE)  # kinds no one tuned to (s20 C: bench/user_programs.py)
       for name, make in user_programs.PROGRAMS.items()},
}


def timings(name: str, repeat: int, jit: bool = False) -> dict[str, float]:
    """Gradients checked against the hand ones, then interleaved medians (ms); ``jit``: also tape.jit's (jitted)."""
    tape = engine("tape")
    x, f, hand, _ = PROGRAMS[name]()
    F = tape.trace(f, x)
    afresh = tape.value_and_grad(f)
    rows = {"afresh": lambda: afresh(x), "replayed": lambda: F.value_and_grad(x), "numpy": lambda: hand(x)}
    got = {"replayed": F.value_and_grad(x), "afresh": afresh(x)}
    extra = jitted(tape, name, f, x, rows, got) if jit else {}
    want_value, want = hand(x)
    for label, (value, grad) in got.items():
        scale = max(1.0, float(np.max(np.abs(want))))
        assert abs(value - want_value) <= 1e-9 * max(1.0, abs(want_value)), (name, label, value, want_value)
        assert np.max(np.abs(grad - want)) <= 1e-9 * scale, (name, label, np.max(np.abs(grad - want)))
    long_run(lambda: F.value_and_grad(x))
    seconds: dict[str, list[float]] = {label: [] for label in rows}
    for _ in range(repeat):
        for label, fn in rows.items():
            t0 = time.perf_counter()
            fn()
            seconds[label].append(time.perf_counter() - t0)
    return {**{label: 1e3 * float(np.median(s)) for label, s in seconds.items()}, **extra}


SETTLE = 40  # untimed calls of tape.jit's before timing: a loop's first 10-30 make its reverse's tables again while the
# recycled arena's last regions move (docs/jit.md, Speed)


def jitted(tape: Any, name: str, f: Callable[[Any], Any], x: np.ndarray, rows: dict, got: dict) -> dict[str, float]:
    """Record + gradient by tape.value_and_grad(tape.jit(f)): its first call (CPU-ms: f compiled, once
    a process) into got and its call, after SETTLE more, into rows; whether it wrote array records (f._arrays: else
    one scalar record an element). {} where tape.jit cannot compile f (why: on stderr)."""
    jf = tape.jit(f)
    vg = tape.value_and_grad(jf)
    start = time.process_time()
    try:
        got["jit"] = vg(x)
    except tape.JitError as e:
        lines = str(e).splitlines()
        why = next((line for line in lines[1:] if line.strip() and not line.startswith(("Failed in", "(with xs"))), "")
        print(f"{name}: {lines[0]}\n  {why}", file=sys.stderr)
        return {}
    first = 1e3 * (time.process_time() - start)
    for _ in range(SETTLE):
        vg(x)
    rows["jit"] = lambda: vg(x)
    return {"jit first": first, "jit arrays": float(bool(jf._arrays))}


def jit_column(ms: dict[str, float]) -> str:
    """tape.jit's figures in a row of the table (what --jit adds)."""
    if "jit" not in ms:
        return "  tape.jit: not compiled"
    kind = "array records" if ms["jit arrays"] else "scalar records, not array records"
    return f"  tape.jit {ms['jit']:.2f} ({kind}; first call {ms['jit first'] / 1e3:.2f} CPU-s)"


LONG = 10.0  # CPU seconds of calls at most in long_run (stand-ins wait 1 s, then a shape's compile takes 1-3 CPU-s)


def long_run(call: Callable[[], Any]) -> None:
    """Call until every stretch kernel and run shape kernel made so far is ready, as in a long run (EAGER loads the
    cached ones at once; one not yet on disk waits for its stand-ins' PAYBACK, then compiles, once a machine), at most
    LONG seconds. Without it, a program whose shapes no long run had compiled was timed on its stand-ins: stencil5's 7
    stretches of 10 rows (5*10^4 elements) ran row by row, the table's forward 940 us, 120 us by its kernels;
    replayed value_and_grad 2.6-2.8 -> 1.13-1.18 CPU-ms, measured in s13."""
    from tape.sweeps import fused_runs, stretches

    def ready() -> bool:
        return all(st.address for st in stretches.Stretch.made.values()) and \
            all(sh._gate is None or sh._gate.open for sh in fused_runs.Shaped.made.values())

    start = time.process_time()
    while not ready() and time.process_time() - start < LONG:
        call()


def jax_timings(name: str, repeat: int) -> dict[str, float]:
    """jax.jit(jax.value_and_grad(f)) on the same source: its first call and the median of later ones (ms),
    the gradient checked against the hand one."""
    jax = engine("jax")
    x, f, hand, _ = PROGRAMS[name]()
    vg = jax.jit(jax.value_and_grad(f))
    t0 = time.perf_counter()
    value, grad = jax.block_until_ready(vg(x))
    first = time.perf_counter() - t0
    want_value, want = hand(x)
    assert abs(float(value) - want_value) <= 1e-9 * max(1.0, abs(want_value)), (name, float(value), want_value)
    assert np.max(np.abs(np.asarray(grad) - want)) <= 1e-9 * max(1.0, float(np.max(np.abs(want)))), name
    seconds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(vg(x))
        seconds.append(time.perf_counter() - t0)
    return {"jax": 1e3 * float(np.median(seconds)), "jax first": 1e3 * first}


def against_jax(name: str, python: str, repeat: int, rounds: int, jit: bool = False, one_core: bool = False) -> None:
    """Alternate a tape process and a JAX process (python) per round; print the medians over rounds. ``one_core``:
    JAX's process on one CPU (XLA runs two threads on a 2-core host in spite of the one-thread flags)."""
    got: dict[str, list[float]] = {}
    for _ in range(rounds):
        for exe, side in ((sys.executable, "tape"), (python, "jax")):
            flags = ["--jit"] if jit and side == "tape" else ["--jax-one-core"] if one_core and side == "jax" else []
            out = subprocess.run([exe, __file__, "--side", side, name, "--repeat", str(repeat), *flags],
                                 stdout=subprocess.PIPE, text=True, check=True).stdout
            for label, ms in json.loads(out.splitlines()[-1]).items():
                got.setdefault(label, []).append(ms)
    ms = {label: float(np.median(v)) for label, v in got.items()}
    best = min(ms["numpy"], ms["jax"])
    print(f"{name:18s} ms: afresh {ms['afresh']:.2f}  replayed {ms['replayed']:.2f}  numpy {ms['numpy']:.2f}  "
          f"jax {ms['jax']:.2f} (first call {ms['jax first']:.0f})  replayed/best {ms['replayed'] / best:.2f}  "
          f"afresh/best {ms['afresh'] / best:.2f}" + (jit_column(ms) if jit else ""))


def peak(name: str, phase: str, warm: bool = False) -> float:
    """Peak tracemalloc bytes per element of state: recording afresh (value_and_grad(f)), tracing
    (tape.trace), or replaying (what the Function holds plus the peak of one more call); warm: after one untimed
    call of the phase, the spare arenas it left dropped (no first call's imports and compiles)."""
    tape = engine("tape")
    x, f, _, state = PROGRAMS[name]()
    if phase == "replay" or warm:
        F = tape.trace(f, x)
        F.value_and_grad(x)
    if warm and phase == "record":
        tape.value_and_grad(f)(x)
    if warm:
        from tape.sweeps import arenas

        arenas._SPARE.clear()
    tracemalloc.start()
    if phase == "record":
        tape.value_and_grad(f)(x)
    elif phase == "trace":
        tape.trace(f, x)
    else:
        F.value_and_grad(x)
    return (tracemalloc.get_traced_memory()[1] + (F.nbytes if phase == "replay" else 0)) / state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=list(PROGRAMS))
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--warm", action="store_true", help="--memory after one untimed call of each phase")
    parser.add_argument("--jax", metavar="PYTHON", help="a Python with JAX: alternate rounds against it")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jit", action="store_true", help="also tape.jit(f)'s record + gradient")
    parser.add_argument("--jax-one-core", action="store_true", help="JAX's process on one CPU (XLA takes two here)")
    parser.add_argument("--peak", nargs=2, help=argparse.SUPPRESS)  # the fresh process of --memory
    parser.add_argument("--side", nargs=2, help=argparse.SUPPRESS)  # one round of --jax: tape|jax NAME
    args = parser.parse_args()
    if args.peak:
        print(peak(*args.peak, args.warm))
        return
    if args.side:
        side, name = args.side
        if args.jax_one_core:  # (before JAX is imported: its threads start on the CPUs the process may use)
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        print(json.dumps(jax_timings(name, args.repeat) if side == "jax" else timings(name, args.repeat, args.jit)))
        return
    for name in args.only:
        if args.jax:
            against_jax(name, args.jax, args.repeat, args.rounds, args.jit, args.jax_one_core)
            continue
        if args.memory:
            got = [float(subprocess.run([sys.executable, __file__, "--peak", name, phase, *["--warm"] * args.warm],
                                        capture_output=True, text=True, check=True).stdout)
                   for phase in ("record", "trace", "replay")]
            print(f"{name:18s} peak bytes per state element: recording {got[0]:,.0f}, tracing {got[1]:,.0f}, "
                  f"replaying {got[2]:,.0f}")
            continue
        ms = timings(name, args.repeat, args.jit)
        print(f"{name:18s} afresh {ms['afresh']:8.2f}  replayed {ms['replayed']:8.2f}  numpy {ms['numpy']:7.2f} ms"
              f"  afresh/replayed {ms['afresh'] / ms['replayed']:.2f}" + (jit_column(ms) if args.jit else ""))


if __name__ == "__main__":
    main()
