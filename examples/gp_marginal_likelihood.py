"""A Gaussian process' negative log marginal likelihood (RBF kernel, 3 hyperparameters) and its gradient.

    L(θ) = ½ yᵀ K⁻¹ y + ½ log det K + n/2 log 2π,   K = s exp(-|xᵢ - xⱼ|² / 2ℓ²) + σ² I,   θ = log (s, ℓ, σ²)

tape records it once (a Cholesky record, two triangular solves) and replays value and gradient; the
gradient is checked against the closed form ½ tr((K⁻¹ − α αᵀ) ∂K/∂θ) written with NumPy and SciPy.

    python examples/gp_marginal_likelihood.py                 # n = 100: the check
    python examples/gp_marginal_likelihood.py --bench 500     # timings (interleaved medians) at n = 500
    /work/jaxenv/bin/python examples/gp_marginal_likelihood.py --jax 500   # JAX jit, in its own process
"""

import sys
import time

import numpy as np
import scipy.linalg

THETA = np.array([0.3, -0.5, -2.0])


def data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0.0, 10.0, n))
    return (x[:, None] - x[None, :]) ** 2, np.sin(x) + 0.1 * rng.normal(size=n)


def nll(theta, d2, y, np=np, linalg=None):  # noqa: A002  the same code for NumPy, tape and jax.numpy
    """The negative log marginal likelihood; ``linalg``: tape.linalg (or JAX's scipy.linalg)."""
    n = len(y)
    s, length, noise = np.exp(theta[0]), np.exp(theta[1]), np.exp(theta[2])
    K = s * np.exp(-0.5 * d2 / length ** 2) + noise * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = (linalg or scipy.linalg).cho_solve((L, True), y)
    return 0.5 * (y @ alpha) + np.sum(np.log(L[np.arange(n), np.arange(n)])) + 0.5 * n * np.log(2 * np.pi)


def by_hand(theta: np.ndarray, d2: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Value and gradient with NumPy and SciPy: ½ tr((K⁻¹ − α αᵀ) ∂K/∂θᵢ)."""
    n = len(y)
    s, length, noise = np.exp(theta)
    E = np.exp(-0.5 * d2 / length ** 2)
    K = s * E + noise * np.eye(n)
    factor = scipy.linalg.cho_factor(K, lower=True)
    alpha = scipy.linalg.cho_solve(factor, y)
    W = scipy.linalg.cho_solve(factor, np.eye(n)) - np.outer(alpha, alpha)
    value = 0.5 * y @ alpha + np.sum(np.log(np.diag(factor[0]))) + 0.5 * n * np.log(2 * np.pi)
    sE = s * E
    return value, 0.5 * np.array([np.sum(W * sE), np.sum(W * sE * d2) / length ** 2, noise * np.trace(W)])


def median_ms(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main(n: int = 100, bench: bool = False) -> tuple[float, np.ndarray]:
    import tape

    d2, y = data(n)
    F = tape.trace(lambda th: nll(th, d2, y, linalg=tape.linalg), THETA)
    value, grad = F.value_and_grad(THETA)
    hand_value, hand_grad = by_hand(THETA, d2, y)
    assert np.isclose(value, hand_value, rtol=1e-12) and np.allclose(grad, hand_grad, rtol=1e-8)
    print(f"n = {n}: L = {value:.6f}, gradient {grad}, max relative difference to the closed form "
          f"{np.max(np.abs(grad - hand_grad) / np.abs(hand_grad)):.1e}")
    if bench:
        engines = {"tape Function.value_and_grad (replay)": lambda: F.value_and_grad(THETA),
                   "tape.value_and_grad (records each call)":
                       lambda: tape.value_and_grad(lambda th: nll(th, d2, y, linalg=tape.linalg))(THETA),
                   "NumPy + SciPy by hand": lambda: by_hand(THETA, d2, y)}
        times: dict[str, list[float]] = {name: [] for name in engines}
        for fn in engines.values():
            fn()  # warm
        for _ in range(15):  # interleaved: each round runs every engine once
            for name, fn in engines.items():
                times[name] += median_ms(fn, 1)
        for name, t in times.items():
            print(f"{name:45s} {1e3 * np.median(t):8.2f} ms (median of {len(t)})")
    return value, grad


def jax_main(n: int) -> None:
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    jax.config.update("jax_enable_x64", True)
    d2, y = data(n)
    f = jax.jit(jax.value_and_grad(lambda th: nll(th, jnp.asarray(d2), jnp.asarray(y), np=jnp, linalg=jsl)))
    value, grad = f(jnp.asarray(THETA))
    hand_value, hand_grad = by_hand(THETA, d2, y)
    print(f"JAX: L = {float(value):.6f}, max relative difference of the gradient to the closed form "
          f"{np.max(np.abs(np.asarray(grad) - hand_grad) / np.abs(hand_grad)):.1e}")
    times = median_ms(lambda: jax.block_until_ready(f(jnp.asarray(THETA))), 15)
    print(f"{'JAX jit value_and_grad':45s} {1e3 * np.median(times):8.2f} ms (median of {len(times)})")


if __name__ == "__main__":
    if "--jax" in sys.argv:
        jax_main(int(sys.argv[sys.argv.index("--jax") + 1]))
    elif "--bench" in sys.argv:
        main(int(sys.argv[sys.argv.index("--bench") + 1]), bench=True)
    else:
        main()
