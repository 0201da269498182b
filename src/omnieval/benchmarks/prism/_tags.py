"""PRISM-Bench vocabulary: subsets, audio tags, dimensions and which (dimension, audio type) cells a
sample's tags activate.

Tags are ``<AUDIO TYPE>_<A|B>``: ``A`` = the sound's source is on screen, ``B`` = off screen. The
valid tag sets per subset follow the paper's appendix (7 on-screen, 7 off-screen and 15 mixed
combinations): on_screen = any non-empty set of on-screen tags; off_screen = any non-empty set of
off-screen tags; mixed = at least one on-screen and one off-screen tag, either exactly two tags (one
audio type may then be both on and off screen, e.g. a visible speaker and a narrator) or three tags
of three different audio types.

Example:
    >>> [str(c) for c in active_cells(("SPEECH_A", "MUSIC_B"))]
    ['av_coherence/speech', 'audio_quality/music', 'audio_quality/speech', 'expressiveness/music', 'expressiveness/speech', 'prompt_following/music', 'prompt_following/speech']
    >>> len(valid_tag_sets("on_screen")), len(valid_tag_sets("off_screen")), len(valid_tag_sets("mixed"))
    (7, 7, 15)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from itertools import combinations

from omnieval.benchmarks._spec import declaration_error, package_spec

SUBSETS: tuple[str, ...] = ("on_screen", "off_screen", "mixed")
AUDIO_TYPES: tuple[str, ...] = ("speech", "music", "sound")
"""The scores table's ``criterion`` values for prism rows (FORMATS.md section 3)."""


def _dimensions() -> tuple[str, ...]:
    judge = package_spec(__file__).judge
    if judge is None:
        raise declaration_error(__file__, "judge", f"{__name__} needs the judge tracks declared")
    return judge.tracks


DIMENSIONS: tuple[str, ...] = _dimensions()
"""The scores table's ``track`` values for prism rows, in the paper's order (``benchmark.yaml``:
``judge.tracks``)."""
STAGE_DIMENSIONS: dict[int, tuple[str, ...]] = {
    1: ("av_coherence", "audio_quality"),
    2: ("expressiveness", "prompt_following"),
}
"""Stage 1 is judged without the caption, stage 2 with it."""
ON_SCREEN_ONLY: frozenset[str] = frozenset({"av_coherence"})
"""Dimensions scored only for audio types whose source is on screen."""

# Which stage judges a dimension, and which are on screen only, is code; it must cover exactly the
# declared dimensions, each once, or a declared dimension would never be judged.
_STAGED: list[str] = [d for dims in STAGE_DIMENSIONS.values() for d in dims]
if sorted(_STAGED) != sorted(DIMENSIONS) or not ON_SCREEN_ONLY.issubset(DIMENSIONS):
    raise declaration_error(
        __file__,
        "judge.tracks",
        f"{__name__} judges {', '.join(_STAGED)} (on screen only: {', '.join(sorted(ON_SCREEN_ONLY))}); "
        f"declared: {', '.join(DIMENSIONS)}",
    )
TAGS: tuple[str, ...] = tuple(f"{t.upper()}_{side}" for side in ("A", "B") for t in AUDIO_TYPES)
GROUND_TRUTH = "ground_truth"
"""``system`` of ground-truth rows and ``paired_with`` of system rows."""


@dataclass(frozen=True, order=True)
class Tag:
    """One parsed tag: an audio type and whether its source is on screen."""

    audio_type: str
    on_screen: bool

    def __str__(self) -> str:
        return f"{self.audio_type.upper()}_{'A' if self.on_screen else 'B'}"


@dataclass(frozen=True, order=True)
class Cell:
    """One scored (dimension, audio type) cell."""

    dimension: str
    audio_type: str

    def __str__(self) -> str:
        return f"{self.dimension}/{self.audio_type}"


def parse_tag(text: str) -> Tag:
    """``"SPEECH_A"`` -> ``Tag("speech", True)``; raise ``ValueError`` on an unknown tag."""
    if text not in TAGS:
        raise ValueError(f"unknown tag {text!r} (expected one of {', '.join(TAGS)})")
    kind, side = text.rsplit("_", 1)
    return Tag(kind.lower(), side == "A")


def tag_set_problem(subset: str, tags: Iterable[str]) -> str | None:
    """Why ``tags`` are not a valid tag set for ``subset``, or ``None`` when they are."""
    if subset not in SUBSETS:
        return f"unknown subset {subset!r} (expected one of {', '.join(SUBSETS)})"
    tag_list = list(tags)
    if not tag_list:
        return "no active tags"
    unknown = [t for t in tag_list if t not in TAGS]
    if unknown:
        return f"unknown tag {unknown[0]!r} (expected one of {', '.join(TAGS)})"
    if len(set(tag_list)) != len(tag_list):
        return "a tag is repeated"
    if frozenset(tag_list) not in valid_tag_sets(subset):
        return f"tags {','.join(tag_list)} are not a valid combination for subset {subset}"
    return None


@cache
def valid_tag_sets(subset: str) -> frozenset[frozenset[str]]:
    """Every valid tag combination of ``subset``."""
    on = [t for t in TAGS if t.endswith("_A")]
    off = [t for t in TAGS if t.endswith("_B")]

    def nonempty(pool: list[str]) -> set[frozenset[str]]:
        return {frozenset(c) for k in range(1, len(pool) + 1) for c in combinations(pool, k)}

    if subset == "on_screen":
        return frozenset(nonempty(on))
    if subset == "off_screen":
        return frozenset(nonempty(off))
    if subset != "mixed":
        return frozenset()
    found: set[frozenset[str]] = set()
    for k in (2, 3):
        for combo in combinations(TAGS, k):
            parsed = [parse_tag(t) for t in combo]
            has_both = any(p.on_screen for p in parsed) and any(not p.on_screen for p in parsed)
            distinct_types = len({p.audio_type for p in parsed}) == k
            if has_both and (k == 2 or distinct_types):
                found.add(frozenset(combo))
    return frozenset(found)


def active_cells(tags: Iterable[str]) -> list[Cell]:
    """The (dimension, audio type) cells a sample's tags activate, sorted by dimension then type.

    AV coherence is active for an audio type only when that type has an on-screen tag; the other
    dimensions for every tagged audio type.
    """
    parsed = [parse_tag(t) for t in tags]
    types = sorted({p.audio_type for p in parsed})
    on_types = sorted({p.audio_type for p in parsed if p.on_screen})
    cells = [Cell(dim, t) for dim in DIMENSIONS for t in (on_types if dim in ON_SCREEN_ONLY else types)]
    return cells


def stage_cells(tags: Iterable[str], stage: int) -> list[Cell]:
    """The active cells judged in ``stage`` (1 or 2)."""
    dims = STAGE_DIMENSIONS[stage]
    return [c for c in active_cells(tags) if c.dimension in dims]
