"""Model-backed text and image metrics: batched BERTScore and image-embedding similarity."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from omnieval.hashing import sha256_bytes, sha256_file
from omnieval.metrics._cache import MetricCache, cache_key
from omnieval.metrics._config import MetricsConfig
from omnieval.metrics._spec import BERTSCORE_F1, DREAMSIM_DISTANCE, IMAGE_SIMILARITY
from omnieval.metrics.functional.image import cosine_similarity
from omnieval.metrics.functional.text import PRF, greedy_match_prf


class EmptyTextError(ValueError):
    """A text BERTScore cannot score: empty, whitespace only, or nothing the encoder keeps.

    Attributes:
        side: ``"candidate"`` or ``"reference"``.
        index: Position of the pair in the batch.
    """

    def __init__(self, side: str, index: int, reason: str) -> None:
        super().__init__(f"{side} {index} {reason}: BERTScore needs text on both sides")
        self.side = side
        self.index = index


def _check_texts(side: str, texts: Sequence[str]) -> None:
    for i, text in enumerate(texts):
        if not text.strip():
            raise EmptyTextError(side, i, "is empty" if not text else "is whitespace only")


class BertScorer:
    """BERTScore (precision, recall, F1) with a configurable local encoder, batched over all texts.

    Matches the bert-score package with ``idf=False`` and ``rescale_with_baseline=False`` for the
    same encoder and layer (``tests/metrics/test_text.py`` checks it).
    """

    def __init__(self, config: MetricsConfig | None = None) -> None:
        from omnieval.backends.embeddings import load_token_encoder

        self.config = config or MetricsConfig()
        self.encoder = load_token_encoder(
            self.config.text_encoder, self.config.text_encoder_layers, self.config.batch_size
        )

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> list[PRF]:
        """Scores per pair; every text is encoded once, in length-sorted batches.

        Raises:
            EmptyTextError: a candidate or reference is empty, whitespace only, or encodes to no
                token (checked before any score is returned, so a batch is scored whole or not at
                all). Callers that meet empty generations report them (``missing_output``) instead.
        """
        if len(candidates) != len(references):
            raise ValueError("candidates and references differ in length")
        _check_texts("reference", references)
        _check_texts("candidate", candidates)
        if not candidates:
            return []
        embedded = self.encoder.embed(list(candidates) + list(references))
        n = len(candidates)
        for side, part in (("reference", embedded[n:]), ("candidate", embedded[:n])):
            for i, tokens in enumerate(part):
                if not tokens.weights.sum() > 0:
                    raise EmptyTextError(side, i, "has no token the encoder keeps")
        return [
            greedy_match_prf(c.vectors, c.weights, r.vectors, r.weights)
            for c, r in zip(embedded[:n], embedded[n:], strict=True)
        ]

    def identity(self) -> dict[str, Any]:
        ident = self.encoder.identity().as_dict()
        return {
            "metric": BERTSCORE_F1.name,
            "version": BERTSCORE_F1.version,
            "encoder": ident,
            "num_layers": self.encoder.spec.num_layers,
            "idf": False,
            "rescale_with_baseline": False,
        }

    def score_cached(
        self, candidates: Sequence[str], references: Sequence[str], cache: MetricCache
    ) -> tuple[list[PRF], int, int]:
        """Scores with the content cache; returns (scores, computed, cache_hits)."""
        if len(candidates) != len(references):
            raise ValueError("candidates and references differ in length")
        _check_texts("reference", references)
        _check_texts("candidate", candidates)
        ident = self.identity()
        keys = [
            cache_key(cand=sha256_bytes(c.encode("utf-8")), ref=sha256_bytes(r.encode("utf-8")), model=ident)
            for c, r in zip(candidates, references, strict=True)
        ]
        results: list[PRF | None] = []
        todo: list[int] = []
        for i, key in enumerate(keys):
            hit = cache.get(BERTSCORE_F1.name, key)
            if hit is None:
                results.append(None)
                todo.append(i)
            else:
                results.append(PRF(float(hit["precision"]), float(hit["recall"]), float(hit["f1"])))
        try:
            fresh = self.score([candidates[i] for i in todo], [references[i] for i in todo])
        except EmptyTextError as exc:
            # Name the pair by its position in the caller's batch, not in the uncached subset.
            raise EmptyTextError(exc.side, todo[exc.index], "has no token the encoder keeps") from None
        for i, prf in zip(todo, fresh, strict=True):
            results[i] = prf
            cache.put(BERTSCORE_F1.name, keys[i], prf._asdict())
        return [r for r in results if r is not None], len(todo), len(keys) - len(todo)


def bertscore(
    candidates: Sequence[str], references: Sequence[str], *, config: MetricsConfig | None = None
) -> list[PRF]:
    """BERTScore of candidate/reference pairs with the configured encoder (default packaged MiniLM).

    Raises:
        EmptyTextError: a text of some pair is empty or whitespace only (it has no score).
    """
    return BertScorer(config).score(candidates, references)


def image_file_problem(path: Path) -> str:
    """'' when ``path`` is an image file Pillow decodes, else a short reason that names the file.

    Example:
        >>> image_file_problem(Path("no/such.png"))
        'no/such.png: no such file'
    """
    from PIL import Image

    if path.is_dir():
        return f"{path}: is a directory, not an image file"
    if not path.is_file():
        return f"{path}: no such file"
    try:
        if path.stat().st_size == 0:
            return f"{path}: empty file (0 bytes)"
        with Image.open(path) as im:
            im.load()
    except Exception as exc:
        # Pillow signals a bad file with many types (UnidentifiedImageError, OSError, SyntaxError,
        # DecompressionBombError, ValueError...); each is an unusable input, reported, not raised.
        return f"{path}: cannot decode image: {type(exc).__name__}: {exc}"
    return ""


@dataclass(frozen=True)
class ImageEmbedding:
    """An image's embedding keyed by the image bytes' SHA-256."""

    sha256: str
    vector: npt.NDArray[np.float32]


class ImageSimilarity:
    """Cosine similarity of image embeddings; embeddings are cached per image content and backbone."""

    def __init__(self, config: MetricsConfig | None = None) -> None:
        from omnieval.backends.embeddings import load_image_embedder

        self.config = config or MetricsConfig()
        self.embedder = load_image_embedder(self.config.image_backbone, self.config.clip_source)

    @property
    def backbone(self) -> str:
        return self.embedder.backbone

    def identity(self) -> dict[str, Any]:
        return {
            "metric": IMAGE_SIMILARITY.name,
            "version": IMAGE_SIMILARITY.version,
            "backbone": self.embedder.backbone,
            "model": self.embedder.identity().as_dict(),
        }

    def embed_files(
        self, paths: Sequence[Path], cache: MetricCache
    ) -> tuple[dict[Path, ImageEmbedding], int, int]:
        """Embeddings of image files (each distinct content once); returns (by path, computed, hits).

        Raises:
            DataError: a path is missing, a directory, or not a decodable image (the message names it).
        """
        from PIL import Image

        from omnieval.errors import DataError

        for path in dict.fromkeys(paths):
            if not Path(path).is_file():
                raise DataError(image_file_problem(Path(path)))
        ident = self.identity()
        digests = {p: sha256_file(p) for p in dict.fromkeys(paths)}
        vectors: dict[str, npt.NDArray[np.float32]] = {}
        todo: list[tuple[str, Path]] = []
        hits = 0
        for path, digest in digests.items():
            if digest in vectors or any(digest == d for d, _ in todo):
                continue
            cached = cache.get("image_embedding", cache_key(image=digest, model=ident))
            if cached is None:
                todo.append((digest, path))
            else:
                vectors[digest] = np.asarray(cached, dtype=np.float32)
                hits += 1
        batch = 16
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            images = []
            for _, path in chunk:
                try:
                    with Image.open(path) as im:
                        images.append(im.convert("RGB"))
                except Exception:
                    raise DataError(
                        image_file_problem(Path(path)) or f"{path}: cannot decode image"
                    ) from None
            embedded = self.embedder.embed(images)
            for (digest, _), vec in zip(chunk, embedded, strict=True):
                vectors[digest] = vec
                cache.put("image_embedding", cache_key(image=digest, model=ident), [float(x) for x in vec])
        return {p: ImageEmbedding(d, vectors[d]) for p, d in digests.items()}, len(todo), hits

    def similarity(self, a: ImageEmbedding, b: ImageEmbedding) -> float:
        return cosine_similarity(a.vector, b.vector)


def image_similarity(a: Path, b: Path, *, config: MetricsConfig | None = None) -> float:
    """Cosine similarity of two image files' embeddings (no cache).

    Raises:
        DataError: either file is missing, a directory, or not a decodable image.
    """
    metric = ImageSimilarity(config)
    embedded, _, _ = metric.embed_files([Path(a), Path(b)], MetricCache(None))
    return metric.similarity(embedded[Path(a)], embedded[Path(b)])


def dreamsim_status(config: MetricsConfig) -> str:
    """'' when DreamSim can run offline with this config, else the reason it cannot."""
    if importlib.util.find_spec("dreamsim") is None:
        return "the dreamsim package is not installed"
    if not config.dreamsim_cache or not Path(config.dreamsim_cache).is_dir():
        return "dreamsim_cache does not point to a folder with DreamSim's weights"
    return ""


class DreamSimDistance:
    """DreamSim perceptual distance (lower = more similar); needs the package and local weights."""

    def __init__(self, config: MetricsConfig) -> None:
        reason = dreamsim_status(config)
        if reason:
            from omnieval.errors import ConfigError

            raise ConfigError(f"DreamSim is unavailable: {reason}")
        from dreamsim import dreamsim

        self.cache_dir = str(config.dreamsim_cache)
        self._model, self._preprocess = dreamsim(pretrained=True, cache_dir=self.cache_dir, device="cpu")

    def distance(self, a: Path, b: Path) -> float:
        import torch
        from PIL import Image

        with Image.open(a) as ia, Image.open(b) as ib, torch.inference_mode():
            x, y = self._preprocess(ia.convert("RGB")), self._preprocess(ib.convert("RGB"))
            return float(self._model(x, y).item())

    def identity(self) -> dict[str, Any]:
        return {
            "metric": DREAMSIM_DISTANCE.name,
            "version": DREAMSIM_DISTANCE.version,
            "cache_dir": self.cache_dir,
        }
