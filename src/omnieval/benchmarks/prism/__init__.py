"""PRISM-Bench: audio-centric judging of text-to-audio-video clips against ground-truth references.

The benchmark object wires the JSONL manifest (FORMATS.md section 6; its record model, from which
the record framework derives the loader, the dataset gate and the fingerprint, is ``_record.py``),
the reference systems (``ground-truth``, ``muted``, ``swapped-audio``, ``offset``; ``import`` for videos made
elsewhere; ``cpu-t2av``, a CPU cascade that is NOT a generative model), the blind side-by-side two-stage judging (``cpu-cascade`` here, ``omni`` on a GPU server),
the ground-truth-calibrated aggregate (FORMATS.md section 7) and the judge-stability analyses
(section 8) into the shared stages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict, Field

from omnieval.benchmarks import _base as api
from omnieval.benchmarks._base import Judging
from omnieval.benchmarks._declared import DeclaredBenchmark
from omnieval.benchmarks._leaderboard import declared_document, leaderboard_declaration
from omnieval.benchmarks.prism import (
    _analyses,  # noqa: F401  (registers the prism analyses)
    _tracks,  # noqa: F401  (registers the judge tracks)
)
from omnieval.benchmarks.prism._aggregate import DEFAULT_DIAGNOSTIC, DEFAULT_REFERENCE
from omnieval.benchmarks.prism._record import (
    SOURCE,
    PrismDataset,
    PrismInstance,
    PrismRecord,
    PrismTaskInputs,
)
from omnieval.lineage import Deviation
from omnieval.systems import SYSTEMS

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.judges import KnownSetRunner, ParseResult
    from omnieval.judgments import JudgmentSchema
    from omnieval.systems import Task


class PrismMetricsConfig(BaseModel):
    """The ``metrics:`` block of a prism suite: how clips are measured and paired for judging."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    order_seed: int = 0
    """Seed of the blind order: which clip of a pair is shown as "1" (recorded per pair)."""
    swap_check: bool = False
    """Also judge every pair in the swapped order and report how often preferences flip."""
    max_per_subset: int | None = Field(default=None, ge=1)
    """Judge only the first N instances of each subset (CPU runs: every call takes ~20-40 s on two
    cores); None = every instance. Instances left out get no rows; the report says how many."""


SCORE_RANGE: Mapping[str, tuple[float, float]] = {"judge": (0.0, 10.0)}


def _register_systems() -> None:
    from omnieval.benchmarks.prism._cascade import CpuT2av
    from omnieval.benchmarks.prism._systems import GroundTruth, Muted, Offset, SwappedAudio

    # The classes themselves, so that each kind's typed config (``config_model``) is found; the
    # reference systems, then a system under test that is NOT a generative model (a rule-based CPU
    # cascade).
    for system in (GroundTruth, Muted, SwappedAudio, Offset, CpuT2av):
        SYSTEMS.register(system.kind)(system)


_register_systems()


def _first_per_subset(instances: list[Any], limit: int | None) -> list[Any]:
    """The first ``limit`` instances of each subset, in canonical order (all when ``limit`` is None).

    >>> from types import SimpleNamespace as I
    >>> rows = [I(subset=s, index=i) for i, s in enumerate(["on_screen"] * 3 + ["mixed"] * 2)]
    >>> [r.index for r in _first_per_subset(rows, 2)]
    [0, 1, 3, 4]
    """
    if limit is None:
        return instances
    seen: dict[str, int] = {}
    kept = []
    for instance in instances:
        seen[instance.subset] = seen.get(instance.subset, 0) + 1
        if seen[instance.subset] <= limit:
            kept.append(instance)
    return kept


def _first_swap(swaps: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The swap-check figures of the first panel that ran one (the report shows one check)."""
    if not swaps:
        return None
    panel, figures = next(iter(swaps.items()))
    return {"panel": panel, **figures} if isinstance(figures, Mapping) else None


class PrismJudging(Judging):
    """PRISM-Bench's judge scorer: blind side-by-side two-stage judging beside the reference clip,
    on its own panels and prompts (``_judge.py``, ``_prompts.py``)."""

    def judge(self, job: api.JudgeJob) -> api.JudgeOutput:
        from omnieval.benchmarks.prism._judge import judge_prism

        config = job.metrics_config
        assert isinstance(config, PrismMetricsConfig)
        instances = _first_per_subset(list(job.instances), config.max_per_subset)
        result = judge_prism(
            instances,
            job.candidates,
            panel=job.panel,
            cache_dir=job.cache_dir,
            seed=config.order_seed,
            swap_check=config.swap_check,
            progress=job.progress,
        )
        lineage = {**result.lineage, "swap": result.swap}
        if result.unavailable:
            lineage["unavailable"] = "; ".join(result.unavailable)
        return api.JudgeOutput(
            result.scores,
            result.judgments,
            lineage,
            result.mlflow_tags,
            result.model_calls,
            result.cache_hits,
        )

    def schema(self) -> JudgmentSchema:
        from omnieval.benchmarks.prism._judge import JUDGMENT_SCHEMA

        return JUDGMENT_SCHEMA

    def panel_names(self) -> list[str]:
        from omnieval.benchmarks.prism._judge import prism_panel_names

        return prism_panel_names()

    def describe_panels(self) -> list[dict[str, object]]:
        from omnieval.benchmarks.prism._judge import describe_prism_panels

        return list(describe_prism_panels())

    def prompt_catalog(self) -> list[dict[str, object]]:
        from omnieval.benchmarks.prism._prompts import judge_prompt_rows

        return list(judge_prompt_rows())

    def read_answer(self, raw: str | None, track: str) -> ParseResult:
        """One dimension's scores of a stage answer (the cells the answer holds; see
        :func:`~._judge.read_dimension_answer`)."""
        from omnieval.benchmarks.prism._judge import read_dimension_answer

        return read_dimension_answer(raw, track)

    def anchor_tracks(self) -> dict[str, tuple[str, ...]]:
        """Every dimension; an anchor's candidate is one clip (``video/<index>/generated.mp4``)."""
        from omnieval.benchmarks.prism._tags import DIMENSIONS

        return dict.fromkeys(DIMENSIONS, ("video",))

    def judge_anchors(self, job: api.JudgeJob) -> api.JudgeOutput:
        """The anchor clips judged beside their references, scored per dimension (:mod:`._anchors`)."""
        from omnieval.benchmarks.prism._anchors import judge_prism_anchors

        config = job.metrics_config
        assert isinstance(config, PrismMetricsConfig)
        return judge_prism_anchors(job, seed=config.order_seed)

    def known_set(self, instances: Sequence[object], metrics_config: BaseModel) -> KnownSetRunner:
        """Reference clips vs damaged copies, judged blind beside them (``known_set.json``; :mod:`._known`)."""
        from omnieval.benchmarks.prism._known import PrismKnownSet

        # The judge stage hands the dataset's instances: PrismInstance rows (validated by the loader).
        return PrismKnownSet(list(cast("Sequence[PrismInstance]", instances)))


# leaderboard.yaml (the typed document):
# read here so a bad file fails this import, as a bad benchmark.yaml does.
leaderboard_declaration(__file__)


@api.benchmark("prism")
class Prism(DeclaredBenchmark[PrismRecord, PrismMetricsConfig]):
    """PRISM-Bench (PROTOCOLS.md, seed 002)."""

    # Name, dataset, systems, modalities and headline components: benchmark.yaml.
    metrics_config = PrismMetricsConfig
    score_range: ClassVar[Mapping[str, tuple[float, float]]] = SCORE_RANGE
    # The reference probes stay out of the calibration's global ground-truth mean (_aggregate.py).
    diagnostic_kinds: ClassVar[frozenset[str]] = frozenset(DEFAULT_DIAGNOSTIC)
    # The ground truth beside itself stays out of it too (systems under test only; FORMATS.md §7).
    reference_kinds: ClassVar[frozenset[str]] = frozenset(DEFAULT_REFERENCE)
    # One manifest line: the loader's checks, the dataset gate and the fingerprint follow from it.
    record = PrismRecord
    source = SOURCE
    dataset_type = PrismDataset
    judging = PrismJudging
    commands: ClassVar[Mapping[str, str]] = {
        "make-sample": "._sample:sample_main",
        "human-tasks": "._human_cli:human_tasks_main",
    }

    def visible_task(self, instance: object, condition: str = "") -> Task:
        from omnieval.systems import Task

        assert isinstance(instance, PrismInstance)
        # A text-to-audio-video generator gets the caption only: the reference clip is the target.
        return Task(self.name, instance.index, instance.id, condition, PrismTaskInputs(instance.caption))

    def compute_metrics(self, job: api.MetricsJob) -> api.MetricsOutput:
        """PRISM-Bench has no automatic metrics: every score comes from the judges."""
        import pandas as pd

        from omnieval.scores import SCORE_COLUMNS

        empty = pd.DataFrame(columns=list(SCORE_COLUMNS))
        return api.MetricsOutput(empty, {"note": "prism has no automatic metrics"}, 0, 0)

    def leaderboard(self, scores: pd.DataFrame, facts: api.RunFacts | None = None) -> api.Leaderboard:
        from omnieval.benchmarks.prism._aggregate import aggregate_prism, mlflow_metrics

        document = aggregate_prism(scores, facts)
        lineage = facts.judge_lineage if facts is not None else {}
        swaps = {panel: lin.get("swap") for panel, lin in lineage.items() if (lin or {}).get("swap")}
        if swaps:
            document["swap_check"] = swaps
        metrics = {sid: mlflow_metrics(document, sid) for sid in document["systems"]}
        return api.Leaderboard.typed(declared_document(__file__).model_validate(document), metrics)

    def leaderboard_text(self, document: Mapping[str, object]) -> str:
        from omnieval.benchmarks.prism._aggregate import leaderboard_text

        return leaderboard_text(dict(document))

    def instance_components(self, scores: pd.DataFrame) -> pd.DataFrame:
        from omnieval.benchmarks.prism._aggregate import instance_components

        return instance_components(scores)

    def run_analyses(
        self,
        scores: pd.DataFrame,
        out_dir: Path,
        *,
        only: Sequence[str] | None,
        seed: int,
        draws: int,
        facts: api.RunFacts | None = None,
    ) -> Mapping[str, object]:
        from omnieval.analysis import AnalysisConfig, run_analyses

        # Stability leaves out the suite's diagnostic and reference systems, as the aggregate does
        # (None: the benchmark's default ids).
        diagnostic = facts.diagnostic if facts else None
        reference = facts.reference if facts else None
        config = AnalysisConfig(
            seed=seed,
            bootstrap_draws=draws,
            diagnostic=None if diagnostic is None else tuple(sorted(diagnostic)),
            reference=None if reference is None else tuple(sorted(reference)),
        )
        return dict(run_analyses(scores, out_dir, only=only, config=config))

    def write_report(self, job: api.ReportJob) -> None:
        import json

        from omnieval.benchmarks.prism._report import unavailable_judging, write_prism_report

        stability_path = job.analyses_dir / "stability.json"
        stability = (
            json.loads(stability_path.read_text(encoding="utf-8")) if stability_path.is_file() else None
        )
        document = job.document
        # What the judges could not judge here, from the judge stage's lineage; the cells the
        # aggregate could not compute are the document's own section (``not_computed``).
        judge_lineage = job.config.state / "judge" / "lineage.json"
        write_prism_report(
            job,
            stability=stability,
            swap=_first_swap(document.get("swap_check")),
            unavailable=unavailable_judging(
                json.loads(judge_lineage.read_text(encoding="utf-8")) if judge_lineage.is_file() else {}
            ),
        )

    def deviations(self, run: api.RunSettings) -> list[Deviation]:
        """Judge substitutes, prompt paraphrase, the per-subset limit (``_deviations.py``, where
        each is declared once)."""
        from omnieval.benchmarks.prism._deviations import prism_deviations

        return prism_deviations(run)


__all__ = ["Prism", "PrismMetricsConfig"]
