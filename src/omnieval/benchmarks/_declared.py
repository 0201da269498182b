"""A benchmark written as declarations: one record model, one metric function, the rest defaults.

Most of a benchmark over a JSON-lines file is the same every time: a strict loader, a dataset gate,
instances, a fingerprint, letting a system write its candidates, a scores table, valid-only and
zero-filled means with bootstrap intervals, a typed leaderboard, a terminal table and a report page.
:class:`DeclaredBenchmark` does all of that from what the benchmark declares:

- ``benchmark.yaml`` (as for every benchmark): the name, the dataset marker (the JSONL file), the
  modalities a system writes and the headline components (what :meth:`DeclaredBenchmark.score`
  returns, in display order, with their direction);
- ``record``: a :class:`Record` subclass, the pydantic model of one line. It is both the strict
  loader's check (every problem named by file, line, id and field; never half a dataset) and the
  dataset gate's Great Expectations suite (:func:`~._records.dataset_suite`);
- ``targets``: the record fields a system must never see (the rest is its task);
- ``score_range``: each component's native range (the scores gate checks values against it);
- :meth:`DeclaredBenchmark.score`: the metric, one instance at a time.

A benchmark overrides whichever other hook of :class:`~omnieval.benchmarks.Benchmark` differs
(its own metrics, its own report...). The maths of the aggregate is the pure :func:`summarize`.

Example (``hooks.py`` beside a ``benchmark.yaml`` whose headline component is ``exact``)::

    class Question(Record):
        question: str
        answer: str

    @benchmark()
    class Quiz(DeclaredBenchmark):
        record = Question
        targets = ("answer",)
        score_range = {"exact": (0.0, 1.0)}

        def score(self, record: Question, outputs: Outputs, config: NoOptions) -> dict[str, float]:
            return {"exact": float(outputs.text().strip() == record.answer)}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, TypeVar, final

from pydantic import BaseModel, ConfigDict

from omnieval.benchmarks._base import (
    Benchmark,
    Leaderboard,
    MetricsJob,
    MetricsOutput,
    ReportJob,
    RunFacts,
)
from omnieval.benchmarks._leaderboard import (
    DocumentModel,
    GenerationFacts,
    LeaderboardDocument,
    MlflowMetrics,
    RunUsage,
)
from omnieval.benchmarks._records import Instance, Record, RecordDataset, load_records, validate_records
from omnieval.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd


class NoOptions(BaseModel):
    """The ``metrics:`` block of a benchmark that has no metric options (it must stay empty)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class Outputs:
    """What one system wrote for one instance: modality -> file (every declared modality present)."""

    paths: Mapping[str, Path]

    def text(self, modality: str = "text") -> str:
        """The output of ``modality`` read as UTF-8 text."""
        return self.paths[modality].read_text(encoding="utf-8")


class Summary(NamedTuple):
    """One component of one system (:func:`summarize`); None where nothing could be computed."""

    valid_only: float | None
    valid_only_ci95: tuple[float, float] | None
    zero_filled: float | None
    zero_filled_ci95: tuple[float, float] | None
    n_valid: int
    n_missing: int


def summarize(
    values: npt.ArrayLike, n_instances: int, *, worst: float, draws: int = 2000, seed: int = 0
) -> Summary:
    """Valid-only and zero-filled means of one component, each with a 95% percentile bootstrap CI.

    Args:
        values: the valid per-instance values (shape ``(k,)``, NaN entries are dropped).
        n_instances: the instances the system was asked for (``>= k``): the zero-filled denominator.
        worst: what a missing instance counts as in the zero-filled mean (0 for a higher-is-better
            metric in [0, 1]); not finite = no zero-filled figure.
        draws: bootstrap resamples (instances drawn with replacement); seed: their generator's seed.

    Example:
        >>> s = summarize([1.0, 0.5], 3, worst=0.0)
        >>> s.valid_only, s.zero_filled, s.n_valid, s.n_missing
        (0.75, 0.5, 2, 1)
    """
    import numpy as np

    from omnieval.analysis import percentile_interval

    valid = np.asarray(values, dtype=float)
    valid = valid[np.isfinite(valid)]
    k, rng = len(valid), np.random.default_rng(seed)

    def mean_ci(sample: np.ndarray[Any, np.dtype[np.float64]]) -> tuple[float, tuple[float, float]]:
        means = sample[rng.integers(0, len(sample), size=(draws, len(sample)))].mean(axis=1)
        lo, hi = percentile_interval(means)
        return float(sample.mean()), (float(lo), float(hi))

    valid_only, valid_ci = mean_ci(valid) if k else (None, None)
    zero_filled = zero_ci = None
    if n_instances > 0 and math.isfinite(worst):
        zero_filled, zero_ci = mean_ci(np.concatenate([valid, np.full(max(n_instances - k, 0), worst)]))
    return Summary(valid_only, valid_ci, zero_filled, zero_ci, k, max(n_instances - k, 0))


class ComponentBoard(DocumentModel):
    """One component of one system in ``leaderboard.json``."""

    valid_only: float | None
    """Mean over the instances with a valid value; null when there is none."""
    valid_only_ci95: list[float] | None
    """95% percentile bootstrap interval of ``valid_only`` ``[lo, hi]``."""
    zero_filled: float | None
    """Mean over every instance, a missing one counting as the worst end of the component's range."""
    zero_filled_ci95: list[float] | None
    n_valid: int
    n_missing: int


class DeclaredSystem(DocumentModel):
    """One system's entry: its components (``<condition>.<component>`` where there are conditions)."""

    components: dict[str, ComponentBoard]
    generation: GenerationFacts | None = None
    """Generation facts of a generating system (added by the report stage)."""


class DeclaredLeaderboard(LeaderboardDocument):
    """The ``leaderboard.json`` document of every :class:`DeclaredBenchmark`."""

    benchmark: str
    n_instances: int
    """The zero-filled denominator: instances each system was asked for."""
    lower_is_better: list[str]
    """Components where a smaller value is better (the others: larger)."""
    systems: dict[str, DeclaredSystem]
    """System id -> entry, sorted by id."""
    mlflow_metrics: MlflowMetrics | None = None
    """System -> MLflow metrics (set by the report stage in ``leaderboard.json``)."""
    usage: RunUsage | None = None
    """Tokens, seconds and cost per judge and generating system (set by the track stage)."""


def _interval(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else list(ci)


RecordT = TypeVar("RecordT", bound=Record)
ConfigT = TypeVar("ConfigT", bound=BaseModel)


class DeclaredBenchmark(Benchmark, Generic[RecordT, ConfigT]):
    """The one benchmark API: a :class:`~omnieval.benchmarks.Benchmark` typed by its record model and
    ``metrics:`` config, whose metrics and aggregate follow from :meth:`score` and :func:`summarize`
    and whose differences are at most ten hooks. Register a subclass with ``@benchmark()`` beside its
    ``benchmark.yaml``.

    Hooks (everything else is ``@final``): :meth:`score` or :meth:`compute_metrics`,
    :meth:`visible_task`, :meth:`leaderboard`, :meth:`instance_components`, :meth:`leaderboard_text`,
    :meth:`aggregate_text`, :meth:`run_analyses`, :meth:`write_report`, :meth:`deviations`. Judging
    is a declared component (:attr:`judging`), the commands are declared (:attr:`commands`).
    """

    metrics_config: ClassVar[type[BaseModel]] = NoOptions
    bootstrap_draws: ClassVar[int] = 2000
    """Resamples of the leaderboard's bootstrap intervals (seeded: the same table, the same CIs)."""
    default_leaderboard: ClassVar[type[BaseModel] | None] = DeclaredLeaderboard

    def __init__(self) -> None:
        where = f"{type(self).__module__}.{type(self).__qualname__}"
        own_score = type(self).score is not DeclaredBenchmark.score
        if not own_score and type(self).compute_metrics is DeclaredBenchmark.compute_metrics:
            raise TypeError(f"{where}: declares neither score() nor compute_metrics()")
        record = getattr(self, "record", None)
        if not (isinstance(record, type) and issubclass(record, Record)):
            raise ConfigError(f"{where}: set record to a Record subclass (the model of one line)")
        unknown = sorted(set(self.targets) - set(record.model_fields))
        if self.spec is None or unknown:
            raise ConfigError(f"{where}: needs its benchmark.yaml and targets that are record fields")
        if own_score and set(self.score_range) != set(self.components):
            raise ConfigError(
                f"{where}: score_range must give the range of each headline component "
                f"({', '.join(self.components)}), got {', '.join(self.score_range) or 'none'}"
            )

    @property
    @final
    def components(self) -> tuple[str, ...]:
        """What :meth:`score` returns, in display order (``headline.components``)."""
        assert self.spec is not None
        return self.spec.headline.components

    def score(self, record: RecordT, outputs: Outputs, config: ConfigT) -> Mapping[str, float | None]:
        """Hook: component -> value of one instance (None: not applicable); ``config`` is the
        suite's typed ``metrics:`` block. Called by the default :meth:`compute_metrics` only when
        every declared modality was written; a benchmark overrides this or :meth:`compute_metrics`
        (registration refuses one that overrides neither).

        Example::

            def score(self, record: Caption, outputs: Outputs, config: NoOptions) -> dict[str, float]:
                return {"token_f1": token_f1(outputs.text(), record.reference)}
        """
        raise NotImplementedError(f"{type(self).__qualname__} declares no score()")

    # -- scoring --------------------------------------------------------------------------------
    def compute_metrics(self, job: MetricsJob) -> MetricsOutput:
        """Default: :meth:`score` per instance whose every declared modality was written."""
        from omnieval.candidates import Modality, read_candidate
        from omnieval.scores import ScoreRow, Status, scores_frame

        rows: list[ScoreRow] = []
        for condition, root in job.candidates.items():
            for inst in job.instances:
                found = [read_candidate(root, Modality(m), inst.index) for m in self.modalities]
                values: Mapping[str, float | None] = {}
                paths = {f.modality.value: f.path for f in found if f.path is not None}
                if len(paths) == len(found):
                    values = self.score(inst.record, Outputs(paths), job.config)  # type: ignore[arg-type]
                    if set(values) != set(self.components):
                        raise ConfigError(
                            f"{self.name}: score() returned {sorted(values)}, declared {list(self.components)}"
                        )
                unvalued = Status.NOT_APPLICABLE if values else Status.MISSING_OUTPUT
                for component in self.components:
                    value = values.get(component)
                    status = Status.OK if value is not None else unvalued
                    rows.append(
                        ScoreRow(
                            self.name,
                            job.system,
                            inst.id,
                            inst.index,
                            "metrics",
                            component,
                            "",
                            "",
                            value,
                            status.value,
                            condition=condition,
                        )
                    )
        lineage = {"components": list(self.components), "config": job.config.model_dump(mode="json")}
        return MetricsOutput(scores_frame(rows), lineage, computed=len(rows), cache_hits=0)

    # -- aggregation ----------------------------------------------------------------------------
    def _worst(self, component: str) -> float:
        lo, hi = self.score_range[component]
        return hi if component in self.lower_is_better else lo

    def leaderboard(self, scores: pd.DataFrame, facts: RunFacts | None = None) -> Leaderboard:
        """Default: per system, condition and component the valid-only and zero-filled means with
        bootstrap intervals (:func:`summarize`), as a :class:`DeclaredLeaderboard`."""
        from omnieval.scores import VALUED_STATUSES

        n = facts.n_instances if facts and facts.n_instances else int(scores["instance_id"].nunique())
        valid = scores["status"].isin(VALUED_STATUSES)
        systems: dict[str, DeclaredSystem] = {}
        metrics: dict[str, dict[str, float]] = {}
        for system, rows in scores.groupby("system", sort=True):
            boards: dict[str, ComponentBoard] = {}
            for condition in (c for c in self.conditions if c in set(rows["condition"])):
                for component in self.components:
                    key = f"{condition}.{component}" if condition else component
                    mask = (rows["condition"] == condition) & (rows["component"] == component)
                    s = summarize(
                        rows.loc[mask & valid, "value"],
                        n,
                        worst=self._worst(component),
                        draws=self.bootstrap_draws,
                    )
                    boards[key] = ComponentBoard(
                        valid_only=s.valid_only,
                        valid_only_ci95=_interval(s.valid_only_ci95),
                        zero_filled=s.zero_filled,
                        zero_filled_ci95=_interval(s.zero_filled_ci95),
                        n_valid=s.n_valid,
                        n_missing=s.n_missing,
                    )
                    for policy in ("valid_only", "zero_filled"):
                        value = getattr(s, policy)
                        if value is not None:
                            metrics.setdefault(str(system), {})[f"{self.name}.{policy}.{key}"] = value
            systems[str(system)] = DeclaredSystem(components=boards)
        document = DeclaredLeaderboard(
            benchmark=self.name, n_instances=n, lower_is_better=sorted(self.lower_is_better), systems=systems
        )
        return Leaderboard.typed(document, metrics)

    def _table(self, document: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
        """Header and rows of the leaderboard: per component the valid-only mean [95% CI], the
        zero-filled mean and valid/asked; systems as the document orders them."""
        from omnieval.reporting import fmt

        first: Mapping[str, Any] = next(iter(document["systems"].values()), {})
        keys = list(first.get("components", {}))
        head = ["system"] + [h for k in keys for h in (f"{k} [95% CI]", f"{k} zero-filled", "valid")]
        rows = []
        for system, entry in document["systems"].items():
            cells = [system]
            for key in keys:
                c = entry["components"][key]
                ci = c["valid_only_ci95"]
                cells.append(fmt(c["valid_only"], 3) + (f" [{fmt(ci[0], 3)}, {fmt(ci[1], 3)}]" if ci else ""))
                cells += [fmt(c["zero_filled"], 3), f"{c['n_valid']}/{c['n_valid'] + c['n_missing']}"]
            rows.append(cells)
        return head, rows

    def leaderboard_text(self, document: Mapping[str, object]) -> str:
        """Default: one line per system, each component's mean [95% CI], zero-filled mean, valid/asked."""
        head, rows = self._table(document)
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows])

    def write_report(self, job: ReportJob) -> None:
        """Default: the verdict, the leaderboard table and generation facts on one page."""
        from omnieval.reporting import Section, esc, generation_block, table, verdict_banner, write_run_page

        head, rows = self._table(job.document)
        sections = [
            Section("verdict", "Verdict", verdict_banner(job.regression, deviations=job.deviations)),
            Section(
                "leaderboard",
                "Leaderboard",
                table([esc(h) for h in head], [[esc(c) for c in r] for r in rows]),
            ),
        ]
        if any("generation" in s for s in job.document["systems"].values()):
            sections.append(Section("generation", "Generation", generation_block(job.document["systems"])))
        facts = f"{esc(self.title)}: {esc(job.document.get('n_instances', '?'))} instances"
        write_run_page(job.path, suite=job.config.suite, benchmark=self.name, facts=facts, sections=sections)


__all__ = [
    "ComponentBoard",
    "DeclaredBenchmark",
    "DeclaredLeaderboard",
    "DeclaredSystem",
    "Instance",
    "NoOptions",
    "Outputs",
    "Record",
    "RecordDataset",
    "Summary",
    "load_records",
    "summarize",
    "validate_records",
]
