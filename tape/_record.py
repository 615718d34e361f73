"""Recording functions, generated from the op table.

Every op's Python recorder is built from one of the templates below with the
op's forward expression (from ``kernels/ops.py``) pasted in, so recording
computes exactly the expression the Numba kernels replay, and the hot path is
one Python call per record: no helper calls, no lookups of the table.

A recorder reads its inputs' values, evaluates the forward expression (falling
back to the compiled kernel's scalar evaluator where Python's math raises
instead of returning inf/NaN), appends one record through memoryviews and
returns a new handle.
"""

from __future__ import annotations

import textwrap

from kernels import OPCODE, OPS

# Common tail: append record (code, i, j, v) to tape t and return its handle.
_APPEND = """
    n = t._n
    if n == t._capacity:
        t._grow(n + 1)
        vals = t._val_w
    t._op_w[n] = code
    t._in0_w[n] = i
{write_in1}    vals[n] = v
    t._n = n + 1
    if t._lines is not None:
        t._lines[n] = _caller()
    r = _new(Var)
    r._seg = seg
    r.index = n
    return r
"""

_EVALUATE = """
    try:
        v = {forward}
    except (ArithmeticError, ValueError):
        v = eval_op(code, {args})
"""

_UNARY = """
def record_{name}(x):
    if type(x) is not Var:
        return _unary_on_number({code}, "{name}", x)
    seg = x._seg
    if not seg.live:
        seg = _revalidate(x)
    t = seg.tape
    vals = t._val_w
    i = x.index
    a = vals[i]
    code = {code}
""" + _EVALUATE.format(forward="{forward}", args="a, 0.0") + _APPEND.format(write_in1="")

# x <op> c with c a number; c_setup may rewrite c (x - c is recorded as x + (-c)).
_CONST_PATH = """
    c = y if type(y) is float else _as_constant(y)
    if c is None:
        return NotImplemented
{c_setup}    if not seg.live:
        seg = _revalidate(x)
    t = seg.tape
    i = x.index
    j = t._n_consts
    if j == t._consts_capacity:
        t._grow_consts()
    t._consts_w[j] = c
    t._n_consts = j + 1
    vals = t._val_w
    a = vals[i]
    code = {code}
""" + _EVALUATE.format(forward="{forward}", args="a, c")

_BINARY = """
def record_{name}(x, y):
    seg = x._seg
    if type(y) is Var:
        if y._seg is not seg or not seg.live:
            seg = _shared_segment(x, y)
        t = seg.tape
        vals = t._val_w
        i = x.index
        j = y.index
        a = vals[i]
        b = vals[j]
        code = {code}
""" + _EVALUATE.format(forward="{forward}", args="a, b").replace("\n    ", "\n        ") + """
    else:
{const_path}""" + _APPEND.format(write_in1="    t._in1_w[n] = j\n")

_REFLECTED = """
def record_r{name}(x, y):
    seg = x._seg
{const_path}""" + _APPEND.format(write_in1="    t._in1_w[n] = j\n")

# For each binary op: the const op for `Var op c`, how c is rewritten, and the const op for `c op Var`.
BINARY_FORMS = {
    "add": ("add_c", "", "add_c"),
    "sub": ("add_c", "c = -c", "rsub_c"),
    "mul": ("mul_c", "", "mul_c"),
    "div": ("div_c", "", "rdiv_c"),
    "pow": ("pow_c", "", "rpow_c"),
    "maximum": ("maximum_c", "", "maximum_c"),
    "minimum": ("minimum_c", "", "minimum_c"),
}


def _indent(text: str, spaces: int) -> str:
    return textwrap.indent(text.strip("\n") + "\n", " " * spaces)


def _const_path(const_name: str, c_setup: str, indent: int) -> str:
    code = OPCODE[const_name]
    setup = f"    {c_setup}\n" if c_setup else ""
    body = _CONST_PATH.format(c_setup=setup, code=code, forward=OPS[code].forward)
    return _indent(body, indent)


def sources() -> dict[str, str]:
    """Python source of every recorder, keyed by function name."""
    out: dict[str, str] = {}
    for code, op in enumerate(OPS):
        if op.kind == "unary":
            out[f"record_{op.name}"] = _UNARY.format(name=op.name, code=code, forward=op.forward)
    for name, (left, setup, right) in BINARY_FORMS.items():
        code = OPCODE[name]
        out[f"record_{name}"] = _BINARY.format(
            name=name, code=code, forward=OPS[code].forward, const_path=_const_path(left, setup, 4))
        out[f"record_r{name}"] = _REFLECTED.format(name=name, const_path=_const_path(right, "", 0))
    return out


def build(namespace: dict) -> dict[str, object]:
    """Compile every recorder in ``namespace`` (Var, _new, eval_op, math names, helpers...)."""
    functions = {}
    for fname, src in sources().items():
        exec(compile(src, f"<tape recorder {fname}>", "exec"), namespace)  # noqa: S102 - our own table
        functions[fname] = namespace[fname]
    return functions
