"""One rule for what f receives and how derivatives come back: x0's structure, at every entry point.

Points are numbers, arrays of any shape, and tuples, lists and dicts of them (pytrees). Every
derivative is checked against central differences of a plain-NumPy function of the flat numbers,
written independently of tape; shapes follow JAX's documented rules (jacobian: output shape +
input shape; hessian: input shape twice; a structure of structures for trees).
"""

import math
import re

import numpy as np
import pytest

import tape

RNG = np.random.default_rng(7)


def central_gradient(f, x, h=1e-6):
    x = np.asarray(x, float)
    g = np.zeros(x.size)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# each case: x0, what f must receive (a checker), f on tape handles, the same function on flat numbers
def _dict_f(p):
    return p["a"] * np.exp(-p["k"] * p["t"]).sum()


def _dict_plain(z):
    return z[0] * np.exp(-z[1] * z[2:]).sum()


def _nested_f(p):
    (u, v), w = p
    return tape.sin(u) * (v * v).sum() + w["c"] ** 3


def _nested_plain(z):
    return math.sin(z[0]) * (z[1:4] ** 2).sum() + z[4] ** 3


CASES = {
    "number": (0.3, lambda v: type(v) is tape.Var, lambda v: tape.sin(v) * v, lambda z: math.sin(z[0]) * z[0]),
    "list": ([0.3, -1.2], lambda v: type(v) is list and all(type(e) is tape.Var for e in v),
             lambda v: v[0] * v[1] ** 2, lambda z: z[0] * z[1] ** 2),
    "tuple": ((0.3, -1.2), lambda v: type(v) is tuple and len(v) == 2,
              lambda v: tape.exp(v[0]) + v[1] * v[0], lambda z: math.exp(z[0]) + z[1] * z[0]),
    "1-d array": (np.array([0.3, -1.2, 2.0]), lambda v: isinstance(v, tape.VarArray) and v.shape == (3,),
                  lambda v: (v ** 2).sum() * v[0], lambda z: (z ** 2).sum() * z[0]),
    "2-d array": (RNG.normal(size=(2, 3)), lambda v: isinstance(v, tape.VarArray) and v.shape == (2, 3),
                  lambda v: (np.tanh(v) * np.arange(6.0).reshape(2, 3)).sum(),
                  lambda z: (np.tanh(z) * np.arange(6.0)).sum()),
    "dict": ({"a": 2.0, "k": 0.5, "t": np.arange(3.0)},
             lambda v: type(v) is dict and type(v["a"]) is tape.Var and isinstance(v["t"], tape.VarArray),
             _dict_f, _dict_plain),
    "nested": (((0.4, np.array([1.0, -2.0, 0.5])), {"c": 1.5}),
               lambda v: type(v) is tuple and type(v[0]) is tuple and type(v[1]) is dict, _nested_f, _nested_plain),
}


def _flat(x):
    leaves, _ = tape.base.trees.flatten(x)
    return np.concatenate([np.ravel(leaf) for leaf in leaves])


def _same_structure(a, b):
    """a and b are the same tree: same containers, keys, lengths, leaf kinds and shapes."""
    if isinstance(b, dict):
        return type(a) is dict and list(a) == list(b) and all(_same_structure(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_structure(x, y) for x, y in
                                                                  zip(a, b, strict=True))
    if isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and a.shape == b.shape
    return type(a) is float


@pytest.mark.parametrize("case", list(CASES))
def test_f_gets_x0s_structure_at_every_entry_point_and_gradients_come_back_in_it(case):
    x0, receives, f, plain = CASES[case]
    seen = []

    def checked(v):
        seen.append(receives(v))
        return f(v)

    expected = central_gradient(plain, _flat(x0))
    # tape.grad / value_and_grad: the gradient in x0's structure
    g = tape.grad(checked)(x0)
    assert _same_structure(g, x0)
    np.testing.assert_allclose(_flat(g), expected, rtol=1e-6, atol=1e-8)
    value, g2 = tape.value_and_grad(checked)(x0)
    assert value == pytest.approx(plain(_flat(x0)), rel=1e-12) and _same_structure(g2, x0)
    # trace: f gets x0's structure; a call in that structure gives the gradient in it
    F = tape.trace(checked, x0)
    g3 = F.gradient(x0)
    if case in ("list", "tuple"):  # a flat list of numbers is a vector to a Function (array-like)
        assert isinstance(g3, np.ndarray) and g3.shape == (len(x0),)
    else:
        assert _same_structure(g3, x0)
    np.testing.assert_allclose(_flat(g3), expected, rtol=1e-6, atol=1e-8)
    # and the flat vector (or x0's array shape) works everywhere, giving arrays
    flat = F.gradient(_flat(x0))
    assert isinstance(flat, np.ndarray) and flat.size == expected.size
    # gradcheck traces f with what it is given, and checks it
    assert tape.gradcheck(checked, x0) < 1e-6
    assert all(seen) and len(seen) >= 4


@pytest.mark.parametrize("case", list(CASES))
def test_derivatives_of_a_tree_call_have_jaxs_structure(case):
    x0, _, f, plain = CASES[case]
    F = tape.trace(f, x0)
    flat = _flat(x0)
    n = flat.size
    H_ref = np.array([central_gradient(lambda z, i=i: central_gradient(plain, z, 1e-4)[i], flat, 1e-4)
                      for i in range(n)])
    H = F.hessian(x0)
    H_flat = F.hessian(flat).reshape(n, n)
    np.testing.assert_allclose(H_flat, H_ref, rtol=1e-4, atol=1e-5)
    structured = not (isinstance(x0, np.ndarray) or case in ("list", "tuple"))
    if structured:  # a structure of structures, leaf_i.shape + leaf_j.shape
        leaves, _ = tape.base.trees.flatten(x0)
        blocks = _blocks(H, x0)
        assert len(blocks) == len(leaves) ** 2
        for (i, j), block in blocks.items():
            assert np.shape(block) == np.shape(leaves[i]) + np.shape(leaves[j])
        np.testing.assert_allclose(_reassemble(blocks, leaves), H_ref, rtol=1e-4, atol=1e-5)
    elif isinstance(x0, np.ndarray):
        assert H.shape == x0.shape + x0.shape
    v = RNG.normal(size=n)
    hv = F.hvp(x0, F._layout.tree(v) if structured else v.reshape(np.shape(x0)) if np.ndim(x0) else v)
    np.testing.assert_allclose(_flat(hv) if structured else np.ravel(hv), H_ref @ v, rtol=1e-4, atol=1e-5)
    J = F.jacobian(x0)  # scalar output: the gradient's structure and shape
    np.testing.assert_allclose(_flat(J) if structured else np.ravel(J), central_gradient(plain, flat),
                               rtol=1e-6, atol=1e-8)
    if isinstance(x0, np.ndarray):
        assert np.shape(J) == x0.shape


def _blocks(H, x0):
    """{(i, j): block} of a tree-of-trees Hessian, by leaf numbers in flattening order."""
    outer = _leaves(H, x0)
    return {(i, j): block for i, inner in enumerate(outer) for j, block in enumerate(_leaves(inner, x0))}


def _leaves(tree, like):
    """tree's entries at the places of like's leaves (tree's leaves may be arrays or trees)."""
    if isinstance(like, dict):
        return [e for k in sorted(like) for e in _leaves(tree[k], like[k])]
    if isinstance(like, (list, tuple)):
        return [e for t, s in zip(tree, like, strict=True) for e in _leaves(t, s)]
    return [tree]


def _reassemble(blocks, leaves):
    sizes = [np.size(leaf) for leaf in leaves]
    rows = [np.concatenate([np.reshape(blocks[i, j], (sizes[i], sizes[j])) for j in range(len(leaves))], axis=1)
            for i in range(len(leaves))]
    return np.concatenate(rows, axis=0)


def test_vector_outputs_give_jacobians_of_the_outputs_shape_then_the_inputs():
    W0 = RNG.normal(size=(2, 3))
    F = tape.trace(lambda W: np.tanh(W * 2.0), W0)  # a (2, 3) output of a (2, 3) input
    assert F(W0).shape == (2, 3)
    J = F.jacobian(W0)
    assert J.shape == (2, 3, 2, 3)
    expected = np.zeros((2, 3, 2, 3))
    for i in range(2):
        for j in range(3):
            expected[i, j, i, j] = 2.0 / np.cosh(2.0 * W0[i, j]) ** 2
    np.testing.assert_allclose(J, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(F.jvp(W0, np.ones((2, 3))), expected.reshape(6, 6).sum(axis=1).reshape(2, 3))
    np.testing.assert_allclose(F.vjp(W0, np.ones((2, 3))), expected.reshape(6, 6).sum(axis=0).reshape(2, 3))
    G = tape.trace(lambda v: [v[0] * v[1], v[0] + v[1], v[1]], [1.0, 2.0])  # three outputs of two inputs
    assert G.jacobian(np.array([1.0, 2.0])).shape == (3, 2)
    np.testing.assert_array_equal(G.jacobian(np.array([3.0, 4.0])), [[4.0, 3.0], [1.0, 1.0], [0.0, 1.0]])
    S = tape.trace(lambda v: tape.sin(v[0]), [0.5])
    assert S.jacobian(np.array([0.5])).shape == (1,) and isinstance(S.jvp([0.5], [1.0]), float)


def test_params_and_retrace_keep_their_structures():
    seen = []

    def f(x, p):
        seen.append((type(x), type(p), type(p["scale"])))
        y = x["u"] * p["scale"] + (x["w"] * p["offset"]).sum()
        return y if x["u"] > 0 else -y  # a branch: retraced when it flips

    x0 = {"u": 1.0, "w": np.array([1.0, 2.0])}
    p0 = {"scale": 3.0, "offset": np.array([0.5, -0.5])}
    F = tape.trace(f, x0, params=p0, on_branch_change="retrace")
    assert F(x0) == pytest.approx(1.0 * 3.0 + 0.5 - 1.0)
    p1 = {"scale": 2.0, "offset": np.array([1.0, 1.0])}
    assert F(x0, params=p1) == pytest.approx(2.0 + 3.0)  # new params without retracing
    assert F.retraces == 0
    x1 = {"u": -1.0, "w": np.array([1.0, 2.0])}
    assert F(x1, params=p1) == pytest.approx(-(-2.0 + 3.0))  # retraced, f got dicts again
    assert F.retraces == 1
    g = F.gradient(x1, params=p1)
    assert g["u"] == pytest.approx(-2.0) and np.allclose(g["w"], [-1.0, -1.0])
    assert all(s == (dict, dict, tape.Var) for s in seen)
    with pytest.raises(ValueError, match="structure of the x0 traced"):
        F({"u": 1.0}, params=p1)
    with pytest.raises(ValueError, match=r"at x\['w'\] the x0 traced had an array of shape \(2,\), got an array of "
                                         r"shape \(3,\)"):
        F({"u": 1.0, "w": np.ones(3)})


def test_the_issues_first_lines_work():
    t = np.linspace(0.0, 2.0, 5)
    data = 3.0 * np.exp(-0.7 * t)

    def loss(p):
        a, k = p
        return ((a * np.exp(-k * t) - data) ** 2).sum()

    g = tape.grad(loss)([2.0, 0.5])
    assert type(g) is list
    np.testing.assert_allclose(g, central_gradient(lambda z: ((z[0] * np.exp(-z[1] * t) - data) ** 2).sum(),
                                                   [2.0, 0.5]), rtol=1e-6)
    F = tape.trace(loss, [2.0, 0.5])
    np.testing.assert_allclose(F.gradient(np.array([2.0, 0.5])), g, rtol=1e-12)
    # array-style code works through tape.grad as through trace
    assert tape.grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0])).tolist() == [2.0, 4.0]


def test_jax_style_transforms_against_differences():
    def f(x, y):
        return tape.sin(x) * (y ** 2).sum()

    x, y = 0.7, np.array([1.0, -2.0])
    value, tangent = tape.jvp(f, (x, y), (1.0, np.array([0.5, 0.25])))
    plain = lambda z: math.sin(z[0]) * (z[1:] ** 2).sum()  # noqa: E731
    z = np.array([0.7, 1.0, -2.0])
    grad = central_gradient(plain, z)
    assert value == pytest.approx(plain(z), rel=1e-15)
    assert tangent == pytest.approx(grad @ [1.0, 0.5, 0.25], rel=1e-6)
    out, vjp_fn = tape.vjp(f, x, y)
    gx, gy = vjp_fn(2.0)
    assert out == pytest.approx(plain(z)) and type(gx) is float and gy.shape == (2,)
    np.testing.assert_allclose([gx, *gy], 2.0 * grad, rtol=1e-6)
    J = tape.jacobian(f, argnums=(0, 1))(x, y)
    assert type(J) is tuple and type(J[0]) is float and J[1].shape == (2,)
    np.testing.assert_allclose([J[0], *J[1]], grad, rtol=1e-6)
    H = tape.hessian(f, argnums=1)(x, y)  # y only: 2 * sin(x) * I
    np.testing.assert_allclose(H, 2 * math.sin(x) * np.eye(2), rtol=1e-12)
    J2, aux = tape.jacobian(lambda v: (np.tanh(v), v.sum()), has_aux=True)(np.array([0.1, 0.2]))
    assert J2.shape == (2, 2) and aux == pytest.approx(0.3)
    np.testing.assert_allclose(J2, np.diag(1 / np.cosh([0.1, 0.2]) ** 2), rtol=1e-12)
    with pytest.raises(ValueError, match="argnums"):
        tape.jacobian(f, argnums=2)(x, y)


@pytest.mark.parametrize("argnums", [(0, 0), (1, 1, 0), (0, -2), (-1, 1)])
def test_repeated_argnums_are_refused_at_every_entry_point(argnums):
    """As JAX: an argument named twice would get a share of its derivative per copy (issue 29:
    grad gave (0.0, 2.0) for (0, 0)); a ValueError names the argnums and the argument."""
    def f(a, b):
        return a * b

    calls = {
        "grad": lambda: tape.grad(f, argnums=argnums)(1.0, 2.0),
        "value_and_grad": lambda: tape.value_and_grad(f, argnums=argnums)(1.0, 2.0),
        "jacobian": lambda: tape.jacobian(f, argnums=argnums)(1.0, 2.0),
        "hessian": lambda: tape.hessian(f, argnums=argnums)(1.0, 2.0),
        "nested grad": lambda: tape.grad(lambda a, b: tape.grad(f, argnums=argnums)(a, b)[0])(1.0, 2.0),
    }
    twice = sorted({k % 2 for k in argnums if [j % 2 for j in argnums].count(k % 2) > 1})[0]
    for call in calls.values():
        with pytest.raises(ValueError, match=rf"argnums {re.escape(repr(argnums))} name argument {twice} more"):
            call()
    assert tape.grad(f, argnums=(-1, 0))(1.0, 2.0) == (1.0, 2.0)  # distinct, one of them negative


def test_output_shapes_survive_files_copies_and_maps(tmp_path):
    W0 = RNG.normal(size=(2, 3))
    F = tape.trace(lambda W: np.tanh(W * 2.0), W0)
    F.save(tmp_path / "f.npz")
    G = tape.load(tmp_path / "f.npz")
    assert G(W0).shape == (2, 3) and G.jacobian(W0).shape == (2, 3, 2, 3)
    np.testing.assert_allclose(G(W0), np.tanh(W0 * 2.0), rtol=1e-15)
    X = RNG.normal(size=(5, 6))
    np.testing.assert_allclose(F.map(X), np.tanh(X * 2.0), rtol=1e-15)  # maps keep rows flat: (N, m)
    with np.load(tmp_path / "f.npz") as npz:
        arrays = {name: npz[name] for name in npz.files}
    arrays["output_shape"] = np.array([3, 3], np.int64)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(tape.TapeFormatError, match=r"output_shape \[3, 3\] does not hold the 6 outputs"):
        tape.load(tmp_path / "bad.npz")
    S = tape.trace(lambda v: v.sum(), np.ones(3))
    S.save(tmp_path / "s.npz")
    assert isinstance(tape.load(tmp_path / "s.npz")(np.ones(3)), float)


def test_namedtuples_keep_their_type_and_unsortable_dict_keys_are_named():
    import collections

    Params = collections.namedtuple("Params", "scale offsets")
    p = Params(2.0, np.array([1.0, -1.0]))
    seen = []

    def f(q):
        seen.append(type(q))
        return q.scale * (q.offsets ** 2).sum()

    g = tape.grad(f)(p)
    assert type(g) is Params and g.scale == 2.0 and np.array_equal(g.offsets, [4.0, -4.0])
    G = tape.trace(f, p).gradient(p)
    assert type(G) is Params and np.array_equal(G.offsets, g.offsets) and G.scale == g.scale
    assert seen == [Params, Params]
    with pytest.raises(TypeError, match=r"x0: a dict's keys must be sortable .* \['int', 'str'\]"):
        tape.trace(lambda d: d["a"] * d[1], {1: 1.0, "a": 2.0})


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 1.0, -1.0, 0.5, -2.5])


@pytest.mark.parametrize("f", [
    lambda x: [x[0] * x[1] - tape.exp(x[2]), tape.sqrt(x[1]) / x[0], x[2] ** 2.5],
    lambda x: {"a": tape.log1p(x[0]) * tape.arctan2(x[1], x[2]), "b": (tape.hypot(x[0], x[1]), x[2] - x[0])},
    lambda x: tape.where(x[0] > x[1], tape.sin(x[2]) * x[0], tape.cbrt(x[1])) + tape.maximum(x[0], x[2]),
], ids=["plain", "grouped ops, a tree", "select"])
def test_jvp_and_vjp_values_are_the_replays_bytes(f):
    """tape.jvp and tape.vjp of scalar records take f's values from their own sweep (transforms._swept_values), not
    from a replay: the replay's bytes (F(x), what they returned before), at edge points."""
    from tape.api.transforms import _traced

    for k in range(60):
        x = np.random.default_rng(k).choice(EDGES, 3)
        F, point, _ = _traced(f, (list(x),), (0,), False)
        assert not F._plans
        replayed = F(point)
        replayed = np.asarray(replayed if F._out_layout is None else F._out_layout.flat(F._out_layout.tree(replayed),
                                                                                        "out"))
        for value in (tape.jvp(f, (list(x),), (list(EDGES[-3:]),))[0], tape.vjp(f, list(x))[0]):
            flat = np.asarray(value if F._out_layout is None else F._out_layout.flat(value, "out"), np.float64)
            assert flat.tobytes() == replayed.astype(np.float64).tobytes()
