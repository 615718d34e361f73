"""The rdag's forward and reverse sweeps written in C: the reference the Numba kernels are held to.

Compiled at benchmark time with the system's C compiler (skipped without one)
and run through ctypes on the tape's own arrays.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import tape
from tape.bench.programs import RDAG_OPS
from tape.kernels.ops import OPCODE

C_SOURCE = r"""
#include <math.h>
#include <stdint.h>
static inline void acc(double *adj, uint32_t *stamp, const uint8_t *op, uint32_t j, double d,
                       int64_t gen, int64_t keep) {
    if (stamp[j] == gen) adj[j] += d;
    else { if (stamp[j] >= keep && op[j] == LEAF) adj[j] += d; else adj[j] = d + 0.0; stamp[j] = (uint32_t)gen; }
}
/* as the Numba sweep: a zero partial sends nothing */
#define ACC(j, g, p) do { double p_ = (p); if (p_ != 0.0) acc(adj, stamp, op, (j), (g) * p_, gen, keep); } while (0)
void forward(const uint8_t *op, const uint32_t *in0, const uint32_t *in1, double *val, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        switch (op[i]) {
        case ADD: val[i] = val[in0[i]] + val[in1[i]]; break;
        case SUB: val[i] = val[in0[i]] - val[in1[i]]; break;
        case MUL: val[i] = val[in0[i]] * val[in1[i]]; break;
        case SIN: val[i] = sin(val[in0[i]]); break;
        case COS: val[i] = cos(val[in0[i]]); break;
        case TANH: val[i] = tanh(val[in0[i]]); break;
        default: break;
        }
    }
}
void reverse(const uint8_t *op, const uint32_t *in0, const uint32_t *in1, const double *val,
             double *adj, uint32_t *stamp, int64_t out, int64_t gen, int64_t keep) {
    acc(adj, stamp, op, (uint32_t)out, 1.0, gen, keep);
    for (int64_t i = out; i >= 0; --i) {
        if (stamp[i] != gen) continue;
        double g = adj[i];
        if (g == 0.0) continue;  /* as the Numba sweep: a zero adjoint propagates nothing */
        switch (op[i]) {
        case ADD: ACC(in0[i], g, 1.0); ACC(in1[i], g, 1.0); break;
        case SUB: ACC(in0[i], g, 1.0); ACC(in1[i], g, -1.0); break;
        case MUL: { double a = val[in0[i]], b = val[in1[i]]; ACC(in0[i], g, b); ACC(in1[i], g, a); break; }
        case SIN: ACC(in0[i], g, cos(val[in0[i]])); break;
        case COS: ACC(in0[i], g, -sin(val[in0[i]])); break;
        case TANH: { double y = val[i]; ACC(in0[i], g, 1.0 - y * y); break; }
        default: break;
        }
    }
}
"""


def c_reference(workdir: Path):
    """The forward and reverse sweeps of the rdag ops compiled from C, or None without a compiler."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        return None
    defines = [f"-D{name.upper()}={OPCODE[name]}" for name in ("leaf",) + RDAG_OPS]
    src, lib = workdir / "reverse.c", workdir / "reverse.so"
    src.write_text(C_SOURCE)
    try:
        subprocess.run([cc, "-O2", "-shared", "-fPIC", *defines, "-o", str(lib), str(src), "-lm"],
                       check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError):
        return None
    library = ctypes.CDLL(str(lib))
    library.reverse.restype = library.forward.restype = None
    library.reverse.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_int64] * 3
    library.forward.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64]
    return library


def run_c_reverse(c, t: tape.Tape, out: tape.Var) -> None:
    """One reverse pass in C over the tape's own arrays, in a fresh generation."""
    t._gen += 1
    t._epoch = t._gen
    arrays = (t._op, t._in0, t._in1, t._val, t._adj, t._stamp)
    c.reverse(*(a.ctypes.data for a in arrays), out.index, t._gen, t._epoch)


def run_c_pair(c, t: tape.Tape, out: tape.Var) -> None:
    """Forward then reverse in C: a plain loop pair, the floor for value and gradient."""
    c.forward(t._op.ctypes.data, t._in0.ctypes.data, t._in1.ctypes.data, t._val.ctypes.data, len(t))
    run_c_reverse(c, t, out)


# -- compile time ---------------------------------------------------------------
