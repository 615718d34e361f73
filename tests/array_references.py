"""Writes tests/array_references.json, JAX float64's derivatives of tests/array_programs.py's programs (the tests
cannot import JAX): run with an interpreter that has jax, ``python tests/array_references.py``.

For each case (seed, vector, large) at its points 1 and 2: the value; the gradient (a vector program's: its
outputs' sum), and the Hessian (of that sum) times direction 0, each projected on the case's directions; for a
vector program also its Jacobian times direction 0."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from array_programs import CASES, directions, point, program, run

jax.config.update("jax_enable_x64", True)


def lse(a, axis, keepdims):
    return jax.scipy.special.logsumexp(a, axis=axis, keepdims=keepdims)


def main() -> None:
    out = {}
    for seed, vector, large in CASES:
        prog = program(seed)

        def f(u, prog=prog, vector=vector, large=large):
            return run(prog, u, jnp, lse, vector, large)

        def total(u, f=f):
            return jnp.sum(f(u))

        V = directions(seed, large)
        for k in (1, 2):
            x = jnp.asarray(point(seed, k, large))
            g = jax.grad(total)(x)
            hv = jax.jvp(jax.grad(total), (x,), (jnp.asarray(V[0]),))[1]
            entry = {"value": np.asarray(f(x)).tolist(), "grad": (V @ np.asarray(g)).tolist(),
                     "hvp": (V @ np.asarray(hv)).tolist()}
            if vector:
                entry["jvp"] = np.asarray(jax.jvp(f, (x,), (jnp.asarray(V[0]),))[1]).tolist()
            out[f"{seed} {int(vector)} {int(large)} {k}"] = entry
    with open(os.path.join(os.path.dirname(__file__), "array_references.json"), "w") as file:
        lines = (f"{json.dumps(key)}: {json.dumps(entry)}" for key, entry in out.items())  # (one case a line)
        file.write("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    main()
