"""The benchmark workloads: seeded plans and programs written once for every scalar engine.

A scalar program takes leaf objects of any engine (tape Vars, floats, the
baseline's Nodes, micrograd Values, torch 0-d tensors, CasADi SX) and a
namespace ``fn`` of that engine's elementary functions, and computes with
``+ - *`` and ``fn[...]``. Values are kept bounded and every record reaches
the output, so the reverse sweep does work on all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np

import tape

LEAVES = 16
RDAG_OPS = ("add", "sub", "mul", "sin", "cos", "tanh")


def pairwise_sum(terms):
    """Sum in a balanced tree, streaming: O(log n) partial sums alive, depth log n."""
    sums: list = []  # sums[k] adds up sizes[k] terms; sizes strictly decrease
    sizes: list[int] = []
    for term in terms:
        size = 1
        while sizes and sizes[-1] == size:
            term = sums.pop() + term
            size += sizes.pop()
        sums.append(term)
        sizes.append(size)
    total = sums.pop()
    while sums:
        total = sums.pop() + total
    return total


# -- rdag: a random DAG --------------------------------------------------------------


def rdag_plan(n: int, seed: int = 0, ops: tuple[str, ...] = RDAG_OPS) -> dict:
    """Ops and inputs of records LEAVES .. LEAVES+n-1, as Python lists.

    An input reference s < 16 means ring slot s (one of the 16 previous
    records); s >= 16 means record s - 16, fetched from anywhere. ``sinks``
    are the records nothing reads: the output is their sum, so the reverse
    sweep reaches every record, as a loss over the whole graph would.
    """
    rng = np.random.default_rng(seed)
    record = np.arange(LEAVES, LEAVES + n)

    def inputs():
        near = rng.random(n) < 0.7
        source = np.where(near, record - rng.integers(1, 17, n), (rng.random(n) * record).astype(np.int64))
        return source, np.where(near, source & 15, source + 16)

    a_source, a_ref = inputs()
    b_source, b_ref = inputs()
    kind = rng.integers(0, len(ops), n)
    binary = np.isin(np.array(ops)[kind], ("add", "sub", "mul"))
    read = np.zeros(LEAVES + n, bool)
    read[a_source] = True
    read[b_source[binary]] = True
    return {"kind": kind.tolist(), "a": a_ref.tolist(), "b": b_ref.tolist(), "ops": ops,
            "sinks": np.flatnonzero(~read).tolist(), "x": rng.uniform(-1, 1, LEAVES)}


def rdag(plan: dict, leaves: list, far: Callable, store: list | None, fn: dict):
    """The user's loop: one op per record, then the sum of the sinks (pairwise).

    ``far(i)`` gives record i's object (``Tape.__getitem__`` for a tape; a
    list of every object for engines whose graph lives in the objects, which
    then pass that list as ``store``).
    """
    ring = list(leaves)
    kinds, a_ref, b_ref = plan["kind"], plan["a"], plan["b"]
    functions = [None if op in ("add", "sub", "mul") else fn[op] for op in plan["ops"]]
    add, sub = (plan["ops"].index(op) if op in plan["ops"] else -1 for op in ("add", "sub"))
    for i in range(len(kinds)):
        k = kinds[i]
        s = a_ref[i]
        x = ring[s] if s < 16 else far(s - 16)
        f = functions[k]
        if f is None:
            s = b_ref[i]
            y = ring[s] if s < 16 else far(s - 16)
            r = x + y if k == add else (x - y if k == sub else x * y)
        else:
            r = f(x)
        ring[(i + LEAVES) & 15] = r
        if store is not None:
            store.append(r)
    return pairwise_sum([far(s) for s in plan["sinks"]] if store is not None else map(far, plan["sinks"]))


# -- chain: as deep as the tape -----------------------------------------------------------


def chain_plan(n: int) -> dict:
    return {"steps": max(n // 3, 1), "x": np.array([0.5])}


def chain(plan: dict, leaves: list, fn: dict):
    """y = y + 1e-6 * sin(y), three records a step: a chain whose adjoints neither vanish nor blow up."""
    y = leaves[0]
    sin = fn["sin"]
    for _ in range(plan["steps"]):
        y = y + sin(y) * 1e-6
    return y


# -- rosenbrock in n variables ------------------------------------------------------------


def rosenbrock_plan(n: int) -> dict:
    rng = np.random.default_rng(1)
    return {"x": rng.uniform(-1.5, 1.5, max(n, 2))}


def rosenbrock(plan: dict, xs: list, fn: dict):
    """sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2, summed pairwise (7 records per term)."""

    def term(i):
        a = xs[i + 1] - xs[i] * xs[i]
        b = 1.0 - xs[i]
        return 100.0 * (a * a) + b * b

    return pairwise_sum(term(i) for i in range(len(xs) - 1))


def rosenbrock_vectorized(x):
    """The same sum written with whole arrays: runs on VarArrays, torch tensors and JAX arrays."""
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()


def rosenbrock_gradient_numpy(x: np.ndarray) -> tuple[float, np.ndarray]:
    """The hand-written vectorized value and gradient: the floor for any AD of this function."""
    a = x[1:] - x[:-1] ** 2
    b = 1.0 - x[:-1]
    g = np.zeros_like(x)
    g[:-1] = -400.0 * a * x[:-1] - 2.0 * b
    g[1:] += 200.0 * a
    return float(np.sum(100.0 * a * a + b * b)), g


# -- seed: the articles' 13-record expression ---------------------------------------------------


def seed_plan(calls: int) -> dict:
    return {"calls": calls, "x": np.array([0.5, 1.2, -0.3, 0.8, 0.1, 1.0])}


def seed(plan: dict, v: list, fn: dict):
    d = fn["sigmoid"](v[0] * v[1] + v[2] * v[3] + v[4]) - v[5]
    return d * d


# -- mlp: one training step of a small network ---------------------------------------------------


MLP_IN, MLP_HIDDEN = 4, 16


def mlp_plan(batch: int) -> dict:
    """A 4-16-16-1 tanh network (369 weights) and a batch of a smooth regression problem."""
    rng = np.random.default_rng(2)
    sizes = [(MLP_HIDDEN, MLP_IN), (MLP_HIDDEN,), (MLP_HIDDEN, MLP_HIDDEN), (MLP_HIDDEN,), (1, MLP_HIDDEN), (1,)]
    weights = np.concatenate([rng.normal(0, 0.5, s).ravel() for s in sizes])
    X = rng.uniform(-1, 1, (max(batch, 1), MLP_IN))
    Y = np.sin(X.sum(axis=1))
    return {"x": weights, "shapes": sizes, "X": X, "Y": Y}


def mlp(plan: dict, w: list, fn: dict):
    """Mean squared error of the network over the batch, written with scalars."""
    X, Y = plan["X"].tolist(), plan["Y"].tolist()
    tanh = fn["tanh"]
    h, k = MLP_HIDDEN, 0
    W1 = [w[k + j * MLP_IN: k + (j + 1) * MLP_IN] for j in range(h)]
    k += h * MLP_IN
    b1 = w[k: k + h]
    k += h
    W2 = [w[k + j * h: k + (j + 1) * h] for j in range(h)]
    k += h * h
    b2 = w[k: k + h]
    k += h
    W3, b3 = w[k: k + h], w[k + h]

    def dense(weights, inputs, bias):
        return pairwise_sum([weights[0] * inputs[0] + bias] + [weights[i] * inputs[i] for i in range(1, len(inputs))])

    losses = []
    for x, y in zip(X, Y, strict=True):
        a1 = [tanh(dense(W1[j], x, b1[j])) for j in range(h)]
        a2 = [tanh(dense(W2[j], a1, b2[j])) for j in range(h)]
        e = dense(W3, a2, b3) - y
        losses.append(e * e)
    return pairwise_sum(losses) * (1.0 / len(losses))


# -- the same programs for tape.jit: the Python recorder's records, bit for bit (tests/test_bench_cli.py) ----
# Written over Vars only (no ``fn`` dict, no generators): tape-bench's "record, tape.jit" phase.


@numba.njit
def pairwise_push(sums, sizes, term):
    """One more term of a pairwise sum kept as partial sums and their sizes (as pairwise_sum streams)."""
    size = 1
    while len(sizes) > 0 and sizes[-1] == size:
        term = sums.pop() + term
        size += sizes.pop()
    sums.append(term)
    sizes.append(size)


@numba.njit
def pairwise_fold(sums):
    """The pairwise sum of pairwise_push's partial sums."""
    total = sums.pop()
    while len(sums) > 0:
        total = sums.pop() + total
    return total


@numba.njit
def pairwise_list(terms):
    """pairwise_sum of a list of Vars (records nothing but the sums, in the same order)."""
    sums, sizes = [terms[0]], [1]
    for k in range(1, len(terms)):
        pairwise_push(sums, sizes, terms[k])
    return pairwise_fold(sums)


def rdag_jitted(xs, kind, a, b, sinks):
    """rdag with RDAG_OPS: every record kept in ``nodes`` (record k at nodes[k]), as ``far`` reads the tape."""
    nodes = [xs[k] for k in range(len(xs))]
    ring = [xs[k] for k in range(LEAVES)]
    for i in range(kind.shape[0]):
        k, s = kind[i], a[i]
        x = ring[s] if s < 16 else nodes[s - 16]
        if k < 3:
            s = b[i]
            y = ring[s] if s < 16 else nodes[s - 16]
            r = x + y if k == 0 else (x - y if k == 1 else x * y)
        elif k == 3:
            r = tape.sin(x)
        elif k == 4:
            r = tape.cos(x)
        else:
            r = tape.tanh(x)
        ring[(i + LEAVES) & 15] = r
        nodes.append(r)
    return pairwise_list([nodes[s] for s in sinks])


def chain_jitted(xs, steps):
    y = xs[0]
    for _ in range(steps):
        y = y + tape.sin(y) * 1e-6
    return y


def rosenbrock_jitted(xs):
    """rosenbrock, its terms summed pairwise as they come (as pairwise_sum streams them)."""
    sums, sizes = [xs[0]], [0]
    sums.pop()
    sizes.pop()
    for i in range(len(xs) - 1):
        a = xs[i + 1] - xs[i] * xs[i]
        b = 1.0 - xs[i]
        pairwise_push(sums, sizes, 100.0 * (a * a) + b * b)
    return pairwise_fold(sums)


def seed_jitted(v):
    d = tape.sigmoid(v[0] * v[1] + v[2] * v[3] + v[4]) - v[5]
    return d * d


def jit_data(name: str, plan: dict) -> tuple:
    """The data arguments of a jitted workload after xs."""
    if name == "rdag":
        assert tuple(plan["ops"]) == RDAG_OPS, "rdag_jitted knows RDAG_OPS only"
        return tuple(np.array(plan[key], np.int64) for key in ("kind", "a", "b", "sinks"))
    return (plan["steps"],) if name == "chain" else ()


JITTED: dict[str, Callable[..., Any]] = {
    "rdag": rdag_jitted, "chain": chain_jitted, "rosenbrock": rosenbrock_jitted, "seed": seed_jitted}


PLANS = {"rdag": rdag_plan, "chain": chain_plan, "rosenbrock": rosenbrock_plan, "seed": seed_plan, "mlp": mlp_plan}

WORKLOADS = {  # name: (default size, unit of size, rough bytes per unit while recording)
    "rdag": (1_000_000, "ops", 400),
    "chain": (1_000_000, "records", 150),
    "rosenbrock": (50_000, "variables", 1_200),
    "seed": (2_000, "calls", 0),
    "mlp": (64, "batch", 120_000),
}
DEFAULT_MIX = ("rdag", "chain", "rosenbrock", "seed", "mlp")


# -- sources run both as Python and through tape.jit (tests/test_jit.py, bench/bench_jit.py) -----

# Runge-Kutta 4 on Lotka-Volterra, (a, b) differentiated
JIT_RK4 = '''
def f(xs, steps, h):
    a, b = xs[0], xs[1]
    u, v = 1.0, 0.5
    for _ in range(steps):
        k1u, k1v = a * u - u * v, u * v - b * v
        u2, v2 = u + 0.5 * h * k1u, v + 0.5 * h * k1v
        k2u, k2v = a * u2 - u2 * v2, u2 * v2 - b * v2
        u3, v3 = u + 0.5 * h * k2u, v + 0.5 * h * k2v
        k3u, k3v = a * u3 - u3 * v3, u3 * v3 - b * v3
        u4, v4 = u + h * k3u, v + h * k3v
        k4u, k4v = a * u4 - u4 * v4, u4 * v4 - b * v4
        u = u + h / 6.0 * (k1u + 2.0 * k2u + 2.0 * k3u + k4u)
        v = v + h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
    return u + v
'''

# a Monte Carlo call price of data normals z
JIT_PRICER = '''
def f(xs, z, strike):
    s0, sigma, r = xs[0], xs[1], xs[2]
    total = 0.0
    for i in range(z.shape[0]):
        st = s0 * tape.exp((r - 0.5 * sigma * sigma) + sigma * z[i])
        total = total + tape.maximum(st - strike, 0.0)
    return tape.exp(-r) * total / z.shape[0]
'''

# -- array programs as Numba users write them (tests/test_jit_arrays.py, bench/bench_jit.py): Python runs
# them on a small VarArray, tape.jit on a Var array, numba.njit on floats (helpers numba.njit in both)

# Runge-Kutta 4 on Lotka-Volterra with an array state: rhs(y) is a helper of arrays
JIT_ARRAY_RK4 = '''
def rhs(y, coef, inter):
    return coef * y + inter * (y[0] * y[1])

def f(xs, steps, h, coef, inter):
    y = xs
    for _ in range(steps):
        k1 = rhs(y, coef, inter)
        k2 = rhs(y + 0.5 * h * k1, coef, inter)
        k3 = rhs(y + 0.5 * h * k2, coef, inter)
        k4 = rhs(y + h * k3, coef, inter)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y
'''

# an n-body step: pairwise forces into acc[i, 0], acc[i, 1]; velocities and positions updated in place
JIT_NBODY = '''
def f(xs, steps, dt, m):
    pos = xs
    vel = xs * 0.0
    n = pos.shape[0]
    for _ in range(steps):
        acc = pos * 0.0
        for i in range(n):
            for j in range(n):
                if i != j:
                    d = pos[j] - pos[i]
                    r2 = (d * d).sum() + 0.01
                    w = m[j] / (r2 * tape.sqrt(r2))
                    acc[i, 0] += w * d[0]
                    acc[i, 1] += w * d[1]
        vel += dt * acc
        pos = pos + dt * vel
    return (pos * pos).sum()
'''

# an explicit heat equation u_t = u_xx written into un[i], the two arrays swapped each step
JIT_HEAT = '''
def f(xs, steps, r):
    u = xs.copy()
    un = xs.copy()
    n = len(u)
    for _ in range(steps):
        for i in range(1, n - 1):
            un[i] = u[i] + r * (u[i + 1] - 2.0 * u[i] + u[i - 1])
        u, un = un, u
    return u
'''
