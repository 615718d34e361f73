"""Array programs of kinds users write that no one here tuned to (s20 C), for bench/array_programs.py and the tests
(tests/test_untuned_programs.py, at smaller sizes): each ``name(ns, **sizes)`` gives (x, f, hand, state) as the bench's
programs do: a flat vector of params, f written with NumPy calls on ``ns.xp`` (NumPy, recording on VarArrays, or
jax.numpy) and ``ns.nn`` (sigmoid, logsumexp, loop: tape's or JAX's), a hand-derived NumPy value and gradient, and the
elements of the program's state (for bytes per element). It imports only NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def logistic(ns: Any, n: int = 100_000, d: int = 20, lam: float = 1e-3) -> tuple:
    """Logistic regression with an L2 penalty: mean log-loss of n points of d features; params weights and bias."""
    rng = np.random.default_rng(11)
    X, y = rng.normal(size=(n, d)), (rng.uniform(size=n) < 0.5).astype(np.float64)
    w0 = rng.normal(scale=0.1, size=d + 1)

    def f(w: Any) -> Any:
        z = X @ w[:d] + w[d]
        return ns.xp.logaddexp(0.0, z).mean() - (y * z).mean() + 0.5 * lam * (w[:d] * w[:d]).sum()

    def hand(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = X @ w[:d] + w[d]
        gz = (1.0 / (1.0 + np.exp(-z)) - y) / n
        value = np.logaddexp(0.0, z).mean() - (y * z).mean() + 0.5 * lam * (w[:d] @ w[:d])
        return float(value), np.concatenate([X.T @ gz + lam * w[:d], [gz.sum()]])

    return w0, f, hand, n


def conv1d(ns: Any, batch: int = 32, length: int = 1024, channels: int = 8, taps: int = 7) -> tuple:
    """A 1-d convolution layer by slicing (channels filters of taps taps on one input channel), ReLU, max pooling of
    pairs, a linear readout of each channel's mean; half the mean squared error. Params the filters and biases."""
    rng = np.random.default_rng(12)
    x, v, t = rng.normal(size=(batch, 1, length)), rng.normal(size=channels), rng.normal(size=batch)
    m = length - taps + 1 - (length - taps + 1) % 2  # outputs used (an even count)
    th0 = rng.normal(scale=0.3, size=channels * taps + channels)

    def f(th: Any) -> Any:
        W, b = th[:channels * taps].reshape(channels, taps), th[channels * taps:]
        y = b.reshape(channels, 1) + W[:, :1] * x[:, :, :m]
        for j in range(1, taps):
            y = y + W[:, j:j + 1] * x[:, :, j:j + m]
        h = ns.xp.maximum(y, 0.0)
        p = ns.xp.maximum(h[:, :, 0::2], h[:, :, 1::2])
        r = p.mean(axis=2) @ v - t
        return 0.5 * (r * r).mean()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        W, b = th[:channels * taps].reshape(channels, taps), th[channels * taps:]
        y = b.reshape(channels, 1) + sum(W[:, j:j + 1] * x[:, :, j:j + m] for j in range(taps))
        h = np.maximum(y, 0.0)
        h0, h1 = h[:, :, 0::2], h[:, :, 1::2]
        r = np.maximum(h0, h1).mean(axis=2) @ v - t
        dp = np.broadcast_to((np.outer(r / batch, v) / (m // 2))[:, :, None], h0.shape)
        dh = np.empty_like(h)
        dh[:, :, 0::2] = dp * np.where(h0 > h1, 1.0, np.where(h0 == h1, 0.5, 0.0))  # (ties: half each, as JAX)
        dh[:, :, 1::2] = dp * np.where(h1 > h0, 1.0, np.where(h0 == h1, 0.5, 0.0))
        dy = dh * np.where(y > 0.0, 1.0, np.where(y == 0.0, 0.5, 0.0))
        dW = np.stack([(dy * x[:, :, j:j + m]).sum(axis=(0, 2)) for j in range(taps)], axis=1)
        return 0.5 * float((r * r).mean()), np.concatenate([dW.ravel(), dy.sum(axis=(0, 2))])

    return th0, f, hand, batch * channels * m


def lstm(ns: Any, steps: int = 30, batch: int = 32, hidden: int = 32, inputs: int = 16) -> tuple:
    """An LSTM cell over a sequence (gates i, f, o, g from x_t Wx + h U + b); loss half the squared final state.
    Params Wx, U, b."""
    rng = np.random.default_rng(13)
    xs = rng.normal(size=(steps, batch, inputs))
    H, cuts = hidden, (inputs * 4 * hidden, (inputs + hidden) * 4 * hidden)
    th0 = rng.normal(scale=0.2, size=cuts[1] + 4 * hidden)

    def parts(th: Any) -> tuple:
        return th[:cuts[0]].reshape(inputs, 4 * H), th[cuts[0]:cuts[1]].reshape(H, 4 * H), th[cuts[1]:]

    def f(th: Any) -> Any:
        Wx, U, b = parts(th)
        ax = ns.xp.asarray(xs)  # (NumPy's unchanged; JAX indexes it by a tracer)

        def step(t: Any, carry: Any) -> Any:
            h, c = carry
            g = ax[t] @ Wx + h @ U + b
            i, fg, o = ns.nn.sigmoid(g[:, :H]), ns.nn.sigmoid(g[:, H:2 * H]), ns.nn.sigmoid(g[:, 2 * H:3 * H])
            c = fg * c + i * ns.xp.tanh(g[:, 3 * H:])
            return o * ns.xp.tanh(c), c

        h, _ = ns.nn.loop(steps, step, (ns.xp.zeros((batch, H)), ns.xp.zeros((batch, H))))
        return 0.5 * (h * h).sum()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        Wx, U, b = parts(th)
        h, c, saved = np.zeros((batch, H)), np.zeros((batch, H)), []
        for t in range(steps):
            g = xs[t] @ Wx + h @ U + b
            i, fg, o = (1.0 / (1.0 + np.exp(-g[:, k * H:(k + 1) * H])) for k in range(3))
            gg = np.tanh(g[:, 3 * H:])
            saved.append((h, c, i, fg, o, gg))
            c = fg * c + i * gg
            h = o * np.tanh(c)
        value, dh, dc = 0.5 * float((h * h).sum()), h.copy(), np.zeros((batch, H))
        gWx, gU, gb = np.zeros_like(Wx), np.zeros_like(U), np.zeros(4 * H)
        for t in range(steps - 1, -1, -1):
            hp, cp, i, fg, o, gg = saved[t]
            cn = fg * cp + i * gg
            tc = np.tanh(cn)
            dc = dc + dh * o * (1.0 - tc * tc)
            dG = np.concatenate([dc * gg * i * (1.0 - i), dc * cp * fg * (1.0 - fg), dh * tc * o * (1.0 - o),
                                 dc * i * (1.0 - gg * gg)], axis=1)
            gWx += xs[t].T @ dG
            gU += hp.T @ dG
            gb += dG.sum(0)
            dh, dc = dG @ U.T, dc * fg
        return value, np.concatenate([gWx.ravel(), gU.ravel(), gb])

    return th0, f, hand, batch * hidden


def burgers(ns: Any, n: int = 4096, steps: int = 200, a: float = 0.3, d: float = 0.1) -> tuple:
    """Viscous Burgers' equation, periodic, upwind advection and diffusion by np.roll (a = dt/dx, d = nu dt/dx^2);
    loss half the squared final state. The params are the initial state."""
    grid = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    u0 = 1.0 + 0.5 * np.sin(grid) + 0.05 * np.random.default_rng(14).normal(size=n)

    def f(u: Any) -> Any:
        def step(_: Any, u: Any) -> Any:
            left, right = ns.xp.roll(u, 1), ns.xp.roll(u, -1)
            return u - a * u * (u - left) + d * (right - 2.0 * u + left)

        u = ns.nn.loop(steps, step, u)
        return 0.5 * (u * u).sum()

    def hand(u: np.ndarray) -> tuple[float, np.ndarray]:
        saved = []
        for _ in range(steps):
            saved.append(u)
            left = np.roll(u, 1)
            u = u - a * u * (u - left) + d * (np.roll(u, -1) - 2.0 * u + left)
        value, g = 0.5 * float((u * u).sum()), u.copy()
        for u in reversed(saved):
            left = np.roll(u, 1)
            g = g * (1.0 - a * (2.0 * u - left) - 2.0 * d) + np.roll(g * (a * u + d), -1) + np.roll(g * d, 1)
        return value, g

    return u0, f, hand, n


def pendulums(ns: Any, n: int = 2048, steps: int = 100, dt: float = 0.05, k: float = 0.3) -> tuple:
    """A ring of n coupled pendulums (phases x, velocities w), explicit steps: w -= dt (sin x + k sin(x - its left
    neighbour's x, np.roll)), x += dt w; loss the sum of cos of the final phases. The params are the initial state."""
    th0 = np.random.default_rng(17).normal(size=2 * n)

    def f(th: Any) -> Any:
        def step(_: Any, xw: Any) -> Any:
            x, w = xw
            w = w - dt * (ns.xp.sin(x) + k * ns.xp.sin(x - ns.xp.roll(x, 1)))
            return x + dt * w, w

        return ns.xp.cos(ns.nn.loop(steps, step, (th[:n], th[n:]))[0]).sum()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        x, w, saved = th[:n], th[n:], []
        for _ in range(steps):
            saved.append(x)
            w = w - dt * (np.sin(x) + k * np.sin(x - np.roll(x, 1)))
            x = x + dt * w
        gx, gw = -np.sin(x), np.zeros(n)
        for xt in reversed(saved):  # back through x += dt w, then w -= dt F(x)
            gw = gw + dt * gx
            near = -dt * gw * k * np.cos(xt - np.roll(xt, 1))
            gx = gx - dt * gw * np.cos(xt) + near - np.roll(near, -1)
        return float(np.cos(x).sum()), np.concatenate([gx, gw])

    return th0, f, hand, 2 * n


def softmax(ns: Any, n: int = 2000, d: int = 64, classes: int = 10, lam: float = 1e-3) -> tuple:
    """A softmax classifier: mean cross-entropy of n points of d features (one-hot labels), an L2 penalty; params the
    weights and biases."""
    rng = np.random.default_rng(15)
    X = rng.normal(size=(n, d))
    Y = np.eye(classes)[rng.integers(0, classes, n)]
    th0 = rng.normal(scale=0.1, size=d * classes + classes)

    def f(th: Any) -> Any:
        W, b = th[:d * classes].reshape(d, classes), th[d * classes:]
        logits = X @ W + b
        return (ns.nn.logsumexp(logits, axis=1) - (logits * Y).sum(1)).mean() + 0.5 * lam * (W * W).sum()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        W, b = th[:d * classes].reshape(d, classes), th[d * classes:]
        logits = X @ W + b
        top = logits.max(axis=1, keepdims=True)
        e = np.exp(logits - top)
        s = e.sum(axis=1, keepdims=True)
        value = (np.log(s[:, 0]) + top[:, 0] - (logits * Y).sum(1)).mean() + 0.5 * lam * (W * W).sum()
        dl = (e / s - Y) / n
        return float(value), np.concatenate([(X.T @ dl + lam * W).ravel(), dl.sum(0)])

    return th0, f, hand, n * classes


def gaussian(ns: Any, n: int = 5000, d: int = 32) -> tuple:
    """The mean negative log-likelihood (up to constants) of n points of d features under a Gaussian of precision
    L L^T: L lower triangular, np.tril of params below its diagonal plus np.diag of exp of d params on it, the mean a
    row of params broadcast over the points by np.broadcast_to. Params L's, its log diagonal, the mean."""
    rng = np.random.default_rng(16)
    X = rng.normal(size=(n, d)) @ rng.normal(scale=0.5, size=(d, d)) + 1.0
    th0 = np.concatenate([rng.normal(scale=0.1, size=d * d + d), np.zeros(d)])
    cut, top = d * d, d * d + d

    def f(th: Any) -> Any:
        L = ns.xp.tril(th[:cut].reshape(d, d), -1) + ns.xp.diag(ns.xp.exp(th[cut:top]))
        Z = (X - ns.xp.broadcast_to(th[top:], (n, d))) @ L
        return 0.5 * (Z * Z).sum() / n - th[cut:top].sum()

    def hand(th: np.ndarray) -> tuple[float, np.ndarray]:
        s, C = th[cut:top], X - th[top:]
        L = np.tril(th[:cut].reshape(d, d), -1) + np.diag(np.exp(s))
        Z = C @ L
        G = C.T @ Z / n  # the gradient by L
        return float(0.5 * (Z * Z).sum() / n - s.sum()), np.concatenate(
            [np.tril(G, -1).ravel(), np.diag(G) * np.exp(s) - 1.0, -(Z @ L.T).sum(0) / n])

    return th0, f, hand, n * d


def denoise(ns: Any, n: int = 100_000, lam: float = 0.5, delta: float = 0.3) -> tuple:
    """Robust denoising of a signal with outliers: Huber losses (np.where) of the residuals and of the differences
    of neighbours (total variation); params the signal."""
    rng = np.random.default_rng(13)
    y = np.sin(np.linspace(0.0, 20.0, n)) + rng.normal(scale=0.3, size=n)
    y[rng.uniform(size=n) < 0.02] += 5.0
    w0 = y + rng.normal(scale=0.1, size=n)

    def huber(z: Any) -> Any:
        a = ns.xp.abs(z)
        return ns.xp.where(a < delta, 0.5 * z * z, delta * (a - 0.5 * delta))

    def f(w: Any) -> Any:
        return huber(w - y).sum() + lam * huber(w[1:] - w[:-1]).sum()

    def hand(w: np.ndarray) -> tuple[float, np.ndarray]:
        r, d = w - y, w[1:] - w[:-1]
        small_r, small_d = np.abs(r) < delta, np.abs(d) < delta
        gr, gd = np.where(small_r, r, delta * np.sign(r)), lam * np.where(small_d, d, delta * np.sign(d))
        g = gr.copy()
        g[1:] += gd
        g[:-1] -= gd
        value = (np.where(small_r, 0.5 * r * r, delta * (np.abs(r) - 0.5 * delta)).sum()
                 + lam * np.where(small_d, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta)).sum())
        return float(value), g

    return w0, f, hand, n


def kmeans(ns: Any, k: int = 100, n: int = 10_000, d: int = 16) -> tuple:
    """GradBench's k-means objective, as its PyTorch tool writes it: the sum over n points of the squared distance to
    the nearest of k centers, the distances as |c|^2 + |p|^2 - 2 p.c (a matmul with the points, a constant); params
    the centers, started at the last k points."""
    rng = np.random.default_rng(14)
    P = rng.uniform(size=(n, d))
    c0 = P[-k:].ravel().copy()

    def f(c: Any) -> Any:
        C = c.reshape(k, d)
        dist = (C * C).sum(axis=1)[None, :] + (P * P).sum(axis=1)[:, None] - 2.0 * (P @ C.T)
        return dist.min(axis=1).sum()

    def hand(c: np.ndarray) -> tuple[float, np.ndarray]:
        C = c.reshape(k, d)
        dist = (C * C).sum(axis=1)[None, :] + (P * P).sum(axis=1)[:, None] - 2.0 * (P @ C.T)
        nearest = dist.min(axis=1)
        hit = dist == nearest[:, None]
        w = hit / hit.sum(axis=1, keepdims=True)  # (ties: equal shares, as JAX)
        return float(nearest.sum()), (2.0 * (w.sum(axis=0)[:, None] * C - w.T @ P)).ravel()

    return c0, f, hand, n * k


def ode(ns: Any, n: int = 10_000, steps: int = 100) -> tuple:
    """GradBench's ODE (after cmpad): y' = x * (1, y_0, .., y_{n-2}) from y = 0 to t = 2 by `steps` classical
    Runge-Kutta steps, the stages joined by np.concatenate; the value is the last element of y, params x."""
    rng = np.random.default_rng(15)
    x0, h = rng.uniform(size=n), 2.0 / steps

    def f(x: Any) -> Any:
        def rate(y: Any) -> Any:
            return x * ns.xp.concatenate((ns.xp.ones(1), y[:-1]))

        def step(t: Any, y: Any) -> Any:
            k1 = rate(y)
            k2 = rate(y + h / 2 * k1)
            k3 = rate(y + h / 2 * k2)
            k4 = rate(y + h * k3)
            return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

        return ns.nn.loop(steps, step, x * 0.0)[-1]

    def shift(y: np.ndarray) -> np.ndarray:
        return np.concatenate(([1.0], y[:-1]))

    def back(v: np.ndarray) -> np.ndarray:  # shift's transpose on an adjoint (the 1 takes none)
        return np.concatenate((v[1:], [0.0]))

    def hand(x: np.ndarray) -> tuple[float, np.ndarray]:
        y, kept = np.zeros(n), []
        for _ in range(steps):
            u0 = y
            k1 = x * shift(u0)
            u1 = y + h / 2 * k1
            k2 = x * shift(u1)
            u2 = y + h / 2 * k2
            k3 = x * shift(u2)
            u3 = y + h * k3
            k4 = x * shift(u3)
            kept.append((u0, u1, u2, u3))
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        gx, gy = np.zeros(n), np.zeros(n)
        gy[-1] = 1.0
        for u0, u1, u2, u3 in reversed(kept):  # each stage k = x * shift(u), u = y + c k_before: back, last first
            gk = [h / 6 * gy, h / 3 * gy, h / 3 * gy, h / 6 * gy]
            gu = gy.copy()
            for stage, (u, c) in zip((3, 2, 1, 0), ((u3, h), (u2, h / 2), (u1, h / 2), (u0, 0.0)), strict=True):
                gx += gk[stage] * shift(u)
                gs = back(gk[stage] * x)
                gu += gs
                if stage:
                    gk[stage - 1] += c * gs
            gy = gu
        return float(y[-1]), gx

    return x0, f, hand, n


def lse(ns: Any, n: int = 1_280_000) -> tuple:
    """GradBench's logsumexp, written as its PyTorch tool writes it: the largest element, then the log of the sum of
    the exponentials shifted by it; params the n numbers, uniform on [-100, 100]."""
    x0 = np.random.default_rng(16).uniform(-100.0, 100.0, size=n)

    def f(x: Any) -> Any:
        top = ns.xp.max(x)
        return top + ns.xp.log(ns.xp.sum(ns.xp.exp(x - top)))

    def hand(x: np.ndarray) -> tuple[float, np.ndarray]:
        e = np.exp(x - x.max())
        return float(x.max() + np.log(e.sum())), e / e.sum()

    return x0, f, hand, n


PROGRAMS = {"logistic": logistic, "conv1d": conv1d, "lstm": lstm, "burgers": burgers, "softmax": softmax,
            "gaussian": gaussian, "pendulums": pendulums, "denoise": denoise, "kmeans": kmeans, "ode": ode,
            "lse": lse}
