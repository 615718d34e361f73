"""tape.jit's compiler pass: branches, builtin max/min, .all()/.any() and numba.njit helpers say where they are.

Numba's interpreter inserts ``bool()`` before every branch; BranchLines rewrites it into
``branch(x, file_id << 24 | line)`` so that a checked branch carries its file:line, and
rewrites ``max``/``min`` and ``.all()``/``.any()`` calls and plain numba.njit helpers likewise. The Numba internals it
uses (the IR, ``register_pass``, the pass-manager API) are listed in tape/compiled/numba_internals.py.
"""

from __future__ import annotations

from collections import Counter

import numba
import numpy as np
from numba.core import ir
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.untyped_passes import InlineClosureLikes, TranslateByteCode

from tape.compiled.by_reference import MarkByReference
from tape.compiled.carries import Carries
from tape.compiled.link_only import compiling
from tape.compiled.numba_internals import file_id
from tape.compiled.read_through import ReadThrough
from tape.compiled.var_lists import VarLists, retrying


def branch(condition, where):
    """What ``if c:`` becomes in a tape.jit function: bool(c), told file:line (overloaded in tape.compiled.jit)."""
    return bool(condition)


def max_of(a, b, where):
    """What ``max(a, b)`` becomes in a tape.jit function (overloaded in tape.compiled.overloads)."""
    return max(a, b)


def min_of(a, b, where):
    """What ``min(a, b)`` becomes in a tape.jit function (overloaded in tape.compiled.overloads)."""
    return min(a, b)


def max_over(xs, where):
    """What ``max(xs)`` of one sequence becomes (overloaded in tape.compiled.overloads)."""
    return max(xs)


def min_over(xs, where):
    """What ``min(xs)`` of one sequence becomes (overloaded in tape.compiled.overloads)."""
    return min(xs)


def all_of(x, where):
    """What ``x.all()`` becomes in a tape.jit function (overloaded in tape.compiled.conditions)."""
    return x.all()


def any_of(x, where):
    """What ``x.any()`` becomes in a tape.jit function (overloaded in tape.compiled.conditions)."""
    return x.any()


def _maker(fn):
    def make(*args, **kwargs):
        return fn(*args, **kwargs)
    make.__name__ = make.__qualname__ = f"tape_{fn.__name__}"
    make.__doc__ = f"What ``np.{fn.__name__}`` becomes in a tape.jit function (overloaded in tape.compiled.arrays)."
    return make


# np.empty/zeros/ones/full and *_like: tape's own, so that an array of Vars is never taken by Numba's
# np.empty_like (which makes a 0-d array of anything it does not know, whichever overload it meets first)
MAKERS = {fn: _maker(fn) for fn in (np.empty, np.zeros, np.ones, np.full, np.empty_like, np.zeros_like,
                                    np.ones_like, np.full_like)}
MINMAX = {max: max_of, min: min_of}
OVER = {max: max_over, min: min_over}
TRUTHS = {"all": all_of, "any": any_of}
HELPERS: dict = {}  # a plain numba.njit helper -> its recompile with BranchLines


def _helper(dispatcher):
    """A numba.njit helper called from a tape.jit function, compiled by this pipeline too (so its
    branches and max/min name their own lines, as in Python)."""
    if dispatcher not in HELPERS:
        options = {k: v for k, v in dispatcher.targetoptions.items() if k not in ("nopython", "cache")}
        HELPERS[dispatcher] = numba.njit(pipeline_class=Pipeline, **options)(dispatcher.py_func)
    return HELPERS[dispatcher]


def forget_failures(*dispatchers) -> None:
    """Drop the tracebacks of the compile errors Numba keeps (a dispatcher's ``_compiler._failed_cache``, to
    raise again at once): their frames reach the failing call's frame and its tape, which lived as long as
    the dispatcher (a helper's recompile: the process). Of ``dispatchers`` (f's, its driver's) and the helpers'."""
    for dispatcher in (*dispatchers, *HELPERS.values()):
        for error in dispatcher._compiler._failed_cache.values():
            error.with_traceback(None)


def _is_helper(value) -> bool:
    return (isinstance(value, numba.core.registry.CPUDispatcher)
            and getattr(value, "_compiler").pipeline_class is not Pipeline  # noqa: B009  # internal, untyped
            and not (getattr(value.py_func, "__module__", None) or "").startswith("tape."))


def _maker_of(value, globals_: dict):
    """tape's stand-in for np.empty and friends if value reads one (``np.empty`` or a global ``empty``)."""
    if isinstance(value, ir.Global):
        fn = value.value
    elif isinstance(value, ir.Expr) and value.op == "getattr" and globals_.get(value.value.name) is np:
        fn = getattr(np, value.attr, None)
    else:
        return None
    try:
        return MAKERS.get(fn)
    except TypeError:  # an unhashable global
        return None


@register_pass(mutates_CFG=False, analysis_only=False)
class BranchLines(FunctionPass):
    """Rewrite the interpreter's ``$bool<offset> = global(bool); $pred = $bool(x)`` before each
    branch into ``branch(x, file_id << 24 | line)``, ``max(a, b, ...)`` into ``max_of(max_of(a, b,
    where), ..., where)``, ``max(xs)`` into ``max_over(xs, where)`` (min alike), ``x.all()`` into
    ``all_of(x, where)`` (any alike), and a plain
    numba.njit helper into its recompile by this pipeline, np.empty and friends into MAKERS'."""

    _name = "tape_branch_lines"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        changed = False
        blocks = state.func_ir.blocks.values()
        once = Counter(stmt.target.name for block in blocks for stmt in block.body if isinstance(stmt, ir.Assign))
        globals_ = {stmt.target.name: stmt.value.value for block in blocks for stmt in block.body
                    if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Global)
                    and once[stmt.target.name] == 1}  # (a temporary, or one of an inlined closure's, renamed)
        truths = {stmt.target.name: stmt.value for block in blocks for stmt in block.body
                  if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "getattr"
                  and stmt.value.attr in TRUTHS}
        for label, block in state.func_ir.blocks.items():
            body: list = []
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Global) and _is_helper(stmt.value.value):
                    stmt = ir.Assign(ir.Global(stmt.value.name, _helper(stmt.value.value), stmt.loc), stmt.target,
                                     stmt.loc)
                    changed = True
                elif isinstance(stmt, ir.Assign) and _maker_of(stmt.value, globals_) is not None:
                    maker = _maker_of(stmt.value, globals_)
                    stmt = ir.Assign(ir.Global(maker.__name__, maker, stmt.loc), stmt.target, stmt.loc)
                    changed = True
                elif (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call"
                      and not stmt.value.kws and stmt.value.vararg is None):
                    fn = globals_.get(stmt.value.func.name)
                    args = stmt.value.args
                    if fn is bool and len(args) == 1:
                        stmt.value.func = self._global(block, label, body, "branch", branch, stmt.loc)
                        stmt.value.args = [args[0], self._where(block, label, body, stmt.loc)]
                        changed = True
                    elif (fn is max or fn is min) and len(args) == 1:
                        where = self._where(block, label, body, stmt.loc)
                        fn_var = self._global(block, label, body, OVER[fn].__name__, OVER[fn], stmt.loc)
                        stmt = ir.Assign(ir.Expr.call(fn_var, [args[0], where], (), stmt.loc), stmt.target, stmt.loc)
                        changed = True
                    elif stmt.value.func.name in truths and not args:
                        method = truths[stmt.value.func.name]
                        where = self._where(block, label, body, stmt.loc)
                        fn_var = self._global(block, label, body, TRUTHS[method.attr].__name__, TRUTHS[method.attr],
                                              stmt.loc)
                        stmt = ir.Assign(ir.Expr.call(fn_var, [method.value, where], (), stmt.loc), stmt.target,
                                         stmt.loc)
                        changed = True
                    elif (fn is max or fn is min) and len(args) >= 2:
                        where = self._where(block, label, body, stmt.loc)
                        acc = args[0]
                        for k, arg in enumerate(args[1:], 2):
                            fn_var = self._global(block, label, body, MINMAX[fn].__name__, MINMAX[fn], stmt.loc)
                            call = ir.Expr.call(fn_var, [acc, arg, where], (), stmt.loc)
                            if k == len(args):
                                stmt = ir.Assign(call, stmt.target, stmt.loc)
                            else:
                                acc = ir.Var(block.scope, f"$minmax{len(body)}_{stmt.target.name}", stmt.loc)
                                body.append(ir.Assign(call, acc, stmt.loc))
                        changed = True
                body.append(stmt)
            block.body = body
        return changed

    @staticmethod
    def _where(block, label, body, loc):
        """A new variable holding file_id << 24 | line of loc."""
        code = file_id(loc.filename) << 24 | min(loc.line or 0, 0xFFFFFF)
        where = ir.Var(block.scope, f"$where{len(body)}_{label}", loc)
        body.append(ir.Assign(ir.Const(code, loc), where, loc))
        return where

    @staticmethod
    def _global(block, label, body, name, value, loc):
        var = ir.Var(block.scope, f"${name}{len(body)}_{label}", loc)
        body.append(ir.Assign(ir.Global(name, value, loc), var, loc))
        return var


@register_pass(mutates_CFG=False, analysis_only=False)
class ClosureLines(BranchLines):
    """BranchLines again after InlineClosureLikes: over the bodies of the closures inlined (theirs were not there)."""

    _name = "tape_closure_lines"


@register_pass(mutates_CFG=True, analysis_only=False)
class ClosureReads(ReadThrough):
    """ReadThrough again after InlineClosureLikes: over the bodies of the closures inlined."""

    _name = "tape_closure_reads"
    final = True


class Pipeline(CompilerBase):
    """Numba's nopython pipeline with ReadThrough and BranchLines after the bytecode is translated, MarkByReference,
    both again, VarLists and Carries after closures and comprehensions are inlined (compiled again where a list of
    numbers takes a Var, or a loop variable starts as a NumPy array); what it compiles without a CPython wrapper gets
    no machine code of its own (tape/compiled/link_only.py)."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(ReadThrough, TranslateByteCode)
        pm.add_pass_after(BranchLines, ReadThrough)
        pm.add_pass_after(MarkByReference, BranchLines)
        pm.add_pass_after(ClosureReads, InlineClosureLikes)
        pm.add_pass_after(ClosureLines, ClosureReads)
        pm.add_pass_after(VarLists, ClosureLines)
        pm.add_pass_after(Carries, VarLists)
        pm.finalize()
        return [pm]

    def _compile_core(self):
        with compiling():
            return retrying(super()._compile_core, self.state)


__all__ = ["branch", "max_of", "min_of", "max_over", "min_over", "all_of", "any_of", "Pipeline", "BranchLines",
           "MAKERS", "forget_failures"]
