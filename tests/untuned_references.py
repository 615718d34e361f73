"""Writes tests/untuned_references.json, JAX float64's value, gradient, jvp and Hessian product of
tests/untuned_programs.py's programs at their points (the tests cannot import JAX): run with an interpreter that has
jax, ``python tests/untuned_references.py``."""

import json
import os
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np
from untuned_programs import SIZES, directions, points, program

jax.config.update("jax_enable_x64", True)
NS = SimpleNamespace(xp=jnp, nn=SimpleNamespace(sigmoid=jax.nn.sigmoid, logsumexp=jax.scipy.special.logsumexp,
                                                loop=lambda n, body, carry: jax.lax.fori_loop(0, n, body, carry)))


def main() -> None:
    out = {}
    for name in SIZES:
        x0, f, _, _ = program(name, NS)
        V = directions(len(x0))
        for where, x in points(x0).items():
            x = jnp.asarray(x)
            value, grad = jax.value_and_grad(f)(x)
            hv = jax.jvp(jax.grad(f), (x,), (jnp.asarray(V[0]),))[1]
            out[f"{name} {where}"] = {"value": float(value), "grad": np.asarray(grad).tolist(),
                                      "hvp": np.asarray(hv).tolist()}
    with open(os.path.join(os.path.dirname(__file__), "untuned_references.json"), "w") as file:
        file.write("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in out.items()) + "\n}\n")


if __name__ == "__main__":
    main()
