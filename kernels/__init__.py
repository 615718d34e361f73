"""The bottom layer of tape, installed as ``tape.kernels``: the op tables (``ops.py`` for scalar records,
``array_ops.py`` for array records), the Numba kernels generated from them (``_sweeps.py``,
``_array_rules.py``, written by ``codegen/``), the Numba passes of the analyses, and how they all
compile (``compiling.py``). It imports nothing from the rest of tape."""
