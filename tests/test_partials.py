"""Each op's partials as records (tape/symbolic/_partials.py, generated) against the kernels' partials.

For every differentiable op of kernels/ops.py, at edge values (signed zeros, ±1, infinities,
NaN, tiny and huge numbers, poles) and random points, the recorded partial's value is the
kernel's partial bit for bit (NaN matching NaN): the kernel's partials are those a Function's
replay stores (Function.vjp), the recorded ones are tape/symbolic/_partials.py's records on a tape.
"""

import math

import numpy as np
import pytest

import tape
from tape.kernels import ops
from tape.kernels.ops import KIND, OPCODE, OPS
from tape.symbolic import _partials as _partials

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.7, -3.7, 10.0, -10.0, 0.999, 1.0000001, 1e-5, 1e-300,
         5e-324, 1e300, -1e300, 1e200, math.inf, -math.inf, math.nan, math.pi, -2.5, -3.0, 20.0, 700.0, -745.0]
CODES = sorted(_partials.PARTIALS)


def points(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(15)
    one = np.concatenate([EDGES, rng.normal(0, 3, 60), rng.uniform(-1, 1, 30), rng.normal(0, 30, 10)])
    if kind == "unary":
        return one, np.zeros(len(one))
    grid = np.array(EDGES)
    a, b = np.meshgrid(grid, grid)
    mixed = rng.normal(0, 2, (2, 200))
    ties = rng.normal(0, 2, 20)
    return (np.concatenate([a.ravel(), mixed[0], ties, one]), np.concatenate([b.ravel(), mixed[1], ties, one[::-1]]))


def kernel_partials(code: int, a: np.ndarray, b: np.ndarray) -> tuple[tape.Tape, np.ndarray, np.ndarray]:
    """A tape of records ``code`` at (a, b) (b the constant of a const op) and the kernel's partials."""
    kind = OPS[code].kind
    t = tape.Tape()
    left = t.vars(a)
    rows_a = np.array([v.index for v in left])
    if kind == "binary":
        right = t.vars(b)
        rows = t._append_block(code, len(a), in0=rows_a, in1=np.array([v.index for v in right]))
        leaves = left + right
    elif kind == "const":
        rows, leaves = t._append_block(code, len(a), in0=rows_a, consts=b), left
    else:
        rows, leaves = t._append_block(code, len(a), in0=rows_a), left
    F = t.function(leaves, [t[int(r)] for r in rows])
    F.vjp(np.array([v.value for v in leaves]), np.ones(len(rows)))
    return t, rows, F._partials[:, rows].copy()


def recorded_partials(t: tape.Tape, code: int, rows: np.ndarray) -> np.ndarray:
    kind = OPS[code].kind
    found = np.zeros((2, len(rows)))
    for k, i in enumerate(rows.tolist()):
        a = t[int(t._in0[i])]
        b = t[int(t._in1[i])] if kind == "binary" else None
        c = float(t._consts[t._in1[i]]) if kind == "const" else None
        for side, p in enumerate(_partials.PARTIALS[code](a, b, t[i], c)):
            if p is not None:
                found[side, k] = p.value if type(p) is tape.Var else p
    return found


def same_bits(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x == y) | (np.isnan(x) & np.isnan(y))


@pytest.mark.parametrize("code", CODES, ids=[OPS[c].name for c in CODES])
def test_recorded_partials_are_the_kernels_bits(code):
    kind = OPS[code].kind
    if kind == "select":  # partials 1 and 1, sent to the chosen input only (tape/symbolic/adjoint.py)
        assert _partials.PARTIALS[code](None, None, None, None) == (1.0, 1.0)
        return
    a, b = points(kind)
    t, rows, expected = kernel_partials(code, a, b)
    found = recorded_partials(t, code, rows)
    for side in (0, 1):
        bad = np.flatnonzero(~same_bits(found[side], expected[side]))
        assert not len(bad), (f"{OPS[code].name} d{'ab'[side]}: at a={a[bad[0]]!r}, b={b[bad[0]]!r} recorded "
                              f"{found[side, bad[0]]!r}, kernel {expected[side, bad[0]]!r} ({len(bad)} points)")


def test_every_differentiable_op_has_recorded_partials():
    differentiable = {code for code, op in enumerate(OPS) if op.da and KIND[code] not in ("compare", "compare_c")}
    assert differentiable <= set(_partials.PARTIALS)
    assert OPCODE["lt"] not in _partials.PARTIALS


def test_partials_of_numbers_are_numbers():
    assert _partials.PARTIALS[OPCODE["div_c"]](None, None, None, 0.0)[0] == math.inf  # 1 / c, IEEE
    assert _partials.PARTIALS[OPCODE["mul_c"]](None, None, None, 2.5) == (2.5, None)
    assert ops.OPS[OPCODE["floor"]].da == "0.0"
    assert _partials.PARTIALS[OPCODE["floor"]](None, None, None, None)[0] == 0.0
