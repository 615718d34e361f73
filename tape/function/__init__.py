"""tape.Function, declared in function.py; each capability (replay, derivatives, sparse, maps, format) beside it."""
