"""Replay: a recorded tape compiled for replay at new inputs (one Numba call each).

A Function owns copies of the tape's record arrays, so the tape it came from
can go on recording or be rewound. Every replay re-evaluates the comparisons
that Python branches took while recording and applies the Function's
``on_branch_change`` policy when one comes out differently.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from tape.analyses import prune as _prune
from tape.debug import nans, show
from tape.errors import NonFiniteError, TapeError
from tape.function import arguments, array_replay, call_records, format
from tape.kernels import _sweeps
from tape.kernels.array_ops import ACONSTANT, NAME
from tape.kernels.ops import ARRAY_BASE, CONSTANT, HAS_DA, HAS_DB, IS_GROUPED, IS_GROUPED_PAIR
from tape.kernels.twins import Twin
from tape.records.storage import Storage
from tape.sweeps import arenas, driver
from tape.sweeps import plans as _plans

if TYPE_CHECKING:
    from tape.function.function import Function

POLICIES = ("raise", "retrace", "ignore")
# a small tape's first value or gradient runs these kernels' twins while they are not compiled
replay, replay_from = Twin(_sweeps.replay, globals()), Twin(_sweeps.replay_from, globals())
replay_gradient = Twin(_sweeps.replay_gradient, globals())
replay_gradient_from = Twin(_sweeps.replay_gradient_from, globals())
forward_partials = Twin(_sweeps.forward_partials, globals())
forward_partials_from = Twin(_sweeps.forward_partials_from, globals())
forward_second = Twin(_sweeps.forward_second, globals())
forward_second_from = Twin(_sweeps.forward_second_from, globals())
R = TypeVar("R", bound="Function")
P = ParamSpec("P")
T = TypeVar("T")
LIVE: weakref.WeakSet[Function] = weakref.WeakSet()  # every Function: a fork child renews their locks


GROUPED = IS_GROUPED | IS_GROUPED_PAIR  # by opcode: ops whose replay takes the kernels' _from path


def grouped(op: np.ndarray) -> bool:
    """Whether records of these opcodes replay by replay_from (a grouped op among them), not replay."""
    return bool(GROUPED[op].any())


def _renew_locks() -> None:
    """A fork copies each lock as it was: held, maybe, by a thread the child does not have."""
    for F in list(LIVE):
        F._lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_locks)


def one_call_at_a_time(method: Callable[Concatenate[R, P], T]) -> Callable[Concatenate[R, P], T]:
    """Calls on one Function from several threads take turns: they share its working arrays, and the
    kernels run without the GIL. (__call__ and value_and_grad take the lock inline: no extra frame.)"""

    @functools.wraps(method)
    def in_turn(F: R, *args: P.args, **kwargs: P.kwargs) -> T:
        with F._lock:
            return method(F, *args, **kwargs)

    return in_turn


# f recorded again at (point, params): made by tape.trace for on_branch_change="retrace"
Retrace = Callable[[np.ndarray, np.ndarray], "Function"]


def checked_policy(F: Function, policy: str) -> str:
    """policy, if F can take it as its on_branch_change."""
    known_policy(policy)
    if policy == "retrace" and F._source is None:
        raise ValueError("on_branch_change='retrace' needs the Python function, which only tape.trace keeps: "
                         "this Function was loaded from a file, made by Tape.function or pickled under another policy; "
                         "use 'raise' or 'ignore'")
    return policy


def known_policy(policy: str) -> None:
    """A ValueError for an on_branch_change that is none of POLICIES (a file's is a TapeFormatError)."""
    if policy not in POLICIES:
        raise ValueError(f"on_branch_change must be one of {POLICIES}, got {policy!r}")


def install(F: Function, a: dict[str, np.ndarray], plans: list[driver.Plan] | None = None, share: bool = False) -> None:
    """Take a's records (plans: a's plans, if already decoded and checked by format.validate;
    share: replay into a's values, a tape's own, rather than a copy)."""
    F.__dict__.pop("_kept_copies", None)  # the maps' copies (tape/function/maps.py) of the records it replaces
    F._op, F._in0, F._in1 = a["op"], a["in0"], a["in1"]
    F._val, F._consts = a["val"] if share else a["val"].copy(), a["consts"]
    F._input_rows, F._param_rows = a["input_rows"], a["param_rows"]
    F._output_rows, F._scalar = a["output_rows"], bool(a["scalar_output"])
    F._check_rows, F._check_expected = a["check_rows"], a["check_expected"]
    F._check_where = a["check_where"]
    n = len(F._op)
    # working memory of value_and_grad: local partials, the records they point to
    # (row n is a dummy that absorbs contributions to absent inputs), adjoints.
    F._partials = np.zeros((2, n))
    F._targets = np.empty((2, n), np.uint32)
    np.copyto(F._targets[0], F._in0)
    np.copyto(F._targets[1], F._in1)
    F._targets[0][~HAS_DA[F._op]] = n
    F._targets[1][~HAS_DB[F._op]] = n
    F._adj = np.zeros(n + 1)
    F._grouped = grouped(F._op)
    # second partials and adj_dot, allocated by the first hvp
    F._second = None
    F._input_shape = tuple(a["input_shape"].tolist())
    if plans is None:
        plans = _plans.decode(a["plans"], a["plan_places"], F._op, F._in0, F._in1,
                              call_records.sizes(F._callees))
    F._table = a["plans"]  # rows, codes, views: what no layout changes (tape/sweeps/layout.py)
    array_replay.install_arrays(F, plans, a["arena"])
    shape = a.get("output_shape")  # files before version 4: one flat vector
    F._output_shape = tuple(shape.tolist()) if shape is not None else () if F._scalar else (F._n_out,)
    F._ones = np.ones(F._n_out)


# -- construction ---------------------------------------------------------------


def from_storage(cls: type[R], t: Storage, input_rows: np.ndarray, param_rows: np.ndarray, output_rows: np.ndarray,
                  scalar: bool, on_branch_change: str = "raise", source: Retrace | None = None,
                  input_shape: tuple[int, ...] | None = None, output_shape: tuple[int, ...] | None = None,
                  share: bool = False, prune: bool = True, cse: bool = True) -> R:
    """A Function of a copy of t's records (see Tape.function, which checks the rows), pruned (analyses/prune.py);
    with share (a tape of scalar records only), of the records themselves: no copy, for derivatives at once."""
    known_policy(on_branch_change)  # before the file's checks, which call it a format error
    if t._freed and not t._traced:  # (tape/sweeps/arenas.py)
        raise TapeError("tape.value_and_grad's tape gave its dead arrays' regions away: a Function needs tape.trace")
    share = share and not t._plans
    own = (lambda a: a) if share else np.copy
    n, checks = len(t), t._checks
    plans, arena = _leaves_laid_out(t) if t._freed else (t._plans, t._aval[:t._n_arena])
    table, places = _plans.encode(plans)  # the arena read only: what the Function keeps, install_arrays copies
    if t._borrowed:  # (a heat equation of 10^4 x 500 steps traced: 360 MB copied once, not twice)
        arena = arena.copy()
        for row, values in t._borrowed.items():  # a Function owns every number it replays with
            arena[t._plan(row).offset:][:values.size] = values.reshape(-1)
    arrays = {
        "op": own(t._op[:n]), "in0": own(t._in0[:n]), "in1": own(t._in1[:n]),
        "val": own(t._val[:n]), "consts": own(t._consts[: t.n_consts]),
        "input_rows": input_rows, "param_rows": param_rows, "output_rows": output_rows,
        "scalar_output": np.array(scalar),
        "check_rows": np.array([c[0] for c in checks], np.int64),
        "check_expected": np.array([c[1] for c in checks], np.bool_),
        "check_where": np.array([c[2] for c in checks], dtype=np.str_) if checks else np.zeros(0, "<U1"),
        "plans": table, "plan_places": places, "arena": arena,
        "input_shape": np.array(input_shape if input_shape is not None else (-1,), np.int64),
        "output_shape": np.array(output_shape if output_shape is not None else (-1,), np.int64),
    }
    count = lambda rows: sum(1 if t._op[r] < ARRAY_BASE else t._plan(r).size for r in rows.tolist())  # noqa: E731
    if input_shape is None:  # one flat vector of every input number
        arrays["input_shape"] = np.array([count(input_rows)], np.int64)
    if output_shape is None:  # a float, or one flat vector of every output number
        arrays["output_shape"] = np.array([] if scalar else [count(output_rows)], np.int64)
    # the checks of a file: nothing that reached the records (a handle's private index, say) may
    # point a kernel outside them (about 10 ms per 10^6 records)
    plans = format.validate({"format_version": np.array(format.FORMAT_VERSION, np.int64), **arrays,
                              "on_branch_change": np.array(on_branch_change), "check_finite": np.array(False)},
                             call_records.sizes(t._callees), plans)
    arrays, lines, plans, callees, did = _prune.run(arrays, t._lines, prune and not share, plans, t._callees, cse,
                                                    bool(t._freed))  # (only the leaves' numbers: _leaves_laid_out)
    F = cls(arrays, on_branch_change, source, plans, share, callees)
    F._lines, F._pruning = dict(lines) if lines is not None else None, (n, *did)
    F._home = weakref.ref(t)
    return F


def _leaves_laid_out(t: Storage) -> tuple[list[driver.Plan], np.ndarray]:
    """A traced tape that gave regions away (tape/sweeps/arenas.py): its plans one after another and an arena
    holding their constants' and inputs' numbers, zero elsewhere (pages never touched)."""
    size = _plans.regions(t._plans)[2]
    plans = _plans.relaid(t._plans, np.cumsum(size) - size)
    arena = arenas.untouched(int(size.sum()))
    arenas.move(t._plans, t._aval, plans, arena)
    return plans, arena


def record_bytes(F: Function) -> int:
    """The records, constants, array records' plans (8 * _plans.WIDTH bytes each, and their places: a gather's
    index, a pack's rows) and values."""
    arrays = (F._op, F._in0, F._in1, F._val, F._consts, F._aval)
    places = {id(p.places): p.places.nbytes for p in F._plans}  # (plans may share one)
    return sum(a.nbytes for a in arrays) + 8 * _plans.WIDTH * len(F._plans) + sum(places.values())


def working_bytes(F: Function) -> int:
    """Partials, targets and adjoints of the scalar records; the adjoint arena (once made) and stamps."""
    return sum(a.nbytes for a in (F._partials, F._targets, F._adj, F._stamp)) + getattr(F._adjoints, "nbytes", 0)


def records(F: Function) -> show.Records:
    notes = {int(i): "constant" for i in np.flatnonzero(F._op == CONSTANT)}
    notes.update({int(r): f"input {k}" for k, r in enumerate(F._input_rows)})
    notes.update({int(r): f"param {k}" for k, r in enumerate(F._param_rows)})
    notes.update({int(r): f"checked branch (was {bool(e)})" for r, e in zip(F._check_rows,
                                                                           F._check_expected, strict=True)})
    for k, r in enumerate(F._output_rows):
        notes[int(r)] = (notes.get(int(r), "") + f" output {k}").strip()
    return show.Records(F._op, F._in0, F._in1, F._val, F._consts,
                         lambda idx: F._adj[idx], notes, *arenas.described(F, len(F._op)))


def table(F: Function, rows: slice | range | None = None, head: int = 20, tail: int = 20) -> str:
    """F.table: what Function.table says (tape/function/function.py)."""
    return show.table(records(F), rows, head, tail)


def to_dot(F: Function, limit: int = 300) -> str:
    """F.to_dot: what Function.to_dot says (tape/function/function.py)."""
    return show.to_dot(records(F), [int(r) for r in F._output_rows], limit)


def render(F: Function, path: str, limit: int = 300) -> None:
    """F.render: what Function.render says (tape/function/function.py)."""
    show.render(F.to_dot(limit), path)


def stats(F: Function) -> dict:
    """F.stats: what Function.stats says (tape/function/function.py)."""
    by_op = Counter({NAME[k]: int(c) for k, c in enumerate(np.bincount(F._op, minlength=256)) if c})
    depth, fan_out = show.depth_and_fan_out(records(F))
    return {
        "records": len(F), "inputs": F.n_inputs, "params": F.n_params, "outputs": F.n_outputs,
        "constants": len(F._consts), "comparisons_checked": len(F._check_rows),
        "selects": by_op.get("select", 0), "by_op": dict(by_op.most_common()),
        "record_bytes": record_bytes(F), "working_bytes": working_bytes(F),
        "bytes_per_record": F.nbytes / len(F), "retraces": F.retraces,
        "longest_chain": depth, "fan_out": fan_out, **_prune.counts(F._pruning, len(F)),
    }


def describe(F: Function) -> str:
    return (f"<tape.Function {F.n_inputs} inputs -> {F.n_outputs} outputs, {len(F)} records, "
            f"{len(F._check_rows)} checked comparisons>")


# -- replay ---------------------------------------------------------------------------


def check(F: Function, **found: Any) -> None:
    """nans.check on the records; where the first inf/NaN has no source line because f was traced
    outside tape.debug_nans(), retrace f once at this point with lines kept and name the line."""
    try:
        nans.check(records(F), F._lines, len(F), **found)
    except NonFiniteError:
        if F._lines is not None or F._source is None:
            raise
        with nans.debug_nans(), call_records.recording(F):
            fresh = F._source(F._at_point, array_replay.param_values(F))
        if len(fresh) != len(F) or not np.array_equal(fresh._op, F._op):
            raise  # f does not record the same program twice: no line to borrow
        F._lines = fresh._lines
        nans.check(records(F), F._lines, len(F), **found)
        raise


def call(F: Function, x: ArrayLike, params: ArrayLike | None = None) -> float | np.ndarray:
    """Forward replay at x: a float for a scalar output, else an array of the outputs. On Vars or
    VarArrays, one call record on their tape, whose every sweep runs this Function's (Vars back)."""
    if type(x) in call_records.HANDLES:  # F on Vars: a call record on their tape (also in a list, below)
        return call_records.record(F, x, params)
    try:
        point = arguments.prepare(F, x, params)
    except TypeError:
        if call_records.holds_handles(x):
            return call_records.record(F, x, params)
        raise
    if F._plans:
        failed = array_replay.sweep_forward(F, point)
    else:
        args = (F._op, F._in0, F._in1, F._val, F._consts, F._input_rows, point, F._check_rows, F._check_expected)
        failed = replay_from(*args, 0) if F._grouped else replay(*args)
        if failed <= -2:  # stopped at a grouped record: replay_from has their rules
            failed = replay_from(*args, -2 - failed)
    if failed >= 0 and branch_changed(F, failed, point):
        return again(F, call, F, point.reshape(F._input_shape))
    if array_replay.checking(F):
        check(F)
    return arguments.output(F, array_replay.outputs(F) if F._plans else F._val[F._output_rows])


def partials(F: Function, second: bool, start: int, full: bool = False) -> Any:
    """F's values and first (second: and second) partials from record start: forward_partials or forward_second,
    which stop at a grouped record and return it (or -1); full: their _from kernels, which go on to the end (a
    program without grouped ops never compiles their rules)."""
    (p0, p1), (r0, r1), args = F._partials, F._targets, (F._op, F._in0, F._in1, F._val, F._consts)
    if second:
        assert F._second is not None
        h0, h1, h2 = F._second[0]
        return (forward_second_from if full else forward_second)(*args, p0, p1, h0, h1, h2, r0, r1, start)
    return (forward_partials_from if full else forward_partials)(*args, p0, p1, r0, r1, start)


def reverse(F: Function, point: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The gradient (shaped like the inputs) for output weights, at point."""
    watching = array_replay.checking(F)  # (asked once a call: 0.2 µs each time)
    if F._plans:
        failed = array_replay.sweep_forward(F, point, watching=watching)
    else:
        grad = np.empty(F.n_inputs)
        args = (F._op, F._in0, F._in1, F._val, F._consts, F._partials, F._targets, F._adj, F._input_rows, point,
                F._check_rows, F._check_expected, F._output_rows, weights, grad)
        failed = replay_gradient_from(*args, 0) if F._grouped else replay_gradient(*args)
        if failed <= -2:  # stopped at a grouped record: replay_gradient_from has their rules
            failed = replay_gradient_from(*args, -2 - failed)
    if failed >= 0 and branch_changed(F, failed, point):
        return again(F, reverse, F, point, weights)
    if F._plans:
        grad = array_replay.sweep_reverse(F, weights, watching=watching)
    if watching:
        check(F, adjoints=True)
    return arguments.shaped(F, grad)


def value_and_grad(F: Function, x: ArrayLike, params: ArrayLike | None = None) -> tuple[float, np.ndarray]:
    """F.value_and_grad: what Function.value_and_grad says (tape/function/function.py)."""
    if F._n_out != 1:
        raise ValueError(f"value_and_grad needs one output, this Function has {F.n_outputs}: use vjp")
    grad = reverse(F, arguments.prepare(F, x, params), F._ones)
    return float(F._val[F._output_rows[0]]), grad


def vjp(F: Function, x: ArrayLike, w: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
    """F.vjp: what Function.vjp says (tape/function/function.py)."""
    point = arguments.prepare(F, x, params)
    return reverse(F, point, arguments.weights(F, w))


# -- branch safety ----------------------------------------------------------------------


def branch_changed(F: Function, k: int, point: np.ndarray) -> bool:
    """Apply the policy to failed check k; True if the call should be repeated (retraced)."""
    if F.on_branch_change == "ignore":
        F._noted = k if F._noted < 0 else F._noted  # for a Dask worker's map (tape/function/maps.py)
        return False
    extra = ""
    if F.on_branch_change == "retrace":
        if F._retracing:
            extra = " (again right after retracing at this input: f does not branch deterministically)"
        else:
            retrace(F, point)
            return True
    raise nans.branch_changed(F._op, F._in0, F._in1, F._consts, int(F._check_rows[k]),
                              bool(F._check_expected[k]), str(F._check_where[k]), extra)


def again(F: Function, method: Callable[..., T], *args: Any) -> T:
    """Repeat a call once after a retrace."""
    F._retracing = True
    try:
        return method(*args)
    finally:
        F._retracing = False


def retrace(F: Function, point: np.ndarray) -> None:
    assert F._source is not None
    with call_records.recording(F):  # a call of this Function inside f is a recursion: refused
        fresh = F._source(point, array_replay.param_values(F))
    if (fresh.n_outputs, fresh._scalar) != (F.n_outputs, F._scalar):
        raise ValueError(f"retracing f at this input gave {fresh.n_outputs} outputs instead of {F.n_outputs}")
    F._callees, F._lines, F._pruning = fresh._callees, fresh._lines, fresh._pruning
    install(F, format.arrays(fresh), array_replay.recorded(fresh)[0])
    F.retraces += 1


# -- as a call record of another tape (tape/function/call_records.py) ------------------------


def call_reverse(F: Function, s: Any, p: driver.Plan, gen: int, keep: int) -> None:
    g = driver.own(s, s._aadj, p).reshape(-1)
    v = p.inputs[0]
    if not g.any() or s._op[v.record] == ACONSTANT:
        return  # a zero adjoint sends nothing (the structural-zero rule)
    x, params = call_records.reads(s, p)
    with call_records.inside(F, p):
        with F._lock:  # F.vjp without its checks of w (a region of the right size)
            grad = np.reshape(reverse(F, arguments.prepare(F, x, params), g), -1)
    driver.accumulate(s, v, grad.reshape(v.shape), gen, keep)
