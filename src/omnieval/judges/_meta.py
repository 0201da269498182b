"""Meta-evaluation: a judge proves itself on a pinned set whose right answers are known.

A benchmark ships a small **known set** (a committed JSON manifest): items drawn from its bundled
sample, each a graded list of *variants* of one instance's ground truth: the ground truth itself
(rank 0) and damaged copies of it (rank 1: shuffled words, a wrong character name, another book's
page, muted or swapped audio, a frozen picture...). Every variant names how it is derived
(``derive`` + ``params``, so the damaged media are rebuilt deterministically at check time and no
binary is committed) and the SHA-256 of what that derivation gave when the set was pinned. The set's
hash is the SHA-256 of the manifest's canonical JSON.

Each pair of variants of one item with different ranks, on a track both variants are listed for, is
a **known pair**: the better-ranked variant should score strictly above the other. A benchmark
builds the variants and has a panel's judges score them through its ordinary judge runner (the same
response cache and call accounting as a run), handing back :class:`VariantScores`; its
:class:`PairRule` says what differs (a call per track or one for all, variants judged alone or each
beside the ground truth, how a missing verdict is explained). :func:`judge_known_set`, the one
known-set judging for every benchmark, makes one :class:`PairVerdict` per (judge, track, pair), and
this module turns them into figures per judge and track:

``accuracy``
    Share of known pairs where the better variant scored strictly above the worse one. A **tie
    counts as wrong**, and so does a pair where either side got no valid verdict (parse error,
    inference error): a judge that cannot tell the ground truth from its damaged copy has not
    passed that pair.
``agreement``
    Kendall's tau (tau-a) between the known order and the judge's scores over the same pairs:
    (concordant - discordant) / pairs, in [-1, 1]. Ties and pairs without a valid verdict count 0,
    so a constant judge gets 0 and a judge that always prefers the damaged copy -1.

``expected``
    The same two figures on the probability-weighted scores (``judge_expected``), where the judge
    reports them (the llama.cpp skeleton decoder): a coarse judge whose greedy scores tie (10 and
    10) may still rank the pair by its own probabilities. Shown beside the greedy figures; the floor
    applies to the greedy accuracy, since the leaderboard averages greedy scores.

A judge and track with ``accuracy`` below its **floor** (default :data:`DEFAULT_FLOOR`, per track or
judge in the suite's ``judges.meta_eval``) is ``below_floor``. A judge whose model cannot run here
(every verdict ``not_applicable``) is ``unavailable`` and has no figure.

:func:`check_known_set` runs the check once per judge checkpoint: its result is cached under a key
made of the judges' identity (model, revision, weights, settings, prompts), the set's hash and the
hashes of the variants as built, so a rerun with the same judges makes no model call (and changing
a floor re-reads the cached verdicts).

Example (the accuracy arithmetic on four pairs: right, tie, wrong, right):
    >>> v = [PairVerdict("j", "text", "i", "gt", "bad", b, w) for b, w in ((9, 2), (5, 5), (3, 8), (7, 6))]
    >>> figures = pair_figures(v)
    >>> figures.accuracy, figures.agreement, figures.ties
    (0.5, 0.25, 1)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from omnieval.backends.llm import merge_usage_json, usage_table
from omnieval.errors import DataError, validation_problems

log = logging.getLogger(__name__)

META_FORMAT = 1
"""Version of the manifest layout and of the cached result documents."""
METHOD_VERSION = "meta-eval/2"
"""Changes when the figures are computed differently (part of the result cache key)."""
DEFAULT_FLOOR = 0.7
"""Lowest accuracy on the known set a judge may have on a track before the nightly distrusts it."""
VALUED = frozenset({"ok", "repaired"})
"""Statuses of a judge record that carry a score."""

PairStatus = Literal["ok", "invalid", "unavailable"]

TIE_RULE = (
    "accuracy counts a tie, and a pair without a valid verdict on either side, as wrong; "
    "agreement (Kendall's tau-a over the same pairs) counts them 0"
)


# -- the manifest ---------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_ID = r"^[A-Za-z0-9_.-]+$"


class KnownVariant(_Strict):
    """One candidate output of a known-set item: the ground truth or a damaged copy of it."""

    id: str = Field(pattern=_ID)
    """Unique within its item (``ground_truth``, ``shuffled_words``, ...)."""
    rank: int = Field(ge=0)
    """Known quality order within the item: 0 is best; a lower rank must score strictly higher."""
    derive: str = Field(min_length=1)
    """How the benchmark builds it from the dataset (its builder's name for the derivation)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The derivation's pinned parameters (seed, donor instance, names, voice, ...)."""
    tracks: tuple[str, ...] | None = None
    """The item's tracks on which this variant's rank is known (None: all of the item's tracks)."""
    sha256: str = ""
    """SHA-256 of the built output when the set was pinned ('' until pinned)."""


class KnownItem(_Strict):
    """One instance of the sample with its ranked variants."""

    id: str = Field(pattern=_ID)
    instance_id: str = Field(min_length=1)
    """The dataset instance the variants are built from (and judged against)."""
    tracks: tuple[str, ...] = Field(min_length=1)
    """Judge tracks the item tests."""
    variants: tuple[KnownVariant, ...] = Field(min_length=2)

    @model_validator(mode="after")
    def _consistent(self) -> KnownItem:
        ids = [v.id for v in self.variants]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"variant id(s) listed twice: {', '.join(repeated)}")
        for v in self.variants:
            extra = sorted(set(v.tracks or ()) - set(self.tracks))
            if extra:
                raise ValueError(f"variant {v.id}: track(s) {', '.join(extra)} are not the item's")
        if not any(self._pairs(t) for t in self.tracks):
            raise ValueError("no two variants with different ranks on any track: nothing is known")
        return self

    def variant_tracks(self, variant: KnownVariant) -> tuple[str, ...]:
        return variant.tracks if variant.tracks is not None else self.tracks

    def _pairs(self, track: str) -> list[tuple[KnownVariant, KnownVariant]]:
        on = [v for v in self.variants if track in self.variant_tracks(v)]
        return [(a, b) for a in on for b in on if a.rank < b.rank]

    def pairs(self, track: str) -> list[tuple[KnownVariant, KnownVariant]]:
        """(better, worse) variant pairs whose order is known on ``track``."""
        return self._pairs(track)


class KnownSetManifest(_Strict):
    """A benchmark's pinned meta-evaluation set (see the module docstring)."""

    format: Literal[1]
    benchmark: str = Field(min_length=1)
    name: str = Field(pattern=_ID)
    description: str = ""
    dataset: str = ""
    """The dataset whose instances the items name (the benchmark's bundled sample)."""
    seed: int = 0
    """Seed of the benchmark's random choices not pinned per variant (e.g. PRISM's blind order)."""
    items: tuple[KnownItem, ...] = Field(min_length=1)

    @field_validator("items")
    @classmethod
    def _unique(cls, items: tuple[KnownItem, ...]) -> tuple[KnownItem, ...]:
        ids = [i.id for i in items]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"item id(s) listed twice: {', '.join(repeated)}")
        return items

    def sha256(self) -> str:
        """The set's hash: SHA-256 of the manifest's canonical JSON (pinned hashes included)."""
        return _sha256_json(self.model_dump(mode="json"))

    def tracks(self) -> tuple[str, ...]:
        """Every track some item tests, in first-seen order."""
        return tuple(dict.fromkeys(t for item in self.items for t in item.tracks))

    def require_instances(self, known: Collection[str], source: Path) -> None:
        """Raise :class:`DataError` naming every instance the items (or their ``source`` params)
        name that ``known`` (the dataset's instance ids) lacks."""
        named = [i.instance_id for i in self.items] + [
            str(v.params["source"]) for i in self.items for v in i.variants if "source" in v.params
        ]
        missing = sorted({n for n in named if n not in known})
        if missing:
            raise DataError(
                f"{source}: the known set names instances the dataset does not have "
                f"(is this the bundled sample?): {', '.join(missing)}"
            )

    def known_pairs(self, tracks: Collection[str] | None = None) -> list[KnownPair]:
        """Every known pair, optionally on ``tracks`` only."""
        out: list[KnownPair] = []
        for item in self.items:
            for track in item.tracks:
                if tracks is not None and track not in tracks:
                    continue
                out.extend(KnownPair(item.id, track, a.id, b.id) for a, b in item.pairs(track))
        return out


@dataclass(frozen=True)
class KnownPair:
    """Two variants of one item whose order on ``track`` is known (``better`` above ``worse``)."""

    item: str
    track: str
    better: str
    worse: str


def _sha256_json(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_known_set(path: Path) -> KnownSetManifest:
    """Read and validate a known-set manifest; DataError naming the file and the field on any problem."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: known-set manifest not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read: {exc}") from None
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None
    try:
        return KnownSetManifest.model_validate(raw)
    except ValidationError as exc:
        raise DataError(validation_problems(f"{path}: invalid known-set manifest", exc)) from None


def pin_known_set(path: Path, built: Mapping[str, str]) -> KnownSetManifest:
    """Write ``built`` (``"<item>/<variant>"`` -> SHA-256) into the manifest at ``path`` as its pins.

    Run after a deliberate change of the set or of how variants are built; review, then commit.
    Variants absent from ``built`` keep their pinned hash.
    """
    from omnieval.jsonio import write_json_atomic

    manifest = load_known_set(path)
    data = manifest.model_dump(mode="json", exclude_none=True)
    for item in data["items"]:
        for variant in item["variants"]:
            variant["sha256"] = built.get(f"{item['id']}/{variant['id']}", variant.get("sha256", ""))
    pinned = KnownSetManifest.model_validate(data)
    write_json_atomic(path, pinned.model_dump(mode="json", exclude_none=True), ensure_ascii=False)
    return pinned


# -- verdicts and figures ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PairVerdict:
    """What one judge made of one known pair on one track.

    Attributes:
        judge: the judge id.
        track: the judge track.
        item: the known-set item id.
        better: the variant known to be better.
        worse: the variant known to be worse.
        better_score: the judge's score of ``better`` (its scale; None: no valid verdict).
        worse_score: the same for ``worse``.
        status: ``ok`` (both scored), ``invalid`` (a side has no valid verdict: counted as wrong),
            ``unavailable`` (the judge could not run here: no figure).
        note: why, when not ``ok``.
        better_expected: the probability-weighted score of ``better`` (None: not reported).
        worse_expected: the same for ``worse``.
    """

    judge: str
    track: str
    item: str
    better: str
    worse: str
    better_score: float | None
    worse_score: float | None
    status: PairStatus = "ok"
    note: str = ""
    better_expected: float | None = None
    worse_expected: float | None = None

    @property
    def outcome(self) -> Literal["correct", "tie", "wrong", "invalid", "unavailable"]:
        return self._compare(self.better_score, self.worse_score)

    @property
    def expected_outcome(self) -> Literal["correct", "tie", "wrong", "invalid", "unavailable"]:
        """The outcome on the probability-weighted scores (``invalid`` when either is not reported)."""
        return self._compare(self.better_expected, self.worse_expected)

    def _compare(
        self, better: float | None, worse: float | None
    ) -> Literal["correct", "tie", "wrong", "invalid", "unavailable"]:
        if self.status != "ok" or better is None or worse is None:
            return "unavailable" if self.status == "unavailable" else "invalid"
        if better > worse:
            return "correct"
        return "tie" if better == worse else "wrong"


@dataclass(frozen=True)
class VariantScore:
    """One judge's score of one known-set variant on one track, as one call of the benchmark's judge
    runner gave it.

    Attributes:
        score: the variant's score on the track, on the judge's own scale (storybench: the mean of
            the verdict's criteria; PRISM: the mean of the dimension's active cells in the call);
            None when the call carries no valid score.
        status: the judge record's status (``ok``, ``repaired``, ``parse_error``, ``not_applicable``...).
        note: the record's note (why, when it is not valued).
        expected: the probability-weighted score on the same scale (None: not reported).
    """

    score: float | None
    status: str
    note: str = ""
    expected: float | None = None


ScoreKey = tuple[str, str, str, str]
"""``(judge, instance id, track, variant)`` of a :class:`VariantScore`."""


@dataclass
class VariantScores:
    """What one call of a benchmark's judge runner made of the known-set variants it was given.

    Attributes:
        judged: ``(judge, instance, track, variant)`` -> the variant's score in the call that judged it.
        beside: for pairwise judging (:attr:`PairRule.paired_with`), ``(judge, instance, track,
            variant)`` -> the score the variant shown beside ``variant`` got in that same call.
        judges: judge id -> its lineage entry (model, revision, weights) as the run resolved it.
        usage: judge id -> usage entry (calls, cached calls, tokens, seconds), as the runner counted.
        model_calls: requests sent to a model.
        cache_hits: requests answered from the response cache.
    """

    judged: dict[ScoreKey, VariantScore]
    beside: dict[ScoreKey, VariantScore] = field(default_factory=dict)
    judges: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    model_calls: int = 0
    cache_hits: int = 0


InvalidNote = Callable[[KnownPair, VariantScore | None, VariantScore | None], str]
"""Why a known pair has no verdict, from its (better, worse) sides (None: the side was never judged)."""


def missing_sides(pair: KnownPair, better: VariantScore | None, worse: VariantScore | None) -> str:
    """Why a pair has no verdict: each side without a score, with its status.

    >>> missing_sides(KnownPair("i", "text", "gt", "bad"), VariantScore(9.0, "ok"), None)
    'bad: not judged'
    """
    parts: list[str] = []
    for name, side in ((pair.better, better), (pair.worse, worse)):
        if side is None or side.score is None or not math.isfinite(side.score):
            parts.append(f"{name}: {(side.status if side is not None else '') or 'not judged'}")
    return "; ".join(parts)


@dataclass(frozen=True)
class PairRule:
    """How a benchmark's judging puts a known pair's two variants side by side: what differs between
    benchmarks, as facts (:func:`judge_known_set` does the rest).

    Attributes:
        tracks_apart: each track is judged by its own call of the runner (its judges may differ per
            track); False: one call scores every track of the set.
        paired_with: the variant every call shows beside the judged one (e.g. the ground truth in a
            blind pair): its score on a pair is the other side of the call that judged the pair's other
            variant. None: each variant is judged alone and has one score per judge and track.
        unavailable_note: the pair's note when a ``not_applicable`` side has none of its own.
        invalid_note: why a pair has no verdict (default :func:`missing_sides`).
    """

    tracks_apart: bool = True
    paired_with: str | None = None
    unavailable_note: str = "not applicable"
    invalid_note: InvalidNote = missing_sides


def pair_verdict(
    judge: str, pair: KnownPair, instance: str, scores: VariantScores, rule: PairRule
) -> PairVerdict:
    """One judge's verdict on one known pair of ``instance`` from the runner's ``scores``.

    A side whose status is ``not_applicable`` makes the pair ``unavailable``; a side without a
    finite score makes it ``invalid`` (``rule.invalid_note`` says why); otherwise the two scores (and
    their probability-weighted scores, where reported) are the verdict's.

    >>> found = VariantScores({("j", "x", "text", "gt"): VariantScore(9.0, "ok"),
    ...                        ("j", "x", "text", "bad"): VariantScore(None, "parse_error")})
    >>> v = pair_verdict("j", KnownPair("i", "text", "gt", "bad"), "x", found, PairRule())
    >>> v.status, v.note
    ('invalid', 'bad: parse_error')
    """

    def side(variant: str, against: str) -> VariantScore | None:
        # The variant shown beside every other has no call of its own: its score is the other side
        # of the call that judged the variant it is compared with.
        if variant == rule.paired_with:
            return scores.beside.get((judge, instance, pair.track, against))
        return scores.judged.get((judge, instance, pair.track, variant))

    better, worse = side(pair.better, pair.worse), side(pair.worse, pair.better)
    sides = (pair.better, pair.worse)
    for found in (better, worse):
        if found is not None and found.status == "not_applicable":
            why = found.note or rule.unavailable_note
            return PairVerdict(judge, pair.track, pair.item, *sides, None, None, "unavailable", why)
    values = (better.score if better is not None else None, worse.score if worse is not None else None)
    if better is None or worse is None or any(v is None or not math.isfinite(v) for v in values):
        why = rule.invalid_note(pair, better, worse)
        return PairVerdict(judge, pair.track, pair.item, *sides, values[0], values[1], "invalid", why)
    return PairVerdict(
        judge,
        pair.track,
        pair.item,
        *sides,
        values[0],
        values[1],
        better_expected=better.expected,
        worse_expected=worse.expected,
    )


@dataclass(frozen=True)
class PairFigures:
    """Counts and figures over a judge's verdicts on one track (see the module docstring)."""

    n_pairs: int
    correct: int
    ties: int
    wrong: int
    invalid: int
    accuracy: float | None
    agreement: float | None


def pair_figures(verdicts: Iterable[PairVerdict], *, expected: bool = False) -> PairFigures:
    """Accuracy (ties and invalid pairs wrong) and Kendall's tau-a over ``verdicts`` (unavailable
    pairs left out; None figures when no pair is left); ``expected``: on the probability-weighted
    scores instead of the greedy ones."""
    counts = {"correct": 0, "tie": 0, "wrong": 0, "invalid": 0}
    for v in verdicts:
        outcome = v.expected_outcome if expected else v.outcome
        if outcome != "unavailable":
            counts[outcome] += 1
    n = sum(counts.values())
    return PairFigures(
        n_pairs=n,
        correct=counts["correct"],
        ties=counts["tie"],
        wrong=counts["wrong"],
        invalid=counts["invalid"],
        accuracy=counts["correct"] / n if n else None,
        agreement=(counts["correct"] - counts["wrong"]) / n if n else None,
    )


class FloorSettings(Protocol):
    """The suite's ``judges.meta_eval`` block as the floors read it."""

    @property
    def floor(self) -> float: ...

    @property
    def floors(self) -> Mapping[str, float]: ...


@dataclass(frozen=True)
class Floors:
    """Accuracy floors: ``default``, overridden per ``<judge>/<track>``, ``<judge>`` or ``<track>``
    (looked up in that order).

    >>> Floors(0.7, {"speech": 0.5, "j1/speech": 0.6}).floor_for("j1", "speech")
    0.6
    """

    default: float = DEFAULT_FLOOR
    overrides: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: FloorSettings | None) -> Floors:
        if settings is None:
            return cls()
        return cls(float(settings.floor), dict(settings.floors))

    def floor_for(self, judge: str, track: str) -> float:
        for key in (f"{judge}/{track}", judge, track):
            if key in self.overrides:
                return float(self.overrides[key])
        return self.default


def summarize(verdicts: Sequence[PairVerdict], floors: Floors) -> dict[str, dict[str, Any]]:
    """Judge -> track -> ``{"status", "n_pairs", "correct", "ties", "wrong", "invalid", "accuracy",
    "agreement", "floor", "passed", "by_variant", "expected"}`` (``by_variant``: the damaged variant
    -> its ``n_pairs``, ``correct`` and ``accuracy``, to see which damage a judge misses;
    ``expected``: the figures on probability-weighted scores, only where every judged pair has them).

    ``status``: ``ok``, ``below_floor``, or ``unavailable`` (no pair could be judged here; then the
    figures are None and ``reason`` says why).
    """
    grouped: dict[str, dict[str, list[PairVerdict]]] = {}
    for v in verdicts:
        grouped.setdefault(v.judge, {}).setdefault(v.track, []).append(v)
    out: dict[str, dict[str, Any]] = {}
    for judge in sorted(grouped):
        for track, group in grouped[judge].items():
            figures = pair_figures(group)
            floor = floors.floor_for(judge, track)
            entry: dict[str, Any] = {**asdict(figures), "floor": floor}
            if figures.accuracy is None:
                notes = sorted({v.note for v in group if v.note})
                entry.update(status="unavailable", passed=None, reason="; ".join(notes) or "not judged")
            else:
                passed = figures.accuracy >= floor
                entry.update(status="ok" if passed else "below_floor", passed=passed)
                by_variant: dict[str, dict[str, Any]] = {}
                for name in dict.fromkeys(v.worse for v in group):
                    part = pair_figures(v for v in group if v.worse == name)
                    if part.n_pairs:
                        by_variant[name] = {
                            "n_pairs": part.n_pairs,
                            "correct": part.correct,
                            "accuracy": part.accuracy,
                        }
                entry["by_variant"] = by_variant
                # Probability-weighted figures only where every judged pair has them on both sides.
                judged = [v for v in group if v.outcome in ("correct", "tie", "wrong")]
                if judged and all(
                    v.better_expected is not None and v.worse_expected is not None for v in judged
                ):
                    weighted = pair_figures(group, expected=True)
                    entry["expected"] = {
                        "n_pairs": weighted.n_pairs,
                        "correct": weighted.correct,
                        "ties": weighted.ties,
                        "accuracy": weighted.accuracy,
                        "agreement": weighted.agreement,
                    }
                invalid = sorted({f"{v.item}: {v.note}" for v in group if v.status == "invalid" and v.note})
                if invalid:
                    entry["invalid_pairs"] = invalid[:20]
            out.setdefault(judge, {})[track] = entry
    return out


# -- what a benchmark supplies ------------------------------------------------------------------


@dataclass
class JudgedSet:
    """A panel's verdicts on a known set (:func:`judge_known_set`).

    Attributes:
        verdicts: one per (judge, track, known pair) the panel judges.
        judges: judge id -> its lineage entry (model, revision, weights) as the run resolved it.
        unavailable: track -> why this panel has no judge for it (no verdicts then).
        model_calls: requests sent to a model (0 when every answer came from the response cache).
        cache_hits: requests answered from the response cache.
        usage: judge id -> usage entry (calls, cached calls, tokens, seconds), as the runner counted.
    """

    verdicts: list[PairVerdict]
    judges: dict[str, Any] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    model_calls: int = 0
    cache_hits: int = 0
    usage: dict[str, Any] = field(default_factory=dict)


Progress = Callable[[str, int, int], None]


class KnownSetRunner(Protocol):
    """A benchmark's known set, bound to its dataset: what :func:`check_known_set` drives.

    A benchmark returns one from :meth:`omnieval.benchmarks.Benchmark.known_set`; this package names
    no benchmark. The benchmark supplies what differs (building the variants, its judge runner, the
    :class:`PairRule`); :func:`judge_known_set` turns the runner's scores into verdicts for all.
    """

    @property
    def manifest(self) -> KnownSetManifest: ...

    @property
    def source(self) -> Path:
        """The manifest file (``omnieval judge pin-known-set`` rewrites its hashes)."""
        ...

    @property
    def rule(self) -> PairRule:
        """How the benchmark's judging compares a pair's two variants."""
        ...

    def panel_tracks(self, panel: str) -> dict[str, str | None]:
        """The set's tracks -> None when ``panel`` judges the track, else why it does not (loads the
        panel, no model)."""
        ...

    def identity(self, panel: str) -> dict[str, Any]:
        """Everything about ``panel``'s judges that changes their answers (models, revisions, weights,
        settings, prompt hashes), found without a model call."""
        ...

    def build(self, folder: Path, tracks: Collection[str]) -> dict[str, str]:
        """Write every variant of the items testing ``tracks`` under ``folder``; return
        ``"<item>/<variant>"`` -> SHA-256 of what was built."""
        ...

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
        """One call of the benchmark's judge runner: ``panel`` judges the variants of ``items`` on
        ``tracks`` as built in ``folder`` (through the response cache in ``cache_dir``)."""
        ...


def judge_known_set(
    runner: KnownSetRunner,
    panel: str,
    folder: Path,
    *,
    cache_dir: Path,
    tracks: Collection[str],
    progress: Progress | None = None,
) -> JudgedSet:
    """Judge the known set's variants built in ``folder`` with ``panel`` and return a verdict per
    (judge, track, known pair) of ``tracks``: the one known-set judging every benchmark uses.

    The runner is called once per track (``runner.rule.tracks_apart``) or once for every track; a
    judge found in a call gets a verdict on every known pair that call covers (:func:`pair_verdict`),
    in call, judge (sorted), item, track and pair order.

    Args:
        runner: the benchmark's known set.
        panel: the panel's name (or a panel YAML path) as the benchmark's judging takes it.
        folder: where :meth:`KnownSetRunner.build` wrote the variants.
        cache_dir: the response cache folder.
        tracks: the tracks to judge (the others are left out).
        progress: ``progress(label, done, total)`` in model calls.

    Returns:
        The verdicts, the judges' lineage (first call's entry per judge), model calls and cache hits
        summed over calls, and the usage table (one call's as it reported it; several summed per judge).
    """
    rule = runner.rule
    wanted = tuple(t for t in runner.manifest.tracks() if t in tracks)
    calls = [(t,) for t in wanted] if rule.tracks_apart else [wanted]
    verdicts: list[PairVerdict] = []
    judged = JudgedSet(verdicts)
    usages: list[dict[str, Any]] = []
    for batch in calls:
        items = [i for i in runner.manifest.items if set(i.tracks) & set(batch)]
        scores = runner.judge_variants(panel, folder, items, batch, cache_dir=cache_dir, progress=progress)
        judged.model_calls += scores.model_calls
        judged.cache_hits += scores.cache_hits
        for jid, info in scores.judges.items():
            judged.judges.setdefault(jid, info)
        usages.append(scores.usage)
        for judge in sorted({k[0] for k in scores.judged} | {k[0] for k in scores.beside}):
            for item in items:
                for track in (t for t in item.tracks if t in batch):
                    for better, worse in item.pairs(track):
                        pair = KnownPair(item.id, track, better.id, worse.id)
                        verdicts.append(pair_verdict(judge, pair, item.instance_id, scores, rule))
    # A runner's usage table is already normalized (usage_table); only several calls need summing.
    judged.usage = dict(usages[0]) if len(usages) == 1 else usage_table(merge_usage_json(*usages))
    return judged


def judge_identity(judge: Any) -> dict[str, Any]:
    """What changes one judge's answers, without a model call: its id, the backend settings that
    change outputs, decoding, framing and the model as it would load (model, revision, weights
    digest), or why it cannot be identified here. ``judge`` is a panel's judge config (any benchmark's:
    ``id``, ``backend``, ``model``, ``revision``, ``decoding``, ``framing``)."""
    from omnieval.backends.llm import BackendError, backend_identity, output_fingerprint

    entry: dict[str, Any] = {
        "id": judge.id,
        "backend": output_fingerprint(judge.backend),
        "decoding": judge.decoding.model_dump(mode="json"),
        "framing": judge.framing.model_dump(mode="json"),
    }
    try:
        found = backend_identity(judge.backend, model=judge.model, revision=judge.revision)
    except BackendError as exc:
        entry["unavailable"] = str(exc)
    else:
        entry.update(model=found.model, revision=found.revision, weights=found.weights_digest)
    return entry


def panel_identity(panel: str, tracks: Collection[str]) -> dict[str, Any]:
    """What changes the answers of a registered-tracks panel's judges on ``tracks``, without a model
    call: per (track, judge) the model as it would load (model, revision, weights digest), the
    backend settings that change outputs, decoding, framing, the track's input and prompt hash; the
    repair model likewise. A judge whose model cannot be identified here records why.
    """
    from omnieval.judges._panels import load_panel, pin_revisions
    from omnieval.judges._registry import judge_registry
    from omnieval.judges._rubrics import repair_prompt_sha256, template

    registry = judge_registry()
    config = pin_revisions(load_panel(panel), {k: v.revision for k, v in registry.items() if v.revision})

    out: dict[str, Any] = {"panel": config.name, "tracks": {}}
    for track_name in sorted(tracks):
        cfg = config.tracks.get(track_name)
        if cfg is None or not cfg.judges:
            continue
        out["tracks"][track_name] = {
            "input": cfg.input,
            "prompt_sha256": template(track_name, cfg.variant).sha256(),
            "judges": [judge_identity(j) for j in cfg.judges],
        }
    if config.repair is not None:
        out["repair"] = {**judge_identity(config.repair), "prompt_sha256": repair_prompt_sha256()}
    return out


def track_panel_file(panel: str, track: str, folder: Path) -> Path:
    """A copy of a registered-tracks panel with only ``track`` (its repair model kept), written as
    YAML under ``folder``: judging one track's variants then makes no call for the others (an
    integrated variant holds every output the other tracks read). The answers' cache keys do not
    name the panel, so they are the full panel's."""
    import yaml

    from omnieval.judges._panels import load_panel

    data = load_panel(panel).model_dump(mode="json")
    data["tracks"] = {track: data["tracks"][track]}
    data["include"] = []
    path = Path(folder) / "panels" / f"{track}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


# -- the check ----------------------------------------------------------------------------------


def result_key(manifest: KnownSetManifest, identity: Mapping[str, Any], built: Mapping[str, str]) -> str:
    """The result cache key: method, the set's hash, the judges' identity and the built variants."""
    return _sha256_json(
        {
            "format": META_FORMAT,
            "method": METHOD_VERSION,
            "set": manifest.sha256(),
            "identity": identity,
            "built": dict(sorted(built.items())),
        }
    )


def _pin_report(manifest: KnownSetManifest, built: Mapping[str, str]) -> dict[str, Any]:
    """How the built variants compare with the pinned hashes (a mismatch is reported, not fatal:
    a TTS or codec version can change bytes without changing what a judge should prefer)."""
    matched = 0
    mismatched: list[str] = []
    unpinned: list[str] = []
    for item in manifest.items:
        for variant in item.variants:
            name = f"{item.id}/{variant.id}"
            if name not in built:
                continue
            if not variant.sha256:
                unpinned.append(name)
            elif variant.sha256 == built[name]:
                matched += 1
            else:
                mismatched.append(f"{name}: pinned {variant.sha256[:12]}, built {built[name][:12]}")
    return {"matched": matched, "mismatched": mismatched, "unpinned": unpinned}


def _verdicts_from_json(rows: Sequence[Mapping[str, Any]]) -> list[PairVerdict]:
    return [PairVerdict(**dict(row)) for row in rows]


def check_known_set(
    runner: KnownSetRunner,
    panel: str,
    *,
    cache_dir: Path,
    floors: Floors | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run ``panel``'s judges on the known set (once per judge checkpoint) and grade them.

    Args:
        runner: the benchmark's known set (:meth:`~omnieval.benchmarks.Benchmark.known_set`).
        panel: the panel's name (or a panel YAML path) as the benchmark's judging takes it.
        cache_dir: the shared cache folder: the response cache (``<cache_dir>/judges``, the one the
            judge stage uses, so usage and cache hits are the run's own) and the results
            (``<cache_dir>/meta_eval/<key>.json``).
        floors: accuracy floors (default :data:`DEFAULT_FLOOR` everywhere).
        progress: ``progress(label, done, total)`` in model calls.

    Returns:
        The check document: ``benchmark``, ``panel``, ``set`` (``name``, ``sha256``, ``items``,
        ``pairs``), ``floor``, ``judges`` (judge -> track -> figures, :func:`summarize`),
        ``unavailable`` (track -> why), ``below_floor`` (``[{"judge", "track", "accuracy", "floor",
        "n_pairs"}]``), ``passed``, ``checked`` (judge/track figures computed), ``model_calls``,
        ``cache_hits``, ``reused`` (the result came from the result cache), ``key``, ``pins``
        (built vs pinned hashes), ``identity`` (judge id -> model, revision, weights), ``usage``
        and ``rule`` (how ties count).
    """
    import tempfile

    from omnieval.jsonio import write_json_atomic

    floors = floors or Floors()
    manifest = runner.manifest
    availability = runner.panel_tracks(panel)
    judged = [t for t, why in availability.items() if why is None]
    unavailable = {t: str(why) for t, why in availability.items() if why is not None}
    results = Path(cache_dir) / "meta_eval"
    with tempfile.TemporaryDirectory(prefix="omnieval-known-set-") as scratch:
        folder = Path(scratch)
        built = runner.build(folder, judged) if judged else {}
        identity = runner.identity(panel)
        key = result_key(manifest, identity, built)
        target = results / f"{key}.json"
        cached: dict[str, Any] | None = None
        if target.is_file():
            try:
                cached = json.loads(target.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                cached = None  # a damaged entry is judged again (the answers come from the cache)
        if cached is not None and cached.get("format") == META_FORMAT:
            verdicts = _verdicts_from_json(cached.get("verdicts") or [])
            judged_set = JudgedSet(
                verdicts,
                dict(cached.get("judges") or {}),
                {**unavailable, **dict(cached.get("unavailable") or {})},
                0,
                0,
                dict(cached.get("usage") or {}),
            )
            reused = True
        else:
            judged_set = (
                judge_known_set(
                    runner,
                    panel,
                    folder,
                    cache_dir=Path(cache_dir) / "judges",
                    tracks=judged,
                    progress=progress,
                )
                if judged
                else JudgedSet([])
            )
            judged_set.unavailable = {**unavailable, **judged_set.unavailable}
            reused = False
            # Results that are all "unavailable" are not kept: the judge may run here tomorrow.
            if any(v.status != "unavailable" for v in judged_set.verdicts):
                target.parent.mkdir(parents=True, exist_ok=True)
                write_json_atomic(
                    target,
                    {
                        "format": META_FORMAT,
                        "key": key,
                        "panel": panel,
                        "set_sha256": manifest.sha256(),
                        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                        "identity": identity,
                        "built": built,
                        "verdicts": [asdict(v) for v in judged_set.verdicts],
                        "judges": judged_set.judges,
                        "unavailable": judged_set.unavailable,
                        "model_calls": judged_set.model_calls,
                        "cache_hits": judged_set.cache_hits,
                        "usage": judged_set.usage,
                    },
                    sort_keys=True,
                    ensure_ascii=False,
                )
    judges = summarize(judged_set.verdicts, floors)
    below = [
        {
            "judge": judge,
            "track": track,
            "accuracy": entry["accuracy"],
            "floor": entry["floor"],
            "n_pairs": entry["n_pairs"],
        }
        for judge, tracks in judges.items()
        for track, entry in tracks.items()
        if entry["status"] == "below_floor"
    ]
    checked = sum(1 for tracks in judges.values() for e in tracks.values() if e["accuracy"] is not None)
    document: dict[str, Any] = {
        "benchmark": manifest.benchmark,
        "panel": panel,
        "set": {
            "name": manifest.name,
            "sha256": manifest.sha256(),
            "items": sum(1 for i in manifest.items if set(i.tracks) & set(judged)),
            "pairs": len(manifest.known_pairs(judged)),
        },
        "floor": floors.default,
        "judges": judges,
        "unavailable": judged_set.unavailable,
        "below_floor": below,
        "passed": not below,
        "checked": checked,
        "model_calls": judged_set.model_calls,
        "cache_hits": judged_set.cache_hits,
        "reused": reused,
        "key": key,
        "pins": _pin_report(manifest, built),
        "identity": {
            jid: {k: info.get(k) for k in ("model", "revision", "weights_digest") if k in info}
            for jid, info in judged_set.judges.items()
        },
        "usage": judged_set.usage,
        "rule": TIE_RULE,
    }
    log.info(
        "known-set check of panel %s: %d judge/track figures, %d below floor, %d model calls%s",
        panel,
        checked,
        len(below),
        judged_set.model_calls,
        " (result reused)" if reused else "",
    )
    return document


# -- health.json, the verdict and MLflow ------------------------------------------------------------


def merge_meta_eval(health: Mapping[str, Any], documents: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``health.json`` with a ``meta_eval`` section from :func:`check_known_set` documents (by panel).

    The section: ``judges`` (``"<panel>/<judge>"`` -> track -> figures, the key ``health.json``'s
    ``judges`` uses), ``below_floor`` (the same, with ``judge`` as ``"<panel>/<judge>"``),
    ``panels`` (panel -> set name and hash, ``unavailable`` tracks, ``model_calls``, ``cache_hits``,
    ``reused``, ``pins``, ``usage``; or ``error`` when the check could not run) and ``rule``.
    """
    judges: dict[str, Any] = {}
    below: list[dict[str, Any]] = []
    panels: dict[str, Any] = {}
    for panel, doc in documents.items():
        if "error" in doc:
            panels[panel] = {"error": str(doc["error"])}
            continue
        for judge, tracks in (doc.get("judges") or {}).items():
            judges[f"{panel}/{judge}"] = tracks
        below.extend({**b, "judge": f"{panel}/{b['judge']}"} for b in doc.get("below_floor") or [])
        panels[panel] = {
            "set": doc.get("set"),
            "unavailable": doc.get("unavailable") or {},
            "model_calls": doc.get("model_calls", 0),
            "cache_hits": doc.get("cache_hits", 0),
            "reused": doc.get("reused", False),
            "key": doc.get("key"),
            "pins": doc.get("pins"),
            "identity": doc.get("identity"),
            "usage": doc.get("usage") or {},
        }
    return {
        **health,
        "meta_eval": {"judges": judges, "below_floor": below, "panels": panels, "rule": TIE_RULE},
    }


def meta_eval_failures(health: Mapping[str, Any] | None) -> list[str]:
    """One reason per judge and track below its floor (and per panel whose check could not run),
    from a ``health.json`` (empty when none).

    >>> meta_eval_failures({"meta_eval": {"below_floor": [{"judge": "cpu/j", "track": "text",
    ...     "accuracy": 0.5, "floor": 0.7, "n_pairs": 12}]}})
    ['judge cpu/j below its floor on the known set: track text accuracy 0.50 < 0.70 (12 pairs)']
    """
    section = (health or {}).get("meta_eval") or {}
    reasons: list[str] = []
    for panel, info in (section.get("panels") or {}).items():
        if isinstance(info, Mapping) and info.get("error"):
            first = str(info["error"]).splitlines()[0]
            reasons.append(f"judge check on the known set could not run for panel {panel}: {first}")
    for entry in section.get("below_floor") or []:
        accuracy = entry.get("accuracy")
        shown = f"{accuracy:.2f}" if isinstance(accuracy, int | float) else "n/a"
        reasons.append(
            f"judge {entry.get('judge')} below its floor on the known set: track {entry.get('track')} "
            f"accuracy {shown} < {float(entry.get('floor', DEFAULT_FLOOR)):.2f} ({entry.get('n_pairs')} pairs)"
        )
    return reasons


def meta_eval_metrics(health: Mapping[str, Any] | None) -> tuple[dict[str, float], dict[str, str]]:
    """MLflow metrics and tags of a ``health.json``'s ``meta_eval`` section.

    Metrics ``meta_eval.<panel>.<judge>.<track>.{accuracy, agreement, floor, passed, n_pairs}`` and,
    where the judge reports probabilities, ``accuracy_expected`` / ``agreement_expected``
    (unavailable tracks have none); tags ``omnieval.meta_eval.<panel>.set_sha256`` and
    ``omnieval.meta_eval.below_floor`` (``<panel>/<judge>/<track>`` list, or ``none``).

    >>> m, t = meta_eval_metrics({"meta_eval": {"judges": {"cpu/j": {"text": {"accuracy": 0.75,
    ...     "agreement": 0.5, "floor": 0.7, "passed": True, "n_pairs": 4}}}, "below_floor": [],
    ...     "panels": {"cpu": {"set": {"sha256": "ab"}}}}})
    >>> m["meta_eval.cpu.j.text.accuracy"], m["meta_eval.cpu.j.text.passed"], t["omnieval.meta_eval.below_floor"]
    (0.75, 1.0, 'none')
    """
    from omnieval.judges._calls import mlflow_tag_part

    section = (health or {}).get("meta_eval") or {}
    metrics: dict[str, float] = {}
    for key, tracks in (section.get("judges") or {}).items():
        panel, _, judge = str(key).rpartition("/")
        for track, entry in tracks.items():
            if entry.get("accuracy") is None:
                continue
            prefix = mlflow_tag_part(
                f"meta_eval.{panel}.{judge}.{track}" if panel else f"meta_eval.{judge}.{track}"
            )
            for name in ("accuracy", "agreement", "floor", "n_pairs"):
                value = entry.get(name)
                if isinstance(value, int | float) and math.isfinite(float(value)):
                    metrics[f"{prefix}.{name}"] = float(value)
            metrics[f"{prefix}.passed"] = 1.0 if entry.get("passed") else 0.0
            for name in ("accuracy", "agreement"):
                value = (entry.get("expected") or {}).get(name)
                if isinstance(value, int | float) and math.isfinite(float(value)):
                    metrics[f"{prefix}.{name}_expected"] = float(value)
    tags: dict[str, str] = {}
    for panel, info in (section.get("panels") or {}).items():
        sha = ((info or {}).get("set") or {}).get("sha256")
        if sha:
            tags[mlflow_tag_part(f"omnieval.meta_eval.{panel}.set_sha256")] = str(sha)
    if section:
        failed = [f"{b.get('judge')}/{b.get('track')}" for b in section.get("below_floor") or []]
        tags["omnieval.meta_eval.below_floor"] = ",".join(failed)[:250] if failed else "none"
    return metrics, tags


__all__ = [
    "DEFAULT_FLOOR",
    "TIE_RULE",
    "VALUED",
    "FloorSettings",
    "Floors",
    "JudgedSet",
    "KnownItem",
    "KnownPair",
    "KnownSetManifest",
    "KnownSetRunner",
    "KnownVariant",
    "PairFigures",
    "PairRule",
    "PairVerdict",
    "ScoreKey",
    "VariantScore",
    "VariantScores",
    "check_known_set",
    "judge_identity",
    "judge_known_set",
    "load_known_set",
    "merge_meta_eval",
    "meta_eval_failures",
    "meta_eval_metrics",
    "missing_sides",
    "pair_figures",
    "pair_verdict",
    "panel_identity",
    "pin_known_set",
    "summarize",
    "track_panel_file",
]
