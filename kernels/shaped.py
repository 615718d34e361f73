"""A fused run shape's own kernels (kernels/codegen/shaped.py writes them), made at run time.

The source of a shape's kernels is written once to ``<cache_dir>/shaped/`` (kernels/compiling.py), named by
its hash, and imported from there; Numba caches their machine code beside tape's other kernels, so a shape
compiles once per environment, whatever the arrays' lengths. This module only makes them: when to call them
is tape/sweeps/fusion.py's (a Gate, until the compile pays back).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from typing import Any

from .compiling import shaped_dir

_made: dict[tuple, Any] = {}


def kernels(shape: tuple) -> Any:
    """The module holding a run shape's ``forward`` and ``reverse`` (made and imported once a process)."""
    if shape not in _made:
        from .codegen import header
        from .codegen.shaped import module

        text = module(shape, header("shaped.py", ("codegen/shaped.py",)))
        name = "tape_shaped_" + hashlib.sha256(text.encode()).hexdigest()[:20]
        path = os.path.join(shaped_dir(), name + ".py")
        if not os.path.exists(path):
            os.makedirs(shaped_dir(), exist_ok=True)
            fd, tmp = tempfile.mkstemp(".py", dir=shaped_dir())  # written whole, then renamed: another process
            with os.fdopen(fd, "w") as f:  # importing it never reads half a file
                f.write(text)
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        made = importlib.util.module_from_spec(spec)
        sys.modules[name] = made
        spec.loader.exec_module(made)
        _made[shape] = made
    return _made[shape]
