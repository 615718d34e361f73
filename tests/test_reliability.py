"""The adversarial pass's findings (issue 13), each as a test; crash reproductions in a subprocess."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tape


def run_isolated(code: str) -> subprocess.CompletedProcess:
    """Run code in a fresh interpreter: a segfault there is a failed test here, not a dead run."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def assert_raises_cleanly(code: str, error: str) -> None:
    result = run_isolated(code)
    assert result.returncode == 1 and f"{error}" in result.stderr.splitlines()[-1], (result.returncode,
                                                                                     result.stderr[-2000:])


# -- C3: nothing a user can assign reaches a kernel unchecked --------------------------------------


def test_c3_a_handle_index_is_read_only():
    assert_raises_cleanly("""
        import tape
        t = tape.Tape()
        h = t.var(1.0)
        h.index = 10**9
        """, "AttributeError")


@pytest.mark.parametrize("index", [10**9, 5, -1])
def test_c3_a_tampered_private_index_is_refused_before_any_kernel(index):
    assert_raises_cleanly(f"""
        import tape
        t = tape.Tape()
        h = t.var(1.0)
        h._index = {index}
        t.backward(h)
        """, "IndexError")


def test_c3_records_pointing_past_themselves_never_reach_a_function_kernel():
    assert_raises_cleanly("""
        import tape
        t = tape.Tape(capacity=64)
        x = t.var(1.0)
        h = t.var(2.0)
        h._index = 40  # inside the arrays' capacity, past the records
        y = x * h
        F = t.function([x], y)
        F.map([[1.0]] * 1000)
        """, "TapeFormatError: record 2 (mul): second input not before its record")


# -- C1: an ArrayCondition is revalidated like every holder of record indices ------------------------


def test_c1_a_condition_of_discarded_records_is_stale():
    assert_raises_cleanly("""
        import numpy as np
        import tape
        t = tape.Tape()
        X = t.array(np.ones(4))
        m = len(t)
        Y = t.array(np.arange(100_000.0))
        C = Y > 0
        t.rewind(m)
        F = t.function(list(X), tape.where(C, X, -X))
        F.map(np.ones((10, 4)))
        """, "StaleHandleError: records this comparison reads were discarded by Tape.rewind(4)")


def test_c1_a_condition_below_the_mark_survives_a_rewind():
    t = tape.Tape()
    X = t.array(np.array([-1.0, 2.0]))
    C = X > 0
    m = len(t)
    t.array(np.ones(3))
    t.rewind(m)
    y = tape.where(C, X, 0.0 * X).sum()
    assert y.value == 2.0 and t.gradient(y, X).tolist() == [0.0, 1.0]


# -- P3: rewinding in a loop runs in constant memory ----------------------------------------------------


def test_p3_rewinds_keep_constant_memory_and_stale_checks_stay_exact():
    t = tape.Tape()
    w = t.var(0.5)
    mark = len(t)
    for _ in range(10_000):
        t.rewind(mark)
        y = w * w
    assert len(t._rewind_marks) == 1 and y.value == 0.25
    old = y
    t.rewind(mark)
    inner = t.var(1.0)
    t.rewind(mark + 1)  # keeps inner, and nothing recorded later
    t.rewind(0)
    for handle in (old, inner, w):
        with pytest.raises(tape.StaleHandleError, match="clear"):
            _ = handle.value
    t2 = tape.Tape()
    a = t2.var(1.0)
    b = t2.var(2.0)
    t2.rewind(2)
    c = t2.var(3.0)
    t2.rewind(3)  # a later, higher mark: a and b survive both; c survives too
    assert (a.value, b.value, c.value) == (1.0, 2.0, 3.0)
    t2.rewind(1)
    assert a.value == 1.0
    for handle in (b, c):
        with pytest.raises(tape.StaleHandleError, match=r"rewind\(1\)"):
            _ = handle.value
