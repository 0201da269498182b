"""What a benchmark is: the one object stages, the report and tracking dispatch through.

A benchmark owns its instance type and loader, its dataset gate, the task inputs a system may see,
its metric set and typed ``metrics:`` config, its judge tracks (if any), its aggregation, leaderboard
and MLflow metric keys. Everything outside ``benchmarks/<name>/`` reaches those through
:class:`Benchmark` and never names a benchmark's components.
"""

from __future__ import annotations

import importlib
import json
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, final

from pydantic import BaseModel

from omnieval.benchmarks._leaderboard import dump_document
from omnieval.benchmarks._records import DatasetReport as DatasetReport
from omnieval.benchmarks._records import DatasetSummary as DatasetSummary
from omnieval.benchmarks._records import (
    Instance,
    JsonLines,
    Record,
    RecordDataset,
    RowSource,
    fingerprint_records,
    gate_records,
    validate_records,
)
from omnieval.benchmarks._spec import SPEC_FILE, BenchmarkSpec, cached_spec, spec_beside
from omnieval.errors import ConfigError, DataError
from omnieval.lineage import Deviation, check_ledger
from omnieval.registry import Registry

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.audit import AuditInputs
    from omnieval.data import Manifest
    from omnieval.gates import GateResult
    from omnieval.judges import AnchorTracks, JudgedPanel, KnownSetRunner, ParseResult
    from omnieval.judgments import JudgmentSchema
    from omnieval.systems import GenerationLimit, GenerationSummary, System, SystemSpec, Task

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class MetricsOutput:
    """One system's automatic-metric rows (FORMATS.md section 3) and what produced them."""

    scores: pd.DataFrame
    lineage: dict[str, Any]
    computed: int
    cache_hits: int


@dataclass(frozen=True)
class JudgeOutput:
    """One judge panel's rows over every system, the raw judgments and the panel's lineage."""

    scores: pd.DataFrame
    judgments: pd.DataFrame
    lineage: dict[str, Any]
    mlflow_tags: dict[str, str]
    model_calls: int
    cache_hits: int


@dataclass(frozen=True)
class GenerateJob:
    """One system writing the candidate layout for ``instances`` under one input condition.

    ``keep_open`` and ``limit`` concern systems that run models (see
    :class:`omnieval.systems.GenerationRequest`): leave them loaded for the next condition, and the
    system's generation budget."""

    system: System
    instances: Sequence[Any]
    out_root: Path
    condition: str = ""
    progress: Progress | None = None
    keep_open: bool = False
    limit: GenerationLimit | None = None


@dataclass(frozen=True)
class MetricsJob:
    """The automatic metrics of one system; ``candidates`` maps condition -> candidate root."""

    instances: Sequence[Any]
    system: str
    candidates: Mapping[str, Path]
    config: BaseModel
    cache_dir: Path | None = None
    progress: Progress | None = None


@dataclass(frozen=True)
class JudgeJob:
    """One judge panel over every system; ``candidates`` maps system -> candidate root."""

    instances: Sequence[Any]
    candidates: Mapping[str, Path]
    panel: str
    metrics_config: BaseModel
    cache_dir: Path
    progress: Callable[[str, int, int], None] | None = None


@dataclass(frozen=True)
class RunFacts:
    """What aggregation may need beyond the scores table.

    Attributes:
        n_instances: the zero-filled denominator (default: distinct instance ids in the table).
        judge_lineage: panel -> the judge stage's lineage, so the document can say why a configured
            judge produced nothing (e.g. no vision model on this machine).
        diagnostic: ids of the diagnostic systems (:meth:`Benchmark.diagnostic_systems`), which a
            benchmark scores but keeps out of figures derived from the systems under test; None =
            the benchmark's default ids (a bare scores table names systems by id only).
        reference: ids of the reference systems (:meth:`Benchmark.reference_systems`: the ground
            truth as a candidate, judged beside itself), which a benchmark that pairs candidates
            with the ground truth keeps out of figures derived from the systems under test; None =
            the benchmark's default ids.
    """

    n_instances: int | None = None
    judge_lineage: Mapping[str, Any] = field(default_factory=dict)
    diagnostic: frozenset[str] | None = None
    reference: frozenset[str] | None = None


@dataclass(frozen=True)
class RunSettings:
    """What decides which of a benchmark's declared deviations a run has (:meth:`Benchmark.deviations`).

    The stages build it from the suite (``omnieval.stages``); a test builds it directly.

    Attributes:
        panels: The judge panels the suite runs (names, or panel files' paths); empty = no judging.
        metrics: The benchmark's typed ``metrics:`` config.
        dataset_limit: ``dataset.limit``: only the first N instances are evaluated; None = all.
        recorded: System -> the lineage its metrics stage wrote (``MetricsOutput.lineage``), for
            facts only known once a model loaded (e.g. which image backbone ``auto`` picked); empty
            when no metrics ran yet.
    """

    panels: tuple[str, ...] = ()
    metrics: BaseModel | None = None
    dataset_limit: int | None = None
    recorded: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


DATASET_LIMIT = "dataset-limit"
"""Id of the one deviation the framework adds for every benchmark (:meth:`Benchmark.deviation_ledger`)."""


class ReportSuite(Protocol):
    """What a benchmark's report reads of the suite it renders (:class:`omnieval.config.SuiteConfig`).

    Declared here, not imported from the suite config, because the suite config sits above the
    benchmarks (it validates against their registry): a report names exactly the suite facts it
    shows and nothing more, and a test may hand it any object that has them.
    """

    @property
    def suite(self) -> str: ...

    @property
    def state(self) -> Path:
        """The suite's state folder (:class:`omnieval.paths.StatePaths` root)."""
        ...

    @property
    def systems(self) -> Mapping[str, SystemSpec]: ...

    @property
    def run_conditions(self) -> tuple[str, ...]: ...

    @property
    def metrics(self) -> BaseModel:
        """The benchmark's typed ``metrics:`` config (what its deviations are computed from)."""
        ...

    @property
    def dataset_name(self) -> str: ...

    @property
    def dataset_path(self) -> Path: ...

    @property
    def experiment(self) -> str: ...


@dataclass(frozen=True)
class ReportJob:
    """Where and from what to write one run's ``report.html``."""

    path: Path
    config: ReportSuite
    document: Mapping[str, Any]
    analyses_dir: Path
    analysis_runs: Mapping[str, str] | None = None
    run_id: str | None = None
    regression: Mapping[str, Any] | None = None
    """The run folder's ``regression.json`` (comparison with the previous run); None when absent."""
    judge_health: Mapping[str, Any] | None = None
    """The judge stage's ``health.json`` (per-judge verdict distributions); None when absent."""
    judgments_path: Path | None = None
    """``judgments.parquet`` for the validity ledger per judge; None when the suite has no judges."""
    deviations: Sequence[Deviation] | None = None
    """The run's deviation ledger (:meth:`Benchmark.deviation_ledger`), printed under the verdict;
    None = not known (a page written outside a run), and the page then says nothing about it."""


@dataclass(frozen=True)
class Leaderboard:
    """The report stage's aggregate: the ``leaderboard.json`` document and per-system MLflow metrics.

    ``document`` is what ``omnieval aggregate --json`` prints for the benchmark (plus run facts the
    report stage adds); ``mlflow_metrics`` maps system -> ``{key: value}`` with FORMATS.md section 5
    keys, so the track stage logs exactly what the report computed instead of aggregating again.
    ``model`` is the typed document (built from the benchmark's ``leaderboard.yaml``, JSON schema under
    ``docs/schemas/``) that ``document`` was dumped from; see :meth:`typed`.
    """

    document: dict[str, Any]
    mlflow_metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    model: BaseModel | None = None

    @classmethod
    def typed(cls, model: BaseModel, mlflow_metrics: dict[str, dict[str, float]]) -> Leaderboard:
        """A leaderboard whose ``document`` is the dump of a validated model.

        The benchmark validates the dict its aggregate built (an unexpected or missing key fails
        here, not in a reader of ``leaderboard.json``); the dump gives back the same keys in the
        same order with the same values, so the file's bytes do not change.
        """
        return cls(dump_document(model), mlflow_metrics, model)


class Judging(ABC):
    """A benchmark's judge scorer: its panels, prompts, answer reader and judge runs on its own tracks.

    A benchmark with LLM judging declares ``judging = <a Judging subclass>``; its public judge
    methods (``judge``, ``judge_anchors``, ``known_set``, ``describe_panels``...) hand the work to
    one instance, bound to the benchmark's name (``benchmark``). The defaults read the judges
    package's registries keyed by that name (:func:`omnieval.judges.register_tracks`,
    ``register_panels``, ``register_templates``), so two benchmarks' tracks live side by side in one
    process; a benchmark overrides :meth:`judge` (always) and whatever else it does differently
    (PRISM's two-stage prompts and pairwise anchors, say).

    Example (the shape of storybench's)::

        class StoryJudging(Judging):
            def judge(self, job: JudgeJob) -> JudgeOutput:
                return run_my_judges(job, benchmark=self.benchmark)

        @benchmark()
        class StoryBench(DeclaredBenchmark[StoryBenchRecord, MetricsConfig]):
            judging = StoryJudging
    """

    def __init__(self, benchmark: str) -> None:
        self.benchmark = benchmark

    @abstractmethod
    def judge(self, job: JudgeJob) -> JudgeOutput:
        """Run one judge panel over every system of ``job``."""

    def schema(self) -> JudgmentSchema:
        """The layout of the benchmark's ``judgments.parquet`` (the judgments gate checks it).
        Default: the judges' one-verdict-per-track layout."""
        from omnieval.judges import JUDGMENT_SCHEMA

        return JUDGMENT_SCHEMA

    def panel_names(self) -> list[str]:
        """Judge panels a suite of this benchmark may name (default: the shared panel folder)."""
        from omnieval.judges import panel_names

        return panel_names()

    def describe_panels(self) -> list[dict[str, object]]:
        """The panels, for ``omnieval judge panels``: per panel its ``name``, ``description``,
        ``tracks`` (track -> ``{"judges": [...], "unavailable": why or None}``) and ``repair``.
        Default: the panels the benchmark registered (:func:`omnieval.judges.register_panels`)."""
        from omnieval.judges import describe_panels

        return list(describe_panels(benchmark=self.benchmark))

    def prompt_catalog(self) -> list[dict[str, object]]:
        """The judge prompt templates, for ``omnieval judge prompts``: per template its ``track``,
        ``variant``, ``version`` and ``sha256``. Default: the templates registered with the judges
        when this benchmark registered them."""
        from omnieval.judges import registered_benchmark, template_catalog

        try:
            owner = registered_benchmark()
        except ConfigError:  # no benchmark registered rubrics
            return []
        return list(template_catalog()) if owner == self.benchmark else []

    def read_answer(self, raw: str | None, track: str) -> ParseResult:
        """How a raw judge answer for ``track`` is read (``omnieval judge parse``). Default: the
        judges' verdict reader of the tracks this benchmark registered.

        Raises:
            ConfigError: ``track`` is not one of the benchmark's registered tracks.
        """
        from omnieval.judges import parse_verdict, track_benchmarks, track_names

        if self.benchmark not in track_benchmarks() or track not in track_names(self.benchmark):
            raise ConfigError(f"benchmark {self.benchmark} has no judge answer reader for track {track!r}")
        return parse_verdict(raw, track, benchmark=self.benchmark)

    def anchor_tracks(self) -> AnchorTracks | None:
        """Track -> candidate modalities the drift anchors' manifest may name. Default: the tracks
        this benchmark registered and the outputs each needs (None when it registered none)."""
        from omnieval.judges import track_benchmarks, tracks_of

        if self.benchmark not in track_benchmarks():
            return None
        return {
            name: tuple(m.value for m in spec.needs)
            for name, spec in tracks_of(self.benchmark).tracks.items()
        }

    def judge_anchors(self, job: JudgeJob) -> JudgedPanel:
        """The drift anchors (each a one-output "system") judged as the judge stage judges systems:
        one row per (anchor, instance, track, judge) with ``status``, ``scores`` and
        ``expected_scores``. Default: :meth:`judge`; a benchmark whose judgments have another shape
        converts them here."""
        return self.judge(job)

    def known_set(self, instances: Sequence[object], metrics_config: BaseModel) -> KnownSetRunner | None:
        """The pinned meta-evaluation set (``omnieval judge check``), bound to ``instances`` and the
        suite's ``metrics:`` settings; None: the benchmark has none (default).

        Raises:
            DataError: the set names instances ``instances`` does not hold.
        """
        return None


class Benchmark(ABC):
    """One evaluation protocol. Subclasses are registered with :func:`benchmark`.

    The class attributes up to ``headline_metric_patterns`` that
    :meth:`~omnieval.benchmarks._spec.BenchmarkSpec.class_attributes` sets are data: they come from
    the ``benchmark.yaml`` beside the subclass's module (``_spec.py``), which :func:`benchmark`
    loads; ``metrics_config`` and ``score_range`` stay in code. The data side (loader, gate,
    instances, fingerprint) follows from the record model (:attr:`record`).
    """

    spec: ClassVar[BenchmarkSpec | None] = None
    """The validated ``benchmark.yaml`` the attributes below were read from (None: all in code)."""
    name: ClassVar[str]
    """Registry key, the suite's ``benchmark:`` value and the scores table's ``benchmark`` column."""
    title: ClassVar[str]
    """Human name shown by ``omnieval benchmarks`` and in reports."""
    description: ClassVar[str] = ""
    default_dataset: ClassVar[Path]
    """The bundled sample, used when a suite names no dataset path."""
    dataset_marker: ClassVar[str]
    """A file relative to a dataset folder whose presence identifies this benchmark's layout."""
    metrics_config: ClassVar[type[BaseModel]]
    """The typed ``metrics:`` block of a suite (frozen, no extra keys)."""
    conditions: ClassVar[tuple[str, ...]] = ("",)
    """Input conditions a suite may choose; ``("",)`` = the benchmark has none."""
    default_conditions: ClassVar[tuple[str, ...]] = ("",)
    system_kinds: ClassVar[frozenset[str]]
    """System kinds (``omnieval.systems.SYSTEMS`` keys) that can produce this benchmark's candidates."""
    judge_tracks: ClassVar[tuple[str, ...]] = ()
    """Tracks a judge panel scores; empty = the benchmark has no LLM judging."""
    judge_criteria: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """Track -> its criterion keys, where the benchmark declares them as flat keys."""
    default_panels: ClassVar[tuple[str, ...]] = ()
    drift_anchors: ClassVar[Path | None] = None
    judge_shards_by_system: ClassVar[bool] = False
    """Whether the judge stage may judge each system in its own shard (the Dask runner's unit):
    true when a system's judge rows depend on that system's candidates alone and its lineage
    merges by summing counts (storybench); false keeps every system in one shard (prism judges a
    system beside the ground truth)."""
    modalities: ClassVar[tuple[str, ...]]
    """Candidate modalities (FORMATS.md section 2) a system writes."""
    score_range: ClassVar[Mapping[str, tuple[float, float]]] = {}
    """Native range of each scores-table component (the scores gate checks values against it)."""
    headline_components: ClassVar[tuple[str, ...]] = ()
    """Components :meth:`instance_components` reports, in display order (``omnieval compare``)."""
    lower_is_better: ClassVar[frozenset[str]] = frozenset()
    """Headline components where a smaller value is better (e.g. error rates)."""
    headline_metric_patterns: ClassVar[tuple[str, ...]] = ()
    """Glob patterns of MLflow metric keys the parent run repeats per system (``<system>/<key>``)."""
    reference_kinds: ClassVar[frozenset[str]] = frozenset()
    """System kinds whose candidate is the ground truth itself (PRISM-Bench's ``ground-truth``): a
    benchmark that pairs candidates with the ground truth keeps their pairings (the ground truth
    beside itself) out of figures derived from the systems under test."""
    diagnostic_kinds: ClassVar[frozenset[str]] = frozenset()
    """System kinds that are diagnostic unless a suite says ``diagnostic: false`` (probes that
    should not move the scores of the systems under test; see :meth:`diagnostic_systems`)."""
    dataset_fields: ClassVar[frozenset[str]] = frozenset()
    """``dataset.fields`` of ``benchmark.yaml``: first-record keys that tell this layout from
    another with the same marker (:meth:`detect`)."""
    judging: ClassVar[type[Judging] | None] = None
    """The benchmark's judge scorer (:class:`Judging` subclass): its
    panels, prompts, answer reader, judge runs, anchors and known set. None: no LLM judging."""
    default_leaderboard: ClassVar[type[BaseModel] | None] = None
    """The ``leaderboard.json`` model when no ``leaderboard.yaml`` sits beside the module."""
    commands: ClassVar[Mapping[str, str]] = {}
    """The benchmark's own commands (:data:`COMMANDS` keys) -> ``"<module>:<function>"`` (a module
    relative to the benchmark's package, e.g. ``"._sample:sample_main"``), the function taking
    ``(argv, prog)`` and returning an exit status."""
    metric_notes: ClassVar[Mapping[str, str]] = {}
    """Metric key -> how it measures something other than the paper's figure of that name. The
    track stage tags every MLflow run with them (``omnieval.metric_note.<key>``) and the run's
    description lists them, so the number is not read beside the paper's without the note."""
    record: ClassVar[type[Record]]
    """The pydantic model of one row (the loader's, the gate's and the fingerprint's check)."""
    source: ClassVar[RowSource | None] = None
    """Where the rows come from; None: the dataset marker read as JSON lines."""
    dataset_type: ClassVar[type[RecordDataset[Any]]] = RecordDataset
    """The loaded dataset's class (:class:`RecordDataset` or a subclass)."""
    targets: ClassVar[tuple[str, ...]] = ()
    """Record fields a generating system never sees (the references)."""
    paper_deviations: ClassVar[tuple[Deviation, ...]] = ()
    """Departures from the benchmark's paper that every run has (the run's ledger, FORMATS.md
    section 12); default none. Override :meth:`deviations` for ones that depend on the run."""

    # -- data: all of it follows from the record model (:attr:`record`, :attr:`source`) ----------
    @final
    def detect(self, root: Path) -> bool:
        """Whether ``root`` looks like a dataset of this benchmark: its marker file exists and, where
        ``benchmark.yaml`` declares ``dataset.fields`` (another layout shares the marker), the first
        record has one of them or none can be read (validation then names the broken line)."""
        marker = Path(root) / self.dataset_marker
        if not marker.is_file():
            return False
        if not self.dataset_fields:
            return True
        keys = first_record_keys(marker)
        return not keys or bool(keys & self.dataset_fields)

    @final
    def row_source(self) -> RowSource:
        """Where the rows come from (:attr:`source`, default the marker read as JSON lines)."""
        return self.source if self.source is not None else JsonLines(self.dataset_marker)

    @final
    def validate(self, root: Path) -> DatasetReport:
        """Strictly validate a dataset folder through the record model (:func:`validate_records`);
        never raises on bad data (problems name row and field)."""
        return validate_records(root, self.record, self.row_source(), self.dataset_type)

    @final
    def gate(self, root: Path, out_json: Path | None) -> GateResult:
        """Run the dataset's Great Expectations suite, derived from the record model; save the result
        to ``out_json``."""
        return gate_records(Path(root), self.row_source(), self.record, self.name, out_json)

    @final
    def instances(self, dataset: RecordDataset[Any]) -> tuple[Any, ...]:
        """The evaluation instances of a validated dataset, in canonical (index) order."""
        return tuple(dataset.instances)

    @final
    def fingerprint(self, dataset: RecordDataset[Any]) -> Manifest:
        """SHA-256 manifest of everything the dataset's scores depend on: the table, every media
        file the records name and their declared texts."""
        return fingerprint_records(dataset.root, dataset.table, self.record, dataset.records)

    @final
    def dataset_frame(self, root: Path) -> pd.DataFrame:
        """A flat table of the dataset at ``root``, logged as the MLflow dataset input."""
        frame: pd.DataFrame = self.load(root).frame()
        return frame

    @final
    def dataset_summary(self, dataset: RecordDataset[Any]) -> DatasetSummary:
        """How ``omnieval validate`` describes a valid dataset."""
        return dataset.summary()

    @final
    def audit_inputs(self, dataset: RecordDataset[Any]) -> AuditInputs:
        """What ``omnieval audit`` reads from a validated dataset (:mod:`omnieval.audit`)."""
        return dataset.audit_inputs(self.fingerprint(dataset).digest, self.name)

    @final
    def load(self, root: Path) -> Any:
        """Validate and return the dataset; raise :class:`~omnieval.errors.DataError` on bad data."""
        report = self.validate(root)
        if not report.ok:
            raise DataError(
                f"dataset {root} failed validation ({len(report.problems)} problems)", report.problems
            )
        return report.dataset

    # -- generation ---------------------------------------------------------------------------
    @final
    def generate(self, job: GenerateJob) -> GenerationSummary:
        """Let the job's system write the candidate layout; return its summary.

        The same for every benchmark: the system gets one typed request with this benchmark's
        view of an instance (:meth:`visible_task`) and the outputs it asks for (:attr:`modalities`).
        """
        from omnieval.systems import GenerationRequest

        request = GenerationRequest(
            job.instances,
            job.out_root,
            condition=job.condition,
            visible=self.visible_task,
            modalities=tuple(self.modalities),
            progress=job.progress,
            keep_open=job.keep_open,
            limit=job.limit,
        )
        return job.system.generate(request)

    def visible_task(self, instance: object, condition: str = "") -> Task:
        """Hook: one instance as a generating system sees it, a :class:`omnieval.systems.Task`
        holding only the task inputs (never a target field), for ``condition`` where the benchmark
        has them. Default: the record's fields but :attr:`targets` (and the id), as plain JSON.

        Example (a record whose ``answer`` is the target)::

            def visible_task(self, instance: object, condition: str = "") -> Task:
                assert isinstance(instance, Instance)
                inputs = instance.record.model_dump(mode="json", exclude={"id", "answer"})
                return Task(self.name, instance.index, instance.id, condition, inputs)
        """
        from omnieval.systems import Task

        assert isinstance(instance, Instance)
        inputs = instance.record.model_dump(mode="json", exclude={"id", *self.targets})
        return Task(self.name, instance.index, instance.id, condition, inputs)

    # -- scoring ------------------------------------------------------------------------------
    @abstractmethod
    def compute_metrics(self, job: MetricsJob) -> MetricsOutput:
        """Hook: automatic metrics of one system, over every condition of ``job.candidates``:
        FORMATS.md section 3 rows (``scores_frame``), the lineage of what measured them and the
        computed/cached counts. :class:`DeclaredBenchmark` calls ``score`` per instance by default.

        Example (a batched metric with a content-keyed cache)::

            def compute_metrics(self, job: MetricsJob) -> MetricsOutput:
                result = my_metrics(job.instances, job.system, job.candidates[""], cache=job.cache_dir)
                return MetricsOutput(result.scores, result.lineage, result.computed, result.cache_hits)
        """

    # -- judging: the declared judge scorer (:attr:`judging`) does the work --------------------
    @final
    def judges(self) -> Judging | None:
        """The benchmark's judge scorer (one instance of :attr:`judging` per benchmark), or None."""
        if self.judging is None:
            return None
        found = self.__dict__.get("_judging_instance")
        if found is None:
            found = self.__dict__["_judging_instance"] = self.judging(self.name)
        return found

    @final
    def panel_names(self) -> list[str]:
        """Judge panels a suite of this benchmark may name (default: the shared panel folder)."""
        from omnieval.judges import panel_names

        scorer = self.judges()
        return scorer.panel_names() if scorer is not None else panel_names()

    @final
    def describe_panels(self) -> list[dict[str, object]]:
        """The judge panels this benchmark ships, for ``omnieval judge panels``
        (:meth:`Judging.describe_panels`); empty without judging."""
        scorer = self.judges()
        return scorer.describe_panels() if scorer is not None else []

    @final
    def prompt_catalog(self) -> list[dict[str, object]]:
        """This benchmark's judge prompt templates, for ``omnieval judge prompts``."""
        scorer = self.judges()
        return scorer.prompt_catalog() if scorer is not None else []

    @final
    def read_judge_answer(self, raw: str | None, track: str) -> ParseResult:
        """How a raw judge answer for ``track`` is read, for ``omnieval judge parse``.

        Raises:
            ConfigError: ``track`` is not one of this benchmark's judge tracks.
        """
        scorer = self.judges()
        if scorer is None:
            raise ConfigError(f"benchmark {self.name} has no judge answer reader for track {track!r}")
        return scorer.read_answer(raw, track)

    @final
    def judgment_schema(self) -> JudgmentSchema | None:
        """The layout of this benchmark's ``judgments.parquet`` (None: it has no judges)."""
        scorer = self.judges()
        return scorer.schema() if scorer is not None else None

    @final
    def judge(self, job: JudgeJob) -> JudgeOutput:
        """Run one judge panel over every system (:meth:`Judging.judge`)."""
        scorer = self.judges()
        if scorer is None:
            raise ConfigError(f"benchmark {self.name} has no judge tracks (panel {job.panel})")
        return scorer.judge(job)

    @final
    def anchor_tracks(self) -> AnchorTracks | None:
        """Track -> candidate modalities the drift anchors' manifest may name (None: no judging)."""
        scorer = self.judges()
        return scorer.anchor_tracks() if scorer is not None else None

    @final
    def judge_anchors(self, job: JudgeJob) -> JudgedPanel:
        """The drift anchors judged as the judge stage judges systems (:meth:`Judging.judge_anchors`)."""
        scorer = self.judges()
        return scorer.judge_anchors(job) if scorer is not None else self.judge(job)

    @final
    def has_known_set(self) -> bool:
        """Whether the judge scorer declares a known set (without building it)."""
        return self.judging is not None and self.judging.known_set is not Judging.known_set

    @final
    def known_set(self, instances: Sequence[Any], metrics_config: BaseModel) -> KnownSetRunner | None:
        """This benchmark's pinned meta-evaluation set bound to ``instances`` and the suite's
        ``metrics:`` settings (:meth:`Judging.known_set`); None: it has none.

        Raises:
            DataError: the set names instances ``instances`` does not hold.
        """
        scorer = self.judges()
        return scorer.known_set(instances, metrics_config) if scorer is not None else None

    # -- aggregation --------------------------------------------------------------------------
    @final
    def diagnostic_systems(self, systems: Mapping[str, SystemSpec]) -> frozenset[str]:
        """The ids of a suite's diagnostic systems: ``diagnostic: true``, or unset and of a kind in
        :attr:`diagnostic_kinds`. The report stage hands them to :meth:`leaderboard` (``RunFacts``)."""
        return frozenset(
            sid
            for sid, spec in systems.items()
            if (spec.diagnostic if spec.diagnostic is not None else spec.kind in self.diagnostic_kinds)
        )

    @final
    def reference_systems(self, systems: Mapping[str, SystemSpec]) -> frozenset[str]:
        """The ids of a suite's reference systems: those of a kind in :attr:`reference_kinds` (the
        ground truth itself as a candidate). The report stage hands them to :meth:`leaderboard`."""
        return frozenset(sid for sid, spec in systems.items() if spec.kind in self.reference_kinds)

    @final
    def leaderboard_model(self) -> type[BaseModel] | None:
        """The pydantic model of this benchmark's ``leaderboard.json`` document: the one its
        ``leaderboard.yaml`` declares, else :attr:`default_leaderboard` (None: untyped)."""
        from omnieval.benchmarks._leaderboard import LEADERBOARD_FILE, declared_document

        module = sys.modules.get(type(self).__module__)
        where = getattr(module, "__file__", None)
        if where and (Path(where).parent / LEADERBOARD_FILE).is_file():
            return declared_document(where)
        return self.default_leaderboard

    @abstractmethod
    def leaderboard(self, scores: pd.DataFrame, facts: RunFacts | None = None) -> Leaderboard:
        """Hook: aggregate a scores table into the leaderboard document and MLflow metrics
        (``facts``: the run's denominators, judge lineage, diagnostic and reference systems).

        Example (a document validated against ``leaderboard.yaml``)::

            def leaderboard(self, scores: pd.DataFrame, facts: RunFacts | None = None) -> Leaderboard:
                document = my_aggregate(scores)
                metrics = {sid: my_mlflow_keys(document, sid) for sid in document["systems"]}
                return Leaderboard.typed(self.leaderboard_model().model_validate(document), metrics)
        """

    def instance_components(self, scores: pd.DataFrame) -> pd.DataFrame:
        """Hook: per-instance values of the headline components, for paired run comparisons.

        Returns columns ``system, instance_id, component, value``: per (system, instance) the value
        of each headline component on its aggregate scale, valid instances only (no row where the
        instance has no valid value). The mean of a component's values over instances is its
        valid-only aggregate (up to how the benchmark weights judges). Default: the scores table's
        valid values, ``<condition>.<component>`` where there are conditions.

        Example (components declared in ``leaderboard.yaml``)::

            def instance_components(self, scores: pd.DataFrame) -> pd.DataFrame:
                return declared_instance_components(scores, __file__)
        """
        from omnieval.scores import VALUED_STATUSES

        valid = scores[scores["status"].isin(VALUED_STATUSES)]
        keys = [f"{c}.{k}" if c else k for c, k in zip(valid["condition"], valid["component"], strict=True)]
        return valid.assign(component=keys)[["system", "instance_id", "component", "value"]]

    @abstractmethod
    def leaderboard_text(self, document: Mapping[str, object]) -> str:
        """Hook: the leaderboard as a terminal table (``omnieval aggregate``, the run's summary).

        Example::

            def leaderboard_text(self, document: Mapping[str, object]) -> str:
                return my_table(dict(document))
        """

    def aggregate_text(self, document: Mapping[str, object]) -> str:
        """Hook: ``omnieval aggregate`` without ``--json`` (default: the leaderboard table).

        Example (both policies side by side, where the run summary shows one)::

            def aggregate_text(self, document: Mapping[str, object]) -> str:
                return my_wide_table(dict(document))
        """
        return self.leaderboard_text(document)

    def run_analyses(
        self,
        scores: pd.DataFrame,
        out_dir: Path,
        *,
        only: Sequence[str] | None,
        seed: int,
        draws: int,
        facts: RunFacts | None = None,
    ) -> Mapping[str, object]:
        """Hook: the benchmark's statistics on a scores table (written under ``out_dir``; analysis
        name -> its document); ``facts`` are the run's, as :meth:`leaderboard` gets them. Default:
        none.

        Example (the analyses this benchmark registered with :mod:`omnieval.analysis`)::

            def run_analyses(self, scores, out_dir, *, only, seed, draws, facts=None):
                config = AnalysisConfig(seed=seed, bootstrap_draws=draws)
                return dict(run_analyses(scores, out_dir, only=only, config=config))
        """
        return {}

    @abstractmethod
    def write_report(self, job: ReportJob) -> None:
        """Hook: write the self-contained ``report.html`` of one run (``job.path``) from the
        leaderboard document, analyses, regression verdict, judge health and deviation ledger.

        Example (the shared page frame with sections of one's own)::

            def write_report(self, job: ReportJob) -> None:
                sections = [Section("verdict", "Verdict", verdict_banner(job.regression)), ...]
                write_run_page(job.path, suite=job.config.suite, benchmark=self.name, sections=sections)
        """

    def deviations(self, run: RunSettings) -> list[Deviation]:
        """Hook: this benchmark's departures from its paper's protocol that apply to ``run``
        (default: :attr:`paper_deviations`, whatever the run). Each benchmark declares them once, in one place; :meth:`deviation_ledger`
        adds the framework's own and is what lineage and report show.

        Example::

            def deviations(self, run: RunSettings) -> list[Deviation]:
                cpu = "cpu" in run.panels
                return [Deviation("judge-substitute-cpu", "A 1.5B judge ...", "Scores ...")] if cpu else []
        """
        return list(self.paper_deviations)

    @final
    def deviation_ledger(self, run: RunSettings) -> list[Deviation]:
        """The run's deviation ledger (FORMATS.md section 12): :meth:`deviations` plus
        ``dataset-limit`` when ``dataset.limit`` evaluates a prefix of the dataset.

        Raises:
            ValueError: two deviations share an id (a declaration error).
        """
        ledger = list(self.deviations(run))
        if run.dataset_limit is not None:
            n = run.dataset_limit
            first = "the first instance" if n == 1 else f"the first {n} instances"
            ledger.append(
                Deviation(
                    DATASET_LIMIT,
                    f"Only {first} of the dataset {'is' if n == 1 else 'are'} evaluated (dataset.limit {n}), "
                    "not the whole dataset.",
                    f"Every number is over {first} (the zero-filled denominator included); not comparable "
                    "with a run over the whole dataset.",
                )
            )
        return check_ledger(ledger)

    # -- the benchmark's own commands (declared in :attr:`commands`) ---------------------------
    @final
    def run_command(self, command: str, argv: Sequence[str], prog: str) -> int:
        """Run this benchmark's ``command`` (``make-sample``, ``human-tasks`` or ``metrics``) with
        command-line ``argv``: the function :attr:`commands` names for it.

        Returns the exit status; a benchmark without that command says so and returns 2.
        """
        target = self.commands.get(command)
        if target is None:
            what = COMMANDS.get(command, command)
            print(f"error: {self.name} has no {what}", file=sys.stderr)
            return 2
        module, _, function = target.partition(":")
        package = type(self).__module__
        main: Callable[[Sequence[str], str], int] = getattr(
            importlib.import_module(module, package=package), function
        )
        return int(main(argv, prog))


COMMANDS: Final[Mapping[str, str]] = {
    "make-sample": "sample generator",
    "human-tasks": "human-study task command",
    "metrics": "metrics command",
}
"""The commands a benchmark may declare in :attr:`Benchmark.commands` -> how an error names them."""


def first_record_keys(path: Path, *, max_lines: int = 50) -> frozenset[str]:
    """Keys of the first JSONL line of ``path`` that parses as an object (empty when none does).

    Benchmarks sharing the ``manifest.jsonl`` marker tell their layouts apart by these keys; lines
    that are not JSON objects are skipped so one broken line does not hide the layout.
    """
    try:
        with Path(path).open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle):
                if number >= max_lines:
                    break
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and record:
                    return frozenset(record)
    except OSError:
        return frozenset()
    return frozenset()


BENCHMARKS: Registry[Benchmark] = Registry("benchmark")


def benchmark(
    name: str | None = None, *, registry: Registry[Benchmark] | None = None
) -> Callable[[type[Benchmark]], type[Benchmark]]:
    """Class decorator: read the class's ``benchmark.yaml`` and register one instance of it.

    The declaration is the ``benchmark.yaml`` in the folder of the module defining the class; its
    values become the class attributes of :meth:`~omnieval.benchmarks._spec.BenchmarkSpec.class_attributes`
    and its ``name`` the registry key.
    A class without one sets those attributes in code and passes ``name``.

    Args:
        name: The registry key when there is no ``benchmark.yaml``; with one, it may be given only
            if it equals the file's ``name``.
        registry: Where to register (default :data:`BENCHMARKS`); tests register a benchmark of
            their own in a registry of their own so the production list stays the same.

    Raises:
        ConfigError: the declaration is invalid (file and field named), disagrees with ``name``,
            or the class body sets an attribute the declaration owns.
        TypeError: there is neither a declaration nor a ``name``.

    Example:
        >>> from omnieval.benchmarks import BENCHMARKS
        >>> "acbench" in BENCHMARKS.names()
        True
        >>> BENCHMARKS.get("acbench").spec.dataset.marker
        'manifest.jsonl'
    """

    def deco(cls: type[Benchmark]) -> type[Benchmark]:
        module = sys.modules.get(cls.__module__)
        path = spec_beside(getattr(module, "__file__", None))
        key = name
        if path is not None:
            spec = cached_spec(path)  # the same object the package's constants were read from
            if name is not None and name != spec.name:
                raise ConfigError(f"{path}: name {spec.name!r} but {cls.__qualname__} registers {name!r}")
            attributes = spec.class_attributes()
            doubled = sorted(a for a in attributes if a in vars(cls))
            if doubled:
                raise ConfigError(
                    f"{cls.__module__}.{cls.__qualname__} sets {', '.join(doubled)} in code; "
                    f"{path} declares them (one home per fact)"
                )
            for attribute, value in attributes.items():
                setattr(cls, attribute, value)
            cls.spec = spec
            key = spec.name
        if key is None:
            raise TypeError(f"{cls.__qualname__}: no {SPEC_FILE} beside its module and no name given")
        cls.name = key
        (BENCHMARKS if registry is None else registry).register(key)(cls())
        return cls

    return deco
