"""tape.jit: tapes recorded from Numba-compiled user code (a tape/jit/ package would shadow the decorator)."""
