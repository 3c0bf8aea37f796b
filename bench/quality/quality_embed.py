"""Embeddings for the evaluations: each distinct text embedded once, cached in a temp dir (never the repo)."""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path

import numpy as np

from engram.embed.models import Embedder


class CachedEmbedder:
    """Wraps an embedder: an in-memory dict per run, plus .npy files under the system temp dir."""

    def __init__(self, inner: Embedder, cache_dir: Path | None = None, batch: int = 64) -> None:
        self.inner = inner
        self.model = inner.model
        self.dim = inner.dim
        self.provider = getattr(inner, "provider", "?")
        self.batch = batch
        self.memo: dict[str, np.ndarray] = {}
        self.cache_dir = cache_dir
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)
        self.embedded = 0
        self.seconds = 0.0

    def _file(self, key: str) -> Path | None:
        return self.cache_dir / f"{key}.npy" if self.cache_dir is not None else None

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 [n, dim], L2-normalised, each distinct text computed at most once."""
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            key = hashlib.blake2b("\x1f".join([self.model, *missing]).encode(), digest_size=16).hexdigest()
            path = self._file(key)
            if path is not None and path.exists():
                vecs = np.load(path)
            else:
                t0 = time.perf_counter()
                vecs = np.vstack([self.inner.embed(missing[i : i + self.batch])
                                  for i in range(0, len(missing), self.batch)]).astype(np.float32)
                self.seconds += time.perf_counter() - t0
                self.embedded += len(missing)
                if path is not None:
                    np.save(path, vecs)
            for t, v in zip(missing, vecs, strict=True):
                self.memo[t] = v
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([self.memo[t] for t in texts])


def default_cache_dir(model: str) -> Path:
    """<system temp>/engram-quality-cache/<model>: survives reruns, never inside the repository."""
    return Path(tempfile.gettempdir()) / "engram-quality-cache" / model.replace("/", "_")


def pair_cosines(embedder: CachedEmbedder, a: list[str], b: list[str]) -> np.ndarray:
    """Cosine of each (a[i], b[i]) pair."""
    va, vb = embedder.embed(a), embedder.embed(b)
    return np.einsum("ij,ij->i", va, vb).astype(np.float64)
