"""Fixtures shared by the tests of arrays."""

import pytest

from tape.records import array_records


@pytest.fixture(params=["array", "scalar"])
def form(request, monkeypatch):
    """Array records for every size, then scalar records for every size."""
    monkeypatch.setattr(array_records, "SMALL", 1 if request.param == "array" else 10**12)
    return request.param
