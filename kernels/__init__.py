"""The bottom layer of tape, installed as ``tape.kernels``: the op table (``ops.py``), the
Numba sweeps generated from it (``_sweeps.py``, by ``codegen.py``) and how they compile
(``_numba.py``). It imports nothing from the rest of tape."""
