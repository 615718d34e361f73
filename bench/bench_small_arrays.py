"""Small arrays against the same program on Vars: an RK4 integrator of three bodies (length-3 vectors).

The array form records one scalar record per element through tape/arrays/small.py's loop, so both
forms write the same 140,455 records (checked), and their replays are the same sweep. The
question is the recording's cost per array operation against three Var operations.
"""

import numpy as np
import pytest

import tape

STEPS, H, MASSES = 200, 0.01, (1.0, 0.5, 0.3)


def _accel(p):
    out = []
    for i in range(3):
        acc = 0.0 * p[i]
        for j in range(3):
            if i != j:
                d = p[j] - p[i]
                r2 = (d * d).sum() + 0.01
                acc = acc + d * (MASSES[j] / (r2 * tape.sqrt(r2)))
        out.append(acc)
    return out


def rk4(x):
    """Positions and velocities of three bodies, 200 RK4 steps; the sum of their squares."""
    p, v = [x[3 * i:3 * i + 3] for i in range(3)], [x[9 + 3 * i:12 + 3 * i] for i in range(3)]
    for _ in range(STEPS):
        a1 = _accel(p)
        p2, v2 = [p[i] + 0.5 * H * v[i] for i in range(3)], [v[i] + 0.5 * H * a1[i] for i in range(3)]
        a2 = _accel(p2)
        p3, v3 = [p[i] + 0.5 * H * v2[i] for i in range(3)], [v[i] + 0.5 * H * a2[i] for i in range(3)]
        a3 = _accel(p3)
        p4, v4 = [p[i] + H * v3[i] for i in range(3)], [v[i] + H * a3[i] for i in range(3)]
        a4 = _accel(p4)
        p = [p[i] + H / 6 * (v[i] + 2 * v2[i] + 2 * v3[i] + v4[i]) for i in range(3)]
        v = [v[i] + H / 6 * (a1[i] + 2 * a2[i] + 2 * a3[i] + a4[i]) for i in range(3)]
    return sum((q * q).sum() for q in p) + sum((u * u).sum() for u in v)


class Vec3:
    """The same vectors as three Vars: what a user writes without VarArrays."""

    def __init__(self, c):
        self.c = list(c)

    def __add__(self, o):
        if isinstance(o, Vec3):
            return Vec3([a + b for a, b in zip(self.c, o.c, strict=True)])
        return Vec3([a + o for a in self.c])

    __radd__ = __add__

    def __sub__(self, o):
        return Vec3([a - b for a, b in zip(self.c, o.c, strict=True)])

    def __mul__(self, o):
        if isinstance(o, Vec3):
            return Vec3([a * b for a, b in zip(self.c, o.c, strict=True)])
        return Vec3([a * o for a in self.c])

    __rmul__ = __mul__

    def sum(self):
        return self.c[0] + self.c[1] + self.c[2]

    def __getitem__(self, k):
        return Vec3(self.c[k])


def rk4_vars(x):
    return rk4(Vec3(list(x)))


X0 = np.random.default_rng(0).normal(size=18)
FORMS = {"VarArrays of length 3": rk4, "Vars": rk4_vars}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.benchmark(group="small arrays: record RK4 (trace)")
def test_record(benchmark, form):
    F = benchmark(tape.trace, FORMS[form], X0)
    assert len(F) == len(tape.trace(rk4_vars, X0))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.benchmark(group="small arrays: replay RK4 (F.value_and_grad)")
def test_replay(benchmark, form):
    F = tape.trace(FORMS[form], X0)
    benchmark(F.value_and_grad, X0)
