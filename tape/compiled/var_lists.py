"""Lists made of numbers that later hold Vars (``state = [0.0] * n; state[i] = xs[i] * w``), as Python allows.

Numba types a list once, where it is made: ``[0.0] * n`` is a list of float64, and storing a Var into it fails
typing (tape.compiled.recording refuses it with a JitError). Where that happens, the function is compiled again
(``retrying``) with VarLists rewriting where that list is made (``[0.0] * n``, ``[a, b]``, ``[0.0 for _ in ...]``
and ``+``/``*`` of them): each element put in becomes ``var_of(element)``, a Var not yet recorded holding the
number, so the list is a list of Vars. Such a Var records nothing until it meets a recorded one, where it records
what the number records in Python (an element never written reads as its number, as in Python). Numba internals
used here, as in compiler_pass.py: the untyped IR, the pass-manager API, a compile's state (``func_ir`` translated
again when None, ``status.fail_reason``) and ``TypingError.loc``.
"""

from __future__ import annotations

import operator

from numba.core import ir
from numba.core.compiler_machinery import FunctionPass, register_pass

from tape.compiled.carries import CARRIES, carry_of
from tape.compiled.numba_internals import TypingError
from tape.compiled.recording import LIST_REFUSAL, var_of

SITES = "tape_var_lists"  # the compiler state's key: (file, line) of each store of a Var into a list of numbers
RETRIES = 16  # compiles typed again at most in one outermost compile, the callees' included (each retry types them
# again from bytecode)
_under_way = [0, 0]  # (compiles nested, retries) of the outermost compile under way (compiles hold Numba's lock)


def retrying(compile_core, state):
    """compile_core(), again with each list that failed typing by taking a Var made a list of Vars (VarLists) and
    each loop variable that failed by starting as a NumPy array carried (carries.py) (compiling from bytecode: the
    IR is translated again); RETRIES times at most in one outermost compile, then a TypingError naming the last."""
    from_bytecode = state.func_ir is None
    _under_way[0] += 1
    try:
        while True:
            try:
                return compile_core()
            except TypingError as e:
                what = _again(e, state) if from_bytecode else None
                if what is None:
                    raise
                _under_way[1] += 1
                if _under_way[1] > RETRIES:
                    raise TypingError(f"tape.jit: {state.func_id.func_name} was typed again {RETRIES} times, the "
                                      f"last for {what}, and still does not type: give it one type (take its first "
                                      "step before the loop)", getattr(e, "loc", None)) from None
                state.func_ir, state.status.fail_reason = None, None  # (a failure left there fails the compile)
    finally:
        _under_way[0] -= 1
        if not _under_way[0]:
            _under_way[1] = 0


def _again(e: TypingError, state) -> str | None:
    """What a compile that failed typing with e is typed again for, added to the state's CARRIES (a loop variable
    not yet carried) or SITES (a new store of a Var into a list of numbers); None: e stands."""
    loc, carry = getattr(e, "loc", None), carry_of(str(e))
    carries, sites = state.setdefault(CARRIES, set()), state.setdefault(SITES, set())
    if carry is not None and carry not in carries:
        carries.add(carry)
        return f"the loop variable {carry!r}"
    if LIST_REFUSAL not in str(e) or loc is None or (loc.filename, loc.line) in sites:
        return None
    sites.add((loc.filename, loc.line))
    return f"the list stored into at {loc.filename}:{loc.line}"


@register_pass(mutates_CFG=False, analysis_only=False)
class VarLists(FunctionPass):
    """Where a Var is stored into a list of numbers (the state's SITES), make that list one of Vars: each element
    put in where it is made (``build_list`` items, ``append`` in a list comprehension) becomes ``var_of(element)``."""

    _name = "tape_var_lists"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        sites = state.get(SITES)
        if not sites:
            return False
        blocks = state.func_ir.blocks
        stmts = [stmt for block in blocks.values() for stmt in block.body]
        stored = {stmt.target.name for stmt in stmts if isinstance(stmt, (ir.SetItem, ir.StaticSetItem))
                  and (stmt.loc.filename, stmt.loc.line) in sites}
        made = _made(stmts, stored)
        if not made:
            return False
        aliases = _aliases(stmts, {stmt.target.name for stmt in made})
        appends = {stmt.target.name for stmt in stmts if isinstance(stmt, ir.Assign) and _is_expr(stmt.value, "getattr")
                   and stmt.value.attr == "append" and stmt.value.value.name in aliases}
        for block in blocks.values():
            body: list = []
            for stmt in block.body:
                if stmt in made:
                    stmt.value.items = [_var_of(block, body, item) for item in stmt.value.items]
                elif (isinstance(stmt, ir.Assign) and _is_expr(stmt.value, "call") and stmt.value.func.name in appends
                      and len(stmt.value.args) == 1):
                    stmt.value.args = [_var_of(block, body, stmt.value.args[0])]
                body.append(stmt)
            block.body = body
        return True


def _is_expr(value, op: str) -> bool:
    return isinstance(value, ir.Expr) and value.op == op


def _made(stmts: list, names: set) -> set:
    """The ``build_list`` statements the lists named ``names`` are made by (through assignments, ``+`` and ``*``)."""
    defs: dict = {}
    for stmt in stmts:
        if isinstance(stmt, ir.Assign):
            defs.setdefault(stmt.target.name, []).append(stmt)
    made, seen, todo = set(), set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for stmt in defs.get(name, ()):
            value = stmt.value
            if isinstance(value, ir.Var):
                todo.append(value.name)
            elif _is_expr(value, "build_list"):
                made.add(stmt)
            elif _is_expr(value, "binop") and value.fn in (operator.mul, operator.add):
                todo += [value.lhs.name, value.rhs.name]
    return made


def _aliases(stmts: list, names: set) -> set:
    """names and every variable assigned one of them, directly or through others."""
    names = set(names)
    grew = True
    while grew:
        new = {stmt.target.name for stmt in stmts if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Var)
               and stmt.value.name in names}
        grew = not new <= names
        names |= new
    return names


def _var_of(block, body: list, item):
    """A new variable holding var_of(item), its statements appended to body."""
    fn = ir.Var(block.scope, f"$var_of{len(body)}_{item.name}", item.loc)
    body.append(ir.Assign(ir.Global("var_of", var_of, item.loc), fn, item.loc))
    out = ir.Var(block.scope, f"$as_var{len(body)}_{item.name}", item.loc)
    body.append(ir.Assign(ir.Expr.call(fn, [item], (), item.loc), out, item.loc))
    return out


__all__ = ["VarLists", "retrying", "SITES"]
