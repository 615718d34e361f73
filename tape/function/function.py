"""tape.Function: a recorded tape replayed at new inputs, and ``tape.load``.

One class, declared here: the state of a Function and its public methods, each handing over to a
plain function of the capability module beside it, which takes the Function first:
tape/function/replay.py (records, value, gradient, vjp, branch policy, pictures),
array_replay.py (the sweeps over array records), arguments.py (x, params and results in the
caller's shapes), derivatives.py (jvp, Jacobian, Hessian), sparse_jacobian.py, sparse_hessian.py,
maps.py (many points in parallel, Dask), call_records.py (a Function called on Vars),
format.py (the file) and tape/symbolic/gradient_tapes.py (derivatives as Functions).
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import ArrayLike

from tape.base import gc_pacing, trees
from tape.function import (
    array_replay,
    array_sparsity,
    call_records,
    derivatives,
    format,
    maps,
    replay,
    sparse_hessian,
    sparse_jacobian,
)
from tape.function.replay import Retrace, one_call_at_a_time
from tape.records.storage import Storage
from tape.sweeps import driver
from tape.sweeps.driver import Plan
from tape.symbolic import gradient_tapes


class Function:
    """Value, gradient and every derivative of a recorded tape at new inputs, one Numba call each.

    Make one with ``tape.trace(f, x0)`` or ``Tape.function(inputs, outputs)``.
    Safe to share between threads: calls on one Function take turns (F.map runs points in parallel).
    """

    # the records (replay.install): ops, operands, values, constants; which rows are inputs, params, outputs, checks
    _op: np.ndarray
    _in0: np.ndarray
    _in1: np.ndarray
    _val: np.ndarray
    _consts: np.ndarray
    _input_rows: np.ndarray
    _param_rows: np.ndarray
    _output_rows: np.ndarray
    _scalar: bool
    _check_rows: np.ndarray
    _check_expected: np.ndarray
    _check_where: np.ndarray
    _grouped: bool  # whether any record is a grouped op (replays start in the kernels that have their rules)
    _input_shape: tuple[int, ...]
    _output_shape: tuple[int, ...]
    # working memory of value_and_grad (partials, their targets, adjoints) and of the hvp (second partials, adj_dot)
    _partials: np.ndarray
    _targets: np.ndarray
    _adj: np.ndarray
    _ones: np.ndarray
    _second: tuple[np.ndarray, np.ndarray] | None
    _aadj_dot: np.ndarray
    # array records (array_replay.install_arrays): plans, arenas, generations, pieces, fused runs
    _plans: list[driver.Plan]
    _table: np.ndarray  # their plan table (tape/sweeps/plans.py; its rows, codes and views: tape/sweeps/layout.py)
    _recorded: np.ndarray | None  # the plans' offsets as recorded, while _plans share regions (tape/sweeps/layout.py)
    _back_at: np.ndarray | None  # each plan's offset in the adjoint arena, where adjoints have a layout of their own
    _views: dict
    _schedules: dict
    _steps: dict
    _encoded: dict
    _aval: np.ndarray
    _adjoints: np.ndarray | int  # the adjoint arena (_aadj), or its length until a sweep first reads it
    _stamp: np.ndarray
    _gen: int
    _in_pieces: list[tuple[int, int, int]]
    _param_pieces: list[tuple[int, int, int]]
    _out_pieces: list[tuple[int, int, int]]
    _n_in: int
    _n_par: int
    _n_out: int
    _top: int  # the last output row: reverse sweeps start there
    _runs_first: dict
    _runs_last: dict
    _dot: np.ndarray  # derivatives.tangents' column for one direction
    _sparsity: tuple  # sparse_jacobian.structure's and sparse_hessian.hessian_structure's, kept with the records
    _hessian_sparsity: tuple
    _policy: str
    _retracing = False
    _pruning: tuple[int, int, int, str] | None = None  # (records recorded, folded, merged, what analyses/prune.py did)
    _home: weakref.ReferenceType | None = None  # the tape it was made from: calls on its Vars are refused
    _recording_now = False  # while its Python function records it again (retrace): calls of it are refused

    def __init__(self, arrays: dict[str, np.ndarray], on_branch_change: str = "raise",
                 source: Retrace | None = None, plans: list[driver.Plan] | None = None, share: bool = False,
                 callees: list | None = None):
        self._source = source  # records f again at a new point, when made by tape.trace
        self._callees = list(callees or ())  # the Functions its call records call (tape/function/call_records.py)
        self.on_branch_change = on_branch_change
        self.retraces = 0
        self.check_finite = False  # True: raise tape.NonFiniteError at the first inf/NaN of a call
        self._lines: dict[int, str] | None = None  # source lines, when traced inside tape.debug_nans()
        self._at_point = np.zeros(0)  # the inputs of the call in progress (for replay.check's retrace)
        self._lock = threading.RLock()
        replay.LIVE.add(self)
        replay.install(self, arrays, plans, share)
        # x0's structure (tape.trace: calls may pass it, and get derivatives back in it) and f's output shape
        self._layout: trees.Layout | None = None
        self._param_layout: trees.Layout | None = None
        self._out_layout: trees.Layout | None = None  # a pytree output's structure (tape.trace: jvp and vjp give it)
        self._tree_call = False  # whether the call in progress passed x in x0's structure
        self._noted = -1  # the first check that failed under the policy "ignore" (see maps.raw)

    def __getstate__(self) -> dict[str, Any]:
        """What pickle and copy.deepcopy keep: records, arenas and settings; not the lock (a new one comes
        back), the views cached into the arenas (made again) or the tape it came from; f's retrace only
        under on_branch_change="retrace" (then it pickles f, which must be importable: not a lambda)."""
        state = self.__dict__.copy()
        del state["_lock"]
        state.pop("_home", None)
        state.update({name: {} for name in ("_views", "_schedules", "_steps", "_encoded") if name in state})
        if self._policy != "retrace":
            state["_source"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({"_grouped": True, **state})  # pickled before the flag: the kernels that take any op
        self._lock = threading.RLock()
        replay.LIVE.add(self)

    @property
    def _aadj(self) -> np.ndarray:
        """The adjoint arena, made where a sweep first reads it (tape.trace makes none: a smaller peak)."""
        if isinstance(self._adjoints, int):
            self._adjoints = np.zeros(self._adjoints)
        return self._adjoints

    @classmethod
    def _from_storage(cls, t: Storage, input_rows: np.ndarray, param_rows: np.ndarray, output_rows: np.ndarray,
                      scalar: bool, on_branch_change: str = "raise", source: Retrace | None = None,
                      input_shape: tuple[int, ...] | None = None, output_shape: tuple[int, ...] | None = None,
                      share: bool = False, prune: bool = True, cse: bool = True) -> Function:
        """See replay.from_storage (tape/symbolic/gradient_tapes.py, below this package, calls it so); no automatic
        garbage collection meanwhile (tape/base/gc_pacing.py's paused)."""
        with gc_pacing.paused():
            return replay.from_storage(cls, t, input_rows, param_rows, output_rows, scalar, on_branch_change, source,
                                       input_shape, output_shape, share, prune, cse)

    @property
    def on_branch_change(self) -> str:
        """What a replay does when a recorded comparison comes out differently: "raise",
        "retrace" (record f again; only for Functions made by tape.trace) or "ignore"."""
        return self._policy

    @on_branch_change.setter
    def on_branch_change(self, policy: str) -> None:
        self._policy = replay.checked_policy(self, policy)

    # -- shape (tape/function/replay.py) ----------------------------------------------------------

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
        """Bytes of the records (op, in0, in1, val, consts; plans and value arena) plus the working memory of
        value_and_grad (partials, their targets, adjoints; the adjoint arena, once a sweep made it): see stats()."""
        return replay.record_bytes(self) + replay.working_bytes(self)

    # -- pictures (tape/function/replay.py) -------------------------------------------------------

    @one_call_at_a_time
    def table(self, rows: slice | range | None = None, head: int = 20, tail: int = 20) -> str:
        """The node table at the last replayed point: adjoints are those of the last
        value_and_grad/vjp call; see Tape.table."""
        return replay.table(self, rows, head, tail)

    @one_call_at_a_time
    def to_dot(self, limit: int = 300) -> str:
        """Graphviz DOT of the records the outputs depend on (values of the last replay)."""
        return replay.to_dot(self, limit)

    def render(self, path: str, limit: int = 300) -> None:
        """Draw ``to_dot()`` to an .svg or .png file (needs Graphviz's ``dot``)."""
        replay.render(self, path, limit)

    @one_call_at_a_time
    def stats(self) -> dict:
        """Records by op, inputs, parameters, outputs, constants, comparisons, bytes, longest
        dependency chain and fan-out histogram ({uses: records used that often})."""
        return replay.stats(self)

    def __repr__(self) -> str:
        return replay.describe(self)

    # -- replay (tape/function/replay.py) ---------------------------------------------------------

    def __call__(self, x: ArrayLike, params: ArrayLike | None = None) -> float | np.ndarray:
        """Forward replay at x: a float for a scalar output, else an array of the outputs. On Vars or
        VarArrays, one call record on their tape, whose every sweep runs this Function's (Vars back)."""
        with self._lock:  # one_call_at_a_time, inline
            return replay.call(self, x, params)

    def value_and_grad(self, x: ArrayLike, params: ArrayLike | None = None) -> tuple[float, np.ndarray]:
        """(f(x), gradient) for a scalar output; fits scipy.optimize.minimize(..., jac=True)."""
        with self._lock:  # one_call_at_a_time, inline
            return replay.value_and_grad(self, x, params)

    def gradient(self, x: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """The gradient at x of a scalar-output Function."""
        return self.value_and_grad(x, params)[1]

    @one_call_at_a_time
    def vjp(self, x: ArrayLike, w: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """w^T J at x: one reverse sweep seeded with w on the outputs."""
        return replay.vjp(self, x, w, params)

    def save(self, path: str | os.PathLike | BinaryIO) -> None:
        """Write a versioned .npz of plain arrays (no pickle); ``tape.load`` reads it back, with
        ``on_branch_change`` and ``check_finite``. Checked branches keep file name and line only.
        The Functions its call records call are saved inside it (each as often as it is called from)."""
        format.save(self, path)

    # -- derivatives (tape/function/derivatives.py) -----------------------------------------------

    @one_call_at_a_time
    def jvp(self, x: Any, v: Any, params: Any = None) -> float | np.ndarray:
        """J v at x (v shaped as x): one forward tangent sweep; a float, or an array of the outputs' shape."""
        return derivatives.jvp(self, x, v, params)

    @one_call_at_a_time
    def jacobian(self, x: Any, params: Any = None, mode: str = "auto", block: int = 16,
                 seeds: Any = None) -> Any:
        """The Jacobian at x, shaped as JAX's: for an array x, the outputs' shape then x's (``()`` for a
        scalar output: (m, n) for m outputs of an x of n); for x in x0's structure (a list, a dict),
        that structure with an array of the outputs' shape + the leaf's shape per leaf.

        mode "forward" sweeps the inputs' directions (n / block passes), "reverse"
        the outputs' (m / block passes); "auto" picks the fewer passes; ``block`` directions per sweep.

        seeds: an (n_inputs, k) matrix S (flat numbering): J S instead, shaped as the outputs then (k,),
        from one pass of partials and k / block forward sweeps (compressed Jacobians: see sparse_jacobian).
        """
        return derivatives.jacobian(self, x, params, mode, block, seeds)

    @one_call_at_a_time
    def hvp(self, x: Any, v: Any, params: Any = None) -> Any:
        """H v at x (v shaped as x, and so is H v) for a scalar output, by forward-over-reverse over the
        same records."""
        return derivatives.hvp(self, x, v, params)

    @one_call_at_a_time
    def value_grad_hvp(self, x: Any, v: Any, params: Any = None) -> tuple[float, Any, Any]:
        """(f(x), gradient, H v) for a scalar output from one pass of values and second partials and
        one forward-over-reverse sweep (whose adjoints are the gradient): what a Newton or trust-region
        step needs, for the price of an hvp."""
        return derivatives.value_grad_hvp(self, x, v, params)

    @one_call_at_a_time
    def hessian(self, x: Any, params: Any = None) -> Any:
        """The Hessian at x (one Hessian-vector product per input), symmetrized, shaped as JAX's:
        x's shape twice; for x in a structure of several leaves, that structure of that structure."""
        return derivatives.hessian(self, x, params)

    # -- sparse derivatives (tape/function/sparse_jacobian.py, sparse_hessian.py) -----------------

    @one_call_at_a_time
    def jacobian_sparsity(self) -> Any:
        """The Jacobian's structural pattern as a scipy.sparse CSR matrix of ones, (n_outputs, n_inputs)
        in flat numbering: entry (i, j) when output i depends on input j through the records (comparisons,
        floor-like ops and stop_gradient carry no dependence; select depends on both sides). It holds every
        nonzero of F.jacobian at any point that takes the recorded branches. Scalar records only
        (TypeError naming the first array record)."""
        return sparse_jacobian.jacobian_sparsity(self)

    @one_call_at_a_time
    def jacobian_colors(self) -> np.ndarray:
        """A color per input (int64, from 0) such that no two inputs of one color reach a common output:
        the seeds of sparse_jacobian (column q of the seed matrix: the inputs of color q)."""
        return sparse_jacobian.jacobian_colors(self)

    @one_call_at_a_time
    def sparse_jacobian(self, x: Any, params: Any = None, block: int = 16) -> Any:
        """The Jacobian at x as a scipy.sparse CSR matrix (n_outputs, n_inputs), flat numbering, with
        exactly jacobian_sparsity()'s entries: a forward direction per color, ``block`` per sweep,
        every entry the same number as ``F.jacobian(x, mode="forward")``'s. Fits
        ``scipy.optimize.least_squares(F, x0, jac=F.sparse_jacobian)``."""
        return sparse_jacobian.sparse_jacobian(self, x, params, block)

    @one_call_at_a_time
    def hessian_sparsity(self) -> Any:
        """The Hessian's structural pattern as a symmetric scipy.sparse CSR matrix of ones,
        (n_inputs, n_inputs) in flat numbering, for a scalar output: entry (i, j) when some record the
        output depends on has a second partial (not zero by the op table) in inputs that depend on i
        and on j. It holds every nonzero of F.hessian at any point that takes the recorded branches."""
        return sparse_hessian.hessian_sparsity(self)

    @one_call_at_a_time
    def hessian_colors(self) -> np.ndarray:
        """A star coloring of the inputs (int64, from 0): inputs of one color share no Hessian entry, and every path of
        four inputs through the pattern has three colors; sparse_hessian takes one Hessian-vector product per color.
        Where coloring would cost more than a sweep per input (a dense pattern), each input its own color."""
        return sparse_hessian.hessian_colors(self)

    @one_call_at_a_time
    def sparse_hessian(self, x: Any, params: Any = None) -> Any:
        """The Hessian at x as a symmetric scipy.sparse CSR matrix (n_inputs, n_inputs), flat numbering,
        with exactly hessian_sparsity()'s entries, from one Hessian-vector product per color (star
        coloring, direct recovery). Entries read from both sides are F.hessian's bit for bit, the
        others equal to rounding; with array records, all colors in one vector-mode sweep of the
        gradient tape, equal to rounding (see tape/function/sparse_hessian.py)."""
        return sparse_hessian.sparse_hessian(self, x, params)

    # -- many points (tape/function/maps.py) ------------------------------------------------------

    @one_call_at_a_time
    def map(self, X: ArrayLike, params: ArrayLike | None = None, client=None) -> np.ndarray:
        """F at every row of X (N, n_inputs), in parallel: (N,) for a scalar output, else (N, m).

        With a Dask ``client`` (every map takes one) the points are split into chunks computed on
        its workers (see tape.function.distributed); results come back in the order of X.
        """
        return maps.map(self, X, params, client)

    @one_call_at_a_time
    def map_value_and_grad(self, X: ArrayLike, params: ArrayLike | None = None,
                           client=None) -> tuple[np.ndarray, np.ndarray]:
        """value_and_grad at every row of X, in parallel: values (N,), gradients (N, n_inputs)."""
        return maps.map_value_and_grad(self, X, params, client)

    @one_call_at_a_time
    def map_vjp(self, X: ArrayLike, W: ArrayLike, params: ArrayLike | None = None, client=None) -> np.ndarray:
        """W[p]^T J at every row X[p], in parallel: (N, n_inputs). Each row of W flat or in the outputs' shape."""
        return maps.map_vjp(self, X, W, params, client)

    @one_call_at_a_time
    def map_jvp(self, X: ArrayLike, V: ArrayLike, params: ArrayLike | None = None, client=None) -> np.ndarray:
        """J V[p] at every row X[p], in parallel: (N,) for a scalar output, else (N, n_outputs)."""
        return maps.map_jvp(self, X, V, params, client)

    @one_call_at_a_time
    def map_hvp(self, X: ArrayLike, V: ArrayLike, params: ArrayLike | None = None, client=None) -> np.ndarray:
        """H(X[p]) V[p] at every row, for a scalar output: (N, n_inputs). Point by point (a thread per
        block for big array records; no parallel kernel yet), or on Dask workers."""
        return maps.map_hvp(self, X, V, params, client)

    # -- derivatives as Functions (tape/symbolic/gradient_tapes.py): the gradient of a tape is a tape ----------

    def grad_function(self, value: bool = False) -> Function:
        """The gradient as a Function of x (x's shape), its records this Function's followed by the
        reverse sweep as records: replay it, save it, map it, differentiate it again
        (``F.grad_function().jacobian(x)`` is the Hessian). ``value=True``: x -> [f(x), gradient...].
        Checked branches stay checked (BranchChanged, or a retrace, at the same points)."""
        return gradient_tapes.grad_function(self, value)

    def vjp_function(self) -> Function:
        """(x, w) -> w^T J as a Function (x's shape; w in the outputs' shape; call it with the pair
        ``(x, w)`` or one flat vector of both)."""
        return gradient_tapes.vjp_function(self)

    def jvp_function(self, value: bool = False) -> Function:
        """(x, v) -> J v as a Function (the outputs' shape; v in x's shape), the tangents as records
        (forward mode); ``value=True``: [outputs..., J v...]."""
        return gradient_tapes.jvp_function(self, value)

    # -- as a call record of another tape: what tape/sweeps/ (below this package) asks of the Functions a tape calls --

    def _full(self) -> None:
        array_replay.full(self)

    def _call_forward(self, s: Any, p: Plan) -> None:
        call_records.call_forward(self, s, p)

    def _call_reverse(self, s: Any, p: Plan, gen: int, keep: int) -> None:
        replay.call_reverse(self, s, p, gen, keep)

    def _call_tangent(self, s: Any, p: Plan, adot: np.ndarray) -> None:
        call_records.call_tangent(self, s, p, adot)

    def _call_second(self, s: Any, p: Plan, arenas: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        derivatives.call_second(self, s, p, arenas)

    def _call_derivative(self, h: Any, p: Plan, second: Any, kind: str) -> Any:
        return call_records.call_of_derivative(self, h, p, second, kind)

    def _call_pattern(self) -> Any:
        return self.jacobian_sparsity()

    def _call_pairs(self, marked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return array_sparsity.call_pairs(self, marked)


def load(path: str | os.PathLike | BinaryIO, on_branch_change: str | None = None,
         max_bytes: int | None = None) -> Function:
    """Read a Function saved by ``Function.save``, validating every array first.

    Anything malformed raises ``TapeFormatError`` (naming the first bad record
    where there is one) before any kernel touches the data. A file whose arrays claim
    more than ``max_bytes`` is refused before it is read. By default (None) that is
    2 GiB (about 10^8 records), and a compressed member may declare at most 100 times
    its compressed size (zip bombs; ``save`` writes uncompressed): pass ``max_bytes``
    to read a bigger or highly compressed file.
    The saved ``on_branch_change`` and ``check_finite`` come back, except that a loaded
    Function has no Python function to retrace: a saved "retrace" loads as "raise", and
    asking for "retrace" here is a ValueError. The Functions its call records call come back inside
    it, with their own saved options.
    """
    return format.build(Function, format.read(path, max_bytes), on_branch_change)
