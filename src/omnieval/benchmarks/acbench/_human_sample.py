"""Which clips people label: OmniACBench's class-balanced human-validation subset (the paper's Table 4).

The paper checks its trained evaluators against people on "a class-balanced subset of Emotion,
Global Accent, and Timbre": 130 benchmark instances (60 / 30 / 40), each instance's generated speech
from two models under two conditions (Original and Oracle), 520 clips, five annotations per clip.
This module draws that subset and lays out the blind labelling tasks; it reads and writes no file
(``_human_cli.py`` does, and ``_analyses.py`` reads the annotations back).

**Draw** (:func:`class_balanced_sample`). Per feature the total is split equally over the feature's
classes as the dataset has them (the target values its instances carry: 6 emotions, 3 accents and
4 timbres in a complete dataset), so the paper's totals give 10 instances per class in each feature.
A total that does not split equally is an error (pick a multiple of the number of classes). A class
with fewer instances than its share is an error listing every short class, unless
``take_short`` is set: then all of that class's instances are taken and :attr:`ClassDraw.shortfall`
says how many are missing; a short class is never padded from another.

**Determinism.** Each (feature, class) is drawn from its own generator seeded by (seed, feature,
class) out of the class's instances sorted by id, and the drawn ids are sorted again; so the same
seed and dataset give the same subset whatever the manifest's line order, and adding instances to
one class changes no other class's draw.

**Blind order** (:func:`blind_clips`). Every drawn instance yields one clip per (system, condition).
A feature's clips are shuffled with a generator seeded by (seed, feature) and numbered in that order
(``emotion-0001``, ...); a task names only that number and the audio, so neither the system, the
condition nor the target shows. The study key (:func:`study_key`) maps each number back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol
from xml.sax.saxutils import escape, quoteattr

from pydantic import BaseModel, ConfigDict, Field, field_validator

from omnieval.benchmarks._human_tasks import named_twice, seeded_rng
from omnieval.benchmarks.acbench._record import FEATURES, canonical_feature
from omnieval.errors import DataError

ABSTRACT_FEATURES: tuple[str, ...] = ("emotion", "accent", "timbre")
"""The features the paper validates against people: those its trained evaluators score."""

PAPER_TOTALS: dict[str, int] = {"emotion": 60, "accent": 30, "timbre": 40}
"""Instances per feature in the paper's human validation (130 in all)."""

PAPER_CONDITIONS: tuple[str, ...] = ("original", "oracle")
"""The two input conditions of the paper's human validation."""

STUDY = "acbench-human-validation"
"""``study`` field of the key file (what the label reader checks it was given)."""

AUDIO_OBJECT = "audio"
"""Name of the labelling config's ``<Audio>`` object and the task data field holding the clip's URL."""

LABEL_CONTROL = "label"
"""``from_name`` of the labelling config's ``<Choices>`` control: the class a rater heard."""

TASK_FIELD = "task"
"""Task data field holding the blind task id (``emotion-0001``); Label Studio's own ids change on import."""

QUESTIONS: dict[str, str] = {
    "emotion": "Which emotion does the speaker's voice express?",
    "accent": "Which accent does the speaker have?",
    "timbre": "Who is speaking: which age group and gender does the voice sound like?",
}
"""What the labelling config asks per feature."""


class LabelledInstance(Protocol):
    """What the draw reads of an instance (:class:`~omnieval.benchmarks.acbench._record.AcbenchInstance`)."""

    @property
    def index(self) -> int: ...

    @property
    def id(self) -> str: ...

    @property
    def feature(self) -> str: ...

    @property
    def target_value(self) -> str: ...


class HumanSampleConfig(BaseModel):
    """How the human-validation subset is drawn; the defaults are the paper's design."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    totals: dict[str, int] = Field(default_factory=lambda: dict(PAPER_TOTALS))
    """Feature -> instances drawn, split equally over the feature's classes (0 leaves it out).
    Keys are features of :data:`ABSTRACT_FEATURES` in any spelling the loader accepts
    (``global_accent`` is ``accent``); a feature not named is not drawn."""
    seed: int = 0
    """Seeds the draw of each class and the blind order of each feature's clips."""
    take_short: bool = False
    """A class with fewer instances than its share gives all it has (reported) instead of an error."""

    @field_validator("totals")
    @classmethod
    def _features(cls, totals: dict[str, int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, total in totals.items():
            feature = canonical_feature(name)
            if feature not in ABSTRACT_FEATURES:
                raise ValueError(
                    f"{name!r} is not a feature people validate here (one of {', '.join(ABSTRACT_FEATURES)})"
                )
            if feature in out:
                raise ValueError(f"{name!r} names {feature} a second time")
            if total < 0:
                raise ValueError(f"{feature}: total {total} is negative")
            out[feature] = total
        if not any(out.values()):
            raise ValueError("no feature has a positive total")
        # The paper's feature order, whatever order the caller gave.
        return {f: out[f] for f in ABSTRACT_FEATURES if out.get(f)}


@dataclass(frozen=True)
class ClassDraw:
    """The drawn instances of one (feature, class).

    Attributes:
        feature: Canonical feature key.
        target_value: The class (the instances' target value).
        wanted: The class's share of the feature's total (instances).
        available: Instances of this class in the dataset.
        instances: The drawn instances, sorted by id (``wanted`` of them unless short).
    """

    feature: str
    target_value: str
    wanted: int
    available: int
    instances: tuple[LabelledInstance, ...]

    @property
    def shortfall(self) -> int:
        """Instances missing to reach ``wanted`` (0 unless the class is short)."""
        return self.wanted - len(self.instances)


@dataclass(frozen=True)
class BalancedSample:
    """A drawn subset: one :class:`ClassDraw` per (feature, class), features in the paper's order.

    Attributes:
        config: What was asked.
        draws: Per feature, its classes in the dataset's declared order.
        absent_classes: Feature -> declared classes the dataset has no instance of (not drawn, and
            not counted when the total is split).
    """

    config: HumanSampleConfig
    draws: tuple[ClassDraw, ...]
    absent_classes: Mapping[str, tuple[str, ...]]

    @property
    def features(self) -> tuple[str, ...]:
        """The drawn features, in order."""
        return tuple(dict.fromkeys(d.feature for d in self.draws))

    def of(self, feature: str) -> tuple[ClassDraw, ...]:
        """The class draws of ``feature``."""
        return tuple(d for d in self.draws if d.feature == feature)

    def instances(self, feature: str | None = None) -> tuple[LabelledInstance, ...]:
        """The drawn instances (of one feature, or all), by feature, class and id."""
        return tuple(i for d in self.draws if feature in (None, d.feature) for i in d.instances)

    @property
    def short(self) -> tuple[ClassDraw, ...]:
        """The classes that gave fewer instances than their share (only with ``take_short``)."""
        return tuple(d for d in self.draws if d.shortfall)


@dataclass(frozen=True)
class BlindClip:
    """One clip to label: what raters see (``task``, the audio) and what only the key holds.

    Attributes:
        task: Blind task id, ``<feature>-<number>`` in the shuffled order (``emotion-0001``).
        feature: The feature raters judge.
        target_value: The instance's class (the right answer).
        instance_id: Dataset id.
        index: The instance's row (candidate index).
        system: The system that generated the clip.
        condition: The input condition it was generated under.
    """

    task: str
    feature: str
    target_value: str
    instance_id: str
    index: int
    system: str
    condition: str


def _split_problem(feature: str, total: int, classes: Sequence[str]) -> str:
    n = len(classes)
    lower, upper = total // n * n, (total // n + 1) * n
    nearest = f"{lower} or {upper}" if lower else str(upper)
    return (
        f"{feature}: a total of {total} does not split equally over its {n} classes "
        f"({', '.join(classes)}); give a multiple of {n}, e.g. {nearest}"
    )


def class_balanced_sample(
    instances: Sequence[LabelledInstance], config: HumanSampleConfig | None = None
) -> BalancedSample:
    """Draw the class-balanced human-validation subset (see the module docstring).

    Args:
        instances: The dataset's instances (any order; ids unique). Instances of other features are
            ignored.
        config: Totals per feature, seed, and whether short classes are allowed; default the paper's
            60 emotion / 30 accent / 40 timbre, seed 0, no short class.

    Returns:
        The draw; with a dataset holding at least ``total / classes`` instances of every class, each
        class gives exactly that many (10 per class with the paper's totals).

    Raises:
        DataError: duplicate ids; a total that does not split equally over the feature's classes; a
            feature the dataset has no instance of, or classes with too few instances (each listed,
            with how many it has and how many it needs), unless ``take_short``.

    Example:
        >>> from types import SimpleNamespace as I
        >>> data = [I(index=n, id=f"a{n}", feature="accent", target_value=v)
        ...         for n, v in enumerate(["UK", "India", "Australia"] * 3)]
        >>> sample = class_balanced_sample(data, HumanSampleConfig(totals={"accent": 6}))
        >>> [(d.target_value, len(d.instances)) for d in sample.draws]
        [('Australia', 2), ('India', 2), ('UK', 2)]
    """
    config = config or HumanSampleConfig()
    duplicates = sorted(i for i, n in Counter(inst.id for inst in instances).items() if n > 1)
    if duplicates:
        raise DataError(f"class_balanced_sample: duplicate instance ids: {', '.join(duplicates[:10])}")
    pools: dict[tuple[str, str], list[LabelledInstance]] = {}
    for inst in instances:
        pools.setdefault((inst.feature, inst.target_value), []).append(inst)
    problems: list[str] = []
    draws: list[ClassDraw] = []
    absent: dict[str, tuple[str, ...]] = {}
    for feature, total in config.totals.items():
        declared = FEATURES[feature]
        classes = [c for c in declared if (feature, c) in pools]
        if set(classes) != set(declared):
            absent[feature] = tuple(c for c in declared if c not in classes)
        if not classes:
            if not config.take_short:
                problems.append(f"{feature}: the dataset has no {feature} instance (wanted {total})")
            continue
        if total % len(classes):
            problems.append(_split_problem(feature, total, classes))
            continue
        share = total // len(classes)
        for value in classes:
            pool = sorted(pools[(feature, value)], key=lambda i: i.id)
            if len(pool) < share and not config.take_short:
                problems.append(f"{feature} / {value}: {len(pool)} instance(s), {share} needed")
            chosen = seeded_rng("acbench-human-sample", config.seed, feature, value).sample(
                pool, min(share, len(pool))
            )
            draws.append(
                ClassDraw(feature, value, share, len(pool), tuple(sorted(chosen, key=lambda i: i.id)))
            )
    if problems:
        raise DataError(
            "cannot draw the class-balanced human-validation subset "
            "(equal instances per class within each feature; --take-short takes what a short class has)",
            problems,
        )
    return BalancedSample(config, tuple(draws), absent)


def blind_clips(
    sample: BalancedSample, systems: Sequence[str], conditions: Sequence[str]
) -> dict[str, tuple[BlindClip, ...]]:
    """The clips of each drawn feature in blind order, numbered in that order.

    Args:
        sample: The drawn subset.
        systems: Systems whose generated speech is labelled (each drawn instance, each system).
        conditions: Input conditions labelled (the paper: ``original`` and ``oracle``).

    Returns:
        Feature -> its clips (instances x systems x conditions), shuffled with the sample's seed;
        ``task`` is ``<feature>-<position>`` (1-based, 4 digits). The same sample, systems and
        conditions give the same order, whatever order ``systems`` and ``conditions`` came in.

    Raises:
        DataError: no system or no condition, or one named twice.

    Example:
        >>> from types import SimpleNamespace as I
        >>> data = [I(index=n, id=f"a{n}", feature="accent", target_value=v)
        ...         for n, v in enumerate(["UK", "India", "Australia"])]
        >>> sample = class_balanced_sample(data, HumanSampleConfig(totals={"accent": 3}))
        >>> clips = blind_clips(sample, ["m1", "m2"], ["original", "oracle"])["accent"]
        >>> len(clips), clips[0].task, sorted({c.system for c in clips})
        (12, 'accent-0001', ['m1', 'm2'])
    """
    for what, names in (("system", systems), ("condition", conditions)):
        if not names:
            raise DataError(f"blind_clips: name at least one {what}")
        twice = named_twice(names)
        if twice:
            raise DataError(f"blind_clips: {what} named more than once: {', '.join(twice)}")
    out: dict[str, tuple[BlindClip, ...]] = {}
    for feature in sample.features:
        # (id, system, condition) is unique: the order before the shuffle is fixed.
        plan = sorted(
            (
                (inst, system, condition)
                for inst in sample.instances(feature)
                for system in systems
                for condition in conditions
            ),
            key=lambda c: (c[0].id, c[1], c[2]),
        )
        seeded_rng("acbench-human-sample", sample.config.seed, "order", feature).shuffle(plan)
        out[feature] = tuple(
            BlindClip(
                f"{feature}-{n:04d}", feature, inst.target_value, inst.id, inst.index, system, condition
            )
            for n, (inst, system, condition) in enumerate(plan, start=1)
        )
    return out


def labeling_config(feature: str) -> str:
    """The Label Studio labelling config of one feature: play the clip, pick one of its classes.

    The ``<Choices>`` control (``from_name`` :data:`LABEL_CONTROL`) offers every declared class of
    the feature, in the dataset's declared order, whatever the draw holds (raters pick what they
    hear, among the labels the evaluator chooses from); a choice is required.

    Example:
        >>> print(labeling_config("accent"))  # doctest: +ELLIPSIS
        <View>
          <Header value="Which accent does the speaker have?"/>
          <Audio name="audio" value="$audio" hotkey="space"/>
          <Choices name="label" toName="audio" choice="single-radio" required="true" showInline="true">
            <Choice value="Australia"/>
        ...
    """
    if feature not in FEATURES:
        raise DataError(f"labeling_config: unknown feature {feature!r}")
    question = QUESTIONS.get(feature, f"Which {feature.replace('_', ' ')} do you hear?")
    lines = [
        "<View>",
        f"  <Header value={quoteattr(question)}/>",
        f'  <Audio name="{AUDIO_OBJECT}" value="${AUDIO_OBJECT}" hotkey="space"/>',
        f'  <Choices name="{LABEL_CONTROL}" toName="{AUDIO_OBJECT}" choice="single-radio" '
        'required="true" showInline="true">',
        *(f"    <Choice value={quoteattr(value)}/>" for value in FEATURES[feature]),
        "  </Choices>",
        f"  <!-- {escape(STUDY)}: one clip per task; the key file says which system and condition -->",
        "</View>",
    ]
    return "\n".join(lines) + "\n"


def study_key(clips: Mapping[str, Sequence[BlindClip]], **facts: Any) -> dict[str, Any]:
    """The key file's document: task id -> where the clip came from, plus ``facts`` (seed, inputs).

    Example:
        >>> clip = BlindClip("accent-0001", "accent", "UK", "ac-7", 6, "m1", "oracle")
        >>> study_key({"accent": [clip]}, seed=0)["tasks"]["accent-0001"]["system"]
        'm1'
    """
    tasks = {
        clip.task: {name: value for name, value in asdict(clip).items() if name != "task"}
        for feature_clips in clips.values()
        for clip in feature_clips
    }
    return {"study": STUDY, "benchmark": "acbench", **facts, "tasks": tasks}


__all__ = [
    "ABSTRACT_FEATURES",
    "LABEL_CONTROL",
    "PAPER_CONDITIONS",
    "PAPER_TOTALS",
    "STUDY",
    "BalancedSample",
    "BlindClip",
    "ClassDraw",
    "HumanSampleConfig",
    "blind_clips",
    "class_balanced_sample",
    "labeling_config",
    "study_key",
]
