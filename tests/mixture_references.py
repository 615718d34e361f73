"""Writes tests/mixture_references.json, JAX float64's value and gradient of tests/mixture_programs.py's programs at
points 1 and 2 (the tests cannot import JAX): run with an interpreter that has jax,
``python tests/mixture_references.py``."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from mixture_programs import PROGRAMS, point

jax.config.update("jax_enable_x64", True)


def lse(a, axis=None):
    return logsumexp(a, axis=axis)


def main() -> None:
    out = {}
    for name, f in PROGRAMS.items():
        for seed in (1, 2):
            value, grad = jax.value_and_grad(lambda u, f=f: f(u, jnp, lse))(jnp.asarray(point(name, seed)))
            out[f"{name} {seed}"] = {"value": float(value), "grad": np.asarray(grad).tolist()}
    with open(os.path.join(os.path.dirname(__file__), "mixture_references.json"), "w") as file:
        file.write("{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in out.items()) + "\n}\n")


if __name__ == "__main__":
    main()
