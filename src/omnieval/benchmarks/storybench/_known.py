"""Omni-StoryBench's known set: the sample's ground truth beside damaged copies of it, per judge track.

The set (``known_set.json``, docs/judges.md "Judges prove themselves on a known set") takes the
first page turn of each of the sample's four books and, per track, a ground-truth variant and
damaged ones, each derived here from the dataset at check time (nothing binary is committed):

``ground_truth``
    the next page's narration, image and target spoken line (espeak-ng with the requested
    gender, speed and pitch, as the ``oracle`` system speaks it);
``shuffled_words`` (``seed``)
    the narration's words in a seeded random order (never the original order);
``wrong_name`` (``names``: ``{"Pip": "Bolt"}``)
    the narration with each named character replaced, whole words only, by another book's;
``other_page`` (``source``: an instance id of another book)
    that page's narration, image and spoken line (spoken with its own delivery);
``other_line`` (``source``)
    another book's spoken line, in this page's voice (gender, speed, pitch);
``wrong_voice`` (``gender``, ``speed``, ``pitch``)
    this page's line in another delivery;
``scrambled_tiles`` (``seed``, ``grid``)
    the next page's image cut into ``grid`` x ``grid`` tiles put back in a seeded random order;
``blank_image``
    one flat colour (the next page's image's mean colour), at its size: no scene;
``noise_image`` (``seed``)
    seeded uniform random pixels at the next page's image's size: no scene.

A variant overrides only the outputs its derivation names; a track judges the outputs it needs
(the integrated track's ``shuffled_words`` variant pairs the shuffled narration with the true
image and line). Each variant's hash is the SHA-256 of the output file a track judges (of the
per-output hashes for the integrated track).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from omnieval.benchmarks.storybench._records import TargetSpeech, Transition
from omnieval.benchmarks.storybench._tracks import NEEDS, page_turn_inputs
from omnieval.candidates import Modality, output_path
from omnieval.errors import DataError
from omnieval.hashing import sha256_bytes, sha256_file
from omnieval.judges import (
    VALUED,
    DescribeImage,
    KnownItem,
    KnownSetManifest,
    PairRule,
    ScoreKey,
    VariantScore,
    VariantScores,
    load_known_set,
    panel_identity,
    track_panel_file,
)

KNOWN_SET = Path(__file__).with_name("known_set.json")
"""The pinned manifest."""

DescribeAudio = Callable[[Path], Mapping[str, object]]
Progress = Callable[[str, int, int], None]


# -- derivations ---------------------------------------------------------------------------------


def shuffled_words(text: str, seed: int) -> str:
    """``text``'s words in a seeded random order that is never the original one.

    >>> shuffled_words("one two three four", 1) != "one two three four"
    True
    >>> sorted(shuffled_words("one two three four", 1).split())
    ['four', 'one', 'three', 'two']
    """
    words = text.split()
    if len(set(words)) < 2:
        raise DataError(f"cannot shuffle {text!r}: fewer than two different words")
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(len(words))
        shuffled = [words[int(i)] for i in order]
        if shuffled != words:
            return " ".join(shuffled)


def wrong_names(text: str, names: Mapping[str, str]) -> str:
    """``text`` with each name of ``names`` replaced (whole words; ``Pip's`` too).

    >>> wrong_names("Pip met Hazel. Pip's lantern glowed.", {"Pip": "Bolt"})
    "Bolt met Hazel. Bolt's lantern glowed."
    """
    out = text
    for old, new in names.items():
        out, count = re.subn(rf"\b{re.escape(old)}\b", new, out)
        if not count:
            raise DataError(f"wrong_name: {old!r} does not occur in the narration {text[:60]!r}")
    return out


def scrambled_tiles(source: Path, out: Path, *, seed: int, grid: int) -> None:
    """Write ``source`` cut into ``grid`` x ``grid`` tiles in a seeded non-identity order, as PNG."""
    from PIL import Image

    with Image.open(source) as img:
        rgb = np.asarray(img.convert("RGB"))
    h, w = (rgb.shape[0] // grid) * grid, (rgb.shape[1] // grid) * grid
    th, tw = h // grid, w // grid
    tiles = [rgb[r * th : (r + 1) * th, c * tw : (c + 1) * tw] for r in range(grid) for c in range(grid)]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(tiles))
    while bool((order == np.arange(len(tiles))).all()):
        order = rng.permutation(len(tiles))
    rows = [
        np.concatenate([tiles[int(order[r * grid + c])] for c in range(grid)], axis=1) for r in range(grid)
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.concatenate(rows, axis=0)).save(out, format="PNG")


def blank_image(source: Path, out: Path) -> None:
    """Write an image of ``source``'s size filled with its mean colour, as PNG."""
    from PIL import Image

    with Image.open(source) as img:
        rgb = np.asarray(img.convert("RGB"), dtype=np.float64)
    colour = np.round(rgb.reshape(-1, 3).mean(axis=0)).astype(np.uint8)
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.broadcast_to(colour, rgb.shape).copy()).save(out, format="PNG")


def noise_image(source: Path, out: Path, *, seed: int) -> None:
    """Write seeded uniform random pixels at ``source``'s size, as PNG."""
    from PIL import Image

    with Image.open(source) as img:
        size = (img.height, img.width, 3)
    pixels = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(out, format="PNG")


def _speak(line: str, speech: TargetSpeech, out: Path, **delivery: str) -> None:
    from omnieval.backends.tts import EspeakProsody, SpeechRequest, synthesize

    request = SpeechRequest(
        line,
        gender=delivery.get("gender", speech.gender),
        speed=delivery.get("speed", speech.speed),
        pitch=delivery.get("pitch", speech.pitch),
    )
    synthesize(request, out, EspeakProsody(), controlled_rate=True)


def _mean(values: Mapping[str, Any]) -> float | None:
    """Mean of a verdict's criterion scores (None for none: an unvalued or unreported verdict)."""
    numbers = [float(v) for v in values.values()]
    return sum(numbers) / len(numbers) if numbers else None


# -- the set -----------------------------------------------------------------------------------


class StorybenchKnownSet:
    """The known set bound to the dataset's transitions (a :class:`omnieval.judges.KnownSetRunner`).

    Args:
        transitions: the dataset's transitions (the items and their donors name theirs by id).
        describe_audio: the speech cascade's audio describer (the judge stage's own, so its cached
            descriptions are shared).
        describe_image: the image cascade's describer (the image and integrated tracks of the cpu
            panel), or None when no panel judged here needs one.
        source: the manifest (default :data:`KNOWN_SET`).

    Raises:
        DataError: an item or a donor names an instance the dataset does not have.
    """

    rule = PairRule()
    """Each track is judged by a copy of the panel with that track only, each variant alone."""

    def __init__(
        self,
        transitions: Sequence[Transition],
        describe_audio: DescribeAudio,
        source: Path = KNOWN_SET,
        *,
        describe_image: DescribeImage | None = None,
    ) -> None:
        self.source = Path(source)
        self.manifest: KnownSetManifest = load_known_set(self.source)
        self.describe_audio = describe_audio
        self.describe_image = describe_image
        self.by_id = {t.id: t for t in transitions}
        self.manifest.require_instances(self.by_id, self.source)

    # -- what the check asks ----------------------------------------------------------------------

    def panel_tracks(self, panel: str) -> dict[str, str | None]:
        from omnieval.judges import load_panel

        config = load_panel(panel)
        return {
            track: config.tracks[track].unavailable or None
            if track in config.tracks
            else f"panel {config.name} has no {track} track"
            for track in self.manifest.tracks()
        }

    def identity(self, panel: str) -> dict[str, Any]:
        found = panel_identity(panel, self.manifest.tracks())
        if any(t.get("input") == "cascade" for t in found["tracks"].values()):
            describer = self.describe_audio
            found["audio_describer"] = str(getattr(describer, "version", type(describer).__qualname__))
            if self.describe_image is not None:
                found["image_describer"] = str(getattr(self.describe_image, "version", ""))
        return found

    def build(self, folder: Path, tracks: Collection[str]) -> dict[str, str]:
        built: dict[str, str] = {}
        written: dict[tuple[str, str, int], str] = {}
        for item in self.manifest.items:
            tr = self.by_id[item.instance_id]
            for track in item.tracks:
                if track not in tracks:
                    continue
                ground: str | None = None
                for variant in item.variants:
                    if track not in item.variant_tracks(variant):
                        continue
                    where = (track, variant.id, tr.index)
                    if where in written:
                        raise DataError(
                            f"{self.source}: items {written[where]} and {item.id} both write "
                            f"{variant.id} of instance {tr.id} on the {track} track"
                        )
                    written[where] = item.id
                    root = folder / f"{track}.{variant.id}"
                    digest = self._write(root, tr, track, variant.derive, dict(variant.params))
                    built[f"{item.id}/{variant.id}"] = digest
                    if variant.rank == 0:
                        ground = digest
                    elif digest == ground:
                        raise DataError(
                            f"{self.source}: item {item.id}: variant {variant.id} is identical to the "
                            f"ground truth on the {track} track (its derivation changes nothing it shows)"
                        )
        return built

    def judge_variants(
        self,
        panel: str,
        folder: Path,
        items: Sequence[KnownItem],
        tracks: tuple[str, ...],
        *,
        cache_dir: Path,
        progress: Progress | None = None,
    ) -> VariantScores:
        from omnieval.judges import run_judges

        (track,) = tracks  # PairRule().tracks_apart: one track per call, its own panel copy
        variants = list(
            dict.fromkeys(v.id for i in items for v in i.variants if track in i.variant_tracks(v))
        )
        rows = list(dict.fromkeys(i.instance_id for i in items))
        result = run_judges(
            [self.by_id[r] for r in rows],
            {f"{track}.{v}": folder / f"{track}.{v}" for v in variants},
            panel=str(track_panel_file(panel, track, folder)),
            cache_dir=cache_dir,
            describe_audio=self.describe_audio,
            describe_image=self.describe_image,
            progress=progress,
            benchmark="storybench",
            reference=page_turn_inputs,
        )
        judged: dict[ScoreKey, VariantScore] = {}
        for row in result.judgments.itertuples(index=False):
            if row.track != track:
                continue
            valued = str(row.status) in VALUED
            variant = str(row.system).split(".", 1)[1]  # the system is "<track>.<variant>"
            judged[(str(row.judge), str(row.instance_id), track, variant)] = VariantScore(
                _mean(json.loads(row.scores or "{}")) if valued else None,
                str(row.status),
                str(row.note),
                _mean(json.loads(row.expected_scores or "{}")) if valued else None,
            )
        return VariantScores(
            judged,
            judges=dict(result.lineage.get("judges") or {}),
            usage=dict(result.lineage.get("usage") or {}),
            model_calls=result.model_calls,
            cache_hits=result.cache_hits,
        )

    # -- building one variant ---------------------------------------------------------------------

    def _outputs(self, tr: Transition, derive: str, params: dict[str, Any]) -> dict[Modality, Any]:
        """The outputs a derivation changes: the text as a str; the image as the picture to copy, or
        the writer ``(next image, out) -> None`` that derives it; the speech as ``(line, voice,
        delivery)``."""
        if derive == "ground_truth":
            return {}
        if derive == "shuffled_words":
            return {Modality.TEXT: shuffled_words(tr.next_text, int(params["seed"]))}
        if derive == "wrong_name":
            return {Modality.TEXT: wrong_names(tr.next_text, dict(params["names"]))}
        if derive == "other_page":
            donor = self.by_id[str(params["source"])]
            if donor.book == tr.book:
                raise DataError(f"{self.source}: other_page of {tr.id} takes a page of its own book")
            return {
                Modality.TEXT: donor.next_text,
                Modality.IMAGE: donor.next_image,
                Modality.SPEECH: (donor.target_speech.line, donor.target_speech, {}),
            }
        if derive == "other_line":
            donor = self.by_id[str(params["source"])]
            return {Modality.SPEECH: (donor.target_speech.line, tr.target_speech, {})}
        if derive == "wrong_voice":
            delivery = {k: str(params[k]) for k in ("gender", "speed", "pitch") if k in params}
            return {Modality.SPEECH: (tr.target_speech.line, tr.target_speech, delivery)}
        if derive == "scrambled_tiles":
            grid = int(params.get("grid", 4))
            return {Modality.IMAGE: partial(scrambled_tiles, seed=int(params["seed"]), grid=grid)}
        if derive == "blank_image":
            return {Modality.IMAGE: blank_image}
        if derive == "noise_image":
            return {Modality.IMAGE: partial(noise_image, seed=int(params["seed"]))}
        raise DataError(f"{self.source}: unknown derivation {derive!r}")

    def _write(self, root: Path, tr: Transition, track: str, derive: str, params: dict[str, Any]) -> str:
        from omnieval.systems import write_image, write_text

        changed = self._outputs(tr, derive, params)
        digests: list[str] = []
        for modality in NEEDS[track]:
            spec = changed.get(modality)
            if modality is Modality.TEXT:
                path = write_text(root, tr.index, spec if isinstance(spec, str) else tr.next_text)
            elif modality is Modality.IMAGE and callable(spec):
                path = output_path(root, Modality.IMAGE, tr.index)
                spec(tr.next_image, path)
            elif modality is Modality.IMAGE:
                path = write_image(root, tr.index, spec or tr.next_image)
            else:
                line, speech, delivery = spec or (tr.target_speech.line, tr.target_speech, {})
                path = output_path(root, Modality.SPEECH, tr.index)
                _speak(line, speech, path, **delivery)
            digests.append(f"{modality.value}:{sha256_file(path)}")
        if len(digests) == 1:
            return digests[0].split(":", 1)[1]
        return sha256_bytes("\n".join(digests).encode("utf-8"))


__all__ = [
    "KNOWN_SET",
    "StorybenchKnownSet",
    "blank_image",
    "noise_image",
    "scrambled_tiles",
    "shuffled_words",
    "wrong_names",
]
