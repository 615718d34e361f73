"""The generated kernels and recorders come from the op table and nowhere else."""

from kernels import OPS, codegen
from tape import _record


def test_generated_sweeps_are_up_to_date():
    assert codegen.main(["--check"]) == 0, "run `python -m kernels.codegen`"


def test_every_op_has_a_branch_in_every_sweep():
    """forward sweeps (values; first partials; second partials; the two written out in the
    parallel maps): every non-leaf op; reverse: ops with partials; scalar evaluator: all but select."""
    text = codegen.TARGET.read_text()
    for code, op in enumerate(OPS):
        if op.kind != "leaf":
            expected = 5 + bool(op.da) + (op.kind != "select")
            assert text.count(f"if k == {code}:  # {op.name}\n") == expected, op.name


def test_every_op_has_a_recorder():
    forms = _record.BINARY_FORMS
    expected = {f"record_{op.name}" for op in OPS if op.kind == "unary"}
    expected |= {f"record_{name}" for name in forms} | {f"record_r{name}" for name in forms}
    assert set(_record.sources()) == expected
    const_ops = {op.name for op in OPS if op.kind == "const"}
    assert {left for left, _, _ in forms.values()} | {right for _, _, right in forms.values()} == const_ops
