"""Where tape.kernels comes from in a source checkout.

An install puts kernels/ inside the package as tape.kernels (pyproject.toml's package-dir);
in a source checkout it sits beside tape/, and from the repository root Python finds that
tape/ before any install. Imported first by tape/__init__.py.
"""

import importlib.util
import os
import sys

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tape/base/ -> the root
KERNELS = os.path.join(_CHECKOUT, "kernels")

if importlib.util.find_spec("tape.kernels") is None and os.path.isfile(os.path.join(KERNELS, "ops.py")):
    _spec = importlib.util.spec_from_file_location("tape.kernels", os.path.join(KERNELS, "__init__.py"),
                                                   submodule_search_locations=[KERNELS])
    assert _spec is not None and _spec.loader is not None
    kernels = sys.modules["tape.kernels"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(kernels)
    sys.modules["tape"].kernels = kernels  # type: ignore[attr-defined]  # as the import system does
