"""tape.jit's refusals, said on JitError's first line: the data argument Numba cannot take, and what went wrong in f
with its file:line (tape's own refusal, else Numba's)."""

from __future__ import annotations

import dis
import os
import re
from collections.abc import Callable
from typing import Any

import numba

from tape.errors import JitError


def check_data(fn: Callable[..., Any], data: tuple) -> None:
    """A JitError naming the data argument Numba cannot take (a dict, a set, an object), if one is."""
    code = fn.__code__
    for k, d in enumerate(data):
        try:
            numba.typeof(d)
            continue
        except (ValueError, TypeError):
            pass
        name = code.co_varnames[k + 1] if k + 1 < code.co_argcount else f"data[{k}]"
        raise JitError(f"tape.jit: argument {name!r} of {fn.__name__} ({code.co_filename}:{code.co_firstlineno}) "
                       f"is a {type(d).__name__}, which Numba cannot take: data must be NumPy arrays, numbers "
                       "or tuples of them (pass a dict's values, e.g. d['w'], as separate arguments)")


def _return_lines(fn: Callable[..., Any]) -> str:
    """The lines of fn's return statements, for a refusal of what it returns."""
    lines = sorted({i.positions.lineno for i in dis.get_instructions(fn)
                    if i.opname in ("RETURN_VALUE", "RETURN_CONST") and i.positions and i.positions.lineno})
    return ", ".join(map(str, lines))


def first_line(message: str, fn: Callable[..., Any]) -> str:
    """What went wrong, for the first line of JitError: tape's own refusal, else Numba's, with file:line."""
    file = fn.__code__.co_filename
    lines = re.findall(rf"at {re.escape(file)} \((\d+)\)", message)
    lines += re.findall(rf'File "[^"]*{re.escape(os.path.basename(file))}", line (\d+)', message)
    where = f" at {file}:{lines[0]}" if lines else f" in {fn.__name__} ({file})"
    ours = re.search(r"tape\.jit: ([^\n]*)", message)
    if ours and ours.group(1).startswith("f returns") and _return_lines(fn):
        where = f" at {file}:{_return_lines(fn)} (its return)"
    if ours:
        return f"tape.jit: {ours.group(1)}{where}"
    missing = re.search(r">>> (\w+\([^\n]*tape\.\w+[^\n]*\))", message)
    if missing:
        kind = "array records" if "tape.ArrayRecord" in missing.group(1) else "Vars"
        return f"tape.jit: {missing.group(1)} is not supported on {kind}{where} (tape.jit records the op table's ops)"
    attribute = re.search(r"Unknown attribute '(\w+)' of type (tape\.\w+)", message)
    if attribute:
        return f"tape.jit: {attribute.group(2)} has no attribute {attribute.group(1)!r}{where}"
    said = [line.strip() for line in message.splitlines() if line.strip() and not line.startswith("Failed in")]
    said += message.strip().splitlines()[:1] or [""]  # (Numba's first line where it said nothing else)
    return f"tape.jit: Numba could not compile {fn.__name__}{where}: " + said[0]


__all__ = ["check_data", "first_line"]
