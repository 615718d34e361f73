"""The package's structure: imports point one way, down the layers, and modules stay short.

Every import of a tape module counts, at module level or inside a function; only
imports under ``if TYPE_CHECKING:`` are left out (annotations naming the public
``Tape`` or ``VarArray`` from below; they never run).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Bottom to top; a module may import only modules of lower layers.
LAYERS = [
    ["tape._source", "tape._gc", "tape.kernels", "tape.kernels.special", "tape.kernels._numba", "tape._numbers",
     "tape._einsum"],
    ["tape._trees", "tape._methods"],
    ["tape.kernels.ops"],  # the op table
    ["tape.kernels._sweeps", "tape.kernels._gen_sweeps", "tape.kernels.graph",
     "tape.kernels.sparsity", "tape.kernels.hessian_sparsity", "tape.kernels.prune",
     "tape.kernels.cse"],
    ["tape.kernels.array_helpers", "tape.kernels.scans"],  # the rules over NumPy arrays (compiled where needed)
    ["tape.kernels._array_rules", "tape.kernels._gen_maps", "tape.kernels._gen_recorders",
     "tape.kernels._gen_derivatives", "tape.kernels._gen_array_rules", "tape.kernels._gen_fused",
     "tape.kernels._gen_partials"],
    ["tape.kernels.array_ops", "tape.kernels._gen_jit"],  # the array op table; tape.jit's generator
    ["tape.kernels.codegen", "tape.errors"],
    ["tape._debug", "tape._show", "tape._sweep", "tape._live"],  # _sweep: the sweeps of tapes with array records
    ["tape._arena", "tape._tangents", "tape._plans", "tape._fusion"],
    ["tape._storage"],  # the records, by index: knows nothing of what records into it
    ["tape._handles", "tape._blocks"],  # _blocks: recording array records
    ["tape._recorders"],  # Var and the recording functions (generated)
    ["tape._operands", "tape._small"],
    ["tape._conditions"],
    ["tape._arrayfns"],  # scans, sort and item assignment, mixed into VarArray
    ["tape._array"],
    ["tape._ufuncs", "tape._binary"],
    ["tape._partial_helpers"],  # the op table's helpers as records
    ["tape._partials"],  # each op's partials as records (generated)
    ["tape._adjoint"],  # the symbolic sweeps: derivatives emitted as records
    ["tape._gradient_tapes"],  # Function.grad_function, vjp_function, jvp_function
    ["tape._cse"],  # common-subexpression elimination, run before the pruning
    ["tape._format", "tape._array_replay", "tape._calls", "tape._call", "tape._prune"],  # _call: a Function called
    ["tape._replay"],
    ["tape._distributed", "tape._derivatives"],
    ["tape._sparse"],  # sparse Jacobians: pattern, coloring, compressed sweeps
    ["tape._sparse_hessian"],  # sparse Hessians: pattern, star coloring, compressed Hessian-vector products
    ["tape._maps"],
    ["tape._function"],
    ["tape._tape"],  # tape.Tape: the storage with handles, arrays and Functions
    ["tape._nest"],  # derivatives called on Vars: recorded onto their tape
    ["tape._api"],
    ["tape._jit_numba"],  # tape.jit: the Numba internals it relies on
    ["tape._jit_pass"],  # its compiler pass: branches and max/min carry their file:line
    ["tape._jit_tape"],  # appending records inside jitted code
    ["tape._jit_ops"],  # its recorders (generated)
    ["tape._jit_overloads"],  # operators and functions of Vars as Numba overloads
    ["tape._jit"],  # tape.jit
    ["tape._composed", "tape._transforms"],  # functions made of recorded ops; JAX's transforms
    ["tape._gradcheck"],
    ["tape"],
    ["tape.__main__", "tape._docs", "tape.benchmarks", "tape.benchmarks.programs", "tape.benchmarks.baseline",
     "tape.benchmarks.timing"],
    ["tape.benchmarks.engines", "tape.benchmarks.c_reference", "tape.benchmarks.report", "tape.benchmarks.arrays",
     "tape.benchmarks.sparse"],
    ["tape.benchmarks.phases", "tape.benchmarks.compare"],
    ["tape.bench"],
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


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
    assert set(module_files()) == set(RANK), "add new modules to LAYERS"


def test_imports_point_down_the_layers():
    upward = [f"{name} imports {target}" for name, targets in import_graph().items() for target in targets
              if RANK[target] >= RANK[name]]
    assert not upward


def test_the_storage_imports_nothing_that_records():
    below = import_graph()["tape._storage"]
    assert below <= {"tape._debug", "tape._show", "tape.errors", "tape.kernels._sweeps", "tape.kernels.ops",
                     "tape._sweep", "tape._arena", "tape._fusion", "tape.kernels.array_ops", "tape._numbers",
                     "tape._gc"}


@pytest.mark.parametrize("name", sorted(module_files()))
def test_hand_written_modules_are_at_most_400_lines(name):
    text = module_files()[name].read_text()
    if not text.startswith("# Generated by kernels/"):
        assert text.count("\n") <= 400, f"{name}: split it by what it does"
