"""Synthesized corpora with known labels, made with espeak-ng (Debian package ``espeak-ng``).

Two recipes, both honest about what they are (synthetic speech only):

- ``gender``: apparent voice gender. espeak-ng voice variants that declare a gender in their variant
  file (``f1``..``f5``, ``m1``..``m8`` and named variants such as ``Alicia`` or ``Storm``), spoken with
  the English accents espeak-ng has, random texts, speaking rates and pitch offsets. The speaker of a
  clip is its voice variant, so a speaker-disjoint split tests on voices the model never heard.
- ``phonation``: modal versus whispered speech. Whispered clips are made two ways: espeak-ng's own
  ``whisper``/``whisperf`` variants, and LPC re-synthesis of a modal clip with a noise excitation
  (:func:`whisperize`), which keeps the vocal-tract envelope and removes voicing, for every voice.

Every clip gets the same post-processing (16 kHz, random peak level, white noise at a random SNR),
so level and noise floor carry no label information. Audio is a deterministic function of the recipe
and the espeak-ng build; ``corpus.json`` records both, and the manifest records each file's hash.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from omnieval.corpora._audio import TARGET_RATE, audio_info, to_mono_16k
from omnieval.corpora._manifest import (
    CARD_NAME,
    CorpusCard,
    ManifestRow,
    read_manifest,
    with_splits,
    write_manifest,
)
from omnieval.corpora._splits import SplitFractions, assign_splits
from omnieval.corpora._texts import SENTENCES
from omnieval.errors import DataError, OmnievalError
from omnieval.hashing import sha256_file

SYNTH_VERSION = "espeak-corpus-v2"
"""Bump when rendering changes in a way that changes audio bytes."""

ACCENTS: tuple[str, ...] = (
    "en-us",
    "en-gb",
    "en-gb-x-rp",
    "en-gb-scotland",
    "en-gb-x-gbclan",
    "en-gb-x-gbcwmd",
    "en-029",
    "en-us-nyc",
)
"""espeak-ng's English accents (the gmw voices); a variant is applied on top of one of them."""

FEMALE_VARIANTS: tuple[str, ...] = (
    "f1", "f2", "f3", "f4", "f5", "Alicia", "Andrea", "Annie", "anika", "aunty", "belinda", "linda",
    "steph", "grandma",
)  # fmt: skip
"""Variants whose espeak-ng file says ``gender female`` (robotic and duplicate ones left out)."""

MALE_VARIANTS: tuple[str, ...] = (
    "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "Andy", "Lee", "Denis", "Diogo", "Henrique", "Hugo",
    "Marco", "Storm", "antonio", "michel", "miguel", "sandro", "travis", "victor",
)  # fmt: skip
"""Variants whose espeak-ng file says ``gender male`` (robotic, demonic and croaking ones left out)."""

WHISPER_VARIANTS: tuple[str, ...] = ("whisper", "whisperf")


class SynthesisFailed(OmnievalError):
    """espeak-ng is missing or failed on a clip."""


class EspeakRecipe(BaseModel):
    """Settings of a synthesized corpus (a section of ``pipelines/train_evaluators*.yaml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["espeak"] = "espeak"
    recipe: Literal["gender", "phonation"]
    """Which attribute the labels describe."""
    root: Path
    """Corpus folder (``manifest.jsonl``, ``corpus.json``, ``audio/``)."""
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Corpus name, recorded in the card and in MLflow."""
    clips_per_label: int = Field(default=240, ge=4)
    """Clips per label; spread evenly over the label's voices."""
    female_variants: tuple[str, ...] = FEMALE_VARIANTS
    male_variants: tuple[str, ...] = MALE_VARIANTS
    accents: tuple[str, ...] = ACCENTS
    rate_wpm: tuple[int, int] = (130, 210)
    """espeak-ng speaking rate range (``-s``, words per minute), drawn uniformly per clip."""
    pitch: tuple[int, int] = (25, 75)
    """espeak-ng pitch offset range (``-p``, 0-99), drawn uniformly per clip."""
    peak_dbfs: tuple[float, float] = (-12.0, -1.0)
    """Peak level range after post-processing, in dB relative to full scale."""
    snr_db: tuple[float, float] = (25.0, 45.0)
    """White-noise signal-to-noise ratio range, in dB."""
    splits: SplitFractions = SplitFractions(train=0.6, dev=0.2, test=0.2)
    """Target shares; speakers (voices) never straddle splits."""
    seed: int = 0

    @model_validator(mode="after")
    def _ranges(self) -> EspeakRecipe:
        for name in ("rate_wpm", "pitch", "peak_dbfs", "snr_db"):
            low, high = getattr(self, name)
            if low > high:
                raise ValueError(f"{name}: lower bound {low} is above upper bound {high}")
        if not self.female_variants or not self.male_variants:
            raise ValueError("female_variants and male_variants must not be empty")
        return self

    @property
    def labels(self) -> tuple[str, ...]:
        return ("female", "male") if self.recipe == "gender" else ("modal", "whisper")


@dataclass(frozen=True)
class ClipPlan:
    """Everything that determines one clip's audio."""

    clip_id: str
    label: str
    speaker: str
    variant: str
    accent: str
    text: str
    rate_wpm: int
    pitch: int
    whisper_method: str
    """``""`` for modal speech, ``lpc`` for LPC re-synthesis, ``espeak`` for espeak-ng's whisper variants."""
    peak_dbfs: float
    snr_db: float
    noise_seed: int

    @property
    def relpath(self) -> str:
        return f"audio/{self.speaker}/{self.clip_id}.flac"


def espeak_version() -> str:
    """The espeak-ng version line (part of the corpus recipe: another build may render other bytes)."""
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise SynthesisFailed(
            "espeak-ng is not installed (Debian: apt-get install espeak-ng; `make setup` does it)"
        )
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False, timeout=30)
    return done.stdout.strip().split("  Data at")[0]


def plan_corpus(recipe: EspeakRecipe) -> list[ClipPlan]:
    """The deterministic list of clips a recipe produces (no audio rendered)."""
    rng = np.random.default_rng(recipe.seed)
    plans: list[ClipPlan] = []

    def draw(label: str, speaker: str, variant: str, whisper_method: str) -> None:
        index = len(plans)
        plans.append(
            ClipPlan(
                clip_id=f"{recipe.recipe}-{index:05d}",
                label=label,
                speaker=speaker,
                variant=variant,
                accent=str(rng.choice(list(recipe.accents))),
                text=str(rng.choice(list(SENTENCES))),
                rate_wpm=int(rng.integers(recipe.rate_wpm[0], recipe.rate_wpm[1] + 1)),
                pitch=int(rng.integers(recipe.pitch[0], recipe.pitch[1] + 1)),
                whisper_method=whisper_method,
                peak_dbfs=round(float(rng.uniform(*recipe.peak_dbfs)), 3),
                snr_db=round(float(rng.uniform(*recipe.snr_db)), 3),
                noise_seed=int(rng.integers(0, 2**31 - 1)),
            )
        )

    if recipe.recipe == "gender":
        for label, variants in (("female", recipe.female_variants), ("male", recipe.male_variants)):
            for k in range(recipe.clips_per_label):
                variant = variants[k % len(variants)]
                draw(label, variant, variant, "")
    else:
        voices = [*recipe.female_variants, *recipe.male_variants]
        # espeak-ng's whisper variants are two more (whisper-only) speakers; LPC whispers cover the rest.
        lpc_whispers = recipe.clips_per_label - 2 * max(1, recipe.clips_per_label // (len(voices) + 2))
        for k in range(recipe.clips_per_label):
            variant = voices[k % len(voices)]
            draw("modal", variant, variant, "")
        for k in range(recipe.clips_per_label):
            if k < lpc_whispers:
                variant = voices[k % len(voices)]
                draw("whisper", variant, variant, "lpc")
            else:
                variant = WHISPER_VARIANTS[k % 2]
                draw("whisper", f"espeak-{variant}", variant, "espeak")
    return plans


def _espeak(text: str, voice: str, rate: int, pitch: int, workdir: Path) -> tuple[np.ndarray, int]:
    import soundfile as sf

    binary = shutil.which("espeak-ng")
    if binary is None:
        raise SynthesisFailed("espeak-ng is not installed (Debian: apt-get install espeak-ng)")
    target = workdir / f"{hashlib.sha1(f'{voice}|{rate}|{pitch}|{text}'.encode()).hexdigest()}.wav"
    command = [binary, "-v", voice, "-s", str(rate), "-p", str(pitch), "-w", str(target), text]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0 or not target.is_file():
        raise SynthesisFailed(
            f"espeak-ng failed for voice {voice!r}: {done.stderr.strip() or done.returncode}"
        )
    samples, rate_hz = sf.read(str(target), dtype="float32")
    target.unlink()
    if samples.size == 0:
        raise SynthesisFailed(f"espeak-ng produced no audio for voice {voice!r} and text {text!r}")
    return samples, int(rate_hz)


def whisperize(
    wave: np.ndarray, rate: int, rng: np.random.Generator, *, order: int | None = None
) -> np.ndarray:
    """Turn modal speech into whisper-like speech by LPC re-synthesis with a noise excitation.

    Each 25 ms frame (50 % overlap, periodic Hann, which sums to one) is fitted with an all-pole
    model of the pre-emphasised signal; white noise filtered by that model and scaled to the frame's
    RMS replaces the frame. Voicing (the periodic source) disappears, the formant envelope stays.

    Args:
        wave: mono samples, shape ``[n]``.
        rate: sample rate in Hz.
        rng: noise source (seeded by the caller for reproducibility).
        order: LPC order; default ``2 + rate // 1000``.

    Returns:
        float32 samples, shape ``[n]``.
    """
    from scipy.linalg import solve_toeplitz
    from scipy.signal import lfilter

    x = np.asarray(wave, dtype=np.float64)
    emphasised = np.append(x[0], x[1:] - 0.97 * x[:-1])
    order = order or 2 + rate // 1000
    frame = int(0.025 * rate)
    hop = frame // 2
    window = np.hanning(frame + 1)[:-1]
    padded = np.concatenate([emphasised, np.zeros(frame)])
    original = np.concatenate([x, np.zeros(frame)])
    starts = np.arange(0, len(x), hop)
    frames = np.stack([padded[s : s + frame] for s in starts])
    # The envelope is fitted on the pre-emphasised signal (a flat noise source, like turbulence at the
    # glottis), but each frame keeps the original's loudness.
    gains = np.sqrt(np.mean(np.stack([original[s : s + frame] for s in starts]) ** 2, axis=1))
    # Autocorrelation method for all frames at once (FFT), then one Toeplitz solve per frame.
    spectrum = np.fft.rfft(frames * window, n=2 * frame, axis=1)
    autocorr = np.fft.irfft(np.abs(spectrum) ** 2, axis=1)[:, : order + 1]
    out = np.zeros(len(x) + frame)
    for k, start in enumerate(starts):
        r = autocorr[k]
        if gains[k] < 1e-5 or r[0] <= 0:
            continue
        # A tiny white-noise floor (lag-0 boost) keeps the normal equations well conditioned.
        column = r[:order].copy()
        column[0] *= 1.0 + 1e-9
        coeffs = solve_toeplitz(column, -r[1 : order + 1])
        a = np.concatenate([[1.0], coeffs])
        shaped = lfilter([1.0], a, rng.standard_normal(frame))
        shaped *= gains[k] / max(float(np.sqrt(np.mean(shaped**2))), 1e-12)
        out[start : start + frame] += window * shaped
    return out[: len(x)].astype(np.float32)


def _post_process(wave_16k: np.ndarray, plan: ClipPlan) -> np.ndarray:
    rng = np.random.default_rng(plan.noise_seed + 1)
    peak = float(np.max(np.abs(wave_16k))) or 1.0
    signal = wave_16k / peak * (10.0 ** (plan.peak_dbfs / 20.0))
    signal_rms = float(np.sqrt(np.mean(signal**2)))
    noise = rng.standard_normal(len(signal)) * signal_rms * 10.0 ** (-plan.snr_db / 20.0)
    mixed: np.ndarray = np.clip(signal + noise, -1.0, 1.0).astype(np.float32)
    return mixed


def render_clip(plan: ClipPlan, workdir: Path) -> np.ndarray:
    """Synthesize one planned clip; mono float32 at 16 kHz, shape ``[n]``."""
    variant = plan.variant
    samples, rate = _espeak(plan.text, f"{plan.accent}+{variant}", plan.rate_wpm, plan.pitch, workdir)
    if plan.whisper_method == "lpc":
        samples = whisperize(samples, rate, np.random.default_rng(plan.noise_seed))
    return _post_process(to_mono_16k(samples, rate), plan)


def recipe_digest(recipe: EspeakRecipe, plans: Sequence[ClipPlan], engine: str) -> str:
    """Identity of what a recipe renders: settings, clip plans, engine build, renderer version."""
    payload = {
        "version": SYNTH_VERSION,
        "engine": engine,
        "recipe": recipe.model_dump(mode="json", exclude={"root"}),
        "plans": [plan.__dict__ for plan in plans],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _is_current(root: Path, digest: str) -> bool:
    card_path = root / CARD_NAME
    if not card_path.is_file():
        return False
    try:
        card = CorpusCard.read(root)
        rows = read_manifest(root)
    except DataError:
        return False
    if card.recipe.get("digest") != digest:
        return False
    return all((root / row.path).is_file() and sha256_file(root / row.path) == row.sha256 for row in rows)


def synthesize_corpus(
    recipe: EspeakRecipe, *, workers: int = 2, progress: Callable[[int, int], None] | None = None
) -> Path:
    """Render the corpus of ``recipe`` into ``recipe.root`` and write its manifest and card.

    Does nothing when the folder already holds exactly this recipe's audio (checked by file hashes).
    Returns the manifest path.
    """
    import soundfile as sf

    engine = espeak_version()
    plans = plan_corpus(recipe)
    digest = recipe_digest(recipe, plans, engine)
    root = recipe.root
    if _is_current(root, digest):
        return root / "manifest.jsonl"
    audio_dir = root / "audio"
    if audio_dir.exists():
        shutil.rmtree(audio_dir)
    rows: list[ManifestRow] = []
    with tempfile.TemporaryDirectory(prefix="omnieval-espeak-") as tmp:
        workdir = Path(tmp)

        def render(plan: ClipPlan) -> ManifestRow:
            wave = render_clip(plan, workdir)
            target = root / plan.relpath
            target.parent.mkdir(parents=True, exist_ok=True)
            sf.write(str(target), wave, TARGET_RATE, format="FLAC", subtype="PCM_16")
            info = audio_info(target)
            return ManifestRow(
                path=plan.relpath,
                label=plan.label,
                speaker=plan.speaker,
                source="espeak-ng" if plan.whisper_method != "lpc" else "espeak-ng+lpc-whisper",
                sha256=sha256_file(target),
                duration_s=round(info.duration_s, 4),
                sample_rate=info.sample_rate,
                text=plan.text,
            )

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for done, row in enumerate(pool.map(render, plans), start=1):
                rows.append(row)
                if progress is not None:
                    progress(done, len(plans))
    splits = assign_splits(rows, recipe.splits, seed=recipe.seed)
    manifest = write_manifest(with_splits(rows, splits), root / "manifest.jsonl")
    what = "apparent voice gender" if recipe.recipe == "gender" else "phonation (modal vs whispered)"
    CorpusCard(
        name=recipe.name,
        feature=recipe.recipe,
        labels=recipe.labels,
        description=(
            f"Synthetic speech only: {what} rendered by espeak-ng voice variants with random English "
            "accents, "
            "texts, rates and pitch offsets; speakers are voice variants and never straddle splits."
        ),
        sources=tuple(sorted({row.source for row in rows})),
        recipe={
            "digest": digest,
            "engine": engine,
            "renderer": SYNTH_VERSION,
            "settings": recipe.model_dump(mode="json", exclude={"root"}),
        },
        synthetic=True,
    ).write(root)
    return manifest
