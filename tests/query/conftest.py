"""Every query test starts and ends with empty index caches (tests/conftest.py `fresh_index_caches`)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fresh_index_caches(fresh_index_caches):
    yield
