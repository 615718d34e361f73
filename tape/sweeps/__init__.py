"""The sweeps of tapes that hold array records: the driver, tangents, fusion, liveness, plans and arenas."""
