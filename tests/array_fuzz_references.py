"""Writes tests/array_fuzz_references.json: JAX float64's value and gradient at both points and Hessian-vector product
at the second of tests/array_fuzz_programs.py's programs, projected on three directions; run with an interpreter that
has jax: ``python tests/array_fuzz_references.py``."""

import json
import os

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np
from array_fuzz_programs import SHAPES, directions, points, source

jax.config.update("jax_enable_x64", True)


def main() -> None:
    out = {}
    for seed, (R, C) in enumerate(SHAPES):
        namespace = {"xp": jnp, "sigmoid": jax.nn.sigmoid, "softplus": jax.nn.softplus,
                     "lse": jax.scipy.special.logsumexp, "W": jnp.linspace(-1.0, 1.0, R * C), "R": R, "C": C}
        exec(source(seed), namespace)  # noqa: S102  # the test programs' own source
        f, (x0, x1, v), V = namespace["f"], points(seed), directions(seed)
        grad = jax.grad(f)
        out[str(seed)] = {"value": float(f(x1)), "grad0": (V @ np.asarray(grad(x0))).tolist(),
                          "grad1": (V @ np.asarray(grad(x1))).tolist(),
                          "hvp": (V @ np.asarray(jax.jvp(grad, (x1,), (jnp.asarray(v),))[1])).tolist()}
    with open(os.path.join(os.path.dirname(__file__), "array_fuzz_references.json"), "w") as file:
        file.write(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
