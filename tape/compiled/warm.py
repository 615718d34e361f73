"""What ``python -m tape warmup`` compiles of tape.jit: the common uses of Var arrays (1-d and 2-d) with Var arrays,
Vars, numbers and NumPy arrays (+ - * /, in place too), the ufuncs users reach first, reductions, element reads and
writes, slices and the makers; and Vars with Vars and numbers. Each op and operand types is an implementation of
~0.5 s of CPU to compile, cached by type (overload_cache.py): a first tape.jit function of these then loads them
and compiles only itself. The programs are cached themselves (cache=True): a warm run loads them, compiles nothing.
"""

from __future__ import annotations

import math

import numpy as np

from tape.compiled.jit import jit


@jit(cache=True)
def _arithmetic(xs, data, k):
    """Each of + - * / of a 1-d Var array with a Var array, a number, a NumPy array and a Var, both ways; of a
    NumPy array with a Var."""
    v = xs.sum()
    a = (xs + xs) + (xs + k) + (k + xs) + (xs + data) + (data + xs) + (xs + v) + (v + xs)
    a = a + (data + v) + (v + data)
    s = (xs - xs) - (xs - k) - (k - xs) - (xs - data) - (data - xs) - (xs - v) - (v - xs)
    s = s - (data - v) - (v - data)
    m = (xs * xs) * (xs * k) * (k * xs) * (xs * data) * (data * xs) * (xs * v) * (v * xs)
    m = m * (data * v) * (v * data)
    d = (xs / xs) / (xs / k) / (k / xs) / (xs / data) / (data / xs) / (xs / v) / (v / xs)
    d = d / (data / v) / (v / data)
    a += xs
    a += k * s
    a -= m
    a *= k
    a /= d
    return a.sum() + (-a).sum() + (a ** 2).max() + np.exp(a).min() + np.sqrt(np.abs(a)).mean()


@jit(cache=True)
def _ufuncs(xs):
    """The ufuncs users reach first, of a Var array."""
    return (np.sin(xs) + np.cos(xs) + np.tanh(xs) + np.log(xs) + np.exp(-xs)).prod()


@jit(cache=True)
def _one_d(xs, data, k):
    """A 1-d Var array's elements, slices, makers and products; Vars with Vars and numbers; branches on both."""
    n = len(xs)
    u = np.zeros(n, dtype=xs.dtype)
    w = np.empty_like(xs)
    for i in range(n):
        u[i] = xs[i] * k + data[i]
        w[i] = xs[i] / (xs[i] - k) - k * xs[i] + k / xs[i] - math.sqrt(xs[i] * xs[i]) + math.exp(-xs[i])
        u[i] += w[i] * w[i] + xs[i] ** 2 + abs(xs[i]) + np.sin(xs[i]) + np.cos(xs[i]) + np.tanh(xs[i])
        if u[i] > k:
            w[i] -= max(u[i], k)
        if i != n:  # a branch on plain numbers (the n-body's i != j)
            w[i] += k
    c = u.copy()
    c[1:] = u[:-1] + w[1:]
    return np.dot(c, w) + np.dot(data, u) + (u[1:] - u[:-1]).sum() + c.reshape((n, 1)).sum() + xs.shape[0]


@jit(cache=True)
def _two_d(xs, data, k):
    """A 2-d Var array's + - * / with a Var array and a number, in place too; its elements, rows and makers."""
    a = (xs + xs) + (xs + k) + (k + xs) - (xs - xs) - (xs - k) - (k - xs)
    a = a * (xs * xs) * (xs * k) * (k * xs) / (xs / xs) / (xs / k) / (k / xs)
    a += xs
    a -= k * xs
    n, m = xs.shape
    acc = np.zeros((n, m), dtype=xs.dtype)
    for i in range(n):
        for j in range(m):
            acc[i, j] += xs[i, j] * k
        r = xs[i] - xs[0]
        acc[i, 0] += (r * r).sum()
    out = np.zeros_like(xs)
    out[0, 0] = acc[0, 0]
    return (acc * data).sum() + out.sum() + acc.ravel().sum() + (-a).sum() + (a ** 2).max() + a.min()


def warm() -> None:
    """Record each program once (a value and gradient, as tape.value_and_grad runs it) on 1-d and 2-d inputs."""
    from tape.api.trace import value_and_grad
    from tape.compiled import array_calls

    array_calls.warm()  # array records' C functions (their kernels are the driver's: tape/sweeps/compiled.warm)
    one, two = np.linspace(0.5, 1.5, 4), np.linspace(0.5, 1.5, 4).reshape(2, 2)
    value_and_grad(_arithmetic)(one, one + 1.0, 0.5)
    for x in (one, two):
        value_and_grad(_ufuncs)(x)
    value_and_grad(_one_d)(one, one + 1.0, 0.5)
    value_and_grad(_two_d)(two, two + 1.0, 0.5)


__all__ = ["warm"]
