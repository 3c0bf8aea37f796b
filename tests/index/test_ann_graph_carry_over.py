"""Publish carries the previous generation's ANN graph over: only new vectors are inserted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engram.embed.models import HashEmbedder
from engram.index import writer
from engram.index.ann_graph import vector_rows
from engram.index.cache import PERSISTED
from engram.index.disk import FORMAT, index_dir
from engram.index.generation import Generation
from tests.query_seed import seed_facts

WORDS = "garden tea cat piano winter river museum sister Oslo train violin harbour".split()


@pytest.fixture(autouse=True)
def _graph_from_one_vector(monkeypatch):
    monkeypatch.setattr(writer, "ANN_MIN", 1)
    PERSISTED.clear()


def _facts(n: int, start: int = 0) -> list[dict]:
    rng = np.random.default_rng(start)
    return [{"id": f"f{start + i}", "user_id": "u1", "text": " ".join(rng.choice(WORDS, 5)) + f" number {start + i}"}
            for i in range(n)]


def _publish(settings, con) -> tuple[dict, Generation]:
    emb = HashEmbedder(settings.embed_dim)
    out = writer.write(con, settings, "facts", "u1", emb.model, emb.dim)
    target = index_dir(settings, "u1", "facts", emb.model, emb.dim)
    return out, Generation(target / (target / "CURRENT").read_text().strip(), "u1", "facts", emb.model, emb.dim)


def _graph_finds_every_vector(gen: Generation) -> None:
    vectors = np.asarray(gen.arrays["vectors"])
    # an exact scan of the graph's stored vectors: what this checks is the key map; a graph walk, even a wide
    # one, can miss a node after removals now and then, which is recall, measured in bench/perf/SEARCH.md
    found = gen.ann.search(vectors, 1, exact=True)
    rows = vector_rows(gen.ann_rows, np.asarray(found.keys).reshape(len(vectors), -1)[:, 0])
    # each vector finds itself, or a vector the i8 graph cannot tell from it (a tie broken either way); a
    # wrong key map would return unrelated vectors
    cosines = np.einsum("ij,ij->i", vectors[rows], vectors)
    assert cosines.min() > 0.98, np.flatnonzero(cosines <= 0.98)
    live = np.flatnonzero(np.asarray(gen.ann_rows) >= 0)
    assert len(gen.ann) == len(live) == len(vectors)
    assert sorted(np.asarray(gen.ann_rows)[live].tolist()) == list(range(len(vectors)))


def test_a_publish_inserts_new_vectors_into_the_previous_graph_and_drops_gone_ones(settings, con):
    seed_facts(settings, con, _facts(60))
    first, gen = _publish(settings, con)
    assert first["graph"] == "built"
    _graph_finds_every_vector(gen)
    seed_facts(settings, con, _facts(10, start=100))
    con.execute("delete from facts where id = 'f3'")
    other = HashEmbedder(settings.embed_dim).embed(["a different vector"])[0].tolist()
    con.execute("update facts set embedding = $v, changed_at = now() where id = 'f7'", {"v": other})
    second, gen = _publish(settings, con)
    # f3 deleted and f7 re-embedded leave the graph; f7's new vector and the 10 new facts join it
    assert second["graph"] == "reused (11 added, 2 removed)"
    assert gen.manifest["ann_removed"] == 2
    _graph_finds_every_vector(gen)
    f7 = int(np.flatnonzero(np.asarray(gen.arrays["ids"]) == "f7")[0])
    np.testing.assert_allclose(gen.arrays["vectors"][gen.arrays["vec_row"][f7]], other, rtol=1e-6)


def test_a_graph_with_too_many_removed_nodes_or_other_parameters_is_built_again(settings, con, monkeypatch):
    seed_facts(settings, con, _facts(50))
    _publish(settings, con)
    con.execute("delete from facts where id in (select id from facts order by id limit 15)")
    out, gen = _publish(settings, con)
    assert out["graph"] == "built" and gen.manifest["ann_removed"] == 0
    _graph_finds_every_vector(gen)
    monkeypatch.setattr(writer, "ANN_CONNECTIVITY", 8)
    seed_facts(settings, con, _facts(2, start=200))
    out, gen = _publish(settings, con)
    assert out["graph"] == "built" and gen.manifest["ann_connectivity"] == 8


def test_an_unreadable_previous_graph_is_built_again_not_reused(settings, con):
    seed_facts(settings, con, _facts(30))
    _, gen = _publish(settings, con)
    manifest = json.loads((gen.path / "manifest.json").read_text())
    (gen.path / "ann_rows.npy").write_bytes(b"not an array")
    seed_facts(settings, con, _facts(3, start=300))
    out, gen = _publish(settings, con)
    assert out["graph"] == "built" and manifest["ann_graph"] == "built"
    _graph_finds_every_vector(gen)


def test_the_graph_of_a_generation_of_an_older_format_is_not_carried_over(settings, con):
    seed_facts(settings, con, _facts(40))
    _, gen = _publish(settings, con)
    manifest = json.loads((gen.path / "manifest.json").read_text())
    manifest["format"] = FORMAT - 1  # as an older engram wrote it
    (gen.path / "manifest.json").write_text(json.dumps(manifest))
    seed_facts(settings, con, _facts(2, start=300))
    out, gen = _publish(settings, con)
    assert out["graph"] == "built" and gen.manifest["format"] == FORMAT
    _graph_finds_every_vector(gen)
