"""Fuzzing the read path, the LLM reply path and the archive's disk: typed errors or correct results."""

from __future__ import annotations

import json
import os
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from engram.archive.nightly import archive_due
from engram.consolidate import runner as consolidate
from engram.consolidate.resolve import resolve_pending
from engram.errors import EngramError
from engram.llm.fake import FakeLLM
from engram.query import search_memory
from engram.query.retrieve import retrieve
from engram.store import db
from engram.store.checks import run_checks
from tests.consolidation_scenario import AS_OF, USER, seed

FUZZ = hsettings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
odd = st.one_of(st.none(), st.integers(-10**6, 10**6), st.floats(allow_nan=True), st.text(max_size=30),
                st.lists(st.text(max_size=4), max_size=3), st.booleans())


@pytest.fixture
def consolidated(settings):
    seed(settings)
    consolidate.run_tenant(settings, USER, "run-fz", AS_OF, stages=["embed", "extract", "confidence", "merge"])
    return settings


@FUZZ
@given(query=st.one_of(st.text(max_size=300), odd), limit=odd, search_type=odd, as_of=odd)
def test_search_returns_hits_or_a_typed_error(consolidated, query, limit, search_type, as_of) -> None:
    try:
        hits = search_memory(query, search_type=search_type, limit=limit, user_id=USER, as_of=as_of,
                             settings=consolidated)
    except EngramError as exc:
        assert exc.code in {"invalid_params", "feature_disabled"} and str(exc)
        return
    assert len(hits) <= int(limit)
    assert all(h.table in {"facts", "episodes"} for h in hits)


@FUZZ
@given(query=st.one_of(st.text(max_size=100), odd), top_k=odd, floor=odd, mix=odd)
def test_retrieve_returns_snippets_or_a_typed_error(consolidated, query, top_k, floor, mix) -> None:
    enabled = consolidated.model_copy(update={"enable_inner_voice": True})
    try:
        out = retrieve(query, top_k=top_k, floor=floor, mix=mix, user_id=USER, settings=enabled)
    except EngramError as exc:
        assert exc.code in {"invalid_params", "embedder_unavailable"} and str(exc)
        return
    assert len(out["snippets"]) <= int(top_k or enabled.retrieve_top_k)
    assert all(len(s["text"]) <= 800 for s in out["snippets"])


replies = st.one_of(
    st.text(max_size=200),
    st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
                 lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(max_size=10), c, max_size=4)),
                 max_leaves=20).map(json.dumps),
    st.builds(lambda ids, action: json.dumps({"decisions": [{"case": i, "action": action, "reason": "x"} for i in ids]}),
              st.lists(st.sampled_from(["c0", "c1", "f_coffee", "zzz"]), max_size=3),
              st.sampled_from(["keep_a", "keep_b", "delete_everything", "merge", ""])),
)


@FUZZ
@given(reply=replies)
def test_any_llm_reply_applies_nothing_invalid(consolidated, reply) -> None:
    def snapshot():
        with db.open_store(consolidated) as con:
            return con.execute("select id, status, round(confidence, 9), merged_into_id from facts order by id").fetchall()

    before = snapshot()
    counts = resolve_pending(consolidated, FakeLLM(lambda prompt, schema: reply), USER, "run-fz-llm",
                             AS_OF + timedelta(hours=1))
    after = snapshot()
    if counts.get("applied", 0) == 0:
        assert after == before
    with db.open_store(consolidated) as con:
        assert all(n == 0 for n in run_checks(con).values())


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_archive_dir_refuses_and_deletes_nothing(consolidated, tmp_path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    settings = consolidated.model_copy(update={"archive_dir": locked})
    with db.open_store(settings) as con:
        before = con.execute("select count(*) from facts").fetchall()
    with pytest.raises(EngramError):
        archive_due(settings, USER, AS_OF + timedelta(days=400), "run-fz-arch")
    with db.open_store(settings) as con:
        assert con.execute("select count(*) from facts").fetchall() == before


def test_archive_dir_that_is_a_file_refuses_and_deletes_nothing(consolidated, tmp_path) -> None:
    """Works as root too: a path that cannot be a directory (a file in the way)."""
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    settings = consolidated.model_copy(update={"archive_dir": blocker / "archive"})
    consolidate.run_tenant(settings, USER, "run-fz", AS_OF, stages=["deprecate"])
    with db.open_store(settings) as con:
        before = con.execute("select count(*) from facts").fetchall()
    with pytest.raises((EngramError, OSError)):
        archive_due(settings, USER, AS_OF + timedelta(days=400), "run-fz-arch")
    with db.open_store(settings) as con:
        assert con.execute("select count(*) from facts").fetchall() == before
        assert all(n == 0 for n in run_checks(con).values())
