"""Bad input fuzzing and tenant isolation: typed errors or correct results, invariants always hold."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from engram.consolidate import runner as consolidate
from engram.embed.models import HashEmbedder
from engram.errors import EngramError
from engram.settings import load_settings
from engram.store import db
from engram.store.checks import run_checks
from engram.store.ingest import add_episodes

FUZZ = hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=50),
    st.lists(st.text(max_size=5), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
contents = st.one_of(
    st.text(max_size=200), st.just(""), st.just("   \t\n"), st.just("x" * 1_000_001),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=50), values,
)
records = st.fixed_dictionaries(
    {"user_id": st.one_of(st.sampled_from(["a", "b"]), values), "content": contents},
    optional={"id": st.one_of(st.sampled_from(["dup", "x1"]), values), "created_at": st.one_of(
        st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1)), values),
        "kind": st.one_of(st.sampled_from(["turn", "thought", "bogus"]), values), "tags": values,
        "is_private": values, "metadata": values, "surprise": values},
)


def table_rows(settings) -> list:
    with db.open_store(settings) as con:
        return con.execute("select * exclude (embedding) from episodes order by all").fetchall()


@FUZZ
@given(batch=st.lists(records, min_size=1, max_size=6))
def test_ingest_fuzz_is_all_or_nothing(settings, batch) -> None:
    before = table_rows(settings)
    try:
        result = add_episodes(batch, settings)
    except EngramError as exc:
        assert exc.code == "invalid_params" and str(exc)
        assert table_rows(settings) == before  # nothing half-written
        return
    after = table_rows(settings)
    assert len(after) == len(before) + result.inserted
    with db.open_store(settings) as con:
        assert all(n == 0 for n in run_checks(con).values())


@FUZZ
@given(dim=st.integers(1, 600), poison=st.sampled_from([None, np.nan, np.inf]))
def test_embeddings_of_wrong_dimension_or_not_finite_are_rejected(settings, dim, poison) -> None:
    vectors = np.ones((1, dim), dtype=np.float32)
    if poison is not None:
        vectors[0, 0] = poison
    row = [{"user_id": "a", "content": "vector test", "created_at": "2026-01-01T00:00:00"}]
    before = table_rows(settings)
    if dim == settings.embed_dim and poison is None:
        assert add_episodes(row, settings, embeddings=vectors, embedding_model="m").inserted in (0, 1)
        return
    with pytest.raises(EngramError, match="embedding"):
        add_episodes(row, settings, embeddings=vectors, embedding_model="m")
    assert table_rows(settings) == before


@hsettings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_consolidation_never_mixes_tenants(tmp_path_factory, data) -> None:
    """Random multi-tenant stores where tenants share texts: no link, merge or review crosses a tenant."""
    path = tmp_path_factory.mktemp("iso") / "iso.duckdb"
    settings = load_settings(db_path=path, embedder="hash", llm="none", min_cluster_size=2)
    phrases = ["Alice works at Acme", "Bob hates coffee", "Bob loves coffee", "the sky is green", "we meet at 9"]
    tenants = data.draw(st.lists(st.sampled_from(["t1", "t2", "t3"]), min_size=2, max_size=3, unique=True))
    rows = []
    for t in tenants:
        picks = data.draw(st.lists(st.sampled_from(phrases), min_size=3, max_size=10))
        rows += [{"user_id": t, "content": p, "created_at": datetime(2026, 1, 1) + timedelta(minutes=i)}
                 for i, p in enumerate(picks)]
    emb = HashEmbedder(settings.embed_dim)
    add_episodes(rows, settings)
    as_of = datetime(2026, 2, 1)
    for t in tenants:
        consolidate.run_tenant(settings, t, "run-iso", as_of, ["embed", "extract", "confidence", "merge", "deprecate"],
                               consolidate.Tools(emb))
    with db.open_store(settings) as con:
        assert run_checks(con) == {name: 0 for name in run_checks(con)}
        crossing = con.execute(
            "select count(*) from facts as f join facts as w on w.id = f.merged_into_id"
            " where f.user_id <> w.user_id").fetchall()[0][0]
        assert crossing == 0
