"""The inbox: writers and readers that find the store held by another process never wait for it."""

from __future__ import annotations

import json
import time

from engram import clock
from engram.archive.ops import mark_removal
from engram.consolidate.runner import consolidate_tenants
from engram.embed.models import HashEmbedder
from engram.embed.worker import drain_once
from engram.query.search import search_memory
from engram.settings import Settings
from engram.store import db, inbox
from engram.store.fold import fold_inbox
from engram.store.ingest import add_episodes
from tests.store_hold import held

def _stored(settings: Settings) -> list[tuple]:
    with db.open_store(settings, read_only=True) as con:
        return con.execute("select id, content, status from episodes order by content").fetchall()


def test_a_write_while_the_store_is_held_is_queued_at_once_and_folded_once(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "I live in Paris"}], settings)  # creates the store
    rows = [{"user_id": "alice", "content": "I moved to Lyon", "created_at": "2026-11-01T10:00:00Z"},
            {"user_id": "alice", "content": "I moved to Lyon", "created_at": "2026-11-01T10:00:00Z"},  # a retry
            {"user_id": "alice", "id": "given-1", "content": "I have a cat"}]
    with held(settings):
        t = time.perf_counter()
        queued = add_episodes(rows, settings)
        seconds = time.perf_counter() - t
    assert seconds < settings.lock_timeout_s / 2  # never the 30 s a waiting writer would take
    assert (queued.queued, queued.inserted, queued.duplicates) == (2, 0, 1)
    assert queued.ids[0] == queued.ids[1] and queued.ids[2] == "given-1"
    assert [s.folded for s in inbox.segments(settings, "alice")] == [True, False]  # the journal, the queued rows
    assert drain_once(settings, HashEmbedder(settings.embed_dim))["episodes"] == 3  # folded, then embedded
    again = add_episodes(rows, settings)  # the store is free: a repeat of what the fold stored adds nothing
    assert again.ids == queued.ids and again.inserted == 0
    contents = [c for _, c, _ in _stored(settings)]
    assert contents == ["I have a cat", "I live in Paris", "I moved to Lyon"]
    assert all(s.folded for s in inbox.segments(settings, "alice"))


def test_a_fold_killed_before_it_marks_the_segment_adds_nothing_twice(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "first"}], settings)
    with held(settings):
        add_episodes([{"user_id": "alice", "content": "queued"}], settings)
    pending = [s for s in inbox.segments(settings, "alice") if not s.folded]
    with db.open_store(settings) as con:
        assert fold_inbox(con, settings).inserted == 1
    folded = [s for s in inbox.segments(settings, "alice") if s.stem == pending[0].stem][0]
    folded.path.rename(pending[0].path)  # as if killed between the insert and the rename
    with db.open_store(settings) as con:
        again = fold_inbox(con, settings)
    assert (again.segments, again.inserted, again.repeats) == (1, 0, 1)
    assert [c for _, c, _ in _stored(settings)] == ["first", "queued"]


def test_an_explicit_id_stored_for_other_content_is_kept_aside_not_dropped(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "id": "e1", "content": "the original"}], settings)
    with held(settings):
        add_episodes([{"user_id": "alice", "id": "e1", "content": "another text under the same id"}], settings)
    with db.open_store(settings) as con:
        result = fold_inbox(con, settings)
    assert (result.inserted, result.rejected) == (0, 1)
    assert [c for _, c, _ in _stored(settings)] == ["the original"]
    kept = list((inbox.tenant_dir(settings, "alice") / inbox.REJECTED).glob("*.jsonl"))
    record = json.loads(kept[0].read_text().splitlines()[0])
    assert record["record"]["content"] == "another text under the same id" and "already stored" in record["reason"]


def test_a_search_while_the_store_is_held_finds_what_was_written_before_and_during(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "My sister Joan plays the violin", "role": "user"}], settings)
    with held(settings):
        add_episodes([{"user_id": "alice", "content": "The plumber fixed the kitchen sink", "role": "user"}],
                     settings)
        violin = search_memory("violin", user_id="alice", settings=settings)
        plumber = search_memory("plumber", user_id="alice", settings=settings)
        other = search_memory("plumber", user_id="bob", settings=settings)
    assert violin[0].text == "My sister Joan plays the violin"  # written directly, journalled
    assert plumber[0].text == "The plumber fixed the kitchen sink"  # queued in the inbox
    assert other == []  # another tenant sees none of it


def test_a_search_while_the_night_holds_the_store_reads_the_published_facts_and_new_episodes(
        settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "role": "user", "session_id": "s1", "content": text,
                   "created_at": f"2026-11-0{i + 1}T10:00:00Z"}
                  for i, text in enumerate(["I live in Paris with my wife Anna.", "Anna works as a nurse.",
                                            "We adopted a dog called Rex."])], settings)
    consolidate_tenants(settings, "night-1", clock.now())
    assert not [s for s in inbox.segments(settings, "alice") if s.folded]  # the publish covered the journal
    live = search_memory("where does the user live", user_id="alice", settings=settings)
    with held(settings):
        add_episodes([{"user_id": "alice", "role": "user", "content": "Rex learned to fetch the ball"}], settings)
        published = search_memory("where does the user live", user_id="alice", settings=settings)
        fetch = search_memory("fetch ball", user_id="alice", settings=settings)
    before = [(h.id, h.table) for h in published if h.text != "Rex learned to fetch the ball"]
    assert before == [(h.id, h.table) for h in live][:len(before)]  # the same memories, in the same order
    assert any(h.table == "facts" for h in published)
    assert fetch[0].text == "Rex learned to fetch the ball"


def test_an_episode_marked_for_removal_is_not_read_back_from_the_inbox(settings: Settings) -> None:
    result = add_episodes([{"user_id": "alice", "content": "my door code is 4412"}], settings)
    mark_removal(settings, "alice", result.ids, table="episodes")
    with held(settings):
        assert search_memory("door code", user_id="alice", settings=settings) == []


def test_the_worker_embeds_queued_episodes_beside_the_inbox_and_the_fold_stores_them(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "first"}], settings)
    embedder = HashEmbedder(settings.embed_dim)
    with held(settings):
        add_episodes([{"user_id": "alice", "content": "queued while held"}], settings)
        counts = drain_once(settings, embedder)
        assert (counts["inbox_embedded"], counts["locked"]) == (1, 1)
    assert drain_once(settings, embedder)["episodes"] == 1  # "first": the queued one came with its vector
    stored = {c: s for _, c, s in _stored(settings)}
    assert stored == {"first": "active", "queued while held": "active"}


def test_with_hot_path_inbox_the_agent_never_opens_the_store(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "first, through the store"}], settings)
    agent = settings.model_copy(update={"hot_path": "inbox"})
    queued = add_episodes([{"user_id": "alice", "content": "the heron nests by the pond"}], agent)
    assert (queued.queued, queued.inserted) == (1, 0)  # the store was free, and still not opened
    assert [c for _, c, _ in _stored(settings)] == ["first, through the store"]
    assert search_memory("heron", user_id="alice", settings=agent)[0].text == "the heron nests by the pond"
    assert drain_once(settings, HashEmbedder(settings.embed_dim))["episodes"] == 2
    assert [c for _, c, _ in _stored(settings)] == ["first, through the store", "the heron nests by the pond"]
    assert search_memory("heron", user_id="alice", settings=agent)[0].text == "the heron nests by the pond"


def test_retrieve_while_the_store_is_held_reads_the_inbox(settings: Settings) -> None:
    from engram.query.retrieve import retrieve

    s = settings.model_copy(update={"enable_inner_voice": True})
    add_episodes([{"user_id": "alice", "content": "the heron nests by the pond", "role": "user"}], s)
    drain_once(s, HashEmbedder(s.embed_dim))  # retrieve ranks by vectors only
    with held(s):
        add_episodes([{"user_id": "alice", "content": "the heron left the pond in October", "role": "user"}], s)
        out = retrieve("heron pond", user_id="alice", settings=s, floor=0.0)
    assert {x["text"] for x in out["snippets"]} >= {"the heron nests by the pond", "the heron left the pond in October"}


def test_the_worker_republishes_a_tenants_episodes_once_enough_wait_in_the_inbox(settings: Settings) -> None:
    agent = settings.model_copy(update={"hot_path": "inbox", "inbox_publish_rows": 3})
    for text in ("the heron nests by the pond", "the otter swims at dusk", "a kingfisher dives for fish"):
        add_episodes([{"user_id": "alice", "content": text}], agent)
    counts = drain_once(agent, HashEmbedder(agent.embed_dim))
    assert (counts["episodes"], counts["republished"]) == (3, 1)
    assert inbox.segments(agent, "alice") == []  # the new generation holds them
    assert search_memory("otter", user_id="alice", settings=agent)[0].text == "the otter swims at dusk"


def test_a_search_without_the_store_embeds_the_newest_inbox_rows_first(settings: Settings) -> None:
    from engram.index.published import PUBLISHED
    from engram.index.vector_index import PendingFill

    agent = settings.model_copy(update={"hot_path": "inbox"})
    for text in ("oldest", "middle", "newest"):
        add_episodes([{"user_id": "alice", "content": text}], agent)
    embedder = HashEmbedder(agent.embed_dim)
    index = PUBLISHED.index(agent, "episodes", "alice", embedder.model, embedder.dim,
                            PendingFill(embedder.embed, 1, embedder.model))
    with_vector = [index.ids[int(p)] for p in index.vec_pos]
    assert [index.text(index.pos[i]) for i in with_vector] == ["newest"]


class _CountingEmbedder(HashEmbedder):
    """The hash embedder, counting its runs and the texts of each."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.runs: list[list[str]] = []

    def embed(self, texts: list[str]):  # noqa: ANN201 - as HashEmbedder
        self.runs.append(list(texts))
        return super().embed(texts)


def test_a_search_after_a_write_embeds_its_query_and_the_new_row_in_one_run(settings: Settings) -> None:
    from engram.index.vector_index import FILLED

    FILLED.clear()
    agent = settings.model_copy(update={"hot_path": "inbox"})
    embedder = _CountingEmbedder(agent.embed_dim)
    add_episodes([{"user_id": "alice", "id": "e1", "content": "the heron nests by the pond"}], agent)
    hits = search_memory("grey bird near water", user_id="alice", settings=agent, embedder=embedder,
                         method="vector")
    assert embedder.runs == [["grey bird near water", "the heron nests by the pond"]]
    assert [h.id for h in hits] == ["e1"]  # found by meaning: its vector came from that run
    embedder.runs.clear()
    search_memory("heron", user_id="alice", settings=agent, embedder=embedder)
    assert embedder.runs == [["heron"]]  # a row embedded once is not embedded again


def test_the_inbox_read_after_each_write_equals_a_read_from_scratch(settings: Settings) -> None:
    """A search reads only the segments written since its last read; what it reads is what a process
    reading the whole inbox afresh reads, through writes, a fold, a repeat and a withdrawal."""
    from engram.index import published

    agent = settings.model_copy(update={"hot_path": "inbox"})
    model, dim = "hash-ngram-v1-384", agent.embed_dim

    def rows(pending_only: bool = False) -> tuple[list, tuple]:
        table, signature = published.inbox_rows(agent, "alice", model, dim, pending_only)
        return table.select(["id", "text", "row_id"]).to_pylist(), signature

    def fresh(pending_only: bool = False) -> tuple[list, tuple]:
        published.PUBLISHED.clear()  # forgets the rows read so far
        return rows(pending_only)

    ids = []
    for i, text in enumerate(["the heron nests", "the otter swims", "the heron nests", "a kingfisher dives"]):
        ids += add_episodes([{"user_id": "alice", "id": f"e{i}", "content": text}], agent).ids
        incremental = rows(), rows(pending_only=True)
        assert incremental == (fresh(), fresh(pending_only=True))
    inbox.withdraw(agent, "alice", [ids[1]])
    incremental = rows()
    assert incremental == fresh() and ids[1] not in [r["id"] for r in incremental[0]]
    with db.open_store(settings) as con:
        fold_inbox(con, settings)
    incremental = rows(), rows(pending_only=True)
    assert incremental == (fresh(), fresh(pending_only=True))
    assert incremental[1][0] == []  # folded: nothing pending for a reader that has the store


def test_a_listing_after_files_are_added_equals_a_listing_from_scratch(settings: Settings) -> None:
    """The tenant folder's listing is extended with the files added since the last one, in name order, also
    when a slower writer's older segment lands after newer ones, and read again after a fold renames one."""
    agent = settings.model_copy(update={"hot_path": "inbox"})

    def listed() -> tuple[list[str], set[str]]:
        segs, others = inbox.listing(agent, "alice")
        return [s.path.name for s in segs], set(others)

    def fresh() -> tuple[list[str], set[str]]:
        inbox.forget_listings()
        return listed()

    add_episodes([{"user_id": "alice", "content": "the heron nests"}], agent)
    first = listed()
    add_episodes([{"user_id": "alice", "content": "the otter swims"}], agent)
    assert listed() == fresh() and len(listed()[0]) == 2
    folder = inbox.tenant_dir(agent, "alice")
    older = folder / f"{0:020d}-1-0123abcd.arrow"  # an older stem written late
    older.write_bytes((folder / first[0][0]).read_bytes())
    (folder / "notes.txt").write_text("not a segment")
    got = listed()
    assert got == fresh() and got[0][0] == older.name and "notes.txt" in got[1]
    with db.open_store(settings) as con:
        fold_inbox(con, settings)
    assert listed() == fresh() and all(name.endswith(".folded.arrow") for name in listed()[0])


def test_an_empty_segment_is_marked_folded_not_listed_again(settings: Settings) -> None:
    from engram.store.insert import EPISODE_SCHEMA

    add_episodes([{"user_id": "alice", "content": "first"}], settings)
    inbox.write_segment(settings, "alice", EPISODE_SCHEMA.empty_table())
    with db.open_store(settings) as con:
        assert fold_inbox(con, settings).segments == 1
    assert all(s.folded for s in inbox.segments(settings, "alice"))


def test_an_id_given_back_for_a_record_written_without_one_folds_as_on_its_own(settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "content": "first"}], settings)
    agent = settings.model_copy(update={"hot_path": "inbox"})
    derived = add_episodes([{"user_id": "alice", "content": "buy milk", "created_at": "2026-11-01T10:00:00Z"}],
                           agent).ids[0]
    add_episodes([{"user_id": "alice", "id": derived, "content": "buy milk"}], agent)  # the same record again
    add_episodes([{"user_id": "alice", "id": derived, "content": "buy bread"}], agent)  # its id, other content
    with db.open_store(settings) as con:
        result = fold_inbox(con, settings)
    assert (result.segments, result.inserted, result.repeats, result.rejected) == (3, 1, 1, 1)
    assert sorted(c for _, c, _ in _stored(settings)) == ["buy milk", "first"]


def test_segments_of_several_tenants_folded_together_refuse_only_the_tenant_whose_id_is_taken(
        settings: Settings) -> None:
    add_episodes([{"user_id": "alice", "id": "x", "content": "alice's x"}], settings)
    agent = settings.model_copy(update={"hot_path": "inbox"})
    add_episodes([{"user_id": "alice", "id": "x", "content": "another text under alice's x"}], agent)
    add_episodes([{"user_id": "bob", "id": "x", "content": "bob's own x"}], agent)
    with db.open_store(settings) as con:
        result = fold_inbox(con, settings)
    assert (result.segments, result.inserted, result.repeats, result.rejected) == (2, 1, 0, 1)
    with db.open_store(settings, read_only=True) as con:
        rows = con.execute("select user_id, id, content from episodes order by user_id").fetchall()
    assert rows == [("alice", "x", "alice's x"), ("bob", "x", "bob's own x")]
    assert not (inbox.tenant_dir(settings, "bob") / inbox.REJECTED).exists()
    assert list((inbox.tenant_dir(settings, "alice") / inbox.REJECTED).glob("*.jsonl"))
