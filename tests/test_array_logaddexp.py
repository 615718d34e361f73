"""logaddexp's array records by NumPy's exp and log1p (kernels/array_helpers.py, not the scalar kernel element by
element): values, gradients and Hessian products against mpmath at 50 digits, at random points and at ties, signed
zeros, infinities, NaN, huge and tiny numbers, in every transform, replayed and afresh; the conventions at infinities
and ties are docs/design.md's kink rows (the scalar records', tests/test_ops.py)."""

import mpmath
import numpy as np

import tape
from tape.records import array_records

INF, NAN = np.inf, np.nan
EDGE = [(2.0, 2.0), (0.0, -0.0), (-0.0, 0.0), (INF, INF), (-INF, -INF), (INF, -INF), (-INF, INF), (INF, 1.0),
        (-INF, 1.0), (1.0, -INF), (NAN, 1.0), (1.0, NAN), (1e308, 1e308), (1e308, -1e308), (5e-324, 0.0),
        (1e-300, -1e-300), (745.0, 0.0), (-745.0, 0.0), (0.0, 36.0), (-36.0, 0.0), (710.0, 709.9), (-1e3, -1e3 + 1e-13)]


def _reference(a, b):
    """(value, share in a, share in b) by mpmath, or the kink rows' at infinities, ties of infinities and NaN."""
    if np.isnan(a) or np.isnan(b):
        return NAN, NAN, NAN
    if a == b and np.isinf(a):
        return a, 0.5, 0.5
    if np.isinf(a) or np.isinf(b):
        return max(a, b), float(a > b), float(b > a)
    with mpmath.workdps(50):
        a_, b_ = mpmath.mpf(a), mpmath.mpf(b)
        top = max(a_, b_)
        return (float(top + mpmath.log(mpmath.exp(a_ - top) + mpmath.exp(b_ - top))),
                float(1 / (1 + mpmath.exp(b_ - a_))), float(1 / (1 + mpmath.exp(a_ - b_))))


def test_logaddexp_array_records_against_mpmath(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)
    rng = np.random.default_rng(21)
    pairs = np.concatenate([rng.normal(size=(40, 2)) * np.repeat([1.0, 30.0], 20)[:, None], EDGE])
    n = len(pairs)
    w, v = rng.normal(size=n), rng.normal(size=2 * n)
    ref = np.array([_reference(a, b) for a, b in pairs])
    y, sa, sb = ref.T
    grad, hvp = np.concatenate([w * sa, w * sb]), w * sa * sb * (v[:n] - v[n:])
    hvp = np.concatenate([hvp, -hvp])

    def f(x):
        return (np.logaddexp(x[:n], x[n:]) * w).sum()

    def parts(x):
        return np.logaddexp(x[:n], x[n:])

    x = pairs.T.ravel()
    F, P = tape.trace(f, x), tape.trace(parts, x)
    with np.errstate(all="ignore"):
        afresh = tape.Tape()
        for value in (P(x), P.map(np.stack([x, x]))[1], np.logaddexp(*afresh.array(pairs.T)).value):
            assert np.array_equal(np.isnan(value), np.isnan(y))
            edge = ~np.isfinite(pairs).all(1) & ~np.isnan(y)  # (the kink rows: exactly)
            assert np.array_equal(value[edge], y[edge])
            ok = np.isfinite(pairs).all(1)
            assert np.all(np.abs(value[ok] - y[ok]) <= 2 * np.spacing(np.maximum(np.abs(pairs[ok]).max(1), 1.0)))
        clean = ~np.isnan(y)  # (a NaN pair's gradient is NaN, the others' are apart from it: a sum with NaN is NaN)
        keep = np.concatenate([clean, clean])
        x_clean = np.where(np.concatenate([clean, clean]), x, 0.0)
        grads = [F.value_and_grad(x)[1], tape.value_and_grad(f)(x)[1], F.grad_function()(x), F.vjp(x, 1.0),
                 F.map_value_and_grad(np.stack([x, x]))[1][1]]
        for g in grads:
            assert np.array_equal(np.isnan(g), ~keep)
            np.testing.assert_allclose(g[keep], grad[keep], rtol=1e-13, atol=1e-300)
        finite = keep & np.isfinite(x)
        for h in (F.hvp(x_clean, np.where(finite, v, 0.0)), F.grad_function().jvp(x_clean, np.where(finite, v, 0.0))):
            want = np.where(finite, hvp, 0.0)
            np.testing.assert_allclose(h[finite], want[finite], rtol=1e-12, atol=1e-300)


def _numpys_steps(a, b):
    """logaddexp's value and share in a pass by pass in NumPy, written out here: max(a, b) + log1p(exp(-|a - b|)),
    a + ln 2 where a == b; 1 / (1 + e) where a - b >= 0, else e / (1 + e), e = exp(-|a - b|), 1/2 where a == b."""
    d = np.subtract(a, b)
    e = np.exp(np.negative(np.abs(d)))
    value = np.where(np.equal(a, b), np.add(a, 0.6931471805599453), np.add(np.maximum(a, b), np.log1p(e)))
    share = np.where(np.equal(a, b), 0.5, np.divide(np.where(d >= 0.0, 1.0, e), np.add(e, 1.0)))
    return value, share


def test_logaddexp_rules_are_numpys_steps_bit_for_bit():
    """kernels/array_helpers.py's logaddexp and share (NumPy's exp and log1p between compiled passes) give the NumPy
    steps' bits, NaN for NaN: random and edge pairs, broadcast either way, a number and a 0-d pair."""
    from tape.kernels import array_helpers

    rng = np.random.default_rng(26)
    edges = np.array(EDGE).T
    cases = [(edges[0], edges[1]), (edges[1], edges[0]), (rng.normal(size=(4, 1)) * 30, rng.normal(size=5) * 30),
             (0.0, rng.normal(size=(3, 7)) * 800), (rng.normal(size=9), -INF), (np.float64(0.5), np.float64(0.5)),
             (np.array(-2.0), 3.0), (np.resize(edges[0], (6, 22)), edges[1][::-1])]
    with np.errstate(all="ignore"):
        for a, b in cases:
            want = _numpys_steps(a, b)
            got = array_helpers.logaddexp(a, b), array_helpers.logaddexp_share(a, b)
            for x, y in zip(got, want, strict=True):
                number = ~np.isnan(y)
                assert np.shape(x) == np.shape(y) and np.array_equal(np.isnan(x), ~number)
                assert np.array_equal(np.asarray(x)[number].view(np.int64), np.asarray(y)[number].view(np.int64))


def test_logaddexp_into_an_out_given_in_place_aliased_or_strided():
    """The value helper into an out (as an array rule calls it): the NumPy steps' bits whether out is apart from the
    operands (written in place), one of them (b's numbers read before they are overwritten), or a strided view."""
    from tape.kernels import array_helpers

    rng = np.random.default_rng(27)
    a, b = rng.normal(size=(3, 40)) * 30, rng.normal(size=40) * 30
    a[0, :len(EDGE)], b[:len(EDGE)] = np.array(EDGE).T
    with np.errstate(all="ignore"):
        want = _numpys_steps(a, b)[0]
        wide = np.full((3, 80), 7.0)
        for case in range(4):
            same = np.broadcast_to(b, (3, 40)).copy()  # (b's numbers, overwritten where out is b)
            out, x, y = ((np.full((3, 40), 7.0), a, b), (same, a, same), (wide[:, 20:60], a, b),
                         (same[0], a[0], same[0]))[case]
            got = array_helpers.logaddexp(x, y, out=out)
            assert got is out
            expect = want if out.ndim == 2 else want[0]
            number = ~np.isnan(expect)
            assert np.array_equal(np.isnan(out), ~number)
            assert np.array_equal(out[number].view(np.int64), expect[number].view(np.int64))
        assert np.all(wide[:, :20] == 7.0) and np.all(wide[:, 60:] == 7.0)
