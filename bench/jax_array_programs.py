"""The array programs of ``bench/bench_jit.py arrays`` (tape/bench/programs.py: RK4 with an array state,
an n-body step, a heat equation) as JAX users write them, timed as ``jax.jit(jax.value_and_grad(f))``:
the first call (tracing and compiling included) and later calls (medians of 7), per record of the
tape.jit run of the same program (1.08M, 0.26M, 2.0M records). Run it with a Python that has JAX:

    python bench/jax_array_programs.py
"""

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def rk4(y, steps, h, coef, inter):
    def rhs(y):
        return coef * y + inter * (y[0] * y[1])

    def step(_, y):
        k1 = rhs(y)
        k2 = rhs(y + 0.5 * h * k1)
        k3 = rhs(y + 0.5 * h * k2)
        k4 = rhs(y + h * k3)
        return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return jax.lax.fori_loop(0, steps, step, y).sum()


def nbody(pos, steps, dt, m):
    n = pos.shape[0]
    off = 1.0 - jnp.eye(n)

    def step(_, state):
        pos, vel = state
        d = pos[None, :, :] - pos[:, None, :]  # d[i, j] = pos[j] - pos[i]
        r2 = (d * d).sum(-1) + 0.01
        w = off * m[None, :] / (r2 * jnp.sqrt(r2))
        vel = vel + dt * (w[:, :, None] * d).sum(1)
        return pos + dt * vel, vel
    pos, _ = jax.lax.fori_loop(0, steps, step, (pos, pos * 0.0))
    return (pos * pos).sum()


def heat(u, steps, r):
    def step(_, u):
        return u.at[1:-1].set(u[1:-1] + r * (u[2:] - 2.0 * u[1:-1] + u[:-2]))
    return jax.lax.fori_loop(0, steps, step, u).sum()


BODIES = np.random.default_rng(2).standard_normal((32, 2))
PROGRAMS = {"rk4-array": (rk4, np.array([1.1, 0.4]), (20000, 1e-4, np.array([0.7, -0.4]), np.array([-0.3, 0.2])),
                          1080000),
            "nbody": (nbody, BODIES, (20, 0.01, np.linspace(0.5, 1.5, 32)), 264511),
            "heat": (heat, np.sin(np.linspace(0.0, 3.0, 2000)), (200, 0.25), 1998001)}


def main() -> None:
    for name, (f, x0, data, records) in PROGRAMS.items():
        g = jax.jit(jax.value_and_grad(f), static_argnums=(1,))
        start = time.perf_counter()
        jax.block_until_ready(g(x0, *data))
        first = time.perf_counter() - start
        runs = []
        for _ in range(7):
            start = time.perf_counter()
            jax.block_until_ready(g(x0, *data))
            runs.append(time.perf_counter() - start)
        later = statistics.median(runs)
        print(f"{name:9s} jax.jit(value_and_grad) first call {first:5.2f} s, later {later * 1e3:8.2f} ms "
              f"({later / records * 1e9:6.2f} ns per tape.jit record)")


if __name__ == "__main__":
    main()
