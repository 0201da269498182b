"""``benchmark.yaml``: the part of a benchmark that is data, validated strictly when it is registered.

A benchmark package holds a ``benchmark.yaml`` beside its hooks module (the ``Benchmark`` subclass
in ``__init__.py``). The YAML says what a reader, the suite loader, the CLI listing, tracking and
``omnieval compare`` need to know without running anything: the name, title and description, the
dataset marker and bundled sample, input conditions, system kinds, candidate modalities, judge
tracks with their criteria, the headline components with their direction, and the MLflow key
patterns the parent run repeats. The hooks module keeps what is code (loading, gating, metrics,
aggregation, the report).

:func:`omnieval.benchmarks.benchmark` reads the file when it registers a class and copies the
values onto the class attributes the stages already read (``conditions``, ``system_kinds``, ...),
so nothing downstream learns a second way to ask. A bad file fails the import of
``omnieval.benchmarks`` with a :class:`~omnieval.errors.ConfigError` naming the file and the
field, rather than registering a half-described benchmark.

Example:
    >>> spec = BenchmarkSpec.model_validate({
    ...     "name": "toy", "title": "Toy", "description": "a toy",
    ...     "dataset": {"marker": "toy.jsonl", "sample": "data/toy-sample"},
    ...     "system_kinds": ["import"], "modalities": ["text"],
    ...     "headline": {"components": ["f1"], "mlflow_patterns": ["toy.*.f1"]},
    ... })
    >>> spec.class_attributes()["conditions"], spec.class_attributes()["judge_tracks"]
    (('',), ())
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from omnieval.candidates import Modality
from omnieval.errors import ConfigError, validation_problems

SPEC_FILE: Final = "benchmark.yaml"
"""The file name a benchmark package's declaration has, beside its hooks module."""

_NAME = r"^[a-z][a-z0-9_]*$"
"""Benchmark, condition and track names: they become MLflow key parts and scores-table values."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _unique(values: tuple[str, ...], what: str) -> tuple[str, ...]:
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{what} repeated: {', '.join(repeated)}")
    return values


def _names(values: tuple[str, ...], what: str) -> tuple[str, ...]:
    """``values`` when each is a distinct lower-case identifier (they end up in column values and
    MLflow keys, where anything else would need quoting)."""
    bad = [v for v in values if not re.match(_NAME, v)]
    if bad:
        raise ValueError(f"{what} names must match {_NAME}: {', '.join(bad)}")
    return _unique(values, what)


class DatasetSpec(_Strict):
    """Where a benchmark's data lives and how a folder is recognised as its layout."""

    marker: str = Field(min_length=1)
    """A file relative to a dataset folder whose presence identifies the layout (``detect``)."""
    sample: Path
    """The bundled sample, used when a suite names no dataset: relative to the project root for a
    benchmark in this package, to its own folder for one a suite loads from a folder."""
    fields: tuple[str, ...] = ()
    """Record keys that tell this layout from another benchmark's with the same marker file: a
    folder is this benchmark's when the marker's first record has one of them (or no record can be
    read, so that validation names the broken line). Empty: the marker alone decides."""

    @field_validator("marker")
    @classmethod
    def _relative_marker(cls, value: str) -> str:
        if Path(value).is_absolute() or ".." in Path(value).parts:
            raise ValueError("must be a path inside the dataset folder (relative, no '..')")
        return value


class JudgeSpec(_Strict):
    """The LLM-judged part of a benchmark: its tracks, their criteria and the default panels."""

    tracks: tuple[str, ...] = Field(min_length=1)
    """The scores table's ``track`` values judge rows take, in display order."""
    criteria: dict[str, tuple[str, ...]] = {}
    """Track -> its criterion keys in the verdict schema's order (where criteria are flat keys)."""
    criteria_file: str | None = None
    """A YAML file beside ``benchmark.yaml`` holding richer criteria (e.g. per audio type)."""
    default_panels: tuple[str, ...] = ()
    """Panels a suite gets when it names none."""
    drift_anchors: str | None = None
    """The pinned anchor set a suite's judge-drift check re-judges when its ``drift.anchors`` is
    unset (a folder relative to the working directory, like the sample); None = the suite must
    name one."""
    shards_by_system: bool = False
    """Whether one system's judge rows depend on that system's candidates alone (so the judge
    stage may run one shard per system); false when a system is judged beside another."""

    @field_validator("tracks")
    @classmethod
    def _track_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _names(value, "track")

    @model_validator(mode="after")
    def _criteria_name_tracks(self) -> JudgeSpec:
        unknown = sorted(set(self.criteria) - set(self.tracks))
        if unknown:
            raise ValueError(f"criteria name tracks that are not in tracks: {', '.join(unknown)}")
        for track, keys in self.criteria.items():
            if not keys:
                raise ValueError(f"criteria of track {track!r} is empty")
            _unique(keys, f"criterion of track {track!r}")
        return self


class HeadlineSpec(_Strict):
    """What ``omnieval compare`` pairs per instance and what the MLflow parent run repeats."""

    components: tuple[str, ...] = Field(min_length=1)
    """Components in display order (each is ``<condition>.<component>`` when ``per_condition``)."""
    per_condition: bool = False
    """Repeat every component once per input condition, condition-major, as ``<condition>.<name>``."""
    lower_is_better: tuple[str, ...] = ()
    """Components (as written in ``components``) where a smaller value is better, e.g. error rates."""
    mlflow_patterns: tuple[str, ...] = ()
    """Glob patterns of MLflow metric keys the parent run repeats per system (``<system>/<key>``)."""
    scale: str | None = Field(default=None, min_length=1)
    """The scale a component's per-instance value is on, for every component ``scales`` does not
    name: ``omnieval compare`` prints it beside the numbers, since its values need not be those
    ``omnieval aggregate`` shows (a rescaled metric, an uncalibrated total). None: not declared."""
    scales: dict[str, str] = {}
    """Component (as written in ``components``) -> its scale, where it differs from ``scale``."""

    @model_validator(mode="after")
    def _direction_names_components(self) -> HeadlineSpec:
        _unique(self.components, "component")
        unknown = sorted(set(self.lower_is_better) - set(self.components))
        if unknown:
            raise ValueError(f"lower_is_better names components not listed: {', '.join(unknown)}")
        unscaled = sorted(set(self.scales) - set(self.components))
        if unscaled:
            raise ValueError(f"scales names components not listed: {', '.join(unscaled)}")
        empty = sorted(name for name, text in self.scales.items() if not text.strip())
        if empty:
            raise ValueError(f"scales gives an empty scale for: {', '.join(empty)}")
        return self


class BenchmarkSpec(_Strict):
    """The schema of ``benchmark.yaml`` (frozen, no extra keys)."""

    name: str = Field(pattern=_NAME)
    """Registry key, the suite's ``benchmark:`` value, the scores table's ``benchmark`` column and
    the first part of every MLflow metric key."""
    title: str = Field(min_length=1)
    description: str = ""
    dataset: DatasetSpec
    conditions: tuple[str, ...] = ()
    """Input conditions a suite may choose; empty = the benchmark has none."""
    default_conditions: tuple[str, ...] | None = None
    """Conditions a suite gets when it names none; None = all of ``conditions``."""
    system_kinds: tuple[str, ...] = Field(min_length=1)
    """Every system kind a suite of this benchmark may use: its own reference systems, ``import``
    and the generating kinds that serve it (a generating kind names no benchmark)."""
    modalities: tuple[Modality, ...] = Field(min_length=1)
    """Candidate modalities a system writes (FORMATS.md section 2)."""
    judge: JudgeSpec | None = None
    """None = automatic metrics only."""
    headline: HeadlineSpec

    @field_validator("conditions")
    @classmethod
    def _condition_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _names(value, "condition")

    @field_validator("system_kinds")
    @classmethod
    def _kinds_unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _unique(value, "system kind")

    @model_validator(mode="after")
    def _consistent(self) -> BenchmarkSpec:
        if self.default_conditions is not None:
            if not self.conditions:
                raise ValueError("default_conditions given but the benchmark has no conditions")
            unknown = sorted(set(self.default_conditions) - set(self.conditions))
            if unknown:
                raise ValueError(f"default_conditions not in conditions: {', '.join(unknown)}")
        if self.headline.per_condition and not self.conditions:
            raise ValueError("headline.per_condition needs conditions")
        foreign = [p for p in self.headline.mlflow_patterns if not p.startswith(f"{self.name}.")]
        if foreign:
            raise ValueError(
                f"headline.mlflow_patterns must start with '{self.name}.' (FORMATS.md section 5): "
                + ", ".join(foreign)
            )
        return self

    def headline_components(self) -> tuple[str, ...]:
        """The components as ``omnieval compare`` names them (conditions expanded)."""
        return tuple(self._expand(self.headline.components))

    def headline_scales(self) -> dict[str, str]:
        """Each headline component as ``omnieval compare`` names it (conditions expanded) -> its
        declared scale (``headline.scales``, else ``headline.scale``); undeclared ones are left out.

        Example:
            >>> spec = BenchmarkSpec.model_validate({
            ...     "name": "toy", "title": "Toy", "dataset": {"marker": "m", "sample": "s"},
            ...     "conditions": ["x"], "system_kinds": ["import"], "modalities": ["text"],
            ...     "headline": {"components": ["f1", "wer"], "per_condition": True,
            ...                  "scale": "0-1", "scales": {"wer": "percent"}},
            ... })
            >>> spec.headline_scales()
            {'x.f1': '0-1', 'x.wer': 'percent'}
        """
        out: dict[str, str] = {}
        for name in self.headline.components:
            text = self.headline.scales.get(name, self.headline.scale)
            if text is not None:
                for expanded in self._expand((name,)):
                    out[expanded] = text
        return out

    def headline_lower_is_better(self) -> frozenset[str]:
        """The lower-is-better components as ``omnieval compare`` names them (conditions expanded)."""
        return frozenset(self._expand(self.headline.lower_is_better))

    def _expand(self, names: tuple[str, ...]) -> list[str]:
        if not self.headline.per_condition:
            return list(names)
        return [f"{condition}.{name}" for condition in self.conditions for name in names]

    def class_attributes(self) -> dict[str, Any]:
        """The values :class:`~omnieval.benchmarks.Benchmark`'s class attributes take, in the
        types they always had (tuples, frozensets, a ``Path``). A class body that also sets one of
        them is refused (:func:`~omnieval.benchmarks.benchmark`), so each fact has one home."""
        conditions = self.conditions or ("",)
        judge = self.judge
        return {
            "title": self.title,
            "description": self.description,
            "default_dataset": self.dataset.sample,
            "dataset_marker": self.dataset.marker,
            "dataset_fields": frozenset(self.dataset.fields),
            "conditions": conditions,
            "default_conditions": conditions if self.default_conditions is None else self.default_conditions,
            "system_kinds": frozenset(self.system_kinds),
            "modalities": tuple(m.value for m in self.modalities),
            "judge_tracks": judge.tracks if judge else (),
            "judge_criteria": dict(judge.criteria) if judge else {},
            "default_panels": judge.default_panels if judge else (),
            "drift_anchors": Path(judge.drift_anchors) if judge and judge.drift_anchors else None,
            "judge_shards_by_system": judge.shards_by_system if judge else False,
            "headline_components": self.headline_components(),
            "lower_is_better": self.headline_lower_is_better(),
            "headline_metric_patterns": self.headline.mlflow_patterns,
        }


def load_spec(path: Path) -> BenchmarkSpec:
    """Read and validate one ``benchmark.yaml``.

    Raises:
        ConfigError: the file is missing, not YAML, not a mapping, fails the schema (the message
            names the file and each bad field), or names a ``judge.criteria_file`` that is absent.
    """
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: benchmark declaration not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read benchmark declaration: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        spec = BenchmarkSpec.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(validation_problems(f"{path}: invalid benchmark declaration", exc)) from None
    if spec.judge and spec.judge.criteria_file and not (path.parent / spec.judge.criteria_file).is_file():
        raise ConfigError(
            f"{path}: invalid benchmark declaration\n"
            f"  - judge.criteria_file: {spec.judge.criteria_file} is not a file beside {path.name}"
        )
    return spec


def spec_beside(module_file: str | None) -> Path | None:
    """The ``benchmark.yaml`` in the folder of ``module_file`` (a hooks module), or None."""
    if not module_file:
        return None
    candidate = Path(module_file).resolve().parent / SPEC_FILE
    return candidate if candidate.is_file() else None


@functools.cache
def cached_spec(path: Path) -> BenchmarkSpec:
    """:func:`load_spec`, once per file and process.

    The registering decorator and the package modules whose constants are read from the
    declaration (``CONDITIONS``, ``RUBRICS``, ``HEADLINE_COMPONENTS``, ...) all get this same
    object, so a value cannot differ between the class attribute and the constant, and the file is
    parsed and validated once. A failed load is not cached (it raises every time).
    """
    return load_spec(path)


def package_spec(module_file: str) -> BenchmarkSpec:
    """The validated ``benchmark.yaml`` of the package that holds ``module_file`` (its ``__file__``).

    A benchmark's modules call this at import to read facts the declaration owns, e.g.
    ``CONDITIONS = package_spec(__file__).conditions``, instead of writing them a second time.

    Raises:
        ConfigError: there is no declaration beside the module, or it is invalid (file and field named).
    """
    path = spec_beside(module_file)
    if path is None:
        raise ConfigError(f"{Path(module_file).parent / SPEC_FILE}: benchmark declaration not found")
    return cached_spec(path)


def declaration_error(module_file: str, field: str, problem: str) -> ConfigError:
    """A :class:`ConfigError` for a declared value that the code of ``module_file`` cannot work with.

    Some facts are code (which conditions speak the instruction, which judge stage scores which
    track) but must agree with the declaration; a module checks that at import and raises this, worded
    like a schema error: the ``benchmark.yaml`` path, then ``field: problem``.
    """
    path = Path(module_file).resolve().parent / SPEC_FILE
    return ConfigError(f"{path}: invalid benchmark declaration\n  - {field}: {problem}")


__all__ = [
    "SPEC_FILE",
    "BenchmarkSpec",
    "DatasetSpec",
    "HeadlineSpec",
    "JudgeSpec",
    "cached_spec",
    "declaration_error",
    "load_spec",
    "package_spec",
    "spec_beside",
]
