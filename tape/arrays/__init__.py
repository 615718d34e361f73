"""VarArray: NumPy-style arrays of records, their operands, conditions, methods, scans, joins, item assignment and ufuncs."""
