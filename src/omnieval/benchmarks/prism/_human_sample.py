"""Which pairs raters see: the PRISM-Bench human study's stratified sample, as Label Studio tasks.

The paper's appendix D allocates pairs by valid tag combination, not by sampling each subset at
random: per subset it enumerates the valid combinations of active tags (7 on screen, 7 off screen,
15 mixed) and samples four items of each, so a rare combination is covered as well as a frequent
one (28 + 28 + 60 items). :func:`stratified_pairs` draws that sample from a dataset and makes one
blind GT-versus-system task per (sampled item, system), in the shape that
``label_studio/two_stage.xml`` shows (``data``: ``num``, ``instance_id``, ``subset``, ``tags``,
``caption``, ``video1``, ``video2``). Which system a task shows and which clip is the ground truth
(``system``, ``order``) are never in a task: they are the study's key (:meth:`PairSample.key`),
which :func:`~omnieval.benchmarks.prism._human.apply_key` puts back into the export before
:func:`~omnieval.benchmarks.prism._human.parse_two_stage_export` reads it.

Determinism: each stratum is drawn with its own generator seeded by (seed, subset, tags), so a run
with the same seed and dataset gives the same tasks, and adding items of one combination changes
no other combination's draw. Every sampled item is paired with every listed system (the
model-vs-model agreement needs several systems on the same item). Which clip is ``video1`` is the
judge's blind order for that pair (:func:`~omnieval.benchmarks.prism._compose.pair_order`), so a
rater sees a pair as the judge did.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks._human_tasks import named_twice, seeded_rng
from omnieval.benchmarks.prism._compose import pair_order
from omnieval.benchmarks.prism._record import candidate_video
from omnieval.benchmarks.prism._tags import GROUND_TRUTH, SUBSETS, TAGS, valid_tag_sets
from omnieval.errors import DataError

if TYPE_CHECKING:
    # What the sampler reads of an instance is what judging reads: one protocol for both.
    from omnieval.benchmarks.prism._judge import PrismInstanceLike

PAIRS_PER_COMBINATION = 4
"""Items sampled per (subset, valid tag combination) in the paper's human study (appendix D)."""


STUDY = "prism-human-preference"
"""The ``study`` a key file names: what ``human-tasks prism labels`` accepts as this study's key."""


@dataclass(frozen=True)
class PairTask:
    """One blind GT-versus-system pair: what raters see (:meth:`data`) and the key (:meth:`key`).

    Attributes:
        num: Task number, 1-based: the only link between a task and its key entry.
        instance_id: The item (the scores table's id).
        subset: Its subset.
        tags: Its active tags, canonical order, comma-joined.
        caption: Its caption.
        system: The system compared with the ground truth (key only).
        order: ``gt_first`` (video1 is the ground truth) or ``system_first`` (key only).
        video1: The clip shown first (None when no candidate folders were given).
        video2: The clip shown second.
    """

    num: int
    instance_id: str
    subset: str
    tags: str
    caption: str
    system: str
    order: str
    video1: Path | None = None
    video2: Path | None = None

    def data(self, clip_url: Callable[[int, int, Path], str] | None = None) -> dict[str, Any]:
        """The Label Studio task data: never the system nor the order, which live in the key.

        ``clip_url(num, slot, path)`` turns a clip into what Label Studio loads (default: the path).
        """
        data: dict[str, Any] = {
            "num": self.num,
            "instance_id": self.instance_id,
            "subset": self.subset,
            "tags": self.tags,
            "caption": self.caption,
        }
        for slot, clip in ((1, self.video1), (2, self.video2)):
            if clip is not None:
                data[f"video{slot}"] = clip_url(self.num, slot, clip) if clip_url else clip.as_posix()
        return data

    def key(self) -> dict[str, str]:
        """The key entry: which system the pair shows and which clip is the ground truth."""
        return {"instance_id": self.instance_id, "system": self.system, "order": self.order}


@dataclass(frozen=True)
class PairSample:
    """A drawn sample: the pairs and the strata the dataset could not fill.

    Attributes:
        pairs: One per (item, system), by subset, combination, item, system.
        items: ``"<subset>:<TAG,TAG>"`` -> ids of the sampled items, sorted.
        shortfall: ``"<subset>:<TAG,TAG>"`` -> items missing to reach the quota (only short strata).
    """

    pairs: tuple[PairTask, ...]
    items: Mapping[str, tuple[str, ...]]
    shortfall: Mapping[str, int]

    def tasks(self, clip_url: Callable[[int, int, Path], str] | None = None) -> list[dict[str, Any]]:
        """Label Studio tasks (``{"data": ...}``), blind: see :meth:`PairTask.data`."""
        return [{"data": pair.data(clip_url)} for pair in self.pairs]

    def key(self, **about: Any) -> dict[str, Any]:
        """The study's key document: ``{"study", **about, "tasks": {"<num>": {"instance_id",
        "system", "order"}}}``; ``about`` records how it was drawn (seed, dataset, systems...)."""
        return {"study": STUDY, **about, "tasks": {str(p.num): p.key() for p in self.pairs}}


def _tag_text(tags: Sequence[str]) -> str:
    """Tags in the canonical order, comma-joined (``SPEECH_A,MUSIC_B``)."""
    present = set(tags)
    return ",".join(t for t in TAGS if t in present)


def stratified_pairs(
    instances: Sequence[PrismInstanceLike],
    systems: Sequence[str],
    *,
    per_combination: int = PAIRS_PER_COMBINATION,
    seed: int = 0,
    candidates: Mapping[str, Path] | None = None,
) -> PairSample:
    """Draw ``per_combination`` items per (subset, valid tag combination) and make the tasks.

    Args:
        instances: The dataset's instances (a subset of the dataset is fine: strata it cannot fill
            are reported in ``shortfall``, never padded from another stratum).
        systems: The systems each sampled item is compared with the ground truth for.
        per_combination: Items per stratum (the paper: 4).
        seed: Seeds the draw and the blind order (the judge's ``metrics.order_seed`` keeps the
            raters' order equal to the judge's).
        candidates: System -> candidate folder; when given, each pair's ``video1``/``video2`` are
            the two clips (``<folder>/video/<index>/generated.mp4`` and the reference) in blind
            order, else they are None (tasks without media).

    Raises:
        DataError: no system, a system named twice or named ``ground_truth``, a non-positive
            quota, or, when ``candidates`` is given, a system without a candidate folder or a
            linked candidate clip that does not exist.
    """
    if not systems:
        raise DataError("stratified_pairs: name at least one system to compare with the ground truth")
    twice = named_twice(systems)
    if twice:
        raise DataError(f"stratified_pairs: system(s) named twice: {', '.join(twice)}")
    if GROUND_TRUTH in systems:
        raise DataError(
            f"stratified_pairs: {GROUND_TRUTH!r} is the reference side of every pair, not a system"
        )
    if per_combination < 1:
        raise DataError(f"stratified_pairs: per_combination must be at least 1, got {per_combination}")
    if candidates is not None:
        missing = sorted(set(systems) - set(candidates))
        if missing:
            raise DataError(f"stratified_pairs: no candidate folder for {', '.join(missing)}")
    by_stratum: dict[str, list[PrismInstanceLike]] = {}
    for inst in instances:
        by_stratum.setdefault(f"{inst.subset}:{_tag_text(inst.active_tags)}", []).append(inst)
    pairs: list[PairTask] = []
    items: dict[str, tuple[str, ...]] = {}
    shortfall: dict[str, int] = {}
    for subset in SUBSETS:
        strata = sorted(
            (f"{subset}:{_tag_text(tuple(tags))}" for tags in valid_tag_sets(subset)),
            key=lambda s: (s.count(","), [TAGS.index(t) for t in s.split(":", 1)[1].split(",")]),
        )
        for stratum in strata:
            pool = sorted(by_stratum.get(stratum, []), key=lambda i: i.id)
            chosen = sorted(
                seeded_rng("prism-human-sample", seed, stratum).sample(pool, min(per_combination, len(pool))),
                key=lambda i: i.id,
            )
            items[stratum] = tuple(i.id for i in chosen)
            if len(chosen) < per_combination:
                shortfall[stratum] = per_combination - len(chosen)
            for inst in chosen:
                for system in systems:
                    pairs.append(_pair(len(pairs) + 1, inst, system, seed, candidates))
    if candidates is not None:
        _check_clips(pairs, {inst.id: inst.index for inst in instances})
    return PairSample(tuple(pairs), items, shortfall)


def _check_clips(pairs: Sequence[PairTask], rows: Mapping[str, int]) -> None:
    """Refuse tasks that link a candidate clip that is not there: a rater would get a broken player.
    (The reference clips are the dataset's, checked when it was loaded.)

    Raises:
        DataError: one problem per missing clip, naming the system, the instance and the path.
    """
    problems = []
    for pair in pairs:
        clip = pair.video1 if pair.order == "system_first" else pair.video2
        if clip is not None and not clip.is_file():
            problems.append(
                f"system {pair.system}, instance {pair.instance_id} (row {rows[pair.instance_id]}): no clip at {clip}"
            )
    if problems:
        raise DataError(
            f"stratified_pairs: {len(problems)} linked candidate clip(s) do not exist "
            "(a candidate folder holds <folder>/video/<index>/generated.mp4)",
            problems,
        )


def _pair(
    num: int,
    inst: PrismInstanceLike,
    system: str,
    seed: int,
    candidates: Mapping[str, Path] | None,
) -> PairTask:
    order = pair_order(seed, system, inst.id)
    clips: dict[str, Path | None] = {"candidate": None, "reference": None}
    if candidates is not None:
        clips = {
            "candidate": candidate_video(Path(candidates[system]), inst.index),
            "reference": inst.reference_video,
        }
    return PairTask(
        num=num,
        instance_id=inst.id,
        subset=inst.subset,
        tags=_tag_text(inst.active_tags),
        caption=inst.caption,
        system=system,
        order="system_first" if order.first == "candidate" else "gt_first",
        video1=clips[order.role(1)],
        video2=clips[order.role(2)],
    )


__all__ = ["PAIRS_PER_COMBINATION", "STUDY", "PairSample", "PairTask", "stratified_pairs"]
