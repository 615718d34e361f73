"""The package's structure: each package imports only packages below it, and packages stay within a budget.

Every import of a tape module counts, at module level or inside a function; only
imports under ``if TYPE_CHECKING:`` are left out (annotations naming a class from
above; they never run). Inside a package, modules import each other in any
order that makes no cycle.
"""

import ast
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Bottom to top: the packages of tape, each importing only the ones on lower lines (docs/design.md draws this).
LAYERS = [
    ["tape.kernels"],  # the op tables and the Numba kernels (kernels/); codegen/ writes the generated files
    ["tape.errors"],  # every exception
    ["tape.base"],  # numbers from outside, pytrees, gc pacing, where kernels/ comes from
    ["tape.debug"],  # NaN origins, checked branches, pictures
    ["tape.sweeps"],  # the driver of mixed tapes, tangents, fusion, liveness, plans, arenas
    ["tape.records"],  # storage, handles, array records, the generated recorders (Var)
    ["tape.arrays", "tape.analyses"],  # VarArray and its functions; CSE and pruning
    ["tape.symbolic"],  # partials as records, adjoint sweeps, gradient tapes, nesting
    ["tape.function"],  # Function (function.py) and its capabilities
    ["tape.tape"],  # Tape, the facade users record on
    ["tape.api"],  # trace, grad, transforms, composed functions, gradcheck
    ["tape.compiled"],  # tape.jit
    ["tape"],  # the public names
    ["tape.__main__", "tape.bench", "tape.docgen"],  # warmup, tape-bench, the generated docs
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
# Lines of hand-written code a package may hold (generated files not counted); a file past FILE_LINES warns.
# kernels and symbolic grew with the array kinds' adjoints and tangents as records (issue 25); kernels, arrays,
# function and api with linear algebra and custom rules (issue 30: kernels +120 for their rules as records, LU and
# the blocked Cholesky adjoint); function and api with the sparsity of array records (array_sparsity.py) and
# tape.sparse_jacobian/hessian (issue 27); records with scatter, permute and pad (25, 26); compiled with Var arrays
# inside Numba (tape/compiled/arrays.py, makers.py, reductions.py: issue 31); kernels with each kind's jvps, k
# tangent directions at once (vector mode, sweeps/vectors.py: issue 27); function and sweeps with arenas laid out
# by liveness (array_replay.py: compact, recorded, full; sweeps/layout.py: issue 26); kernels and sweeps with the
# compiled sweeps of array records (kernels/array_driver.py, codegen/elementwise.py, sweeps/compiled.py: issue 26);
# sweeps +117 with regions recycled while recording afresh (sweeps/arenas.py, fusion's checks of them: issue 26);
# kernels +12, function +8 for reverse_sweep and forward_second handing grouped ops to reverse_range and
# forward_second_from (issue 28); kernels +113, sweeps +12 for the compiled sweeps' matmuls through NumPy's own
# OpenBLAS (kernels/blas.py, codegen/array_driver.py: issue 26); kernels +115, sweeps +3 for the transcendentals by
# NumPy's own ufunc loops (kernels/ufuncs.py, ops.LOOPED, codegen/array_driver.py: issue 26); arrays +35, sweeps +13
# for the short paths of recording afresh (array operands, numbers once per tape, kept pads; value_and_grad's
# unchecked sweep: issue 26); kernels +66, sweeps +68 for joins, gathers and records past 4,096 elements in the
# compiled sweeps (codegen/array_driver.py, sweeps/compiled.py: issue 26); kernels +51, sweeps +9, function +15 for
# forward_sweep and forward_partials handing grouped ops to their continuations forward_range and
# forward_partials_from (driver.forward_scalars, replay.partials) and set_inputs/first_failed (issue 28);
# compiled +265 for whole-array comparisons, np.where and .all()/.any() of Var arrays (compiled/conditions.py: 31);
# sweeps +157 for the fused kernels' NumPy twins, run until the kernels are compiled or cached (sweeps/fused_numpy.py,
# fusion.Tiered: issue 28); kernels +12: the array driver checks a scratch row's length before writing it (s5);
# compiled +59 for tape.jit(cache=True): f's driver cached as f is, both keyed also on the globals f reads and the
# jitted functions it calls (jit_cache.UserCache, frozen: 28);
# kernels +10 for replay_from, where a Function with grouped records starts its F(x) (28);
# kernels +24, records +10 for the stamp-free reverse sweep of a tape recorded for one gradient (fresh_reverse,
# Storage._gradient_and_clear: tape.jit's value_and_grad, issue 31);
# sweeps +127, function +16 for a Function's calls decided once (steps.py: scalar stretches, fused runs' regions,
# errstate only around NumPy's arithmetic, small runs without a sum as table rows; array_replay.kept: issue 26);
# sweeps +2: compiled._compiled looks on disk once a process; kernels +16: logsumexp's max element by element along
# many short lines, its exp in place (array_kinds.largest: issue 26);
# kernels +119, sweeps +7 for the kernels' CPython twins (kernels/twins.py: a small tape's first uses while the
# kernels compile) and extend_sets growing its pool between calls (issue 28).
# kernels +54 (sweeps -25) for one readiness Gate of the kernels with stand-ins (kernels/compiling.py: the twins,
# fusion.Tiered, the compiled sweeps) and the table of twinned kernels (kernels/twins.py: issue 28); kernels +16,
# records +3 for twins before a cached kernel's load (compiling.LOAD) and the Tape's reverse sweep twinned (28);
# kernels +12, sweeps +51 for fused runs adding into their inputs in the NumPy steps' order (fusion._lags: bits
# independent of the cache state); kernels +7: the compiled sum's reverse adds one output element along a run of
# the input, a matmul's product back made in the region it assigns (issue 26); kernels +75, sweeps +2 for
# logsumexp along lines in the compiled sweeps (codegen/array_lines.py, compiled._lines: issue 26).
# kernels +1 for reverse_range's twin (a small MLP's first gradient in NumPy's steps: issue 28).
# compiled +179: tape.jit's overloads linked into f without machine code of their own, and cached across processes
# (compiled/link_only.py, overload_cache.py: issue 28); compiled +153: warmup's tape.jit programs of Var arrays
# (compiled/warm.py), link-only libraries cached as bitcode, an unreadable jit cache file compiled again (28, 31).
# compiled +30: tape.jit's reductions compiled per op, each closure named by what it is (own_name), no wrappers
# for tape.jit's own functions (cold first call: issue 28).
# kernels +7, function +4 for the maps' twins, bounded by records x points (F.map's first use: issue 28).
# kernels +19: a Gate's kernel typed and loaded under Numba's compiler lock, which a fork waits for (issue 28);
# kernels +13: the Gates' ski rental (a stand-in's next run counted ahead, RELOAD once a kernel has loaded: 28).
# compiled +14: Var-array loops run inlined copies of their elements' recorders (recording.inlined: issue 31).
# kernels +6: the fused kernels write a run's last member straight into its region, sum only where a sum record
# ends the run, read the last member's adjoint in place (issue 26); sweeps +3 where A, B and C met (s8 merge);
# kernels +20: an unreadable file of tape's caches is a miss, in one guarded load (compiling.OWN: issue 28).
# compiled +9 (22 lines added, 13 in the slack): jit_cache.py split from numba_internals.py (+10, its docstring and
# imports), reductions compiled per op (+12: a cold first call, issue 28).
# compiled +134: lists made of numbers that later hold Vars, made lists of Vars (compiled/var_lists.py: 31).
# sweeps +12, function +4: a Function keeps its compiled-table rows (compiled.encoded: issue 26).
# kernels +13: codegen/array_driver.py split into array_sums.py and array_products.py (under 500 lines: s9).
# kernels +132, sweeps +24 for LINED rows: broadcasting binary records in blocks of lines, read in place or gathered
# per line, their sums back per block (codegen/array_broadcasts.py, compiled._lined: issue 26).
# kernels +210, sweeps +63: a run shape's own kernels, one pass per element, generated at run time and cached
# (kernels/shaped.py), behind a Gate per shape (fusion.Shaped: issue 26).
# sweeps +5: a Shaped pickles as its shape (a Function with shaped runs pickles: issue 28).
# kernels +21: in tape's caches a data file is named by its entry's key, written before the index names it (28).
# compiled +6: each overload implementation named by what it is (one op's closure never loads another's: 28).
# arrays +16: concatenate and stack moved from varray.py (525 lines) to arrays/joins.py (its docstring and imports).
# sweeps +18, function +2: a Function's sweep by the tables taken without asking compiled.ready again (steps._chosen),
# the NaN test of an unchecked gradient (issue 26).
# compiled +10: a call that fails to compile leaves no tape alive (compiler_pass.forget_failures: issue 31).
# compiled +19: the growth cfuncs compiled at the first growth, not at tape.jit's first call (issue 28).
# kernels +16: a stale adjoint region a view covers is assigned 0.0 + each product, not zeroed first (sends' fresh,
# _stale: issue 26, s10).
# sweeps +4, compiled +1: the stale-adjoint rule one function (driver.stale) and the wrapper options one dict
# (overload_cache.NO_WRAPPERS), each used where it was written twice (review of s10).
# sweeps +131, function +5: the trace path's checks by NumPy (plans._fine and its helpers), the runs moved to the
# shared layout, not found again (fusion.moved) (issue 26, s11 B).
# sweeps +32, function +6: tape.trace's tape recycles regions (arenas: the traced mode, untouched, move, _room;
# replay: the leaves laid out, places counted in nbytes) (issue 26, s11 E); function +1 at its merge with B.
# kernels +172, sweeps +245: a table's stretches, elementwise rows as one generated pass storing only what is read
# after it (kernels/shaped.py's stretch generator, the driver's STRETCH rows, tape/sweeps/stretches.py: issue 26, s11).
# kernels +6: a load from tape's caches starts only Numba's runtime, not its compiler's registries (compiling.py);
# compiled +20: tape.jit caches f by default where it can (jit._cacheable, JitFunction._settled) (issue 28, s11).
# compiled +31: a Var array's block made from the arena's address (numba_internals.carve, make_block), negative
# dimensions checked by arrays.size, the overloads' forceinline option (issue 31, s11 D).
# sweeps +93 (2825 -> 2918), arrays +12, records +2: the trace path's passes over the plans by columns (plans.encode,
# distinct, relaid, regions; layout's back_reads by signature; live.reads; arenas.move) and np.pad's shared index
# (assign._padded, array_records.gather's flat index) (issue 26, s12 D).
# function +11: the maps' blocks run by threads (maps.in_blocks) (issue 28, s12 E).
# sweeps +237: the compiled tables' rows of every plan at once by NumPy (tape/sweeps/encoding.py, was Python per plan
# in compiled.py), a tape's reverse sweep by them (compiled.tape_reverse: issue 26, s12 B).
# kernels +20, sweeps +25: LINED rows join a table's stretches forward (a line read by every line, one number a
# line: stretched._pass, stretches._view; issue 26, s12 A).
# sweeps +5: plans.lengths and plans.ints, one helper each for what encoding, plans and live wrote 9 times.
# records +3: tape.jit's first gradient of a small tape by fresh_reverse's twin (storage, issue 28, s12 C).
# sweeps +50: compiled.grouped runs a table on past a pack or scalar stretch whose regions meet none of its rows, and
# layout.compact keeps small packs' regions apart (the mixture's sweeps one table each; issue 26, s13 A).
# sweeps +42: fusion.find over every member at once (fusion._groups, _runs) and stretches.stretched's rows by NumPy
# (stretches._sources, _Rows), both were Python per record on tape.trace's path (issue 26, s13 B).
# function +84, api +12: a map's points on the single call's kernels until its map kernel is ready (maps.BY_POINT),
# the second-order replay's steps from Python (derivatives.at), tape.jvp/vjp's values from their own sweep (28, s13 D).
# compiled +34: tape.jit's cold first gradient: hot layers compiled once, inlined by LLVM (recording.Hot); a cached
# f of Vars link-only, optimized in its driver only (link_only.LINKED); values by a loop (issue 28, s13 C).
# kernels +29: a logsumexp row's line sums two lines at a time (array_sums._sums), READS per side (issue 26, s14 A).
# sweeps +81, records +16, arrays +2: recording afresh keeps what a record's shapes decide (driver.Kept: a tape's
# views by start, shape and strides; broadcast and reshape decisions), errstate by its context variable (26, s14 B).
# compiled +16: link-only code optimized once, by the machine code that links it, and cached as its own module;
# Numba's llvm_lock events off while tape compiles (link_only.compiling: issue 28, s14 C).
# analyses +113, sweeps +32: cse's array records merged by rounds of NumPy over the plan table (cse._rounds, _keys,
# _firsts; the in-order loop kept past ROUNDS), a sweep's tables' stretches found at once (stretches.stretched_all,
# compiled._walked): both were Python per plan or per table on tape.trace's path (issue 26, s14 D).
# sweeps +33, function +31: a Function's replay steps decided once a Function (fusion.Run.bound; array_replay's
# slots, seed and gather: issue 26, s14 E).
# kernels +6: a LINED row's sums back a run of lines four at a time (array_broadcasts._columns, _run; issue 26, s15 A).
# compiled +35, kernels +4: tape.jit's recorders write each op's expressions inline (kernels/codegen/jit.py); its
# shared layers (arrays.tape_of_first/second, np.dot's named layers) and reductions' implementations returned as they
# are (reductions._implementations): a compile each per call (issue 28, s15 C).
# sweeps +14, function +4 (base +17, in its budget): GC paused while a Function and a sweep's steps are made
# (gc_pacing.paused), F._recorded as offsets, layout.compact's loop past the regions of their own (issue 26, s15 D).
# sweeps +84: a tape's reverse reuses the tables and walk of the last tape of its structure, checked in full
# (compiled.Made); the walk by row indices, a gather's runs once per places object (issue 26, s15 B).
# api +11, records +8, arrays +4: value_and_grad's tape renewed for the next call of a small array program, a small
# ndarray's leaves and their adjoints as a list's, VarArray[int] of scalar records at once (issue 26, s15 E).
# sweeps +126: a sweep's stretches chosen by NumPy passes over its rows (stretches._ends, _walked, _spans: bars, a
# suffix minimum, jumps of 2^j rows, spans tried in rounds, shapes once a kind), was a Python loop a row and span on
# the first value_and_grad's path (issue 26, s16 B).
# kernels +26, sweeps +7: a LINED row's line read by every line joins back stretches, its sum back across lines made
# in the pass four lines at a time (stretched._pass, _reverse_stretch; stretches._sends: issue 26, s16 A, on B's).
# sweeps +74: fusion.find's Runs, layout.lifetimes' runs and compiled.grouped's tables made by NumPy and map over
# columns, not a Python step per run or table (issue 26, s16 D).
# sweeps +48: a small tape takes the tables kept for its structure, made once its NumPy steps have run MAKE seconds
# (compiled.tape_reverse, Made.seen); a few elem records sent back one by one, errstate by a token (26, s16 E).
# compiled +34: Numba's first compile imports numba.np.arraymath without scipy.linalg (numba_internals._registries),
# a Var array flattened by index loops (arrays._flat_into): a cold first call's fixed compile costs (issue 28, s16 C).
# kernels +14, function +4: the sparsity kernels compile no NumPy function (recover's binary search; gather_rows',
# color_columns', set_pairs' and recover's arrays made by their callers): a first sparse use's compile (issue 28,
# s17 D).
# kernels +6, sweeps +3: a Gate opens on the one kernel a sweep calls (Gate.ready(kernel): a run shape's cached
# reverse loads though its forward was never compiled) (issue 26, s17 E).
# kernels +21, sweeps +91: a back stretch computes again the values its partials read where cheap (layout.again,
# _kept_again; stretches._computed_again), the forward's second kernel leaves them unstored once set (stretches.fill;
# stretched._reverse_stretch) (issue 26, s17 A).
# compiled +12: the intrinsics over the tape's payload split from numba_internals.py (529 lines) into numba_payload.py
# (+18, its docstring and imports); the ops' entries forceinline, no inlined copies (-6) (issue 28, s17 C).
# sweeps +79: compiled._walked's regions met by the arena pieces they share (_pieces, _touched, _distinct),
# layout.compact's regions handed on by NumPy (_freed, _first), fusion.moved's runs by columns, not Python per walk
# item, plan or run; fusion.py split, its Run and kernels to fused_runs.py (docstring, imports) (issue 26, s17 B).
# sweeps +13: the walk's pieces a NamedTuple read by field (compiled.Pieces), not a tuple by index (s17 review).
# function +38: a map's stand-ins rent up to its kernel's compile in CPU-s, the rest's cost told by a probe of its first
# points, the rest in a block per thread (maps.by_point_first, spread, cpu); sweeps +13: x ** 1 and x ** 0 twinned,
# so a gradient tape's runs are (fused_numpy.POWERS, _rules) (issue 28, s18 A).
# kernels +11: the partials sweeps load their operands before the op switch (sweeps.HOISTED); compiled +33: an overload
# forwarding to a jitted function calls it, no lambda compiled (overload_cache.direct) (issue 28, s18 B).
# kernels +64, sweeps +22: a run's reverse pulls the adds of views on one line and assigns a stale line whole
# (shaped._pull, pulled; fused_runs.Run.line, steps._run); a back stretch stores each place apart in its pass, a group
# each (stretches._sends; stretched.SCRATCH) (issue 26, s18 D).
# kernels +16: kernels/shaped.py's stretch kernels split off into kernels/stretched.py (its header and imports;
# issue 26, s19 B).
# kernels +49, sweeps +98: a logsumexp along a stretch's lines taken into it as a last member, forward and back
# (stretched.REDUCED, _blocks, _pass's once-a-line loads; tape/sweeps/reduced.py; issue 26, s19 B).
# kernels +65: the where-form digamma and logaddexp steps shared by the array rules and the recorded partials
# (special.digamma_steps, logaddexp_share_steps; ops.NUMPY_PARTIALS), linalg at singular matrices (det's second order
# by SVD, svd/qr at rank n - 1, norm(A, +-2) at ties); symbolic -19: digamma's steps moved to kernels (s19 D).
# compiled +737: tape.jit writes array records (issue 26, landing 1): the array record type and the array state
# (numba_internals +57), the records, plans, rows for the driver's forward and the plans' adoption (array_records.py,
# 378), the ops on array records (array_overloads.py, 192), the array driver, its fallbacks and xs kept for the
# reverse, arrays=True (jit.py +99), a pointer intrinsic for two structs (numba_payload +9), the cache key
# (jit_cache +2) (s19 A).
# sweeps +11: a power other than x ** 2, 1, 0 is never fused (fusion._exact_power: its bits NumPy's, fused or not);
# arrays +8: np.roll by one shift as one join record (issue 26's "a copy into slices"); kernels +2: the docstring of
# logaddexp_share_steps's fix (its slope at a tie) (s20 C).
# compiled +433: tape.jit's array records, landing 2: views, every op of the table, np.concatenate, NumPy's rule called
# back where the driver's rows cannot give its bits, one C function writing every row (s20 B).
# compiled +7: xs[m] with an integer array m copied into the call's arena, not a borrowed temporary (s20 E).
# kernels +278, sweeps +19, compiled +2: the array driver's kernels by slot, compiled when a table first needs them
# (kernels/array_kernels.py, the generator's slots, compiled.py's gate) (s20 A).
# sweeps +22: a Function's adjoint arena ends before the constants no sweep sends an adjoint to (layout._bare: a data
# matrix held once, issue 26); sweeps +11: a tape recorded afresh collects dead regions before its arena is full
# (arenas.EARLY: an LSTM's recording 10.1 -> 5.8 kB per element of state); records +7, sweeps +12: a NumPy array read
# at every step of a loop recorded afresh is one constant while its numbers stay (array_records.constant) (s21 D).
# compiled +434: tape.jit array records of np.roll, np.stack, np.pad (every mode the Python recorder has: joins of
# constant slabs, a gather by its places), dots of two vectors, comparisons and np.where/tape.where, max and min
# (array_joins.py, array_gather.py, array_where.py) (s21 B).
# kernels +66: logaddexp's value and partial by NumPy's ufuncs in place (array_helpers), a forward stretch in blocks
# from a buffer where it writes over what it reads (stretched._delayed), a NumPy loop bound only where an element's bits
# are its own alone (ufuncs); sweeps +6: looped ops on lines of unit steps and strided views past BROADCAST in the
# tables (encoding); function +22: a Function's scalar inputs set and gathered by one fancy index (array_replay.split)
# (issue 26, s21 C).
# kernels +29, compiled +108: array records' C functions and kernels made when first needed (cells of KERNELS, NumPy's
# rule standing in until they pay back), f typed before any is made; the summed-back path as its own slot (s21 A).
# compiled 5311 -> 5323: A's and B's lines together (each branch's budget was its own count on 3e70405's 4,759),
# and a line of np.pad's width test for mypy.
# compiled 5323 -> 5350: jit.py's refusals (jit_errors.py) and array_records.py's after-the-call Plans (array_plans.py)
# split off, under 500 lines each: two modules' docstrings and imports (s21).
# sweeps 4176 -> 4178, function 3457 -> 3464: a traced tape reuses regions beside the constants it keeps, and a
# Function's adjoint arena is made at its first reverse sweep (tape.trace's peak: GRU 10,450 -> 6,494 bytes an element
# of state; s22 D).
# compiled 5350 -> 5416: write_moved, a join's and a gather's writer, its own C function made when f first writes one
# (a writer's cell made when first needed, called back), and an f's refusal by array typing kept in the jit cache
# (s22 B).
# compiled 5416 -> 5716: region reuse for tape.jit's array records (array_lives.py: each record's life, a meminfo whose
# destructor releases it; free lists; back_reads marked as readers are written; adopt's hand-over to the tape) (s22 A).
# kernels +71: a LINED row of long lines a line at a time, its views read in place (array_broadcasts._at, LONG); a
# block of a pairwise sum in a row by unsigned places (array_sums._BLOCK, one template for both); a strided view's
# products added back without a sum back (summed_back); logaddexp's value and share by three compiled passes around
# NumPy's exp and log1p (array_helpers._gaps, _added, _shares); sweeps +18: regions of whole pages staggered
# (layout.staggered: 4K aliasing) (issue 26, s22 C). kernels 7205 -> 7206: B's driver lines and C's together.
# kernels +33, sweeps +35: stretches of a 3-d space's LINED rows, a line of its own a line and one number a line placed
# by a line's two indices, forward and back, a line's sum to its number made in the pass (stretched.ALONG, AT,
# EACHSUM; sweeps/places.py split from stretches.py) (issue 26, s23 C); +1 at the merge: a local typed for mypy.
# compiled +384 for tape.jit compiling f as users write it: objects' attributes read as constants, plain Python
# helpers compiled or inlined with the closures they take, generators unpacked (compiled/read_through.py), the cache
# keyed on what is read so; logsumexp, var, std, prod and keepdims of array records (issue 26, s23 D).
# compiled 5716 -> 5801: the lives' code a C function of its own, made when a call first gives a region away (its
# gate, its marks of what records read made in batches and after f), and a writer that fails to compile raised with
# its cause (WriterFailed) (s23 A).
# s23 B: tape.compiled 5716 -> 5800 and tape.sweeps 4196 -> 4203 for a tape's plans kept as the rows tape.jit wrote,
# Plans made only where asked (array_plans.Pending, plans.at_least), and joins and pads copied by compiled code
# (issue 26).
# s24 B: tape.sweeps 4238 -> 4269 for a recorded tape's reverse with back stretches (compiled.py's Made.of,
# _Stretching), and tape.compiled 6269 -> 6273 for joins and pads moved by memmove (array_records._move) (issue 26).
# s24 D: tape.kernels 7240 -> 7282 for _pairwise's stack of halves in its frame (an intrinsic: no heap arrays a line
# sum) and logaddexp's value and share by passes that read the operands, the value into its rule's output (issue 26).
# s24 E: tape.compiled 6269 -> 6323 for tape.value_and_grad of a jitted f on an array x with no handle, tree or check of
# f's Python (compiled/jit_gradients.py, split from jit.py with its scalar path) and Plans of equal rows made once.
# Merged (s24): tape.compiled 6355 (A, B and E together; write_record's tail unfolded in review).
# s25 G: tape.sweeps 4269 -> 4282 for layout.place, compact's allocation over any lifetimes (the first piece of an
# adjoint arena laid out by the adjoints' own lifetimes, issue 26), refusing a plan that never lives, and _first's
# pointer jumping bounded (a cycle raised, not a hang).
# s25 M: tape.sweeps 4269 -> 4314 for a tape's fused runs kept by structure (fusion.Kept: the filter's find 1.1 ms ->
# 40 µs a call), tape.compiled 6355 -> 6416 for adopt's work kept by the rows' bytes (array_plans._ADOPTED) and x's
# INPUT record kept by the direct path, tape.records 1049 -> 1055 for its renewal keeping it (issue 26).
# s25 K: tape.compiled 6355 -> 6571 for array records of three and four axes inside tape.jit (plan rows and operands of
# DIMS axes, n-d views, reshapes, sums over an axis, broadcasts, batched matmul; joins' and gathers' values split to
# array_moved.py) (issue 26).
# s25 D: tape.kernels 7282 -> 7314 and tape.sweeps 4269 -> 4315 for a roll (np.roll's two slices) read in a forward
# stretch as one range rotated (stretched.HEAD, ROLL; paired.rolls): Burgers' forward table 2.2x faster (issue 26).
# s24 C, merged in s25 C: tape.compiled 6355 -> 6624 for loop variables that start as NumPy arrays carried into array
# records or Var arrays (carries.py, 141) and small x0s packed into one array record where f makes big Var arrays
# (packing.py, 63; the driver's ``big``, jit_gradients' small-x0 entry); f's outputs moved out of jit.py into
# outputs.py; typing retries bounded per outermost compile (var_lists.RETRIES) (issue 26).
# s26: tape.kernels 7314 -> 7316 and tape.sweeps 4373 -> 4381 for fused runs and stretches cut at shaped.MEMBERS
# (a 1,800-member elementwise chain's one kernel took LLVM over 8 GB to compile), and tape.compiled 6901 -> 6904 for
# array_rows.by_driver taking encoding's looped rows (lines of unit steps, sigmoid's scratch); tape.sweeps 4381 -> 4390
# for compiled._made keeping SHARING structures under one key (the Python recorder's and tape.jit's tapes) (issue 26).
# s27: tape.compiled 6904 -> 6920 for tape.jit's logsumexp rows (array_rows) and its cache key over every source of
# tape and its folder (jit_cache); tape.sweeps 4390 -> 4478 for rows moved aside before stretches are found
# (places.hoisted: tape.jit's mixture back in one stretch) and plans.same_plans serving fusion.Kept (issue 26).
# s29: tape.kernels 7321 -> 7371 for set_pairs making each pair of sets once past DISTINCT entries (hashed rows,
# compared whole: a 48-parameter mixture's sparse Hessian enumerated 829 million pairs, 6.2 GB); tape.analyses 413 ->
# 414 for CSE's key keeping the shape a 0-d constant is read in (a recorded gradient's joins of zeros) (issue 26);
# tape.compiled 6921 -> 7021 for tape.jit's functions made of other ops (composed.py: tape.clip, softplus, softmax,
# log_softmax, np.clip, square, reciprocal, outer, trace, diff, linalg.norm), tape.arrays 1877 -> 1898 for np.diff and
# np.trace as a view (issue 26); tape.function 3464 -> 3475 for a dense Hessian pattern not star-colored (each input
# its own color where the coloring's steps pass n sweeps': mlp2's sparse_hessian 39 -> 3.3 s) (issue 26).
# s30: tape.compiled 7021 -> 7371 for tape.jit's cumsum, cumprod and sort of array records (array_overloads.along),
# np.linalg's solve, inv, det, slogdet and cholesky (array_linalg.py, array_records._factored), transposes of any axes,
# swapaxes and moveaxis, and reshapes of views NumPy copies (a gather record, array_moved._copy) or not
# (array_views._strides: NumPy's no-copy rule); tape.records 1055 -> 1057 for transpose's axes checked as NumPy checks
# them (an axis out of bounds was read modulo ndim) (issue 26); tape.compiled 7371 -> 7412 for reductions over tuples
# of axes (array_records._summed by a mask of axes) and tape's own functions cached by every source's key (jit_cache);
# tape.compiled 7412 -> 7579 and tape.arrays 1898 -> 1930 for np.einsum in tape.jit (array_einsum.py) running the
# Python recorder's einsum as one script of labels (einsum.script) (issue 26); tape.arrays 1930 -> 1954 for argmax and
# argmin of VarArrays answered from the values (as argsort), tape.compiled 7579 -> 7580 for the dtype Numba's own
# overloads read of array records and Var arrays (an AttributeError out of tape.jit) (issue 26); tape.arrays 1954 ->
# 1966 and tape.compiled 7580 -> 7622 for einsum's diagonals as views of array records in both recorders (issue 26).
# s31: tape.function 3475 -> 3551 for sparsity patterns in memory bounded by the program (array_sparsity: rows freed
# after their last reader, the Hessian's pairs as sparse products P[u]ᵀ P[w] joined as the walk goes, the scalar path's
# too: a GRU's 23 GB, the heat equation's 3 GB at 40 steps; tape.kernels lost _each_pair and pairs_to_csr) (issue 26);
# tape.records 1057 -> 1061 for the TracingWarning of a value tape reads (argmax, argsort) naming the user's line
# that called it, not tape's (issue 26); tape.compiled 7622 -> 7664 for Var arrays not in C order reshaped as NumPy
# does (reshapes.py: a view by NumPy's no-copy rule, moved from array_views, else a copy in the arena; Numba's reshape
# raised NotImplementedError out of tape.jit) (issue 26); tape.arrays 1966 -> 1969 for VarArray.__copy__ (the leaves a
# transform reads its derivative at, held apart from f's assignments: copy.copy's default took 1.6 µs) (issue 26).
# s32: tape.compiled 7664 -> 7760 for tape.jit's joins of array records of up to four axes and of NumPy arrays (np.stack
# of 2-d records was a JitError; a join with data fell back to scalar records; array_joins, array_moved) and the
# array records' refusal told beside the Var arrays' (jit.py) (issue 26); tape.compiled 7760 -> 7776 for np.roll and
# np.pad's 'constant' of records of any axes and the driver's sums of a view not in one run (array_rows.by_driver),
# tape.sweeps 4479 -> 4493 for those sums in a Function's tables (encoding._trailing: NumPy 2.4's bits) (issue 26);
# tape.compiled 7776 -> 7855 and tape.arrays 1969 -> 1983 for what array code writes and tape.jit refused or the
# Python recorder raised on: np.newaxis in indices, np.flip, np.expand_dims, np.hstack, np.vstack of array records
# (array_views, array_joins), np.linalg.norm along an axis (composed), np.zeros_like and the like, np.hstack and
# np.vstack of VarArrays (issue 26); tape.compiled 7855 -> 7859 for the review's shared array_records.view and
# array_joins._kinds (each written by hand in several places before). s35: tape.sweeps 4494 -> 4495 for ops.RULED's
# rows (encoding.IS_RULED: arctan2, hypot, fmax and fmin driven, issue 26); tape.kernels 7371 -> 7403, tape.sweeps
# 4495 -> 4506 and tape.compiled 8343 -> 8355 for x ** y by NumPy's binary loop in the driver (ops.PAIRED: the binary
# loops ufuncs.py binds, codegen/array_elementwise.py's kernels, the rows and scratch of encoding.py, compiled.py and
# tape.jit's array_rows.py) (issue 26). s36: tape.compiled 8355 -> 8436 for jit_gradients.Again, the direct path's
# tape kept as its last call left it where f writes the same records (issue 26: the MLP's call 2.2x -> 1.9x hand).
# s37: tape.kernels 7403 -> 7473 and tape.sweeps 4513 -> 4542 for np.where in the compiled sweeps (the driver's SELECT
# rows, two a select: its kernels, slots and scratch; encoding._selected) (issue 26: where programs 2x -> 0.9x hand).
# tape.kernels 7473 -> 7486 and tape.sweeps 4542 -> 4545 for comparisons as elementwise rows (values only; tape.jit's
# too, not NumPy's rule called back) (issue 26). tape.sweeps 4545 -> 4549 for a tape's back stretches computing members
# again where the tape still holds what they read (compiled._Stretching: tape.jit's mixture2d reverse table 1.9 -> 0.43
# ms). tape.compiled 8436 -> 8474 for tape.jit's selects by the driver's two rows (array_rows._selects, rows), not
# NumPy's rule called back (issue 26). Review: tape.compiled 8474 -> 8462 (a select's rows copied from row 0, which
# encode lays out as an elementwise record's), tape.kernels 7486 -> 7488 (needed's sends mask read only back).
# s38: tape.kernels 7488 -> 7520 and tape.sweeps 4549 -> 4617 for comparisons and selects as stretch members (a
# select's two rows paired, in tape/sweeps/paired.py beside a roll's; stretched.PICK's rules; _senders) and lag-free
# fused runs as rows at any size (issue 26: denoise replayed 1.9 -> 1.0 ms).
# s40: tape.sweeps 4627 -> 4729, tape.kernels 7527 -> 7546 and tape.function 3561 -> 3563 for adjoints laid out apart
# from the values (layout.adjoints: each plan's offset in the adjoint arena, F._back_at; the reverse tables' rows
# placing adjoints, encoding.back, their values at VOUT and VBASE; driver.origin and starts; a fused run's ext column
# 4, adj_live, adj_total) (issue 26: the GRU's adjoint arena 643,123 -> 20,033 elements), and the walks' pieces a
# module of their own (sweeps/pieces.py, from compiled.py; driver.described to arenas.py: each file under FILE_LINES).
BUDGET = {"tape.kernels": 7553, "tape.errors": 100, "tape.base": 460, "tape.debug": 350, "tape.sweeps": 4722,
          "tape.records": 1088, "tape.arrays": 2084, "tape.analyses": 414, "tape.symbolic": 1181,
          "tape.function": 3563, "tape.tape": 400, "tape.api": 939, "tape.compiled": 8542, "tape": 250,
          "tape.__main__": 100, "tape.bench": 2050, "tape.docgen": 200}
FILE_LINES = 500


def package_of(module: str) -> str:
    """The listed package a module belongs to: the longest name in LAYERS that it is or lies under."""
    parts = module.split(".")
    for cut in range(len(parts), 0, -1):
        if ".".join(parts[:cut]) in RANK:
            return ".".join(parts[:cut])
    raise KeyError(f"{module} lies in no package of LAYERS")


def module_files() -> dict[str, Path]:
    files = {}
    for folder, package in ((ROOT / "tape", "tape"), (ROOT / "kernels", "tape.kernels")):
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join((package, *parts)).removesuffix(".__init__")
            files[name] = path
    return files


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The tape modules ``name`` imports at run time."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found |= {t for t in targets if t in known}
    return found - {name}


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: imports_of(name, path, set(files)) for name, path in files.items()}


def test_every_module_has_a_layer():
    assert all(package_of(name) for name in module_files())


def test_imports_point_down_the_layers():
    upward = []
    for name, targets in import_graph().items():
        for target in targets:
            own, theirs = package_of(name), package_of(target)
            if own != theirs and RANK[theirs] >= RANK[own]:
                upward.append(f"{name} imports {target}")
    assert not upward


def test_no_import_cycles():
    graph, done, path = import_graph(), set(), []

    def visit(name: str) -> None:
        if name in path:
            raise AssertionError("import cycle: " + " -> ".join([*path[path.index(name):], name]))
        if name in done:
            return
        path.append(name)
        for target in sorted(graph[name]):
            visit(target)
        path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_the_storage_imports_nothing_that_records():
    below = import_graph()["tape.records.storage"]
    assert {package_of(name) for name in below} <= {"tape.kernels", "tape.errors", "tape.base", "tape.debug",
                                                    "tape.sweeps"}


def test_the_runtime_imports_no_code_generator():
    runtime = {name: targets for name, targets in import_graph().items() if not name.startswith("tape.kernels.codegen")}
    assert not [f"{name} imports {t}" for name, targets in runtime.items() for t in targets
                if t.startswith("tape.kernels.codegen")]
    loaded = subprocess.run([sys.executable, "-c", "import sys, tape; print(sorted(sys.modules))"],
                            capture_output=True, text=True, check=True).stdout
    assert "tape.kernels.codegen" not in loaded


def hand_written_lines(path: Path) -> int:
    text = path.read_text()
    return 0 if text.startswith("# Generated by kernels/") else text.count("\n")


@pytest.mark.parametrize("package", sorted(RANK))
def test_packages_keep_their_line_budget(package):
    files = module_files()
    lines = sum(hand_written_lines(path) for name, path in files.items() if package_of(name) == package)
    assert lines <= BUDGET[package], f"{package}: {lines} lines; split it by capability or raise its budget here"
    for name, path in files.items():
        if package_of(name) == package and hand_written_lines(path) > FILE_LINES:
            warnings.warn(f"{name} is {hand_written_lines(path)} lines: a file does one thing", stacklevel=1)
