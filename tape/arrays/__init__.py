"""VarArray: NumPy-style arrays of records, their operands, conditions, methods, scans, item assignment and ufuncs."""
