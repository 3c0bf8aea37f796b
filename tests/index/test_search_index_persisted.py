"""On-disk search indexes (engram.index) against a temp store: same answers as the exact
path, the delta, rows that must never come back, and fallback on a missing, stale or torn index."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from datetime import datetime

import numpy as np
import pytest

from engram.embed.models import HashEmbedder
from engram.index import bm25, disk, merged, writer
from engram.index import windows as index_windows
from engram.index.bm25 import BM25
from engram.index.cache import PERSISTED, table_index
from engram.index.disk import IndexUnusable
from engram.index.merged import PersistedTableIndex
from engram.index.vector_index import CACHE, TableIndex
from engram.query import search_memory
from engram.store import db, fact_ops
from engram.text.tokens import tokenize
from tests.query_seed import seed_episodes, seed_facts

WORDS = ("garden tea cat Oslo sister report budget river piano winter coffee train mountain novel "
         "kitchen bicycle museum harbour violin lantern").split()


@pytest.fixture
def settings(settings, monkeypatch):
    """The shared settings with the on-disk indexes on, for tables of any size."""
    monkeypatch.setenv("ENGRAM_SEARCH_INDEX", "true")
    monkeypatch.setenv("ENGRAM_SEARCH_INDEX_MIN_ROWS", "0")
    return settings.model_copy(update={"search_index": True, "search_index_min_rows": 0})


@pytest.fixture(autouse=True)
def _fresh_caches(fresh_index_caches):
    yield


@pytest.fixture(params=[False, True], ids=["exact-base", "ann-base"])
def ann(request, monkeypatch):
    """Run a test with the generation searched exactly and through the usearch graph."""
    monkeypatch.setattr(writer, "ANN_MIN", 1 if request.param else 10**9)
    # every graph candidate rescored: on a hundred random hash vectors the graph alone misses a neighbour
    # now and then (it is approximate), and these tests check the plumbing, not the graph's recall
    monkeypatch.setattr(merged, "ANN_RESCORE", 10**6)
    return request.param


def _facts(n: int, user: str = "u1", start: int = 0, **extra) -> list[dict]:
    rng = np.random.default_rng(start)
    return [{"id": f"{user}_f{start + i}", "user_id": user,
             "text": " ".join(rng.choice(WORDS, 5)) + f" number {start + i}", **extra} for i in range(n)]


def _publish(settings, con, user="u1"):
    emb = HashEmbedder(settings.embed_dim)
    return writer.write_tenant(settings, con, user, emb.model, emb.dim, run_id="r1")


def _ids(hits):
    return [h.id for h in hits]


def _both_paths(settings, con, query, **kw):
    PERSISTED.clear()
    CACHE.clear()
    indexed = search_memory(query, settings=settings, con=con, **kw)
    exact = search_memory(query, settings=settings.model_copy(update={"search_index": False}), con=con, **kw)
    return indexed, exact


def test_bm25_over_postings_equals_the_in_memory_bm25():
    docs = [tokenize(t) for t in ("the cat sat on the mat", "a cat and a dog", "dogs chase cats", "", "mat mat mat")]
    parts = [bm25.Postings(bm25.postings(docs[:3])), bm25.Postings(bm25.postings(docs[3:]))]
    for query in ("cat mat", "dog", "nothing here"):
        joined = np.concatenate(bm25.bm25_scores(parts, tokenize(query), [None, None]))
        np.testing.assert_allclose(joined, BM25(docs).score(tokenize(query)), rtol=1e-5, atol=1e-6)


def test_published_index_answers_like_the_exact_path(settings, con, ann):
    seed_facts(settings, con, _facts(120))
    seed_episodes(settings, con, [{"content": f"I talked about {w} and {WORDS[(i * 7) % len(WORDS)]}",
                                   "session_id": f"s{i % 5}"} for i, w in enumerate(WORDS * 3)])
    out = _publish(settings, con)
    assert out["facts"]["rows"] == 120 and out["facts"]["ann"] == ann
    emb = HashEmbedder(settings.embed_dim)
    assert isinstance(table_index(con, settings, "facts", "u1", emb.model, emb.dim), PersistedTableIndex)
    for query in ("garden tea number 7", "sister in Oslo", "piano winter"):
        for method in ("hybrid", "vector", "lexical"):
            indexed, exact = _both_paths(settings, con, query, search_type="both", limit=8, user_id="u1",
                                         method=method)
            assert _ids(indexed) == _ids(exact), (query, method)


def test_an_answer_lifted_by_its_question_is_found_as_on_the_exact_path(settings, con):
    # the answer's own words miss the query; the question before it matches: the exact paths add the
    # question's cosine to the answer before cutting, so the index without a graph must as well
    rows = [{"content": f"A violin lesson in the garden, number {i}", "session_id": f"d{i}"} for i in range(150)]
    rows += [{"content": "Which violin teacher does Ana have in Zanzibar?", "session_id": "qa", "role": "assistant"},
             {"content": "Marta, since last spring.", "session_id": "qa", "role": "user"}]
    ids = seed_episodes(settings, con, rows)
    _publish(settings, con)
    indexed, exact = _both_paths(settings, con, "violin teacher Zanzibar", search_type="episodes", limit=5,
                                 user_id="u1", method="vector")
    assert ids[-1] in _ids(exact)
    assert _ids(indexed) == _ids(exact)


def test_rows_written_after_the_publish_are_searchable_at_once(settings, con, ann):
    seed_facts(settings, con, _facts(60))
    seed_episodes(settings, con, [{"id": "pend", "content": "The lantern festival is in harbour town"}], embed=False)
    _publish(settings, con)
    seed_facts(settings, con, [{"id": "late", "text": "Zanzibar violin lessons start Tuesday"}])
    hits = search_memory("Zanzibar violin lessons", "facts", 3, "u1", settings=settings, con=con, method="vector")
    assert _ids(hits)[0] == "late"
    # the pending episode was in the index without a vector; once embedded it is found by vector too
    vec = HashEmbedder(settings.embed_dim).embed(["The lantern festival is in harbour town"])[0]
    con.execute("update episodes set embedding = ?, embedding_model = ?, embedding_dim = ?, status = 'active' "
                "where id = 'pend'", [vec.tolist(), HashEmbedder(settings.embed_dim).model, settings.embed_dim])
    hits = search_memory("lantern festival harbour town", "episodes", 3, "u1", settings=settings, con=con,
                         method="vector")
    assert _ids(hits)[0] == "pend"
    index = table_index(con, settings, "episodes", "u1", HashEmbedder(settings.embed_dim).model, settings.embed_dim)
    assert isinstance(index, PersistedTableIndex) and index.delta.n == 1


def test_deleted_merged_deprecated_and_other_tenants_rows_never_come_back(settings, con, ann):
    seed_facts(settings, con, _facts(40))
    seed_facts(settings, con, [
        {"id": "keep", "text": "Quokka island ferry leaves at noon"},
        {"id": "gone", "text": "Quokka island ferry leaves at dawn"},
        {"id": "merged", "text": "Quokka island ferry leaves at noon daily"},
        {"id": "dep", "text": "Quokka island ferry leaves at dusk"},
        {"id": "priv", "text": "Quokka island ferry ticket code 7731", "visibility": "private"},
    ])
    seed_facts(settings, con, [{"id": "other", "user_id": "u2", "text": "Quokka island ferry leaves at noon"}])
    seed_episodes(settings, con, [{"id": "ep_gone", "content": "Quokka island ferry was late again"}])
    _publish(settings, con)
    _publish(settings, con, "u2")
    con.execute("delete from facts where id = 'gone'")
    con.execute("delete from episodes where id = 'ep_gone'")
    # through the product's write path, on a run clock long before the publish: the business times
    # (last_updated) stay old, the change mark (changed_at) does not
    long_ago = datetime(2001, 1, 1)
    fact_ops.apply_changes(con, "u1", "r-late", [
        fact_ops.FactChange("merged", "merged", "test", status="merged_into", merged_into_id="keep"),
        fact_ops.FactChange("dep", "deprecated", "test", status="deprecated"),
    ], long_ago)
    for method in ("hybrid", "vector", "lexical"):
        hits = search_memory("Quokka island ferry leaves", "both", 20, "u1", settings=settings, con=con,
                             method=method)
        assert "keep" in _ids(hits)
        assert not {"gone", "ep_gone", "merged", "dep", "priv", "other"} & set(_ids(hits)), method
    index = table_index(con, settings, "facts", "u1", HashEmbedder(settings.embed_dim).model, settings.embed_dim)
    assert isinstance(index, PersistedTableIndex)  # deletions alone do not make the index stale


def test_missing_stale_and_torn_indexes_fall_back_to_exact_search(settings, con, caplog):
    seed_facts(settings, con, _facts(30))
    emb = HashEmbedder(settings.embed_dim)
    caplog.set_level(logging.WARNING)
    assert type(table_index(con, settings, "facts", "u1", emb.model, emb.dim)) is TableIndex  # never published
    assert "never published" in caplog.text
    _publish(settings, con)
    path = disk.index_dir(settings, "u1", "facts", emb.model, emb.dim)
    gen = path / (path / "CURRENT").read_text()
    with open(gen / "bm25_docs.npy", "r+b") as fh:  # torn: a file shorter than the manifest says
        fh.truncate(fh.seek(0, 2) - 4)
    PERSISTED.clear()
    with pytest.raises(IndexUnusable, match="torn"):
        PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim)
    hits = search_memory("garden tea", "facts", 5, "u1", settings=settings, con=con)
    assert hits and "torn" in caplog.text
    _publish(settings, con)  # the next publish writes a whole new generation
    assert isinstance(table_index(con, settings, "facts", "u1", emb.model, emb.dim), PersistedTableIndex)
    assert len([p for p in path.iterdir() if p.is_dir()]) == 1  # the old generation is removed
    with pytest.raises(IndexUnusable, match="never published"):
        PERSISTED.get(con, settings, "facts", "u1", "another-model", emb.dim)


def test_a_small_table_gets_no_index_until_it_reaches_the_minimum_then_keeps_it(settings, con, caplog):
    small = settings.model_copy(update={"search_index_min_rows": 40})
    emb = HashEmbedder(settings.embed_dim)
    seed_facts(settings, con, _facts(30))
    caplog.set_level(logging.WARNING)
    out = _publish(small, con)
    assert out["facts"] == {"rows": 30, "written": False}
    assert not disk.index_dir(small, "u1", "facts", emb.model, emb.dim).exists()
    hits = search_memory("garden tea", "facts", 5, "u1", settings=small, con=con)
    assert hits and "never published" not in caplog.text  # in memory, as designed: no warning
    seed_facts(settings, con, _facts(15, start=30))
    assert _publish(small, con)["facts"]["written"] is True
    assert isinstance(table_index(con, small, "facts", "u1", emb.model, emb.dim), PersistedTableIndex)
    # a table that has an index keeps it current below the minimum, so it never goes stale
    con.execute("delete from facts where id in (select id from facts where user_id = 'u1' limit 20)")
    out = _publish(small, con)
    assert out["facts"]["written"] is True and out["facts"]["rows"] == 25
    caplog.clear()
    big = settings.model_copy(update={"search_index_min_rows": 10})
    assert type(table_index(con, big, "facts", "u2", emb.model, emb.dim)) is TableIndex  # no rows: silent
    assert "never published" not in caplog.text


def test_an_index_whose_rowids_moved_is_detected_and_search_stays_exact(settings, con, caplog):
    seed_facts(settings, con, _facts(30))
    _publish(settings, con)
    emb = HashEmbedder(settings.embed_dim)
    path = disk.index_dir(settings, "u1", "facts", emb.model, emb.dim)
    gen = path / (path / "CURRENT").read_text()
    rowids = np.load(gen / "rowids.npy")
    np.save(gen / "rowids.npy", rowids[::-1].copy())  # same size: only the store check can tell
    caplog.set_level(logging.WARNING)
    indexed, exact = _both_paths(settings, con, "garden tea cat", search_type="facts", limit=5, user_id="u1")
    assert _ids(indexed) == _ids(exact) and "stale" in caplog.text
    assert type(table_index(con, settings, "facts", "u1", emb.model, emb.dim)) is TableIndex


def test_an_index_left_beside_a_recreated_store_is_not_searched(settings, con, caplog):
    seed_facts(settings, con, _facts(300))
    _publish(settings, con)
    # a new store at another path reads the old store's index root: as if the file had been deleted and
    # created again, its rowids restart at 0, under the old generation's watermark
    recreated = settings.model_copy(update={"db_path": settings.db_path.with_name("new.duckdb"),
                                            "index_dir": disk.root(settings)})
    caplog.set_level(logging.WARNING)
    with db.open_store(recreated) as new:
        seed_facts(recreated, new, _facts(290, user="u2"))  # another tenant's rows take the low rowids
        seed_facts(recreated, new, [{"id": f"new{i}", "text": t} for i, t in enumerate(
            ["Zanzibar violin lessons start Tuesday", "The harbour museum opens late", "Winter bicycle repairs"])])
        hits = search_memory("Zanzibar violin lessons", "facts", 3, "u1", settings=recreated, con=new)
    assert _ids(hits)[0] == "new0"
    assert "no longer holds its rows" in caplog.text


def test_a_reader_keeps_its_generation_while_a_new_one_is_switched_in(settings, con):
    seed_facts(settings, con, _facts(30))
    _publish(settings, con)
    emb = HashEmbedder(settings.embed_dim)
    first = PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim)
    seed_facts(settings, con, _facts(5, start=100))
    _publish(settings, con)
    # the first generation's files are unlinked, its maps still answer
    assert first.lexical_scores("garden").shape == (30,)
    second = PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim)
    assert second.gen is not first.gen and second.n == 35 and second.delta.n == 0


def _pair_set(space, query, threshold, ids):
    qi, fr, sim = space.pairs(query, threshold)
    return {(int(q), ids[int(f)]): round(float(s), 4) for q, f, s in zip(qi, fr, sim, strict=True)}


def test_nightly_pair_search_through_the_index_finds_the_exact_pairs(settings, con, ann, monkeypatch):
    from engram.consolidate import neighbours

    # each query keeps its 5 nearest facts above the threshold, on both paths; the graph's 40 candidates
    # hold them (80 vectors), so the index path must give exactly the exact path's pairs
    monkeypatch.setattr(neighbours, "PAIR_K", 5)
    monkeypatch.setattr(neighbours, "GRAPH_K", 40)
    seed_facts(settings, con, _facts(80))
    _publish(settings, con)
    seed_facts(settings, con, _facts(10, start=500))  # the delta
    con.execute("delete from facts where id = 'u1_f3'")
    con.execute("update facts set status = 'merged_into', merged_into_id = 'u1_f5' where id = 'u1_f4'")
    seed_facts(settings, con, _facts(20, user="u2"))
    emb = HashEmbedder(settings.embed_dim)
    indexed_rows, indexed = neighbours.load_facts(settings.model_copy(update={"nightly_pair_index": True}), con,
                                                  "u1", emb.model, emb.dim)
    exact_rows, exact = neighbours.load_facts(settings.model_copy(update={"search_index": False}), con, "u1",
                                              emb.model, emb.dim)
    assert indexed.index is not None and exact.exact is not None
    ids = indexed_rows["id"].to_pylist()
    assert ids == exact_rows["id"].to_pylist() and len(ids) == 88
    np.testing.assert_allclose(indexed.vectors(np.arange(len(ids))), exact.exact, rtol=1e-6)
    query = emb.embed(["garden tea cat", "piano winter river number 7", "Oslo sister museum"] + ids[:0])
    query = np.vstack([query, exact.exact[::9]])
    for threshold in (0.2, 0.5, 0.9):
        got, want = _pair_set(indexed, query, threshold, ids), _pair_set(exact, query, threshold, ids)
        assert got.keys() == want.keys()
        # the graph's candidates are rescored with the float16 copy of the vectors: within 1e-3
        assert max(abs(got[k] - want[k]) for k in want) <= (1e-3 if ann else 0)
    capped = _pair_set(exact, query, 0.2, ids)
    assert max(Counter(q for q, _ in capped).values()) == 5  # the cap binds at the low threshold
    if ann:  # the graph was searched once per distinct query vector, whatever the threshold
        assert len(indexed.candidates) == len({v.tobytes() for v in query})


def test_the_nightly_graph_search_runs_once_per_distinct_query_vector(settings, con, monkeypatch):
    from engram.consolidate import neighbours

    monkeypatch.setattr(writer, "ANN_MIN", 1)
    seed_facts(settings, con, _facts(60))
    _publish(settings, con)
    emb = HashEmbedder(settings.embed_dim)
    _, space = neighbours.load_facts(settings, con, "u1", emb.model, emb.dim)
    searched: list[int] = []
    graph = space.index.gen.graph

    def counting(expansion):
        view = graph(expansion)
        search = view.search
        view.search = lambda q, k, **kw: (searched.append(len(q)), search(q, k, **kw))[1]
        return view

    monkeypatch.setattr(space.index.gen, "graph", counting)
    vecs = space.vectors(np.arange(10))
    space.pairs(np.vstack([vecs, vecs[:4]]), 0.75)  # an episode and the fact that is its whole text
    space.pairs(vecs[2:8], 0.5)
    assert searched == [10]
    assert _pair_set(space, vecs[2:8], 0.5, list(range(space.n)))


def test_every_update_of_facts_or_episodes_sets_the_change_mark_readers_rely_on():
    # an on-disk index learns which rows changed since it was written from changed_at alone
    # (engram.index.delta.read_delta): a statement that updates either table without setting it would let a
    # reader serve the row as it was at the publish
    from engram.store.db import SQL_DIR

    updates = {path.name: path.read_text() for path in (SQL_DIR / "queries").glob("*/*.sql")
               if re.search(r"\bupdate\s+(facts|episodes)\b", path.read_text(), re.IGNORECASE)}
    assert "update_facts_from_changes.sql" in updates and "store_episode_embeddings.sql" in updates
    # the exceptions are no search columns: the extract stage's consumption mark, set for every new
    # episode each night, and the facts' derived keys, set once per fact; marking them would send every
    # such row to every reader's delta
    exempt = {"mark_episodes_consolidated.sql", "store_fact_keys.sql"}
    unmarked = [name for name, text in updates.items()
                if not re.search(r"\bchanged_at\s*=", text) and name not in exempt]  # not status_changed_at
    assert not unmarked


def test_a_generation_filters_candidates_from_its_own_columns_exactly_as_the_store_would(settings, con):
    # the same rows, with every filter the candidates pass through, read from the generation's
    # columns and from the store: the same rows come back, with the same values
    from engram.index.vector_index import CACHE as EXACT
    from engram.query import candidates

    rows = _facts(30)
    for i, row in enumerate(rows):
        row |= {"tags": [["work"], ["home"], []][i % 3], "confidence": 0.2 + 0.025 * i,
                "visibility": "private" if i % 7 == 0 else "project",
                "asserted_at": datetime(2024, 1 + i % 12, 1), "confidence_at": datetime(2024, 6, 1)}
    seed_facts(settings, con, rows)
    seed_facts(settings, con, [{"id": "late", "text": "stored after the publish", "tags": ["work"]}])
    _publish(settings, con)
    fact_ops.apply_changes(con, "u1", "r2", [fact_ops.FactChange("u1_f4", "superseded", "test", status="superseded",
                                                                 valid_to=datetime(2024, 9, 1))], datetime(2024, 9, 1))
    emb = HashEmbedder(settings.embed_dim)
    on_disk = PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim)
    store = EXACT.get(con, settings.db_path, "facts", "u1", emb.model, emb.dim)
    assert on_disk.candidate_rows([0]) and store.candidate_rows([0]) is None
    filters = [
        candidates.Filters(user_id="u1", now=datetime(2025, 1, 1), decay_rate=0.001),
        candidates.Filters(user_id="u1", now=datetime(2025, 1, 1), as_of=datetime(2024, 8, 1), min_confidence=0.1,
                           decay_rate=0.002),
        candidates.Filters(user_id="u1", now=datetime(2025, 1, 1), include_private=True, include_tags=("work",),
                           decay_rate=0.0),
        candidates.Filters(user_id="u1", now=datetime(2026, 1, 1), exclude_tags=("home",), decay_rate=0.0005),
    ]
    for f in filters:
        got = candidates.fetch(con, on_disk, list(range(on_disk.n)), f)
        want = candidates.fetch(con, store, list(range(store.n)), f)
        assert got.keys() == want.keys() and got  # every filter leaves some rows, and the same ones
        for fid in got:
            a = {k: v for k, v in got[fid].items() if k not in ("pos", "row_id")}
            b = {k: v for k, v in want[fid].items() if k not in ("pos", "row_id")}
            assert a == b
    now_rows = candidates.fetch(con, on_disk, list(range(on_disk.n)), filters[0])
    assert "u1_f4" not in now_rows and "u1_f8" in now_rows  # superseded since the publish
    assert "u1_f4" in candidates.fetch(con, on_disk, list(range(on_disk.n)), filters[1])  # as of before it


def test_an_episode_marked_for_removal_after_the_publish_is_not_returned(settings, con, ann):
    rows = [{"id": f"ep{i}", "content": f"The harbour lantern festival, note {i}"} for i in range(40)]
    seed_episodes(settings, con, rows)
    _publish(settings, con)
    first = search_memory("harbour lantern festival", "episodes", 5, "u1", settings=settings, con=con)
    marked = [h.id for h in first[:2]]
    assert db.rows(con, "queries/query/query_mark_removal", user_id="u1", ids=marked)  # the inner voice's write path
    again = search_memory("harbour lantern festival", "episodes", 5, "u1", settings=settings, con=con)
    assert again and not set(marked) & set(_ids(again))
    index = table_index(con, settings, "episodes", "u1", HashEmbedder(settings.embed_dim).model, settings.embed_dim)
    assert isinstance(index, PersistedTableIndex) and set(index.delta.ids) == set(marked)


def test_rows_the_night_updated_before_the_publish_are_not_read_again_by_readers(settings, con):
    # one statement gives every row it updates the same changed_at: the generation covers them, and a
    # reader's delta stays empty (with `from` instead of `after` a night's last stage sat in every delta)
    seed_facts(settings, con, _facts(30))
    fact_ops.apply_changes(con, "u1", "r-night", [
        fact_ops.FactChange(f"u1_f{i}", "decayed", "test", confidence=0.5) for i in range(10)], datetime(2001, 1, 1))
    _publish(settings, con)
    emb = HashEmbedder(settings.embed_dim)
    assert PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim).delta.n == 0
    fact_ops.apply_changes(con, "u1", "r-day", [fact_ops.FactChange("u1_f3", "deprecated", "test",
                                                                    status="deprecated")], datetime(2001, 1, 2))
    index = PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim)
    assert index.delta.ids == ["u1_f3"]
    assert "u1_f3" not in _ids(search_memory("garden tea", "facts", 30, "u1", settings=settings, con=con))


def test_a_row_stored_after_the_publish_is_found_by_time_when_its_rowid_is_below_the_watermark(settings, con):
    # a checkpoint that compacts deleted rows renumbers the rows after them, so a new row can get a
    # rowid the generation's watermark covers: its change mark still puts it in the delta
    seed_facts(settings, con, _facts(30))
    _publish(settings, con)
    emb = HashEmbedder(settings.embed_dim)
    path = disk.index_dir(settings, "u1", "facts", emb.model, emb.dim)
    manifest_path = path / (path / "CURRENT").read_text() / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps(manifest | {"max_rowid": 10**9}))  # every rowid looks covered
    PERSISTED.clear()
    seed_facts(settings, con, [{"id": "late", "text": "Zanzibar violin lessons start Tuesday"}])
    hits = search_memory("Zanzibar violin lessons", "facts", 3, "u1", settings=settings, con=con, method="vector")
    assert _ids(hits)[0] == "late"
    index = table_index(con, settings, "facts", "u1", emb.model, emb.dim)  # found through the index, not the fallback
    assert isinstance(index, PersistedTableIndex) and index.delta.ids == ["late"]


def test_nightly_pair_search_warns_of_a_missing_index_only_where_publish_would_write_one(settings, con, caplog):
    from engram.consolidate import neighbours

    emb = HashEmbedder(settings.embed_dim)
    seed_facts(settings, con, _facts(30))
    caplog.set_level(logging.WARNING)
    small = settings.model_copy(update={"nightly_pair_index": True, "search_index_min_rows": 40})
    rows, space = neighbours.load_facts(small, con, "u1", emb.model, emb.dim)
    assert rows.num_rows == 30 and space.exact is not None  # read from the store, as designed: no warning
    assert "pair search reads every fact vector" not in caplog.text
    big = settings.model_copy(update={"nightly_pair_index": True, "search_index_min_rows": 10})
    rows, space = neighbours.load_facts(big, con, "u1", emb.model, emb.dim)
    assert rows.num_rows == 30 and space.exact is not None
    assert "(never published); pair search reads every fact vector" in caplog.text


def test_a_generation_with_a_graph_keeps_half_precision_vectors_checked_like_the_rest(settings, con, monkeypatch):
    monkeypatch.setattr(writer, "ANN_MIN", 1)
    seed_facts(settings, con, _facts(30))
    _publish(settings, con)
    emb = HashEmbedder(settings.embed_dim)
    gen = PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim).gen
    half, full = gen.arrays[disk.HALF_VECTORS], gen.arrays["vectors"]
    assert half.dtype == np.float16 and half.shape == full.shape == (30, emb.dim)
    np.testing.assert_allclose(half.astype(np.float32), full, atol=1e-3)
    with open(gen.path / f"{disk.HALF_VECTORS}.npy", "r+b") as fh:  # torn like any other file
        fh.truncate(fh.seek(0, 2) - 2)
    PERSISTED.clear()
    with pytest.raises(IndexUnusable, match="torn"):
        PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim)
    monkeypatch.setattr(writer, "ANN_MIN", 10**9)
    _publish(settings, con)  # without a graph no copy is written: queries and pairs read float32
    assert disk.HALF_VECTORS not in PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim).gen.arrays


def _dated_facts(n: int, start: int = 0) -> list[dict]:
    """Facts a day apart from 1 January 2026; every third one dated by valid_from, the rest by when asserted."""
    out = []
    for i, f in enumerate(_facts(n, start=start)):
        day = datetime(2026, 1, 1 + (start + i) % 28, 9)
        out.append(f | ({"valid_from": day} if i % 3 == 0 else {"asserted_at": day, "created_at": day}))
    return out


def test_the_rows_a_window_holds_are_read_from_the_index_as_the_store_would_list_them(settings, con, ann):
    from engram.query.search import WINDOW_SQL
    from engram.text.time_window import TimeWindow

    seed_facts(settings, con, _dated_facts(56))
    seed_episodes(settings, con, [{"content": f"We talked about {w}"} for w in WORDS])
    _publish(settings, con)
    # after the publish: a new row in the delta, a base row re-dated (its old copy dead), one deleted
    seed_facts(settings, con, [{"id": "late", "text": "Zanzibar violin lessons", "valid_from": datetime(2026, 1, 5)}])
    con.execute("update facts set valid_from = timestamp '2026-01-06 10:00:00', changed_at = now() at time zone 'UTC' "
                "where id = 'u1_f20'")
    con.execute("delete from facts where id = 'u1_f4'")
    emb = HashEmbedder(settings.embed_dim)
    for table in ("facts", "episodes"):
        index = table_index(con, settings, table, "u1", emb.model, emb.dim)
        assert isinstance(index, PersistedTableIndex)
        for days in ((3, 8), (1, 2), (20, 29), (29, 30)):
            windows = [TimeWindow(datetime(2026, 1, days[0]), datetime(2026, 1, days[1]), "x")]
            ids = [r[0] for r in db.rows(con, WINDOW_SQL[table], user_id="u1", start=windows[0].start,
                                         end=windows[0].end, cap=10**6)]
            listed = index.positions(ids)
            held = index.dated_positions(windows)
            assert held.tolist() == sorted(listed[listed >= 0].tolist()), (table, days)
            # a window too large to list: each row checked for its date, the window sized without a list
            assert np.flatnonzero(index.dated_mask(np.arange(index.n), windows)).tolist() == held.tolist()
            assert len(held) <= index.dated_count(windows) <= len(held) + index.n_dead
    facts = table_index(con, settings, "facts", "u1", emb.model, emb.dim)
    held = {facts.ids[p] for p in facts.dated_positions([TimeWindow(datetime(2026, 1, 3), datetime(2026, 1, 8), "x")])}
    assert {"late", "u1_f20"} <= held and "u1_f4" not in held
    indexed, exact = _both_paths(settings, con, "What happened on 5 January 2026?", search_type="facts", limit=8,
                                 user_id="u1")
    assert _ids(indexed) == _ids(exact) and "late" in _ids(indexed)


def test_a_window_found_by_binary_search_in_the_sorted_moments_holds_the_rows_a_scan_finds():
    from engram.text.time_window import TimeWindow

    rng = np.random.default_rng(7)
    day = np.datetime64("2026-01-01T00:00:00", "us").astype(np.int64)
    moments = day + rng.integers(0, 30 * 86_400_000_000, 5_000)
    moments[rng.random(5_000) < 0.1] = np.iinfo(np.int64).min  # undated rows
    order = np.argsort(moments, kind="stable")

    def window(a, b):
        return TimeWindow(datetime(2026, 1, a), datetime(2026, 1, b), "x")

    for windows in ([window(3, 4)], [window(3, 9), window(5, 12)], [window(1, 31)], [window(2, 2)],
                    [window(10, 11), window(20, 21)], []):
        scan = np.flatnonzero(index_windows.in_windows(moments, windows))
        found = index_windows.sorted_in_windows(moments[order], order, windows)
        assert found.tolist() == scan.tolist(), windows


def test_a_generation_of_an_older_format_is_searched_exactly_and_rewritten_by_the_next_publish(
        settings, con, caplog):
    seed_facts(settings, con, _facts(40))
    _publish(settings, con)
    emb = HashEmbedder(settings.embed_dim)
    path = disk.index_dir(settings, "u1", "facts", emb.model, emb.dim)
    generation = path / (path / "CURRENT").read_text()
    manifest = json.loads((generation / "manifest.json").read_text())
    # as an older engram wrote it: another format number, and files this one would want missing
    manifest["format"] = disk.FORMAT - 1
    for name in (disk.SORTED_MOMENTS, disk.MOMENT_ORDER, bm25.POSTING_LENGTHS):
        (generation / f"{name}.npy").unlink()
        del manifest["files"][f"{name}.npy"]
    (generation / "manifest.json").write_text(json.dumps(manifest))
    PERSISTED.clear()
    with pytest.raises(IndexUnusable, match="format"):
        PERSISTED.get(con, settings, "facts", "u1", emb.model, emb.dim)
    PERSISTED.clear()
    caplog.set_level(logging.WARNING)
    index = table_index(con, settings, "facts", "u1", emb.model, emb.dim)
    assert not isinstance(index, PersistedTableIndex)  # the exact in-memory index, not a crash
    assert f"format {disk.FORMAT - 1}" in caplog.text
    indexed, exact = _both_paths(settings, con, "garden tea", search_type="facts", limit=5, user_id="u1")
    assert _ids(indexed) == _ids(exact)
    _publish(settings, con)  # publish rewrites a published table whatever its size
    PERSISTED.clear()
    index = table_index(con, settings, "facts", "u1", emb.model, emb.dim)
    assert isinstance(index, PersistedTableIndex) and index.gen.manifest["format"] == disk.FORMAT


def test_a_window_holding_more_rows_than_the_cap_is_searched_through_the_nearest_rows(settings, con, monkeypatch):
    from engram.query import search

    seed_facts(settings, con, [f | {"valid_from": datetime(2026, 1, 5, 9)} for f in _facts(60)])
    seed_facts(settings, con, [{"id": "old", "text": "Zanzibar violin recital in the harbour",
                                "valid_from": datetime(2025, 6, 1)},
                               {"id": "in_window", "text": "Zanzibar violin lessons every Monday",
                                "valid_from": datetime(2026, 1, 5, 10)}])
    _publish(settings, con)
    query = "Zanzibar violin lessons on 5 January 2026"
    scored: list[int] = []
    similarities = PersistedTableIndex.similarities

    def counting(self, qvec, rows):
        scored.append(len(rows))
        return similarities(self, qvec, rows)

    monkeypatch.setattr(PersistedTableIndex, "similarities", counting)
    every_row = search_memory(query, "facts", 5, "u1", settings=settings, con=con)
    assert max(scored) == 61  # the window's rows scored one by one
    scored.clear()
    monkeypatch.setattr(search, "WINDOW_CAP", 10)
    monkeypatch.setattr(search, "BROAD_POOL", 20)
    nearest = search_memory(query, "facts", 5, "u1", settings=settings, con=con)
    assert max(scored, default=0) < 61  # now never
    assert _ids(nearest)[0] == _ids(every_row)[0] == "in_window"  # the nearest in the window, lifted by its time


def test_an_episode_added_after_the_publish_is_found_by_meaning_before_it_is_embedded(settings, con) -> None:
    from engram.store.ingest import add_episodes

    s = settings.model_copy(update={"search_index": True, "search_index_min_rows": 0})
    emb = HashEmbedder(s.embed_dim)
    old = [{"id": f"e{i}", "user_id": "u1", "content": f"note number {i} about the garden",
            "created_at": f"2026-01-01T00:0{i}:00"} for i in range(5)]
    add_episodes(old, s, embeddings=emb.embed([r["content"] for r in old]), embedding_model=emb.model, con=con)
    _publish(s, con)
    add_episodes([{"id": "fresh", "user_id": "u1", "content": "My sister moved to Oslo in March",
                   "created_at": "2026-01-02T00:00:00"}], s, con=con)
    hits = search_memory("sister Oslo March", "episodes", 3, "u1", settings=s, con=con, method="vector")
    assert "fresh" in _ids(hits)
    assert type(PERSISTED.get(con, s, "episodes", "u1", emb.model, emb.dim)).__name__ == "PersistedTableIndex"
