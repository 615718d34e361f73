"""Writes tests/jit_array_references.json, JAX float64's value, gradient and Hessian-vector product of
tests/jit_array_programs.py's programs (the tests cannot import JAX): run with an interpreter that has jax,
``python tests/jit_array_references.py``; ``python tests/jit_array_references.py jit_3d`` writes
tests/jit_3d_references.json of tests/jit_3d_programs.py's. Gradients and Hessian-vector products (along direction
0) are stored projected on the case's three directions."""

import importlib
import json
import os
import sys
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np

jax.config.update("jax_enable_x64", True)
JAX_TAPE = SimpleNamespace(sigmoid=jax.nn.sigmoid, relu=jax.nn.relu, exp=jnp.exp, where=jnp.where,
                           logsumexp=jax.scipy.special.logsumexp, clip=jnp.clip, softplus=jax.nn.softplus,
                           softmax=jax.nn.softmax, log_softmax=jax.nn.log_softmax)


def main(which: str = "jit_array") -> None:
    programs = importlib.import_module(f"{which}_programs")
    cases, directions = programs.cases, programs.directions
    out = {}
    for name, (source, x0, data, ) in cases().items():
        namespace = {"np": jnp, "tape": JAX_TAPE}
        exec(source, namespace)  # noqa: S102  # the test programs' own source

        def f(x, namespace=namespace, data=data, shape=x0.shape):
            return namespace["f"](x.reshape(shape), *data)

        x, V = jnp.asarray(x0.reshape(-1)), directions(name, x0.shape)
        g = jax.grad(f)(x)
        hv = jax.jvp(jax.grad(f), (x,), (jnp.asarray(V[0]),))[1]
        out[name] = {"value": float(f(x)), "grad": (V @ np.asarray(g)).tolist(), "hvp": (V @ np.asarray(hv)).tolist()}
    with open(os.path.join(os.path.dirname(__file__), f"{which}_references.json"), "w") as file:
        file.write(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
