"""PRISM-Bench's judge tracks and judging criteria, loaded from ``criteria.yaml`` (data, not code).

The tracks are the four dimensions (``benchmark.yaml``: ``judge.tracks``), each scored per audio
type: importing this module registers them with the judges (:func:`omnieval.judges.register_tracks`)
as :data:`JUDGE_TRACKS`, beside any other benchmark's. A stage answer scores only the audio types a
clip's tags activate, so a verdict holds some of a dimension's criteria, not all of them.

Each criterion belongs to one (dimension, audio type) cell and carries one question per visibility
it applies to: ``any`` (the type is tagged), ``on_screen`` (``<TYPE>_A``) or ``off_screen``
(``<TYPE>_B``). :func:`criteria_for` picks the questions a sample's tags activate: AV coherence only
under an on-screen tag, expressiveness with the wording of each visibility the type is tagged with.

Example:
    >>> from omnieval.benchmarks.prism._tags import Cell
    >>> [c.name for c in criteria_for(Cell("expressiveness", "speech"), ("SPEECH_B",))]
    ['emotional_delivery', 'story_contribution', 'presence']
    >>> criteria_for(Cell("av_coherence", "music"), ("MUSIC_B",))
    []
    >>> criteria_count(), len(all_criteria())
    (35, 44)
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from omnieval.benchmarks._spec import package_spec
from omnieval.benchmarks.prism._tags import AUDIO_TYPES, DIMENSIONS, ON_SCREEN_ONLY, Cell, parse_tag
from omnieval.candidates import Modality
from omnieval.errors import ConfigError
from omnieval.judges import (
    BenchmarkTracks,
    PairPanelConfig,
    TrackSpec,
    describe_pair_panel,
    load_panel_file,
    register_tracks,
)

Visibility = Literal["any", "on_screen", "off_screen"]
VISIBILITIES: tuple[Visibility, ...] = ("any", "on_screen", "off_screen")
CRITERIA_FILE = "criteria.yaml"

JUDGE_TRACKS: BenchmarkTracks = register_tracks(
    (TrackSpec(d, AUDIO_TYPES, (Modality.VIDEO,), every_criterion=False) for d in DIMENSIONS),
    benchmark=package_spec(__file__).name,
)
"""The dimensions as the judges hold them: criteria = the audio types (the scores table's
``criterion``), each judged from the candidate's clip (``video/<index>/generated.mp4``). No row ->
judge inputs function: a PRISM call shows two blinded clips, built by :mod:`._judge`."""


@dataclass(frozen=True)
class Criterion:
    """One question a judge answers for one cell, under one visibility.

    Attributes:
        dimension: ``av_coherence``, ``audio_quality``, ``expressiveness`` or ``prompt_following``.
        audio_type: ``speech``, ``music`` or ``sound``.
        name: short snake_case name, unique within its cell.
        visibility: which tag activates this wording (``any``, ``on_screen``, ``off_screen``).
        question: the one-line question put to the judge.
    """

    dimension: str
    audio_type: str
    name: str
    visibility: Visibility
    question: str

    @property
    def cell(self) -> Cell:
        return Cell(self.dimension, self.audio_type)


@dataclass(frozen=True)
class DimensionInfo:
    """A dimension's display title and the one-line focus shown to judges."""

    name: str
    title: str
    focus: str


@dataclass(frozen=True)
class CriteriaBook:
    """Everything in ``criteria.yaml``: version, dimension texts and every criterion wording."""

    version: int
    dimensions: dict[str, DimensionInfo]
    criteria: tuple[Criterion, ...]
    sha256: str


def _problem(where: str, message: str) -> ConfigError:
    return ConfigError(f"prism {CRITERIA_FILE}: {where}: {message}")


def parse_criteria(raw: Any, text_sha256: str = "") -> CriteriaBook:
    """Validate the parsed YAML and build the book; raise ConfigError naming the offending entry."""
    if not isinstance(raw, dict) or not isinstance(raw.get("dimensions"), dict):
        raise _problem("(top level)", "expected a mapping with 'version' and 'dimensions'")
    version = raw.get("version")
    if not isinstance(version, int):
        raise _problem("version", "expected an integer")
    dims = raw["dimensions"]
    if list(dims) != list(DIMENSIONS):
        raise _problem(
            "dimensions", f"expected exactly {', '.join(DIMENSIONS)} in that order, got {', '.join(dims)}"
        )
    infos: dict[str, DimensionInfo] = {}
    out: list[Criterion] = []
    for dim in DIMENSIONS:
        body = dims[dim]
        if not isinstance(body, dict):
            raise _problem(dim, "expected a mapping")
        unknown = sorted(set(body) - {"title", "focus", *AUDIO_TYPES})
        if unknown:
            raise _problem(dim, f"unknown key(s) {', '.join(unknown)}")
        for key in ("title", "focus"):
            if not isinstance(body.get(key), str) or not body[key].strip():
                raise _problem(f"{dim}.{key}", "expected non-empty text")
        infos[dim] = DimensionInfo(dim, body["title"].strip(), body["focus"].strip())
        for audio_type in AUDIO_TYPES:
            items = body.get(audio_type)
            if not isinstance(items, list) or not items:
                raise _problem(f"{dim}.{audio_type}", "expected a non-empty list of criteria")
            names: set[str] = set()
            for i, item in enumerate(items):
                where = f"{dim}.{audio_type}[{i}]"
                if not isinstance(item, dict):
                    raise _problem(where, "expected a mapping")
                name = item.get("name")
                if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
                    raise _problem(where, "'name' must be a snake_case identifier")
                if name in names:
                    raise _problem(where, f"name {name!r} repeated in the cell")
                names.add(name)
                extra = sorted(set(item) - {"name", *VISIBILITIES})
                if extra:
                    raise _problem(where, f"unknown key(s) {', '.join(extra)}")
                given = [v for v in VISIBILITIES if v in item]
                if not given:
                    raise _problem(where, "give a question under any, on_screen or off_screen")
                if "any" in given and len(given) > 1:
                    raise _problem(where, "'any' excludes on_screen/off_screen")
                if dim in ON_SCREEN_ONLY and given != ["on_screen"]:
                    raise _problem(where, f"{dim} criteria apply on screen only")
                for visibility in given:
                    question = item[visibility]
                    if not isinstance(question, str) or not question.strip():
                        raise _problem(f"{where}.{visibility}", "expected a non-empty question")
                    out.append(Criterion(dim, audio_type, name, visibility, " ".join(question.split())))
    return CriteriaBook(version, infos, tuple(out), text_sha256)


@functools.cache
def load_criteria() -> CriteriaBook:
    """The shipped criteria (read once per process)."""
    import yaml

    text = resources.files("omnieval.benchmarks.prism").joinpath(CRITERIA_FILE).read_text(encoding="utf-8")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"prism {CRITERIA_FILE}: not valid YAML: {exc}") from None
    return parse_criteria(raw, hashlib.sha256(text.encode("utf-8")).hexdigest())


def all_criteria() -> tuple[Criterion, ...]:
    """Every criterion wording (one per criterion and visibility)."""
    return load_criteria().criteria


def criteria_count() -> int:
    """Distinct criteria: (dimension, audio type, name), however many wordings each has."""
    return len({(c.dimension, c.audio_type, c.name) for c in all_criteria()})


def dimension_info(dimension: str) -> DimensionInfo:
    return load_criteria().dimensions[dimension]


def criteria_for(cell: Cell, tags: Iterable[str]) -> list[Criterion]:
    """The criterion wordings a sample with ``tags`` activates for ``cell``, in file order.

    A type tagged both on and off screen (e.g. a visible speaker and a narrator) gets both wordings
    of a split criterion, on-screen first.
    """
    parsed = [parse_tag(t) for t in tags]
    on = any(p.on_screen and p.audio_type == cell.audio_type for p in parsed)
    off = any(not p.on_screen and p.audio_type == cell.audio_type for p in parsed)
    active: set[str] = set()
    if on or off:
        active.add("any")
    if on:
        active.add("on_screen")
    if off and cell.dimension not in ON_SCREEN_ONLY:
        active.add("off_screen")
    rank = {v: i for i, v in enumerate(VISIBILITIES)}
    chosen = [
        c
        for c in all_criteria()
        if c.dimension == cell.dimension and c.audio_type == cell.audio_type and c.visibility in active
    ]
    names = list(dict.fromkeys(c.name for c in chosen))
    return sorted(chosen, key=lambda c: (names.index(c.name), rank[c.visibility]))


# -- judge panels (``panels/*.yaml``) -------------------------------------------------------------


class FactsConfig(BaseModel):
    """How the cascade measures its facts."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    asr_model: str = "whisper-tiny.en"
    """Packaged Whisper name or a local CTranslate2 folder (transcripts for samples with speech)."""


class ComposeConfig(BaseModel):
    """How a native panel's blinded clips are made (see :class:`~._compose.ComposeSpec`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    media: Literal["separate", "pair"] = "separate"
    """``separate``: two files (clip1, clip2), as the paper sends them; ``pair``: one joined file."""
    soundtracks: bool = True
    """Also attach each clip's audio as an audio part (servers that drop a video's audio track); never
    for a judge whose backend hears a video's own track, where the sound stays aligned with the frames."""
    width: int | None = Field(default=None, ge=16)
    height: int | None = Field(default=None, ge=16)
    fps: float | None = Field(default=None, gt=0)


class PrismPanelConfig(PairPanelConfig):
    """A PRISM-Bench judge panel: the judges' pair panel, with how facts and blinded clips are made."""

    facts: FactsConfig = FactsConfig()
    compose: ComposeConfig = ComposeConfig()


PRISM_PANELS = {
    "ablation": "ablation.yaml",
    "cpu-cascade": "cpu-cascade.yaml",
    "omni": "omni.yaml",
    "paper": "paper.yaml",
}


def prism_panel_names() -> list[str]:
    return sorted(PRISM_PANELS)


def load_prism_panel(name: str | Path) -> PrismPanelConfig:
    """A shipped PRISM panel by name, or a panel YAML file by path; ConfigError when invalid."""
    return load_panel_file(
        PrismPanelConfig, name, PRISM_PANELS, "omnieval.benchmarks.prism", "prism judge panel"
    )


def describe_prism_panels() -> list[dict[str, Any]]:
    """Each shipped panel as ``omnieval judge panels`` lists it (every dimension, the same judges)."""
    return [describe_pair_panel(n, load_prism_panel(n), DIMENSIONS) for n in prism_panel_names()]
