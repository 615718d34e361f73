"""Pictures of the tape: tables, Graphviz drawings, statistics."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import tape
from tape.debug import show


def articles_tape():
    t = tape.Tape()
    w1, x1, w2, x2, b, y = (t.var(v) for v in (0.5, 1.2, -0.3, 0.8, 0.1, 1.0))
    d = tape.sigmoid(w1 * x1 + w2 * x2 + b) - y
    return t, [w1, x1, w2, x2, b, y], d * d


def test_dot_shows_the_fan_out_of_d_times_d():
    t, leaves, L = articles_tape()
    unused = leaves[0] * 3.0  # recorded, but L does not depend on it
    L.backward()
    dot = t.to_dot(L)
    assert 'r11 -> r12 [label="a"]' in dot and 'r11 -> r12 [label="b"]' in dot
    assert "r0 -> r6" in dot and f"r{unused.index}" not in dot
    assert "peripheries=2" in dot and "adjoint 1" in dot and "value 0.149758" in dot
    assert dot.count(" [label=\"#") == 13


def test_drawing_size_limit():
    t = tape.Tape()
    x = y = t.var(1.0)
    for _ in range(50):
        y = y * x
    with pytest.raises(ValueError, match="51 records reach the output, more than limit=20"):
        t.to_dot(y, limit=20)
    assert t.to_dot(y, limit=100).startswith("digraph")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@pytest.mark.parametrize("suffix, magic", [(".svg", b"<?xml"), (".png", b"\x89PNG")])
def test_render_svg_and_png(tmp_path, suffix, magic):
    t, _, L = articles_tape()
    L.backward()
    t.render(L, tmp_path / f"tape{suffix}")
    assert (tmp_path / f"tape{suffix}").read_bytes().startswith(magic)
    F = tape.trace(lambda v: tape.sin(v[0]) * v[1], [0.1, 0.2])
    F.render(tmp_path / f"function{suffix}")
    assert (tmp_path / f"function{suffix}").read_bytes().startswith(magic)


def test_render_without_graphviz_says_how_to_install(tmp_path, monkeypatch):
    t, _, L = articles_tape()
    monkeypatch.setattr(show.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        t.render(L, tmp_path / "x.svg")
    with pytest.raises(ValueError, match=".svg or .png"):
        t.render(L, tmp_path / "x.pdf")


def test_function_table_notes_and_stats():
    def f(v, p):
        y = v[0] * v[1] + p[0]
        if y > 0.0:
            return tape.where(v[0] > 0.0, y * y, 1.0)
        return y

    F = tape.trace(f, [0.5, 2.0], params=[0.1])
    F.value_and_grad([0.5, 2.0])
    text = F.table()
    for note in ("input 0", "input 1", "param 0", "checked branch (was True)", "constant", "output 0"):
        assert note in text, note
    s = F.stats()
    assert s["longest_chain"] == 4 and s["fan_out"][2] == 1  # mul, add, mul, select; y * y uses y twice
    assert sum(s["fan_out"].values()) == len(F)


def test_articles_function_stats():
    t, leaves, L = articles_tape()
    s = t.function(leaves, L).stats()
    assert s["longest_chain"] == 6
    assert s["fan_out"] == {0: 1, 1: 11, 2: 1}


def test_tape_table_marks_constants_and_checks():
    t = tape.Tape()
    x = t.var(2.0)
    if x > 1.0:
        y = tape.where(x < 3.0, x, 5.0)
    text = t.table()
    assert "checked branch (was True)" in text and "constant" in text and "select" in text
    assert np.isfinite(y.value)
