"""Every query test starts and ends with empty index caches: a tenant's cached index from another test
(same store path, same user id) would be searched instead of the rows this test seeded."""

from __future__ import annotations

import pytest

from engram.index.cache import PERSISTED
from engram.index.vector_index import CACHE


@pytest.fixture(autouse=True)
def _fresh_index_caches():
    CACHE.clear()
    PERSISTED.clear()
    yield
    CACHE.clear()
    PERSISTED.clear()
