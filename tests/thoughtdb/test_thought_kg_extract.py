"""Unit tests of the heuristic KG extractor (engram.thoughtdb.kg_extract)."""

from __future__ import annotations

import pytest

from engram.thoughtdb.kg_extract import extract_candidates, norm_name


def _entities(text: str) -> dict[str, str]:
    return {e.norm_name: e.entity_type for e in extract_candidates(text).entities}


def _triples(text: str) -> set[tuple[str, str, str]]:
    return {(norm_name(r.src_name), r.relation, norm_name(r.dst_name)) for r in extract_candidates(text).relations}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Alice   Smith ", "alice smith"),
        ("ＡＣＭＥ", "acme"),  # NFKC folds full-width letters
        ("Straße", "strasse"),  # casefold, not just lower
        ('"Night Owl"', "night owl"),
        ("Tab\tand\nnewline", "tab and newline"),
    ],
)
def test_norm_name(raw: str, expected: str) -> None:
    assert norm_name(raw) == expected


@pytest.mark.parametrize(
    ("text", "name", "entity_type"),
    [
        ("Contact me at jane.doe@example.org today.", "jane.doe@example.org", "email"),
        ("The docs live at https://example.com/a/b?x=1.", "https://example.com/a/b?x=1", "url"),
        ("We spent $1,200.50 on hosting.", "$1,200.50", "money"),
        ("The invoice was 300 EUR in total.", "300 eur", "money"),
        ("It shipped on 2024-03-05 finally.", "2024-03-05", "date"),
        ("It shipped on March 5, 2024 finally.", "march 5, 2024", "date"),
        ("It shipped on 5 March 2024 finally.", "5 march 2024", "date"),
        ('We call it "Night Owl" internally.', "night owl", "term"),
        ("We rewrote the loader in Rust last week.", "rust", "tool"),
        ("Yesterday we met Carol Jones in the lobby.", "carol jones", "name"),
        ("Then we visited the Museum of Modern Art.", "museum of modern art", "name"),
        ("She joined Acme Corp in May.", "acme corp", "organization"),
    ],
)
def test_entity_types(text: str, name: str, entity_type: str) -> None:
    assert _entities(text).get(name) == entity_type


def test_sentence_start_word_needs_repetition() -> None:
    assert "alice" not in _entities("Alice went home early.")
    assert "alice" in _entities("Alice went home early. Later we called Alice again.")
    # a multiword proper noun at sentence start is kept
    assert "alice smith" in _entities("Alice Smith went home early.")


def test_function_words_and_calendar_words_are_not_names() -> None:
    found = _entities("The meeting is on Monday. I think We should go. However it rained in May.")
    assert found == {}


def test_relations_between_entities() -> None:
    text = "Bob works at Google. Bob prefers Rust and DuckDB. Carol Jones manages \"Night Owl\"."
    triples = _triples(text)
    assert ("bob", "works_at", "google") in triples
    assert ("bob", "prefers", "rust") in triples
    assert ("bob", "prefers", "duckdb") in triples  # coordinated object shares the relation
    assert ("carol jones", "manages", "night owl") in triples


def test_no_relation_across_sentences_or_non_verbs() -> None:
    assert _triples("We met Carol Jones. Google is big.") == set()
    assert _triples("We met Carol Jones near Google headquarters.") == set()
    assert _triples("We met Carol Jones; Google called later.") == set()


def test_relation_confidence_bounded_by_entities() -> None:
    out = extract_candidates("Bob works at Google. Bob moved to Berlin.")
    conf = {e.norm_name: e.confidence for e in out.entities}
    for r in out.relations:
        assert 0 < r.confidence <= min(conf[norm_name(r.src_name)], conf[norm_name(r.dst_name)])


def test_dedupes_by_norm_name_and_boosts_repeats() -> None:
    out = extract_candidates("We use DuckDB daily. Our team loves duckdb. They said DUCKDB is fast.")
    names = [e.norm_name for e in out.entities]
    assert names.count("duckdb") == 1
    single = extract_candidates("We use DuckDB daily.").entities[0]
    repeated = next(e for e in out.entities if e.norm_name == "duckdb")
    assert repeated.confidence > single.confidence


def test_deterministic_and_ordered() -> None:
    text = "Bob works at Google. We use Python and Rust. Email bob@example.com on 2024-01-02."
    first, second = extract_candidates(text), extract_candidates(text)
    assert first == second
    confs = [e.confidence for e in first.entities]
    assert confs == sorted(confs, reverse=True)


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "lowercase only, nothing here."])
def test_empty_or_plain_text(text: str) -> None:
    out = extract_candidates(text)
    assert out.entities == [] and out.relations == []


def test_typed_span_not_reused_as_name() -> None:
    found = _entities('We shipped "Project Falcon" on March 5, 2024.')
    assert found == {"project falcon": "term", "march 5, 2024": "date"}
