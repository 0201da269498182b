"""Frontends: the frozen, cacheable part of a backbone that turns a 16 kHz clip into frames.

A frontend maps mono float32 16 kHz audio ``[n]`` to an array ``[frames, dim]`` and has an
``identity`` string that changes whenever its output could change (model file hash, settings), so
cached frames are keyed by ``(identity, audio sha256)`` and never go stale.

- :class:`WhisperEncoderFrontend`: the packaged Whisper encoder run by CTranslate2 (512-d frames at
  50 per second for Whisper base), with three prosodic values appended per frame (pitch,
  periodicity, level; see :mod:`._prosody`) because the encoder's last layer keeps little of them.
  Inputs shorter than 30 s are encoded at their own length rather than padded, which costs a
  fraction of a padded window and keeps the frames about the speech.
- :class:`WaveformFrontend`: the waveform itself (``[n, 1]``) for end-to-end backbones (WavLM).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from omnieval.errors import OmnievalError
from omnieval.evaluators._network import ProsodyBackbone, WavLMBackbone, WhisperBackbone
from omnieval.evaluators._prosody import PROSODY_DIM, prosody_frames

SAMPLE_RATE = 16_000
WHISPER_WINDOW = 30 * SAMPLE_RATE
"""Whisper's encoder accepts at most 30 s (3000 mel frames) per call."""
PROSODY_VERSION = "prosody-v2"
"""Bump when :func:`prosody_frames` changes, so cached frames are recomputed."""
MIN_SAMPLES = SAMPLE_RATE // 10
"""Clips shorter than 0.1 s are zero-padded to it so the encoder sees a few frames."""


class Frontend(Protocol):
    """Frozen feature extraction; see the module docstring."""

    identity: str
    dim: int

    def __call__(self, wave_16k: np.ndarray) -> np.ndarray: ...


def resolve_whisper_dir(model: str) -> Path:
    """A packaged model name (``whisper-base``) or a CTranslate2 Whisper folder -> folder path."""
    from omnieval.backends.assets import ASSETS

    if model in ASSETS:
        return Path(ASSETS[model]())
    path = Path(model)
    if not (path / "model.bin").is_file():
        known = ", ".join(k for k in ASSETS if k.startswith("whisper"))
        raise OmnievalError(
            f"Whisper model {model!r} is neither a packaged model ({known}) nor a CTranslate2 folder"
        )
    return path


class WhisperEncoderFrontend:
    """Whisper encoder output frames, ``[frames, d_model]`` float32 (50 frames per second).

    Values are rounded to float16 precision (the cache's storage type).
    """

    def __init__(
        self,
        model: str = "whisper-base",
        *,
        compute_type: str = "float32",
        threads: int = 2,
        prosody: bool = True,
    ) -> None:
        from omnieval.backends.assets import file_sha256

        self.model_dir = resolve_whisper_dir(model)
        self.compute_type = compute_type
        self.threads = threads
        self.prosody = prosody
        weights = file_sha256(self.model_dir / "model.bin")
        self.identity = f"whisper-ct2:{weights[:16]}:{compute_type}" + (
            f"+{PROSODY_VERSION}" if prosody else ""
        )
        self.model_sha256 = weights
        self._model: Any = None
        self._extractor: Any = None
        self._lock = threading.Lock()
        self.dim = 0
        self._load()

    def _load(self) -> None:
        import ctranslate2
        from faster_whisper.feature_extractor import FeatureExtractor

        self._model = ctranslate2.models.Whisper(
            str(self.model_dir), device="cpu", compute_type=self.compute_type, intra_threads=self.threads
        )
        self._extractor = FeatureExtractor(feature_size=int(self._model.n_mels))
        probe = self._encode_mel(np.zeros((int(self._model.n_mels), 20), dtype=np.float32))
        self.dim = int(probe.shape[-1]) + (PROSODY_DIM if self.prosody else 0)

    def _encode_mel(self, mel: np.ndarray) -> np.ndarray:
        import ctranslate2

        batch = np.ascontiguousarray(mel[None], dtype=np.float32)
        with self._lock:
            out = self._model.encode(ctranslate2.StorageView.from_array(batch))
        frames: np.ndarray = np.asarray(out, dtype=np.float32)[0]
        return frames

    def __call__(self, wave_16k: np.ndarray) -> np.ndarray:
        wave = np.asarray(wave_16k, dtype=np.float32).reshape(-1)
        if wave.size < MIN_SAMPLES:
            wave = np.pad(wave, (0, MIN_SAMPLES - wave.size))
        pieces = []
        for start in range(0, wave.size, WHISPER_WINDOW):
            chunk = wave[start : start + WHISPER_WINDOW]
            if chunk.size < MIN_SAMPLES:
                # A sliver after the last full window adds nothing but noise to the mean.
                continue
            mel = self._extractor(chunk, padding=0)
            mel = mel[:, : 2 * (mel.shape[1] // 2)]
            pieces.append(self._encode_mel(mel))
        frames = np.concatenate(pieces, axis=0)
        if self.prosody:
            extra = prosody_frames(wave)
            length = min(len(frames), len(extra))
            frames = np.concatenate([frames[:length], extra[:length]], axis=1)
        # Rounded to float16 precision: cached frames are stored as float16, and fresh frames must
        # equal cached ones bit for bit or results would depend on the cache's state.
        return frames.astype(np.float16).astype(np.float32)


class WaveformFrontend:
    """The waveform as a one-channel frame sequence ``[n, 1]`` (end-to-end backbones)."""

    identity = "waveform16k"
    dim = 1

    def __call__(self, wave_16k: np.ndarray) -> np.ndarray:
        return np.asarray(wave_16k, dtype=np.float32).reshape(-1, 1)


def cache_key(identity: str, audio_sha256: str) -> str:
    return hashlib.sha256(f"{identity}|{audio_sha256}".encode()).hexdigest()


def cached_frames(
    frontend: Frontend,
    items: Sequence[tuple[str, Callable[[], np.ndarray]]],
    cache_dir: Path,
    progress: Callable[[int, int], None] | None = None,
) -> list[np.ndarray]:
    """Frames for each ``(audio sha256, load_audio)`` item, computed once and cached on disk.

    Cached as ``.npy`` under ``cache_dir/<identity hash>/`` (float16 when the frontend's output is
    exactly representable in it, as Whisper frames are); returned as float32.
    """
    folder = cache_dir / hashlib.sha256(frontend.identity.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    out: list[np.ndarray] = []
    for done, (digest, load) in enumerate(items, start=1):
        path = folder / f"{cache_key(frontend.identity, digest)}.npy"
        if path.is_file():
            frames = np.load(path).astype(np.float32)
        else:
            frames = frontend(load())
            half = frames.astype(np.float16)
            stored = half if np.array_equal(half.astype(np.float32), frames) else frames
            tmp = path.with_name(path.stem + ".tmp.npy")
            np.save(tmp, stored)
            tmp.replace(path)
        out.append(frames)
        if progress is not None:
            progress(done, len(items))
    return out


class ProsodyFrontend:
    """Only the prosodic values of :mod:`._prosody`: ``[frames, 3]`` at 50 frames per second."""

    identity = PROSODY_VERSION
    dim = PROSODY_DIM

    def __call__(self, wave_16k: np.ndarray) -> np.ndarray:
        wave = np.asarray(wave_16k, dtype=np.float32).reshape(-1)
        if wave.size < MIN_SAMPLES:
            wave = np.pad(wave, (0, MIN_SAMPLES - wave.size))
        return prosody_frames(wave).astype(np.float16).astype(np.float32)


def make_frontend(backbone: WhisperBackbone | ProsodyBackbone | WavLMBackbone) -> Frontend:
    """The frontend a backbone config needs (``WhisperBackbone``, ``ProsodyBackbone`` or ``WavLMBackbone``)."""
    if isinstance(backbone, ProsodyBackbone):
        return ProsodyFrontend()
    if isinstance(backbone, WhisperBackbone):
        return WhisperEncoderFrontend(
            backbone.model,
            compute_type=backbone.compute_type,
            threads=backbone.threads,
            prosody=backbone.prosody,
        )
    return WaveformFrontend()
