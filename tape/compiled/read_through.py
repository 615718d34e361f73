"""tape.jit's pass over the globals and closure variables Numba cannot type: an object's attributes read as constants,
plain Python functions compiled or inlined.

Numba freezes a module's attributes into machine code (``np.pi``, ``math.exp``) but refuses any other object
(``nn.sigmoid`` of a ``SimpleNamespace``, ``ns.xp.maximum`` through a property) and any plain Python function. This
pass, run on the bytecode's IR before BranchLines, reads ``obj.attr`` chains of such an object at compile time and
puts the value in the IR as a global, as Numba does a module's (a module, a function, a number, an array, another
object read on); a plain function becomes a numba.njit helper (BranchLines then compiles it with tape.jit's pipeline),
and one called with a function made inside f (a closure: ``nn.loop(steps, step, carry)``) is inlined, so that
InlineClosureLikes inlines the closure's calls too (Numba passes no closure over arrays to a compiled function).
tape/compiled/jit_cache.py's ``frozen`` keys f's cache on the values read so."""

from __future__ import annotations

import dis
import inspect
import sys
import types as types_
from typing import Any

import numba
from numba.core import ir
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.errors import TypingError
from numba.core.inline_closurecall import inline_closure_call

PLAIN: dict = {}  # a plain Python function -> its numba.njit helper
DEPTH = 16  # rounds of inlining at most (a plain function that passes a closure to itself stops there)


def typable(value: Any, ctx: Any) -> bool:
    """Whether Numba types ``value`` as a global (a module, a number, an array, an overloaded function, ...)."""
    try:
        ctx.resolve_value_type(value)
    except (ValueError, TypeError, numba.core.errors.NumbaError):
        return False
    return True


def plain(value: Any, ctx: Any) -> bool:
    """A plain Python function of the user's that Numba does not type (not a builtin, not overloaded, not jitted; not
    tape's own: a tape function Numba does not type is one tape.jit does not take, and Numba says so)."""
    return (isinstance(value, types_.FunctionType) and not (value.__module__ or "").startswith("tape.")
            and not typable(value, ctx))


def opaque(value: Any, ctx: Any) -> bool:
    """An object read through (``obj.attr``): Numba types neither it nor its class."""
    return not isinstance(value, (types_.ModuleType, types_.FunctionType, type)) and not typable(value, ctx)


@register_pass(mutates_CFG=True, analysis_only=False)
class ReadThrough(FunctionPass):
    """Objects' attributes as globals, plain functions as helpers or inlined where a closure is passed (module doc)."""

    _name = "tape_read_through"
    final = False  # whether an object left in use is a TypingError (not before the closures are inlined)

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        ctx = state.typingctx
        ctx.refresh()
        changed = False
        for _ in range(DEPTH):
            if not self._round(state.func_ir, ctx):
                break
            changed = True
        if changed or self.final:
            _drop_read(state.func_ir, ctx, self.final)
        return changed

    @staticmethod
    def _round(func_ir, ctx) -> bool:
        """One pass over the blocks: attributes read, helpers swapped; the first call to inline inlined (then True
        and the caller goes again, as the blocks changed)."""
        assigned: dict[str, list] = {}
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    assigned.setdefault(stmt.target.name, []).append(stmt.value)

        def origin(var: ir.Var) -> Any:
            """What var holds through copies: its one assigned value that is not a copy (else None)."""
            for _ in range(DEPTH):
                found = assigned.get(var.name, ())
                if len(found) != 1:
                    return None
                if not isinstance(found[0], ir.Var):
                    return found[0]
                var = found[0]
            return None

        def value_of(var: ir.Var) -> Any:
            """The global or closure variable var holds (else None)."""
            held = origin(var)
            return held if isinstance(held, (ir.Global, ir.FreeVar)) else None

        def made_inside(var: ir.Var) -> bool:
            held = origin(var)
            return isinstance(held, ir.Expr) and held.op == "make_function"

        changed = False
        for block in list(func_ir.blocks.values()):
            for i, stmt in enumerate(block.body):
                if not isinstance(stmt, ir.Assign):
                    continue
                value = stmt.value
                if isinstance(value, ir.Expr) and value.op == "getattr":
                    held = value_of(value.value)
                    if held is not None and opaque(held.value, ctx):
                        if not hasattr(held.value, value.attr):
                            raise TypingError(f"tape.jit: f reads {held.name}.{value.attr}, which "
                                              f"{type(held.value).__name__} {held.name} lacks", loc=stmt.loc)
                        got = getattr(held.value, value.attr)
                        if not (typable(got, ctx) or opaque(got, ctx) or plain(got, ctx)):
                            raise TypingError(f"tape.jit: f reads {held.name}.{value.attr}, {got!r}, which Numba "
                                              "does not type (tape.jit takes the op table's functions)", loc=stmt.loc)
                        stmt.value = ir.Global(f"{held.name}.{value.attr}", got, stmt.loc)
                        assigned[stmt.target.name] = [stmt.value]
                        changed = True
                elif isinstance(value, ir.Expr) and value.op == "call" and made_inside(value.func):
                    made = origin(value.func)
                    code = listed(made.code) if _consumed(func_ir, stmt.target.name) else None
                    if code is not None:
                        made.code = code
                        changed = True
                elif isinstance(value, ir.Expr) and value.op == "call":
                    held = value_of(value.func)
                    if (held is not None and plain(held.value, ctx) and not value.kws and value.vararg is None
                            and any(made_inside(arg) for arg in value.args)):
                        inline_closure_call(func_ir, func_ir.func_id.func.__globals__, block, i, held.value)
                        return True
                if isinstance(stmt.value, (ir.Global, ir.FreeVar)) and plain(stmt.value.value, ctx):
                    fn = stmt.value.value
                    if not ReadThrough._only_inlined(func_ir, stmt.target.name, made_inside):
                        if fn not in PLAIN:
                            PLAIN[fn] = numba.njit(fn)
                        helper = PLAIN[fn]
                        stmt.value = ir.Global(stmt.value.name, helper, stmt.loc)
                        changed = True
        return changed

    @staticmethod
    def _only_inlined(func_ir, name: str, made_inside) -> bool:
        """Whether every use of the function ``name`` holds is a call with a closure among its arguments (inlined;
        True where none is left)."""
        return all(isinstance(use, ir.Expr) and use.op == "call" and use.func.name == name
                   and any(made_inside(arg) for arg in use.args) for use in _uses(func_ir, name))


def _consumed(func_ir, name: str) -> bool:
    """Whether what variable ``name`` holds is only unpacked (``a, b = ...``) or passed to builtin list: a generator
    read whole before anything else runs, so a list of its items records the same (not sum, max or min, which record
    between the items)."""
    uses = _uses(func_ir, name)
    return bool(uses) and all(
        isinstance(use, ir.Expr) and (use.op == "exhaust_iter" or use.op == "call" and len(use.args) == 1
                                       and _global_of(func_ir, use.func) is list) for use in uses)


def _global_of(func_ir, var: ir.Var) -> Any:
    """The global's value var is assigned (None where it is not one global)."""
    found = [stmt.value for block in func_ir.blocks.values() for stmt in block.body
             if isinstance(stmt, ir.Assign) and stmt.target.name == var.name]
    return found[0].value if len(found) == 1 and isinstance(found[0], ir.Global) else None


def listed(code: types_.CodeType) -> types_.CodeType | None:
    """A generator expression's code (CPython 3.11, one ``for``) made a list comprehension's: the list built where the
    generator was returned, each ``yield`` an append, the list returned at the end; instructions swapped one for one
    (NOPs fill), so offsets, jumps and the line table stay. None for any other code."""
    if sys.version_info[:2] != (3, 11) or not code.co_flags & inspect.CO_GENERATOR:
        return None
    ops = [(i.offset, i.opname, i.arg) for i in dis.get_instructions(code)]
    names = [name for _, name, _ in ops]
    if names.count("FOR_ITER") != 1 or "RETURN_GENERATOR" not in names or names[-2:] != ["LOAD_CONST", "RETURN_VALUE"]:
        return None
    raw = bytearray(code.co_code)

    def put(offset: int, name: str, arg: int = 0) -> None:
        raw[offset], raw[offset + 1] = dis.opmap[name], arg

    for k, (offset, name, _) in enumerate(ops):
        if name == "RETURN_GENERATOR":
            if names[k + 1] != "POP_TOP":
                return None
            put(offset, "BUILD_LIST")
            put(ops[k + 1][0], "NOP")
        elif name == "YIELD_VALUE":
            if names[k + 1:k + 3] != ["RESUME", "POP_TOP"]:
                return None
            put(offset, "LIST_APPEND", 2)  # (the list under the range's iterator)
            put(ops[k + 1][0], "NOP")
            put(ops[k + 2][0], "NOP")
    put(ops[-2][0], "NOP")  # (the None returned: the list is on the stack)
    return code.replace(co_code=bytes(raw), co_flags=code.co_flags & ~inspect.CO_GENERATOR,
                        co_stacksize=code.co_stacksize + 1)


def _uses(func_ir, name: str) -> list:
    """The statements' values (an assignment's) or statements that read variable ``name``."""
    return [stmt.value if isinstance(stmt, ir.Assign) else stmt for block in func_ir.blocks.values()
            for stmt in block.body if name in {v.name for v in stmt.list_vars()}
            and not (isinstance(stmt, ir.Assign) and stmt.target.name == name)]


def _drop_read(func_ir, ctx, final: bool) -> None:
    """Remove the assignments of objects read through (their attributes are globals now), and their copies, that
    nothing reads: Numba would type them (an untyped global); ``final``: one still read is a TypingError."""
    held: set = set()
    for _ in range(DEPTH):
        dropped = False
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and (
                        isinstance(stmt.value, (ir.Global, ir.FreeVar)) and opaque(stmt.value.value, ctx)
                        or isinstance(stmt.value, ir.Var) and stmt.value.name in held):
                    held.add(stmt.target.name)
            kept = [stmt for stmt in block.body if not (
                isinstance(stmt, ir.Assign) and stmt.target.name in held and not _uses(func_ir, stmt.target.name))]
            dropped |= len(kept) < len(block.body)
            block.body = kept
        if not dropped:
            break
    for block in func_ir.blocks.values() if final else ():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and stmt.target.name in held:
                name = getattr(stmt.value, "name", stmt.target.name)
                raise TypingError(f"tape.jit: f uses the object {name} itself (passed, stored or returned); of an "
                                  f"object Numba cannot type f may only read attributes ({name}.attr: constants, "
                                  "frozen when f compiles)", loc=stmt.loc)


__all__ = ["ReadThrough", "PLAIN", "typable", "plain", "opaque", "listed"]
