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
from typing import Any, BinaryIO, Concatenate, ParamSpec, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from tape.analyses import prune as _prune
from tape.base import trees
from tape.debug import nans, show
from tape.debug.nans import NonFiniteError, branch_changed
from tape.function import call_records, format
from tape.function.arguments import Calls
from tape.function.array_replay import ArrayReplay
from tape.function.call_records import Callee
from tape.kernels._sweeps import replay, replay_gradient
from tape.kernels.array_ops import NAME
from tape.kernels.ops import ARRAY_BASE, CONSTANT, HAS_DA, HAS_DB
from tape.records.storage import Storage
from tape.sweeps import driver
from tape.sweeps import plans as _plans

POLICIES = ("raise", "retrace", "ignore")
R = TypeVar("R", bound="Replay")
P = ParamSpec("P")
T = TypeVar("T")
_LIVE: weakref.WeakSet[Replay] = weakref.WeakSet()  # every Function: a fork child renews their locks


def _renew_locks() -> None:
    """A fork copies each lock as it was: held, maybe, by a thread the child does not have."""
    for F in list(_LIVE):
        F._lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_locks)


def one_call_at_a_time(method: Callable[Concatenate[R, P], T]) -> Callable[Concatenate[R, P], T]:
    """Calls on one Function from several threads take turns: they share its working arrays, and the
    kernels run without the GIL. (__call__ and value_and_grad take the lock inline: no extra frame.)"""

    @functools.wraps(method)
    def in_turn(self: R, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._lock:
            return method(self, *args, **kwargs)

    return in_turn


# f recorded again at (point, params): made by tape.trace for on_branch_change="retrace"
Retrace = Callable[[np.ndarray, np.ndarray], "Replay"]


class Replay(ArrayReplay, Calls, Callee):
    """A Function's records and the one-call replays: value, gradient, vjp; branch policy;
    pictures; files. (``tape.Function`` adds derivatives and maps on top.)"""

    def __init__(self, arrays: dict[str, np.ndarray], on_branch_change: str = "raise",
                 source: Retrace | None = None, plans: list[driver.Plan] | None = None, share: bool = False,
                 callees: list | None = None):
        self._source = source  # records f again at a new point, when made by tape.trace
        self._callees = list(callees or ())  # the Functions its call records call (tape/function/call_records.py)
        self.on_branch_change = on_branch_change
        self.retraces = 0
        self.check_finite = False  # True: raise tape.NonFiniteError at the first inf/NaN of a call
        self._lines: dict[int, str] | None = None  # source lines, when traced inside tape.debug_nans()
        self._at_point = np.zeros(0)  # the inputs of the call in progress (for _check's retrace)
        self._lock = threading.RLock()
        _LIVE.add(self)
        self._install(arrays, plans, share)
        # x0's structure (tape.trace: calls may pass it, and get derivatives back in it) and f's output shape
        self._layout: trees.Layout | None = None
        self._param_layout: trees.Layout | None = None
        self._tree_call = False  # whether the call in progress passed x in x0's structure
        self._noted = -1  # the first check that failed under the policy "ignore" (see Maps._raw)

    @property
    def on_branch_change(self) -> str:
        """What a replay does when a recorded comparison comes out differently: "raise",
        "retrace" (record f again; only for Functions made by tape.trace) or "ignore"."""
        return self._policy

    @on_branch_change.setter
    def on_branch_change(self, policy: str) -> None:
        if policy not in POLICIES:
            raise ValueError(f"on_branch_change must be one of {POLICIES}, got {policy!r}")
        if policy == "retrace" and self._source is None:
            raise ValueError("on_branch_change='retrace' needs the Python function, which only tape.trace keeps: "
                             "this Function was loaded from a file or made by Tape.function; use 'raise' or 'ignore'")
        self._policy = policy

    def _install(self, a: dict[str, np.ndarray], plans: list[driver.Plan] | None = None, share: bool = False) -> None:
        """Take a's records (plans: a's plans, if already decoded and checked by format.validate;
        share: replay into a's values, a tape's own, rather than a copy)."""
        self.__dict__.pop("_kept_copies", None)  # the maps' copies (tape/function/maps.py) of the records it replaces
        self._op, self._in0, self._in1 = a["op"], a["in0"], a["in1"]
        self._val, self._consts = a["val"] if share else a["val"].copy(), a["consts"]
        self._input_rows, self._param_rows = a["input_rows"], a["param_rows"]
        self._output_rows, self._scalar = a["output_rows"], bool(a["scalar_output"])
        self._check_rows, self._check_expected = a["check_rows"], a["check_expected"]
        self._check_where = a["check_where"]
        n = len(self._op)
        # working memory of value_and_grad: local partials, the records they point to
        # (row n is a dummy that absorbs contributions to absent inputs), adjoints.
        self._partials = np.zeros((2, n))
        self._targets = np.empty((2, n), np.uint32)
        np.copyto(self._targets[0], self._in0)
        np.copyto(self._targets[1], self._in1)
        self._targets[0][~HAS_DA[self._op]] = n
        self._targets[1][~HAS_DB[self._op]] = n
        self._adj = np.zeros(n + 1)
        # second partials and adj_dot, allocated by the first hvp
        self._second: tuple[np.ndarray, np.ndarray] | None = None
        self._input_shape = tuple(a["input_shape"].tolist())
        if plans is None:
            plans = _plans.decode(a["plans"], a["plan_places"], self._op, self._in0, self._in1,
                                  call_records.sizes(self._callees))
        self._install_arrays(plans, a["arena"])
        shape = a.get("output_shape")  # files before version 4: one flat vector
        self._output_shape = tuple(shape.tolist()) if shape is not None else () if self._scalar else (self._n_out,)
        self._ones = np.ones(self._n_out)

    # -- construction ---------------------------------------------------------------

    @classmethod
    def _from_storage(cls: type[R], t: Storage, input_rows: np.ndarray, param_rows: np.ndarray, output_rows: np.ndarray,
                      scalar: bool, on_branch_change: str = "raise", source: Retrace | None = None,
                      input_shape: tuple[int, ...] | None = None, output_shape: tuple[int, ...] | None = None,
                      share: bool = False, prune: bool = True, cse: bool = True) -> R:
        """A Function of a copy of t's records (see Tape.function, which checks the rows), pruned (analyses/prune.py);
        with share (a tape of scalar records only), of the records themselves: no copy, for derivatives at once."""
        share = share and not t._plans
        own = (lambda a: a) if share else np.copy
        n, checks = len(t), t._checks
        table, places = _plans.encode(t._plans)
        arena = t._aval[:t._n_arena].copy()
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
                                 call_records.sizes(t._callees))
        arrays, lines, plans, callees, did = _prune.run(arrays, t._lines, prune and not share, plans, t._callees, cse)
        F = cls(arrays, on_branch_change, source, plans, share, callees)
        F._lines, F._pruning = dict(lines) if lines is not None else None, (n, *did)
        F._home = weakref.ref(t)
        return F

    # -- shape --------------------------------------------------------------------------

    @property
    def n_inputs(self) -> int:
        return self._n_in

    @property
    def n_outputs(self) -> int:
        return self._n_out

    @property
    def n_params(self) -> int:
        return self._n_par

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The shape of x that calls take (and gradients have): x0's shape for tape.trace."""
        return self._input_shape

    def __len__(self) -> int:
        return len(self._op)

    @property
    def nbytes(self) -> int:
        """Bytes of the records (op, in0, in1, val, consts; plans and value arena) plus the working
        memory of value_and_grad (partials, their targets, adjoints; adjoint arena): see stats()."""
        return self._record_bytes() + self._working_bytes()

    def _record_bytes(self) -> int:
        """The records, constants, array records' plans (8 * _plans.WIDTH bytes each) and values."""
        arrays = (self._op, self._in0, self._in1, self._val, self._consts, self._aval)
        return sum(a.nbytes for a in arrays) + 8 * _plans.WIDTH * len(self._plans)

    def _working_bytes(self) -> int:
        """Partials, targets and adjoints of the scalar records; the adjoint arena and stamps."""
        return sum(a.nbytes for a in (self._partials, self._targets, self._adj, self._aadj, self._stamp))

    def _records(self) -> show.Records:
        notes = {int(i): "constant" for i in np.flatnonzero(self._op == CONSTANT)}
        notes.update({int(r): f"input {k}" for k, r in enumerate(self._input_rows)})
        notes.update({int(r): f"param {k}" for k, r in enumerate(self._param_rows)})
        notes.update({int(r): f"checked branch (was {bool(e)})" for r, e in zip(self._check_rows,
                                                                               self._check_expected, strict=True)})
        for k, r in enumerate(self._output_rows):
            notes[int(r)] = (notes.get(int(r), "") + f" output {k}").strip()
        return show.Records(self._op, self._in0, self._in1, self._val, self._consts,
                             lambda idx: self._adj[idx], notes, *driver.described(self, len(self._op)))

    @one_call_at_a_time
    def table(self, rows: slice | range | None = None, head: int = 20, tail: int = 20) -> str:
        """The node table at the last replayed point: adjoints are those of the last
        value_and_grad/vjp call; see Tape.table."""
        return show.table(self._records(), rows, head, tail)

    @one_call_at_a_time
    def to_dot(self, limit: int = 300) -> str:
        """Graphviz DOT of the records the outputs depend on (values of the last replay)."""
        return show.to_dot(self._records(), [int(r) for r in self._output_rows], limit)

    def render(self, path: str, limit: int = 300) -> None:
        """Draw ``to_dot()`` to an .svg or .png file (needs Graphviz's ``dot``)."""
        show.render(self.to_dot(limit), path)

    @one_call_at_a_time
    def stats(self) -> dict:
        """Records by op, inputs, parameters, outputs, constants, comparisons, bytes, longest
        dependency chain and fan-out histogram ({uses: records used that often})."""
        by_op = Counter({NAME[k]: int(c) for k, c in enumerate(np.bincount(self._op, minlength=256)) if c})
        depth, fan_out = show.depth_and_fan_out(self._records())
        return {
            "records": len(self), "inputs": self.n_inputs, "params": self.n_params, "outputs": self.n_outputs,
            "constants": len(self._consts), "comparisons_checked": len(self._check_rows),
            "selects": by_op.get("select", 0), "by_op": dict(by_op.most_common()),
            "record_bytes": self._record_bytes(), "working_bytes": self._working_bytes(),
            "bytes_per_record": self.nbytes / len(self), "retraces": self.retraces,
            "longest_chain": depth, "fan_out": fan_out, **_prune.counts(self._pruning, len(self)),
        }

    def __repr__(self) -> str:
        return (f"<tape.Function {self.n_inputs} inputs -> {self.n_outputs} outputs, {len(self)} records, "
                f"{len(self._check_rows)} checked comparisons>")

    # -- replay ---------------------------------------------------------------------------

    @property
    def _checking(self) -> bool:
        """Whether calls look for the first inf/NaN (check_finite, or inside tape.debug_nans())."""
        return self.check_finite or nans.active()

    def _check(self, **found: Any) -> None:
        """nans.check on the records; where the first inf/NaN has no source line because f was traced
        outside tape.debug_nans(), retrace f once at this point with lines kept and name the line."""
        try:
            nans.check(self._records(), self._lines, len(self), **found)
        except NonFiniteError:
            if self._lines is not None or self._source is None:
                raise
            with nans.debug_nans(), self._recording():
                fresh = self._source(self._at_point, self._param_values())
            if len(fresh) != len(self) or not np.array_equal(fresh._op, self._op):
                raise  # f does not record the same program twice: no line to borrow
            self._lines = fresh._lines
            nans.check(self._records(), self._lines, len(self), **found)
            raise

    def __call__(self, x: ArrayLike, params: ArrayLike | None = None) -> float | np.ndarray:
        """Forward replay at x: a float for a scalar output, else an array of the outputs. On Vars or
        VarArrays, one call record on their tape, whose every sweep runs this Function's (Vars back)."""
        with self._lock:  # one_call_at_a_time, inline
            if type(x) in call_records.HANDLES:  # F on Vars: a call record on their tape (also in a list, below)
                return call_records.record(self, x, params)
            try:
                point = self._prepare(x, params)
            except TypeError:
                if call_records.holds_handles(x):
                    return call_records.record(self, x, params)
                raise
            if self._plans:
                failed = self._sweep_forward(point)
            else:
                failed = replay(self._op, self._in0, self._in1, self._val, self._consts, self._input_rows,
                                point, self._check_rows, self._check_expected)
            if failed >= 0 and self._branch_changed(failed, point):
                return self._again(self.__call__, point.reshape(self._input_shape))
            if self._checking:
                self._check()
            return self._output(self._outputs() if self._plans else self._val[self._output_rows])

    def _reverse(self, point: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """The gradient (shaped like the inputs) for output weights, at point."""
        if self._plans:
            failed = self._sweep_forward(point)
        else:
            grad = np.empty(self.n_inputs)
            failed = replay_gradient(self._op, self._in0, self._in1, self._val, self._consts, self._partials,
                                     self._targets, self._adj, self._input_rows, point, self._check_rows,
                                     self._check_expected, self._output_rows, weights, grad)
        if failed >= 0 and self._branch_changed(failed, point):
            return self._again(self._reverse, point, weights)
        if self._plans:
            grad = self._sweep_reverse(weights)
        if self._checking:
            self._check(adjoints=True)
        return self._shaped(grad)

    def value_and_grad(self, x: ArrayLike, params: ArrayLike | None = None) -> tuple[float, np.ndarray]:
        """(f(x), gradient) for a scalar output; fits scipy.optimize.minimize(..., jac=True)."""
        if self.n_outputs != 1:
            raise ValueError(f"value_and_grad needs one output, this Function has {self.n_outputs}: use vjp")
        with self._lock:  # one_call_at_a_time, inline
            grad = self._reverse(self._prepare(x, params), self._ones)
            return float(self._val[self._output_rows[0]]), grad

    def gradient(self, x: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """The gradient at x of a scalar-output Function."""
        return self.value_and_grad(x, params)[1]

    @one_call_at_a_time
    def vjp(self, x: ArrayLike, w: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """w^T J at x: one reverse sweep seeded with w on the outputs."""
        point = self._prepare(x, params)
        return self._reverse(point, self._weights(w))

    # -- branch safety ----------------------------------------------------------------------

    def _branch_changed(self, k: int, point: np.ndarray) -> bool:
        """Apply the policy to failed check k; True if the call should be repeated (retraced)."""
        if self.on_branch_change == "ignore":
            self._noted = k if self._noted < 0 else self._noted  # for a Dask worker's map (tape/function/maps.py)
            return False
        extra = ""
        if self.on_branch_change == "retrace":
            if self._retracing:
                extra = " (again right after retracing at this input: f does not branch deterministically)"
            else:
                self._retrace(point)
                return True
        raise branch_changed(self._op, self._in0, self._in1, self._consts, int(self._check_rows[k]),
                             bool(self._check_expected[k]), str(self._check_where[k]), extra)

    _retracing = False
    _pruning: tuple[int, int, int, str] | None = None  # (records recorded, folded, merged, what analyses/prune.py did)

    def _again(self, method, *args):
        """Repeat a call once after a retrace."""
        self._retracing = True
        try:
            return method(*args)
        finally:
            self._retracing = False

    def _retrace(self, point: np.ndarray) -> None:
        assert self._source is not None
        with self._recording():  # a call of this Function inside f is a recursion: refused
            fresh = self._source(point, self._param_values())
        if (fresh.n_outputs, fresh._scalar) != (self.n_outputs, self._scalar):
            raise ValueError(f"retracing f at this input gave {fresh.n_outputs} outputs instead of {self.n_outputs}")
        self._callees, self._lines, self._pruning = fresh._callees, fresh._lines, fresh._pruning
        self._install(fresh._arrays(), fresh._plans)
        self.retraces += 1

    # -- persistence ------------------------------------------------------------------------

    def _arrays(self) -> dict[str, np.ndarray]:
        return {
            "op": self._op, "in0": self._in0, "in1": self._in1, "val": self._val, "consts": self._consts,
            "input_rows": self._input_rows, "param_rows": self._param_rows, "output_rows": self._output_rows,
            "scalar_output": np.array(self._scalar), "check_rows": self._check_rows,
            "check_expected": self._check_expected, "check_where": self._check_where,
            **dict(zip(("plans", "plan_places"), _plans.encode(self._plans), strict=True)),
            "arena": self._aval, "input_shape": np.array(self._input_shape, np.int64),
            "output_shape": np.array(self._output_shape, np.int64),
        }

    def save(self, path: str | os.PathLike | BinaryIO) -> None:
        """Write a versioned .npz of plain arrays (no pickle); ``tape.load`` reads it back, with
        ``on_branch_change`` and ``check_finite``. Checked branches keep file name and line only.
        The Functions its call records call are saved inside it (each as often as it is called from)."""
        if not isinstance(path, (str, os.PathLike)):
            format.write(path, self)
            return
        with open(path, "wb") as fh:
            self.save(fh)
