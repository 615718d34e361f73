"""The generated parts of docs/ match the code."""

from tape import docgen


def test_docs_are_up_to_date():
    assert docgen.main(["--check"]) == 0, "run `python -m tape.docgen`"


def test_op_table_lists_every_op():
    from tape.kernels.ops import OPS

    text = (docgen.DOCS / "ops.md").read_text()
    assert all(f"| {op.name} | {op.kind} |" in text for op in OPS)
