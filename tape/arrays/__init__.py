"""VarArray: NumPy-style arrays of records; their operands, conditions, methods, scans, joins, assignment, ufuncs."""
