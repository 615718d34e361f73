"""The compiled sweeps of array records (kernels/array_driver.py, tape/sweeps/compiled.py): a Function's
values and gradients with them are its NumPy steps' bit for bit, so its numbers never depend on whether the kernels are
cached or how long it has run: every op of ops.EXACT and ops.RULED on every layout (broadcasting on either side, views,
0-d constants) at edge values, sums over every pattern of axes and layout, the sums back over broadcast axes, beside
kinds they do not run; against central differences; and not used before the kernels are compiled."""

import math
import operator
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from reference import central

import tape
from tape.kernels import compiling
from tape.kernels.compiling import Clock, Gate
from tape.kernels.ops import EXACT, FUSIBLE, LOOPED, OPCODE, RULED
from tape.records import array_records
from tape.sweeps import compiled, encoding, steps

RNG = np.random.default_rng(26)


@pytest.fixture(autouse=True)
def arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def _on(monkeypatch, on):
    monkeypatch.setattr(compiled, "ready", lambda s, runs: on)


def _tables(F) -> list[np.ndarray]:
    """The tables of F's compiled stretches."""
    return [call.args[1] for sweep in F._steps.values() if isinstance(sweep, steps.Sweep) for call in sweep.calls
            if getattr(call, "func", None) in (compiled.forward, compiled.reverse)]


def _both(f, x, points, monkeypatch, driven=()):
    """Values and gradients at points by the compiled sweeps and by NumPy's steps: the same bits (NaN for NaN).
    The ops named in driven (and something) ran in the compiled sweeps. Returns the compiled Function."""
    _on(monkeypatch, True)
    F = tape.trace(f, x)
    _on(monkeypatch, False)
    G = tape.trace(f, x)
    for point in points:
        _on(monkeypatch, True)
        got = F.value_and_grad(point)
        _on(monkeypatch, False)
        want = G.value_and_grad(point)
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(a, b, equal_nan=True), np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))
    ops = {int(code) for table in _tables(F) for code in table[:, 1]}
    assert _tables(F) and {OPCODE[name] for name in driven} <= ops
    return F


S = (2, 3, 8)  # 3-d: no fused run (tape/sweeps/fusion.py) takes the records
LAYOUTS = {  # (a, b) of a binary op over the 96 inputs: broadcasting on either side, views, numbers
    "same": lambda X: (X[:48].reshape(S), X[48:][::-1].reshape(S)),
    "row": lambda X: (X[:48].reshape(S), X[50:58]),
    "column on the left": lambda X: (X[60:66].reshape(2, 3, 1), X[:48].reshape(S)),
    "middle axis": lambda X: (X[:48].reshape(S), X[80:96].reshape(2, 1, 8)),
    "outer": lambda X: (X[:6].reshape(2, 3, 1), X[70:78].reshape(1, 1, 8)),
    "one number read by all": lambda X: (X[:48].reshape(S), X[5]),
    "transposed": lambda X: (X[:48].reshape(8, 3, 2).T, X[::2].reshape(S)),
    "number on the right": lambda X: (X[:48].reshape(S), 1.75),
    "number on the left": lambda X: (0.6, X[48:].reshape(S)),
}
SPELLED = {"neg": operator.neg, "abs": abs, "add": operator.add, "sub": operator.sub, "mul": operator.mul,
           "div": operator.truediv}
UNARY = {name: SPELLED.get(name) or getattr(tape, name) for name in EXACT if name in ("neg", "abs", "sqrt", "relu")}
BINARY = {name: SPELLED.get(name) or getattr(tape, name) for name in (*EXACT, *RULED)
          if name not in UNARY and name != "mul_nz"}  # (mul_nz: gradient tapes' records only)
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 1e-308, -1e-308, 5e-324, -5e-324, 2.5e-310,
                  1.0, -1.0, 0.5, 3.0, 1e-16, 7.0, -7.0, 1e154])


def _points():
    """Random points and points of edge values (0, -0, infinities, NaN, huge, tiny, subnormal) in every place."""
    x = RNG.uniform(-1.5, 1.5, 96)
    return [x, np.resize(EDGES, 96), np.resize(EDGES[::-1], 96), np.resize(np.roll(EDGES, 7), 96),
            np.where(x > 0.5, 0.0, x)]


@pytest.mark.parametrize("name", UNARY)
def test_exact_unary_ops(name, monkeypatch):
    fn = UNARY[name]
    _both(lambda X: (fn(X.reshape(2, 3, 16)[:, :, ::2] * 1.1) * X[:8]).sum(), _points()[0], _points(), monkeypatch,
          driven=[name])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", BINARY)
def test_exact_binary_ops_on_every_layout(name, layout, monkeypatch):
    fn = BINARY[name]

    def f(X):
        a, b = LAYOUTS[layout](X)
        return (fn(a, b) * X[:48].reshape(S)).sum()

    _both(f, _points()[0], _points(), monkeypatch, driven=[name])


@pytest.mark.parametrize("layout", ["same", "row", "number on the right", "number on the left",
                                    "one number read by all"])
@pytest.mark.parametrize("name", ["sub", "mul", "div", "maximum"])
def test_large_records(name, layout, monkeypatch):
    """Past 4,096 elements (a view laid out as the output or one number: any size; broadcast: BROADCAST)."""
    big = (3, 50, 40)
    fn, n = BINARY[name], int(np.prod(big))
    layouts = {"same": lambda X: (X[:n].reshape(big), X[n:][::-1].reshape(big)), "row": lambda X: (X[:n].reshape(
        big), X[n:n + 40]), "number on the right": lambda X: (X[:n].reshape(big), 1.75),
               "number on the left": lambda X: (0.6, X[n:].reshape(big)), "one number read by all": lambda X: (
                   X[:n].reshape(big), X[5])}

    def f(X):
        a, b = layouts[layout](X)
        return (fn(a, b) * X[:n].reshape(big)).sum()

    points = [np.resize(p, 2 * n) for p in _points()]
    _both(f, points[0], points, monkeypatch, driven=[name])


SHAPES = [(3, 4, 5), (2, 9, 17), (4, 130), (1, 300), (300,), (7, 1, 24), (2, 3, 4, 5), (2, 2, 600)]


@pytest.mark.parametrize("shape", SHAPES)
def test_sums_back_over_every_pattern_of_broadcast_axes(shape, monkeypatch):
    """g * b sent to b broadcast along any set of the axes (lengths past 8 and 128: NumPy's pairwise blocks)."""
    n = int(np.prod(shape))
    patterns = [tuple(1 if (mask >> k) & 1 else m for k, m in enumerate(shape)) for mask in range(2 ** len(shape))]

    def f(X):
        a = X[:n].reshape(shape)
        total = (a * a).sum()
        for p in patterns:
            total = total + (a * (X[n:n + int(np.prod(p))].reshape(p) * 1.5)).sum()
        return total + (a * X[n:n + shape[-1]]).sum()  # leading axes broadcast

    x = RNG.uniform(-1.0, 1.0, 2 * n)
    _both(f, x, [x, x * 1e10 + 1.0, np.where(x > 0.3, 0.0, x)], monkeypatch, driven=["mul"])


SUMS = {  # forward sums: every set of axes, views, Fortran order (NumPy's step), lengths past NumPy's blocks
    "every set of axes": lambda X: sum((X[:360].reshape(3, 4, 30).sum(axis=axes) ** 2).sum()
                                       for axes in [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]),
    "keepdims": lambda X: (X[:360].reshape(12, 30).sum(axis=1, keepdims=True) * X[:360].reshape(12, 30)).sum(),
    "long rows": lambda X: ((X[:2000].reshape(2, 1000).sum(axis=1) ** 2).sum() + X[:1999].sum() * X[:300].sum()),
    "strided views": lambda X: ((X[:720:2].reshape(12, 30).sum(axis=0) * X[1:721:24]).sum()
                                + (X[:1200].reshape(40, 30)[::3, 1:29].sum(axis=1) ** 2).sum()),
    "transposed and Fortran": lambda X: ((X[:360].reshape(12, 30).T.sum(axis=1) ** 2).sum()
                                         + (X[:360].reshape(3, 4, 30).transpose(2, 0, 1).sum(axis=(1, 2)) ** 2).sum()
                                         + (X[::-1][:300].sum() * 2.0)),
    "all of a view's elements": lambda X: (X[:1200].reshape(40, 30)[:, 1:].sum() * X[:720].reshape(8, 9, 10)[
        1:, ::2, 1::2].sum() + X[:1200].reshape(40, 30)[::2].sum() + (X[:1200].reshape(4, 10, 30)[:, 1:, ::3].sum(
        axis=(1, 2)) ** 2).sum()),  # (NumPy 2.4 adds copies of a view that is not one block in its buffer)
    "mixed with NumPy's steps": lambda X: (tape.logsumexp(X[:40].reshape(5, 8) * 2.0, axis=1) * np.cumsum(
        X[:5]) + np.concatenate([X[:3], X[10:12]]) * X[:40].reshape(5, 8).max(axis=1)).sum()
    + (np.tanh(X[:48].reshape(6, 8) @ X[:8]) - 0.5).sum(),
    "mlp": lambda X: ((np.tanh(X[:32].reshape(4, 8) @ X[32:96].reshape(8, 8) + X[96:104]) @ X[:8] - 0.3) ** 2).mean(),
}


@pytest.mark.parametrize("program", SUMS)
def test_programs_against_numpy_steps_and_central_differences(program, monkeypatch):
    f = SUMS[program]
    x = RNG.uniform(-1.0, 1.0, 2400)
    F = _both(f, x, [x, x[::-1] * 1e8 + 3.0, np.where(x > 0.5, 0.0, x)], monkeypatch)
    _on(monkeypatch, True)
    y = x[:110]
    small = tape.trace(f, x)
    np.testing.assert_allclose(F.value_and_grad(x)[1][:110], central(lambda v: float(small(np.concatenate(
        [v, x[110:]]))), y), rtol=1e-6, atol=1e-6)


def test_structural_zeros_and_nans(monkeypatch):
    """A product with a zero factor sends nothing: a where-free sqrt at 0 times 0, an inf times 0, a number inf."""
    x = np.linspace(0.0, 1.0, 48)
    x[3] = np.inf
    _both(lambda X: (np.sqrt(X.reshape(S)) * (X.reshape(S) * 0.0) + X.reshape(S) * X[::-1].reshape(S)
                     + (X.reshape(S) - 1.0) * np.inf).sum(), x, [x, np.zeros(48)],
          monkeypatch, driven=["sqrt", "mul"])


def _program(X):
    a = X[:32].reshape(4, 8)
    return (((a * X[32:40] + X[40:44].reshape(4, 1)) / (1.0 + a * a)).sum(axis=0) ** 2).sum() + SUMS["mlp"](X)


@pytest.mark.parametrize("on_disk", [False, True])
def test_the_same_bits_before_and_after_the_kernels_take_over(monkeypatch, tmp_path, on_disk):
    """With the kernels not compiled in this process, Functions run NumPy's steps until those have run LOAD seconds
    in the process where the kernels are cached (their load never lands on a small Function's first call; a Function
    traced later, or recorded afresh, then takes them at once), or until a Function has spent PAYBACK seconds in them
    where not (nor their compile; each Function by its own), then the compiled sweeps, with the very same values and
    gradients; a Function with nothing for them (every record too large) never asks for them."""
    index = tmp_path / "index.nbi"
    if on_disk:
        index.write_text("")
    kernel = SimpleNamespace(signatures=[], _cache=SimpleNamespace(_cache_file=SimpleNamespace(_index_path=str(index))))
    clock = Clock()
    monkeypatch.setattr(compiling, "EAGER", False)  # (tape-bench's in-process runs set it)
    monkeypatch.setattr(Gate, "loaded", False)  # (no kernel loaded in this process yet: not RELOAD)
    monkeypatch.setattr(compiled, "CLOCK", clock)
    monkeypatch.setattr(compiled, "_gate", Gate((kernel, kernel), (0.05, math.inf), clock))
    monkeypatch.setattr(compiled, "PAYBACK", math.inf if on_disk else 0.05)
    x = RNG.uniform(-1.0, 1.0, 110)
    F = tape.trace(_program, x)
    first = F.value_and_grad(x)
    assert not _tables(F)
    for _ in range(10**4):  # until the sweeps passed the payback (the Gate counts the next sweep ahead: not F._swept)
        if _tables(F):
            break
        F.value_and_grad(x)
    later = F.value_and_grad(x)
    assert _tables(F)
    assert np.array_equal(first[0], later[0]) and np.array_equal(first[1], later[1])
    G = tape.trace(_program, x)
    again = G.value_and_grad(x)
    assert bool(_tables(G)) == on_disk
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    k = encoding.SPAN - 1  # a product broadcast past BROADCAST elements in lines too short for LINED, its sum past
    n = max(encoding.BROADCAST, encoding.LARGE) // k + 1  # LARGE
    big = tape.trace(lambda X: np.sum(X.reshape(-1, 1) * X[:k]), np.ones(n))
    while not on_disk and getattr(big, "_swept", 0.0) < 0.05:  # (on disk the kernels are open already)
        big.value_and_grad(np.ones(n))
    big.value_and_grad(np.ones(n))
    assert getattr(big, "_driven", False) is False and not _tables(big)


W = RNG.normal(size=4096)  # weights on a product's elements: its adjoint G
ORDERS = {"C": lambda X, r, c: X[:r * c].reshape(r, c), "F": lambda X, r, c: X[-r * c:].reshape(c, r).T}
PRODUCT_SHAPES = [(2, 3, 4), (5, 7, 3), (1, 6, 5), (6, 5, 1), (4, 1, 5), (17, 33, 9), (32, 64, 1), (64, 64, 64)]


def _matmul_points(size):
    """Random points, with zeros (the masked redo's factors), and edge values (NaN, inf: the NaN test)."""
    x = RNG.normal(size=size)
    return [x, np.where(x > 0.8, 0.0, x), np.resize(EDGES, size), np.where(x > 1.5, np.inf, x)]


def _driven(F, kind) -> bool:
    return any((table[:, 0] == kind).any() for table in _tables(F))


@pytest.mark.parametrize("b_order", ORDERS)
@pytest.mark.parametrize("a_order", ORDERS)
@pytest.mark.parametrize("shape", PRODUCT_SHAPES)
def test_matmuls_by_numpys_blas(shape, a_order, b_order, monkeypatch):
    """C and Fortran blocks, vectors as a row or column, an outer product, up to PRODUCTS multiply-adds: NumPy's
    call (dgemm, dgemv, its own loop) in the product and both products back, with its NaN test and redo."""
    n, k, m = shape
    c = W[:n * m].reshape(n, m)

    def f(x):
        A, B = ORDERS[a_order](x[:4096], n, k), ORDERS[b_order](x[4096:], k, m)
        return ((A @ B) * c).sum()

    F = _both(f, RNG.normal(size=8192), _matmul_points(8192), monkeypatch)
    assert _driven(F, compiled.kernels.MATMUL) == compiled.kernels.BLAS


PROGRAMS = {  # name: (f, size, whether the driver runs a matmul: not A @ A.T, which NumPy may give to syrk)
    "vector @ matrix": (lambda x: (x[:5] @ x[5:35].reshape(5, 6) * W[:6]).sum(), 35, True),
    "matrix @ vector": (lambda x: (x[:30].reshape(6, 5) @ x[30:35] * W[:6]).sum(), 35, True),
    "transposed views": (lambda x: ((x[:12].reshape(3, 4).T @ x[12:27].reshape(5, 3).T) * W[:20].reshape(4, 5))
                         .sum(), 27, True),
    "a constant operand": (lambda x: ((W[:12].reshape(3, 4) @ x[:20].reshape(4, 5)) * W[:15].reshape(3, 5)).sum()
                           + ((x[:20].reshape(5, 4) @ W[:12].reshape(4, 3)) * W[:15].reshape(5, 3)).sum(), 20, True),
    "A @ A.T (NumPy's syrk)": (lambda x: ((x[:12].reshape(3, 4) @ x[:12].reshape(3, 4).T) * W[:9].reshape(3, 3))
                               .sum(), 12, False),
    "A.T @ A": (lambda x: ((x[:12].reshape(3, 4).T @ x[:12].reshape(3, 4)) * W[:16].reshape(4, 4)).sum(), 12, False),
    "a chain": (lambda x: (tape.tanh(x[:12].reshape(3, 4) @ x[12:32].reshape(4, 5)) @ x[32:37] * W[:3]).sum(), 37,
                True),
    "a dot product (NumPy's ddot)": (lambda x: x[:6] @ x[6:12] + (x[:24].reshape(2, 3, 4) * 2.0).sum(), 24, False),
}


@pytest.mark.parametrize("program", PROGRAMS)
def test_matmul_programs(program, monkeypatch):
    f, size, driven = PROGRAMS[program]
    F = _both(f, RNG.normal(size=size), _matmul_points(size), monkeypatch)
    assert _driven(F, compiled.kernels.MATMUL) == (driven and compiled.kernels.BLAS)


def test_without_numpys_openblas_matmuls_stay_numpys(monkeypatch):
    """Where NumPy's own OpenBLAS is not found (another build), no error, and NumPy's steps run every matmul."""
    from tape.kernels import blas
    assert blas.bind(("scipy_cblas_no_such_routine64_",)) is False
    monkeypatch.setattr(compiled.kernels, "BLAS", False)
    f, size, _ = PROGRAMS["transposed views"]
    assert not _driven(_both(f, RNG.normal(size=size), _matmul_points(size), monkeypatch), compiled.kernels.MATMUL)


LOOPED_EDGES = np.concatenate([EDGES, [709.78, 709.79, 710.0, -745.1, -745.2, -708.4, 19.06, 22.0, -22.0, 36.5, 1e-300,
                                      0.999, -0.999, 1.5707963267948966, 3e-8, 1e-10, 40.0, -40.0, 2.0, 100.0]])
LENGTHS = [*range(1, 41), 63, 64, 65, 127, 128, 129, 255, 256, 257, 300, 1000, 2047, 4096]  # SIMD tails


def _looped_points(size: int) -> list[np.ndarray]:
    """Random points at three scales (past exp's overflow and tanh's saturation) and edge values in every place."""
    x = RNG.normal(size=size)
    return [x, x * 30.0, x * 800.0, np.resize(LOOPED_EDGES, size), np.resize(np.roll(LOOPED_EDGES, 11)[::-1], size)]


@pytest.mark.parametrize("name", LOOPED)
def test_ops_by_numpys_own_loops(name, monkeypatch):
    """Each op of ops.LOOPED on records of every length up to 300 and past, at every alignment: NumPy's loop
    called as its step calls it, and the partial by the step's formula."""
    fn = getattr(tape, name)

    def f(x):
        return sum((fn(x[k:k + n]) * W[:n]).sum() for k, n in enumerate(LENGTHS)) + (fn(x[:24].reshape(2, 3, 4) * 1.5)
                                                                                      * x[24:48].reshape(2, 3, 4)).sum()

    size = len(LENGTHS) + 4096
    _both(f, RNG.normal(size=size), _looped_points(size), monkeypatch,
          driven=[name] * (LOOPED[name][1] in compiled.kernels.LOOPS))


@pytest.mark.parametrize("name", RULED)
def test_ops_by_the_scalar_kernels_functions_at_many_points(name, monkeypatch):
    """Each op of ops.RULED over 2,048 pairs at three scales and of edge values: the op table's expressions give the
    NumPy rule's bits (lgamma is not one: its rule's partial is digamma by NumPy's SIMD log and tan, and
    tests/test_array_partial_bits.py found a driven one a bit off at 1 of 2,048 points)."""
    fn = getattr(tape, name)
    _both(lambda x: (fn(x[:2048], x[2048:][::-1]) * W[:2048]).sum(), RNG.normal(size=4096), _looped_points(4096),
          monkeypatch, driven=[name])


@pytest.mark.parametrize("name", LOOPED)
def test_looped_ops_on_views(name, monkeypatch):
    """Lines of unit steps (columns cut from a matrix, an LSTM's gates: NumPy's step passes its loop line by line) are
    driven, gathered and passed at once (each element's bits alone the same: kernels/ufuncs.py), the step's bits. A
    transposed or strided view, to which NumPy's step passes strides (or a scalar path), is not, but where the loop
    reads a value the op first makes (sigmoid's exp(-|a|), made contiguous by the step too)."""
    fn, bound = getattr(tape, name), LOOPED[name][1] in compiled.kernels.LOOPS
    _both(lambda x: (fn(x[:240].reshape(6, 40)[:, 3:]) * W[:222].reshape(6, 37)).sum() + (x[240:] * W[:60]).sum(),
          RNG.normal(size=300), _looped_points(300), monkeypatch, driven=[name] * bound)
    F = _both(lambda x: (fn(x[:48].reshape(8, 6).T) * W[:48].reshape(6, 8)).sum() + (fn(x[::2]) * W[:48]).sum(),
              RNG.normal(size=96), _looped_points(96), monkeypatch, driven=["mul"])
    driven = OPCODE[name] in {int(code) for table in _tables(F) for code in table[:, 1]}
    assert driven == (bound and LOOPED[name][0] != "a")


POWERS = [2.0, 0.5, 3.0, -1.0, 2.5, 0.0, 1.0, -0.5, 1e-3, 40.0]  # exponents, one number read by all


@pytest.mark.parametrize("c", POWERS)
def test_powers_by_numpys_own_loop(c, monkeypatch):
    """x ** c (c a number: steps 8 and 0, as NumPy's step calls its loop, which has its own cases of 2, 0.5 and -1
    there) and x ** y over records of every length up to 300 and past, at every alignment: the values by NumPy's binary
    loop, the partials by its loops into scratch first (power(a, b - 1.0), log(a)) and the step's formulas (c * a at
    c = 2, 0 at a = 0 and at c = 0). c ** x and a record of one element stay NumPy's steps."""
    def f(x):
        return (sum(((x[k:k + n] ** c) * W[:n]).sum() for k, n in enumerate(LENGTHS))
                + ((c ** x[:300]) * W[:300]).sum() + ((x[:300] ** (x[300:600] * c)) * W[:300]).sum())

    size = len(LENGTHS) + 4096
    F = _both(f, RNG.normal(size=size), [*_looped_points(size), np.abs(_looped_points(size)[0])], monkeypatch,
              driven=["pow"] * ("power" in compiled.kernels.LOOPS))
    rows = {int(r) for table in _tables(F) for r in table[table[:, 1] == OPCODE["pow"], 2]}
    assert len(rows) == len(LENGTHS) * ("power" in compiled.kernels.LOOPS)  # (x ** y's, not one element's nor c ** x)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_powers_on_every_layout(layout, monkeypatch):
    """a ** b where a is laid out as the output and b too or is one number is NumPy's loop in the driver (b a record
    read by all: its adjoint summed back); where a view is broadcast along some axes or read out of order, or a is a
    number, NumPy's step."""
    def f(X):
        a, b = LAYOUTS[layout](X)
        return ((a ** b) * X[:48].reshape(S)).sum()

    F = _both(f, np.abs(_points()[0]), [*_points(), np.abs(_points()[0])], monkeypatch)
    driven = OPCODE["pow"] in {int(code) for table in _tables(F) for code in table[:, 1]}
    alone = layout in ("one number read by all", "number on the right")  # ("same": b reversed)
    assert driven == (alone and "power" in compiled.kernels.LOOPS)


def test_a_loop_whose_element_alone_differs_is_not_bound(monkeypatch):
    """kernels/ufuncs.py binds no loop whose element called alone gives other bits than among others (a view's
    lines gathered and passed at once would then not be the step's)."""
    from tape.kernels import ufuncs
    call = ufuncs.call

    def moved(loop, x, out, *y, **number):  # (as a loop whose element alone took another path: the probe's lengths
        call(loop, x, out, *y, **number)  # are its own)
        if x.size == 1 and x.base is ufuncs.PROBE:
            out[0] = np.nextafter(out[0], np.inf)

    assert ufuncs.address(np.exp)
    monkeypatch.setattr(ufuncs, "call", moved)
    assert ufuncs.address(np.exp) is None


def test_strided_views_past_broadcast_are_driven(monkeypatch):
    """Views read strided, each element once (max pooling of pairs), run in the tables past BROADCAST elements; a view
    broadcast there stays NumPy's step."""
    monkeypatch.setattr(encoding, "BROADCAST", 16)
    points = [np.resize(np.concatenate([p, p[::-1]]), 120) for p in _points()]  # (ties of a pair too)
    F = _both(lambda x: (np.maximum(x[:96:2], x[1:96:2]) * W[:48]).sum() + (x[96:] * 2.0).sum(), points[0], points,
              monkeypatch, driven=["maximum"])
    G = _both(lambda x: (np.maximum(x[:48].reshape(16, 3), x[48:64].reshape(16, 1)) * W[:48].reshape(16, 3)).sum(),
              points[0][:64], [p[:64] for p in points], monkeypatch, driven=["mul"])  # (lines too short for LINED)
    assert OPCODE["maximum"] in {int(c) for t in _tables(F) for c in t[:, 1]}
    assert OPCODE["maximum"] not in {int(c) for t in _tables(G) for c in t[:, 1]}


def test_numpys_loops_called_directly_give_the_ufuncs_bits():
    """The loop read from the ufunc object, called once over n contiguous elements at any alignment, is what np.exp
    and the others compute (NumPy 2's ArrayMethod wrapping calls the same loop); no loop for what is not d->d."""
    from tape.kernels import ufuncs
    buffer, out = np.empty(4200), np.empty(4200)
    for name in {ufunc for _, ufunc, _ in LOOPED.values()}:
        loop = ufuncs.address(getattr(np, name))
        assert loop
        for n in [*range(1, 301), 4096]:
            with np.errstate(all="ignore"):
                x = np.resize(np.roll(LOOPED_EDGES, n), n) * RNG.choice([1.0, 30.0, -1.0], n) + RNG.normal(size=n) * n
                at = n % 5
                buffer[at:at + n] = x
                ufuncs.call(loop, buffer[at:at + n], out[n % 3:n % 3 + n])
                assert np.array_equal(out[n % 3:n % 3 + n], getattr(np, name)(x), equal_nan=True), (name, n)
    loop, x = ufuncs.address(np.power), np.resize(LOOPED_EDGES, 4096) * 0.3
    for n in [*range(1, 301), 4096]:  # a binary loop: two arrays, and one number read by all
        for y in (x[::-1][:n].copy(), x[n % 37:n % 37 + 1]):
            with np.errstate(all="ignore"):
                ufuncs.call(loop, x[:n], out[:n], y)
                assert np.array_equal(out[:n], np.power(x[:n], y), equal_nan=True), n
    assert ufuncs.address(np.isnan) is None and ufuncs.address(np.frexp) is None


def test_without_numpys_loops_the_ops_stay_numpys(monkeypatch):
    """Where a loop is not bound (another NumPy, a struct that reads otherwise), no error, and NumPy's steps run it."""
    monkeypatch.setattr(compiled.kernels, "LOOPS", frozenset())
    F = _both(lambda x: (tape.tanh(x[:48].reshape(2, 3, 8) * 2.0) * W[:48].reshape(2, 3, 8)).sum(), RNG.normal(size=48),
              _looped_points(48), monkeypatch, driven=["mul"])
    assert OPCODE["tanh"] not in {int(code) for table in _tables(F) for code in table[:, 1]}


def U(X):
    """A 1-d state, as the heat equation's."""
    return X[:64]


SCATTERED = RNG.permutation(64)
MOVES = {  # joins and gathers (tape/arrays: concatenate, stack, pad, roll; tile and repeat are an elementwise add, no
    # move): (f, kind driven or 0)
    "heat's concatenates": (lambda X: (np.concatenate([U(X)[1:], U(X)[:1]]) * W[:64] + np.concatenate(
        [U(X)[-1:], U(X)[:-1]]) * U(X)).sum(), compiled.kernels.COPY),
    "three views along the middle axis": (lambda X: (np.concatenate([X[:24].reshape(2, 3, 4), X[30:70].reshape(
        4, 5, 2).transpose(2, 1, 0), X[100:108].reshape(2, 1, 4)], axis=1) * W[:72].reshape(2, 9, 4)).sum(),
        compiled.kernels.COPY),
    "one record three times (added back in order)": (lambda X: (np.concatenate([U(X), U(X), U(X)]) * W[:192]).sum(),
                                                     compiled.kernels.COPY),
    "a constant piece": (lambda X: (np.concatenate([U(X) * 2.0, np.arange(5.0)]) * W[:69]).sum(),
                         compiled.kernels.COPY),
    "stack": (lambda X: (np.stack([U(X)[:30], U(X)[30:60], U(X)[:60:2]], axis=1) * W[:90].reshape(30, 3)).sum(),
              compiled.kernels.COPY),
    "pad constant, 2-d": (lambda X: (np.pad(X[:30].reshape(5, 6), ((1, 2), (3, 0)), constant_values=(
        (1.5, -2.0), (0.5, 3.0))) * W[:72].reshape(8, 9)).sum(), compiled.kernels.COPY),
    **{f"pad {mode}": (lambda X, mode=mode: (np.pad(U(X), (3, 5), mode=mode) * W[:72]).sum(), compiled.kernels.GATHER)
       for mode in ("wrap", "edge", "reflect", "symmetric")},
    "pad wrap, 2-d": (lambda X: (np.pad(X[:480].reshape(12, 40), 2, mode="wrap") * W[:704].reshape(16, 44)).sum(),
                      compiled.kernels.GATHER),
    "roll": (lambda X: (np.roll(U(X), 3) * W[:64]).sum() + (np.roll(X[:480].reshape(12, 40), -7, axis=1) * W[:480]
                                                            .reshape(12, 40)).sum()
             + (np.roll(X[:480].reshape(40, 12), 5) * X[480:960].reshape(40, 12)).sum(), compiled.kernels.COPY),
    "roll along two axes": (lambda X: (np.roll(X[:480].reshape(12, 40), (1, -3), axis=(0, 1)) * W[:480].reshape(
        12, 40)).sum(), compiled.kernels.GATHER),
    "tile": (lambda X: (np.tile(U(X), 3) * W[:192]).sum(), 0),
    "repeat (a step of 0)": (lambda X: (np.repeat(X[:10], 20) * W[:200]).sum(), 0),
    "scattered places (NumPy's step)": (lambda X: (U(X)[SCATTERED] * W[:64]).sum(), 0),
}


@pytest.mark.parametrize("program", MOVES)
def test_joins_and_gathers(program, monkeypatch):
    """Copies exact, and back the step's adds in its order (np.add.at's for a gather, input order for a join);
    a gather of scattered places stays NumPy's step, tile and repeat are neither."""
    f, kind = MOVES[program]
    points = [p for p in _points() for p in (np.resize(p, 960),)]
    F = _both(f, points[0], points, monkeypatch)
    gather, copy = compiled.kernels.GATHER, compiled.kernels.COPY
    assert _driven(F, gather) == (kind == gather) and _driven(F, copy) == (kind == copy)


@pytest.mark.parametrize("places", [np.arange(10), np.array([3]), np.array([4, 4]), np.r_[9:0:-1, 0:40, 39:30:-1],
                                    np.repeat(np.arange(5), 16), np.r_[0:30, 5:35, 7], np.tile(np.r_[3, 8, 1], 40)])
def test_runs_of_places(places):
    """A gather's places as runs (first element, first place, length, step) give the places back, in order."""
    found, fits = encoding.runs([np.arange(3), places, places[::-1]])  # (beside other gathers)
    runs = found[found[:, 0] == 1, 1:].tolist()
    assert fits[0] and fits[2] == fits[1] and np.array_equal(found[:, 0], np.sort(found[:, 0]))
    if not fits[1]:
        assert not runs and len(places) // encoding.RUN < len(np.flatnonzero(np.diff(places, 2))) // 2
        return
    assert [r[0] for r in runs] == list(np.cumsum([0] + [r[2] for r in runs[:-1]]))
    assert np.array_equal(np.concatenate([place + step * np.arange(n) for _, place, n, step in runs]), places)


SHORT_SCRATCH = """
import numpy as np, tape
from tape.records import array_records
from tape.sweeps import compiled
array_records.SMALL = 1
compiled.ready = lambda s, runs: True
kernels, S, W = compiled.kernels, (2, 3, 8), np.linspace(0.5, 1.5, 64)
PROGRAMS = {  # a kind of scratch use: (the program, the sweeps that use it)
    "a gathered operand": (lambda x: (x[:48].reshape(S) * x[::2][:8]).sum(), ("forward", "reverse")),
    "a row's sum back line by line": (lambda x: (x[:48].reshape(S) * x[50:58]).sum(), ("reverse",)),
    "a column's line by line": (lambda x: (x[:48].reshape(S) * x[50:56].reshape(2, 3, 1)).sum(), ("reverse",)),
    "sigmoid's exp(-|a|)": (lambda x: (tape.sigmoid(x[:48].reshape(S)) * W[:8]).sum(), ("forward",)),
    "a number summed back": (lambda x: (x[:48].reshape(S) * x[50]).sum(), ("reverse",)),
    "a matmul's products back": (lambda x: (x[:30].reshape(6, 5) @ x[30:50].reshape(5, 4) * W[:4]).sum(),
                                 ("reverse",)),
}
if "exp" not in kernels.LOOPS:  # (sigmoid is NumPy's step then)
    del PROGRAMS["sigmoid's exp(-|a|)"]
if not kernels.BLAS:
    del PROGRAMS["a matmul's products back"]
short = np.empty((4, 1))
sweeps = {"forward": lambda s, table, scratch, pending=None: kernels.forward(table, s._aval, short),
          "reverse": lambda s, table, scratch, pending, gen, keep, check: kernels.reverse(
              table, s._aval, s._aadj, s._stamp, gen, keep, short, check)}
for name, (f, sides) in PROGRAMS.items():
    for side in sides:
        kept = getattr(compiled, side)
        setattr(compiled, side, sweeps[side])
        try:
            tape.trace(f, np.linspace(-1.0, 1.0, 64)).value_and_grad(np.linspace(-1.0, 1.0, 64))
            print(name, side, "wrote past its scratch")
        except IndexError as error:
            assert "scratch is shorter than a record" in str(error), error
        setattr(compiled, side, kept)
print("done")
"""


def test_a_short_scratch_is_refused_not_written_past():
    """Every way the kernels use a table's scratch checks its length first (Numba checks no bounds): a scratch
    shorter than tape/sweeps/compiled.py sizes it is an IndexError, in a subprocess (a miss could crash)."""
    result = subprocess.run([sys.executable, "-c", SHORT_SCRATCH], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and result.stdout.strip().splitlines() == ["done"], result.stdout + result.stderr


FUSED = {name: fn for name, fn in {**UNARY, **BINARY}.items() if name in FUSIBLE}


@pytest.mark.parametrize("name", FUSED)
def test_a_run_without_a_sum_gives_the_fused_numbers_in_the_tables(name, monkeypatch):
    """A fused run with no sum (tape/sweeps/fusion.py) runs as rows of the compiled tables (tape/sweeps/compiled.py's
    kept): the fused kernel's numbers (NaN for NaN), on views, numbers, members read after the run, edge values."""
    fn = FUSED[name]
    op = (lambda a, b: fn(a)) if name in UNARY else fn

    def f(X):
        a, b = X[:48].reshape(6, 8), X[48:][::-1].reshape(6, 8)
        y = op(a * 1.5 - b, b)
        z = op(y, 0.75) + a * y
        return (z[:, ::2] * 2.0).sum() + y[1, 2]

    _on(monkeypatch, True)
    tables, kept = tape.trace(f, _points()[0]), compiled.kept
    monkeypatch.setattr(compiled, "kept", lambda s, runs: runs)
    fused = tape.trace(f, _points()[0])  # (every run kept fused: its layout, its sweeps)
    fused.value_and_grad(_points()[0])
    monkeypatch.setattr(compiled, "kept", kept)
    for point in _points():
        for a, b in zip(fused.value_and_grad(point), tables.value_and_grad(point), strict=True):
            assert np.array_equal(a, b, equal_nan=True), np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))
    members = {row for run in fused._runs_first.values() for row in run.members.tolist()}
    assert members and members <= {int(row) for table in _tables(tables) for row in table[:, 2]}
    assert not tables._runs_first
    assert not members & {int(row) for table in _tables(fused) for row in table[:, 2]}


@pytest.mark.parametrize("lagged", [False, True])
def test_a_run_past_dissolve_is_rows_unless_its_views_lag(lagged, monkeypatch):
    """Past DISSOLVE elements a run without a sum is rows of the tables too (a stretch runs them with the rows around:
    a Huber loss's comparison and select), unless views of one input lag in it (a 3-tap filter's, kept fused: one
    pass keeps their adds in order). The fused numbers either way (the test above)."""
    n = compiled.DISSOLVE + 8

    def f(u):
        if lagged:
            v = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
            return (v * v * 0.5).sum()
        r = u * 1.5 - 0.25
        return np.where(np.abs(r) < 0.7, 0.5 * r * r, np.abs(r) - 0.35).sum()

    _on(monkeypatch, True)
    x = RNG.uniform(-1.5, 1.5, n)
    F, kept = tape.trace(f, x), compiled.kept
    monkeypatch.setattr(compiled, "kept", lambda s, runs: runs)
    G = tape.trace(f, x)
    G.value_and_grad(x)  # (every run kept)
    monkeypatch.setattr(compiled, "kept", kept)
    for a, b in zip(F.value_and_grad(x), G.value_and_grad(x), strict=True):
        assert np.array_equal(a, b)
    members = {row for run in G._runs_first.values() for row in run.members.tolist()}
    rows = {int(row) for table in _tables(F) for row in table[:, 2]}
    assert len(members) >= 2 and (members.isdisjoint(rows) if lagged else members <= rows)
    assert bool(F._runs_first) == lagged  # (dissolved at tape.trace: its layout's regions as rows')


@pytest.mark.parametrize("covers", [True, False])
def test_a_first_contribution_is_added_to_zeros_even_where_assigned(covers, monkeypatch):
    """An adjoint region first reached by a view that is the whole region is assigned, not zeroed first (one store
    an element): 0.0 + each product, so a product that underflows to -0.0 still gives +0.0, as NumPy's steps (zeros,
    then added) do; where the view is part of its region, the region is zeroed first. Bytes compared: signs of
    zero."""
    def f(X):
        return (((X.reshape(S) if covers else X[:48].reshape(S)) * 1e-170) * -1e-170).sum()

    assert 1e-170 * -1e-170 == 0.0 and np.signbit(1e-170 * -1e-170)  # the input's adjoint: -0.0
    x = np.linspace(0.5, 1.5, 48 if covers else 60)  # (not RNG: later tests draw from it)
    F = _both(f, x, [x], monkeypatch, driven=["mul"])
    _on(monkeypatch, False)
    want = tape.trace(f, x).value_and_grad(x)[1]
    _on(monkeypatch, True)
    got = F.value_and_grad(x)[1]
    assert got.tobytes() == want.tobytes() and not np.signbit(got).any()


@pytest.mark.parametrize("n", [129, 136, 255, 1018, 4099, 65_537, 1_000_003])
@pytest.mark.parametrize("step", [1, 3, -2])
def test_pairwise_sums_are_numpys_over_deep_halves(n, step):
    """The driver's pairwise sum (its halves on a stack in its own frame) against np.sum's bits over the same strided
    elements: a tree of halves to 13 levels deep, at offsets (numbers of like size: another order of adds shows)."""
    from tape.kernels._array_driver import _pairwise
    x = RNG.normal(size=abs(step) * n + 7)
    at = 5 + (abs(step) * (n - 1) if step < 0 else 0)
    want = np.sum(x[at::step][:n])
    assert _pairwise(x, at, n, step) == want
