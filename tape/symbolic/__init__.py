"""Derivatives emitted as records: each op's partials, the adjoint sweeps, gradient tapes, nesting."""
