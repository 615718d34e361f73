"""The generated parts of docs/ match the code."""

from tape import _docs


def test_docs_are_up_to_date():
    assert _docs.main(["--check"]) == 0, "run `python -m tape._docs`"


def test_op_table_lists_every_op():
    from tape.kernels.ops import OPS

    text = (_docs.DOCS / "ops.md").read_text()
    assert all(f"| {op.name} | {op.kind} |" in text for op in OPS)
