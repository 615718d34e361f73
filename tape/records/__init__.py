"""The records: flat storage by index, the handles users hold, array records and the generated recorders."""
