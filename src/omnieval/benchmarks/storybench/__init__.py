"""Omni-StoryBench: continue a story with the next page's image, narration and one spoken line.

The benchmark object wires the release layout (FORMATS.md section 1; its record model, from which
the record framework derives the loader, the dataset gate and the fingerprint, is ``_record.py``),
the reference systems, the automatic metrics, the four judge tracks, the paper's aggregation
(valid-only and zero-filled side by side) and the appendix analyses into the shared stages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from pydantic import BaseModel

from omnieval.benchmarks import _base as api
from omnieval.benchmarks._base import Judging
from omnieval.benchmarks._declared import DeclaredBenchmark
from omnieval.benchmarks._leaderboard import components_frame, declared_document, leaderboard_declaration
from omnieval.benchmarks.storybench import (
    _analyses,  # noqa: F401  (registers the appendix analyses)
    _drawn,  # noqa: F401  (registers the ``drawn`` image expert)
    _rubrics,  # noqa: F401  (registers the judge rubrics)
    _systems,  # noqa: F401  (registers the reference systems)
    _tracks,  # noqa: F401  (registers the judge tracks and the judges' view of a transition)
)
from omnieval.benchmarks.storybench._record import SOURCE, StoryBenchDataset, StoryBenchRecord
from omnieval.benchmarks.storybench._records import Transition
from omnieval.lineage import Deviation
from omnieval.metrics import MetricsConfig

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.judges import KnownSetRunner
    from omnieval.systems import Task


class _AudioDescriber:
    """The cpu panel's speech cascade input, measured with the suite's own ``metrics:`` settings.

    ``version`` keys the judges' cache of descriptions, so a change of the speech metric or of its
    settings refreshes cached descriptions.
    """

    def __init__(self, config: MetricsConfig) -> None:
        self.config = config

    @property
    def version(self) -> str:
        import json

        from omnieval.hashing import sha256_bytes
        from omnieval.metrics import SPEECH_META

        settings = json.dumps(
            {"config": self.config.model_dump(mode="json")}, sort_keys=True, separators=(",", ":")
        )
        return f"speech_meta:{SPEECH_META.version}:{sha256_bytes(settings.encode())[:16]}"

    def __call__(self, path: Path) -> Mapping[str, object]:
        from omnieval.metrics import describe_audio

        attributes: Mapping[str, object] = describe_audio(path, config=self.config).to_dict()
        return attributes

    def line_fit(self, path: Path, line: str) -> float | None:
        """How well the requested ``line`` fits the clip, by the suite's own ASR (mean log-probability
        per token of the line read from the clip, <= 0); None when the suite runs no ASR.

        The transcript alone undersells a pitch-shifted synthetic voice saying the right line (the
        packaged tiny.en hears 60 % of the line's words in 9 of the sample's 20 such clips); the
        forced reading still tells it from another line (docs/judges.md).
        """
        from omnieval.metrics import default_analyzer

        asr = default_analyzer(self.config).transcriber()
        if asr is None or not line.strip():
            return None
        fit: float = asr.line_logprob(path, line)
        return fit


def _metrics_cache(judge_cache: Path) -> Path | None:
    """The metrics stage's cache beside the judge stage's (``<cache>/metrics`` next to
    ``<cache>/judges``), whose image embeddings the image cascade reads instead of embedding the
    images again; None when there is none there (the drift check's and known set's caches)."""
    found = Path(judge_cache).parent / "metrics"
    return found if Path(judge_cache).name == "judges" and found.is_dir() else None


class StoryJudging(Judging):
    """Omni-StoryBench's judge scorer: the four tracks' panels and rubrics registered by this
    package (``_tracks.py``, ``_rubrics.py``), the cpu panel's speech and image facts measured with
    the suite's own ``metrics:`` settings, and the known set (``_known.py``)."""

    def judge(self, job: api.JudgeJob) -> api.JudgeOutput:
        from omnieval.benchmarks.storybench._facts import ImageDescriber
        from omnieval.benchmarks.storybench._tracks import page_turn_inputs
        from omnieval.judges import run_judges

        assert isinstance(job.metrics_config, MetricsConfig)
        result = run_judges(
            job.instances,
            job.candidates,
            panel=job.panel,
            cache_dir=job.cache_dir,
            describe_audio=_AudioDescriber(job.metrics_config),
            progress=job.progress,
            benchmark=self.benchmark,
            reference=page_turn_inputs,
            describe_image=ImageDescriber(job.metrics_config, _metrics_cache(job.cache_dir)),
        )
        return api.JudgeOutput(
            result.scores,
            result.judgments.assign(panel=result.panel),
            result.lineage,
            dict(result.mlflow_tags()),
            result.model_calls,
            result.cache_hits,
        )

    def known_set(self, instances: Sequence[object], metrics_config: BaseModel) -> KnownSetRunner:
        """Ground truth vs damaged copies per track (``known_set.json``; :mod:`._known`)."""
        from omnieval.benchmarks.storybench._known import StorybenchKnownSet

        assert isinstance(metrics_config, MetricsConfig)
        # The judge stage hands the dataset's instances: Transition rows (validated by the loader).
        from omnieval.benchmarks.storybench._facts import ImageDescriber

        return StorybenchKnownSet(
            cast("Sequence[Transition]", instances),
            _AudioDescriber(metrics_config),
            describe_image=ImageDescriber(metrics_config),
        )


# leaderboard.yaml (the typed document):
# read here so a bad file fails this import, as a bad benchmark.yaml does.
leaderboard_declaration(__file__)


@api.benchmark("storybench")
class StoryBench(DeclaredBenchmark[StoryBenchRecord, MetricsConfig]):
    """Omni-StoryBench (PROTOCOLS.md, seed 000)."""

    # Name, dataset, systems, modalities, judge tracks and headline components: benchmark.yaml.
    metrics_config = MetricsConfig
    record = StoryBenchRecord
    """The model of one parquet row: the loader's checks, the dataset gate and the fingerprint."""
    source = SOURCE
    dataset_type = StoryBenchDataset
    judging = StoryJudging
    commands: ClassVar[Mapping[str, str]] = {"make-sample": "._sample:sample_main"}
    score_range: ClassVar[Mapping[str, tuple[float, float]]] = {
        "bertscore_f1": (-1.0, 1.0),
        "image_similarity": (-1.0, 1.0),
        "speech_meta": (0.0, 1.0),
        "judge": (1.0, 10.0),
        "judge_expected": (1.0, 10.0),
        "narration_length": (0.0, math.inf),
        "dreamsim_distance": (0.0, 2.0),
    }
    """Native ranges: similarities are cosines; ``judge_expected`` is the probability-weighted judge
    score; ``narration_length`` counts characters (the length-control analyses read it);
    ``dreamsim_distance`` exists only where dreamsim is installed."""

    def visible_task(self, instance: object, condition: str = "") -> Task:
        from omnieval.benchmarks.storybench._brief import brief
        from omnieval.systems import IMAGE_ROLE, Task

        assert isinstance(instance, Transition)
        # TaskInputs has no next-page field: a system cannot read the target even by accident.
        inputs = instance.task_inputs()
        return Task(
            self.name,
            instance.index,
            instance.id,
            condition,
            inputs,
            files={IMAGE_ROLE: inputs.current_image},
            brief=brief(inputs),
        )

    def compute_metrics(self, job: api.MetricsJob) -> api.MetricsOutput:
        from omnieval.benchmarks.storybench._metrics import compute_storybench_metrics

        assert isinstance(job.config, MetricsConfig)
        result = compute_storybench_metrics(
            job.instances,
            job.system,
            job.candidates[""],
            cache_dir=job.cache_dir or Path(".cache/omnieval/metrics"),
            config=job.config,
            progress=job.progress,
        )
        return api.MetricsOutput(result.scores, result.lineage, result.computed, result.cache_hits)

    def leaderboard(self, scores: pd.DataFrame, facts: api.RunFacts | None = None) -> api.Leaderboard:
        from omnieval.benchmarks.storybench._aggregate import aggregate

        facts = facts or api.RunFacts()
        unavailable: dict[str, str] = {}
        for lineage in facts.judge_lineage.values():
            unavailable.update(lineage.get("unavailable", {}))
        agg = aggregate(
            scores, n_instances=facts.n_instances, benchmark=self.name, unavailable=unavailable or None
        )
        metrics = {sid: agg.mlflow_metrics(sid) for sid in agg.systems}
        return api.Leaderboard.typed(declared_document(__file__).model_validate(agg.to_dict()), metrics)

    def instance_components(self, scores: pd.DataFrame) -> pd.DataFrame:
        """The headline components per instance on the Total Average's 0-10 scale (storybench's
        maths: :func:`._aggregate.instance_values`), ordered as ``benchmark.yaml`` declares them."""
        from omnieval.benchmarks.storybench._aggregate import instance_values

        assert self.spec is not None
        return components_frame(instance_values(scores), self.spec)

    def leaderboard_text(self, document: Mapping[str, object]) -> str:
        from omnieval.benchmarks.storybench._report import leaderboard_table

        return leaderboard_table(dict(document))

    def aggregate_text(self, document: Mapping[str, object]) -> str:
        from omnieval.benchmarks.storybench._report import aggregate_table

        return aggregate_table(dict(document))

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

        return dict(
            run_analyses(scores, out_dir, only=only, config=AnalysisConfig(seed=seed, bootstrap_draws=draws))
        )

    def write_report(self, job: api.ReportJob) -> None:
        from omnieval.benchmarks.storybench._report import write_report_html

        write_report_html(job)

    def deviations(self, run: api.RunSettings) -> list[Deviation]:
        """Judge substitutes and prompts, metric backbones, speech fields, silent clips
        (``_deviations.py``, where each is declared once)."""
        from omnieval.benchmarks.storybench._deviations import storybench_deviations

        return storybench_deviations(run)


__all__ = ["StoryBench"]
