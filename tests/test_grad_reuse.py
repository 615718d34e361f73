"""tape.grad / tape.value_and_grad record each call of a wrapper on up to 64 numbers (floats, small arrays) on
the tape of its previous call in the same thread, cleared: the same records and bits as a fresh tape, stale
handles after the call, a tape of its own for a call inside f (reentrancy) and for every thread."""

import math
import threading

import numpy as np
import pytest

import tape


def program(v):
    """Many kinds of record: constants, branches, a select, unary and binary functions."""
    a = v[0] * v[1] + 0.1
    b = tape.sigmoid(a) - 1.0
    if v[2] > 0:
        c = tape.tanh(v[2]) * v[3] / (1.0 + v[0] ** 2)
    else:
        c = tape.exp(v[2]) - tape.log(1.0 + v[3] * v[3])
    d = tape.where(v[1] > v[0], tape.sin(v[1]), 2.0 * tape.cos(v[0]))
    return b ** 2 + c + d + tape.maximum(v[0], v[3]) + tape.arctan2(v[1], v[2]) + abs(v[3]) ** 1.5


POINTS = [[0.5, 1.2, -0.3, 0.8], [0.5, 1.2, 0.3, 0.8], [-1.5, 0.2, 2.0, -0.7], [2.0, 1.0, -1.0, 0.25]]


def fresh(f, x):
    """The reference: a fresh tape, Tape.vars and Tape.gradient."""
    t = tape.Tape()
    xs = t.vars(x)
    y = f(xs)
    return y.value, t.gradient(y, xs).tolist(), records(t)


def records(t):
    n = len(t)
    return (t._op[:n].tobytes(), t._in0[:n].tobytes(), t._in1[:n].tobytes(), t._val[:n].tobytes(),
            t._consts[:t.n_consts].tobytes(), tuple(row for row, _, _ in t._checks))


def bits(numbers):
    return np.array(numbers, np.float64).tobytes()


def test_every_call_gives_the_bits_and_records_of_a_fresh_tape():
    seen = []

    def f(v):
        y = program(v)
        seen.append((v[0].tape, records(v[0].tape)))
        return y

    vg = tape.value_and_grad(f)
    for x in POINTS * 2:
        value, grad = vg(x)
        ref_value, ref_grad, ref_records = fresh(program, x)
        assert bits([value, *grad]) == bits([ref_value, *ref_grad])
        assert seen[-1][1] == ref_records
    assert len({id(t) for t, _ in seen}) == 1  # one tape, reused by every call


def test_leaves_written_one_by_one_are_the_records_of_vars():
    a, b = tape.Tape(), tape.Tape()
    a.var(3.0), b.var(3.0)
    xs, ys = a._leaves([0.5, -0.0, math.inf, 1e-310]), b.vars([0.5, -0.0, math.inf, 1e-310])
    assert records(a) == records(b) and [h.index for h in xs] == [h.index for h in ys]


def test_handles_made_inside_f_are_stale_after_the_call():
    kept = []

    def f(v):
        kept.append(v[0] * v[1])
        return kept[-1] + v[0]

    vg = tape.value_and_grad(f)
    vg([1.0, 2.0])
    with pytest.raises(tape.StaleHandleError, match="clear"):
        kept[0].item()
    vg([3.0, 4.0])  # the same tape, the same indices: the first call's handle must not read them
    for handle in kept:
        with pytest.raises(tape.StaleHandleError):
            handle.item()
        with pytest.raises(tape.StaleHandleError):
            handle + 1.0


def test_a_call_inside_f_records_on_a_tape_of_its_own():
    tapes = []

    def f(v):
        tapes.append(v[0].tape)
        if len(tapes) == 1:
            inner_value, inner_grad = vg([v[0].item() * 2.0, 3.0])  # reentrant: the same wrapper
            return v[0] * v[1] * inner_grad[0] + inner_value
        return v[0] * v[0] * v[1]

    vg = tape.value_and_grad(f)
    value, grad = vg([1.5, 2.0])
    # inner at (3, 3): value 27, d/dx 18; outer: 1.5 * 2 * 18 + 27
    assert tapes[0] is not tapes[1]
    assert value == 1.5 * 2.0 * 18.0 + 27.0 and grad == [2.0 * 18.0, 1.5 * 18.0]
    tapes.clear()
    assert vg([1.5, 2.0]) == (value, grad)


def test_threads_calling_one_wrapper_at_once():
    g = tape.grad(program)
    expected = {i: fresh(program, POINTS[i % 4])[1] for i in range(4)}
    failures, start = [], threading.Barrier(4)

    def work(k):
        start.wait()
        for i in range(300):
            got = g(POINTS[(i + k) % 4])
            if bits(got) != bits(expected[(i + k) % 4]):
                failures.append((k, i, got))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []


def test_a_failing_call_leaves_the_next_call_correct():
    def f(v):
        if v[0] > 1.0:
            raise RuntimeError("boom")
        return v[0] * v[1]

    vg = tape.value_and_grad(f)
    assert vg([0.5, 2.0]) == (1.0, [2.0, 0.5])
    with pytest.raises(RuntimeError):
        vg([1.5, 2.0])
    assert vg([0.5, 4.0]) == (2.0, [4.0, 0.5])


def test_inside_debug_nans_the_call_keeps_lines():
    vg = tape.value_and_grad(lambda v: tape.log(v[0]) * v[1])
    vg([1.0, 2.0])  # leaves a tape for the next call, made outside debug_nans
    with tape.debug_nans(), pytest.raises(tape.NonFiniteError, match="test_grad_reuse.py"):
        vg([0.0, 2.0])
    assert vg([1.0, 2.0]) == (0.0, [2.0, 0.0])


def test_small_arrays_and_trees_reuse_the_tape_with_the_bits_of_a_fresh_one():
    seen, kept = [], []

    def f(p):
        w = p["w"]
        kept.append(w * 2.0)
        y = (w * w).sum() + p["b"] * tape.sigmoid(w[1]) / w[0] + (w.reshape(2, 2) @ w[:2]).sum()
        seen.append((w.tape, records(w.tape)))
        return y

    vg = tape.value_and_grad(f)
    for w in ([1.0, 2.0, 3.0, 0.5], [-0.5, -0.0, 4.0, 1e-310], [2.5, 1e150, -1.0, -3.0]) * 2:
        value, grad = vg({"w": np.array(w), "b": 0.5})
        reused = seen[-1]
        with tape.debug_nans():  # (the reference: a fresh tape, as debug_nans gets one)
            ref_value, ref_grad = vg({"w": np.array(w), "b": 0.5})
        assert seen[-1][0] is not reused[0] and seen[-1][1] == reused[1]
        assert bits([value, grad["b"], *grad["w"]]) == bits([ref_value, ref_grad["b"], *ref_grad["w"]])
        with pytest.raises(tape.StaleHandleError):
            kept[-2].tolist()
    assert len({id(t) for t, _ in seen[::2]}) == 1  # one tape, reused by every call outside debug_nans


def test_past_64_numbers_calls_get_fresh_tapes():
    seen = []
    vg = tape.value_and_grad(lambda w: seen.append(w.tape) or (w * w).sum())
    for _ in range(2):
        value, grad = vg(np.arange(65.0))
        assert value == float((np.arange(65.0) ** 2).sum()) and grad.tolist() == (2.0 * np.arange(65.0)).tolist()
    assert seen[0] is not seen[1]
