"""VarArray: NumPy-style arrays of records, their operands, conditions, scans, methods and ufuncs."""
