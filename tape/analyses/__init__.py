"""Passes over a recorded tape before it becomes a Function: common subexpressions, folding and pruning."""
