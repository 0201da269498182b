"""OmniACBench: read a script aloud with the acoustic delivery that a spoken instruction and an image imply.

The benchmark object wires the JSONL manifest (FORMATS.md section 6; its record model, from which
the record framework derives the loader, the dataset gate and the fingerprint, is ``_record.py``),
the five input conditions of the paper's controlled decomposition, the reference systems
(``oracle-control``, ``neutral``; ``import`` for outputs made elsewhere), the ``cascade`` generating
kind (registered here because it serves acbench only), the acoustic metrics (WER, delta-WPM, PER,
VFR@0.3, evaluator accuracies) and the FORMATS.md section 7 aggregate into the shared stages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from omnieval.benchmarks import _base as api
from omnieval.benchmarks._declared import DeclaredBenchmark
from omnieval.benchmarks._leaderboard import declared_document, declared_instance_components
from omnieval.benchmarks.acbench import (
    _analyses,  # noqa: F401  (registers Table 3 and 4 analyses)
    _cascade,  # noqa: F401  (registers the ``cascade`` kind)
)
from omnieval.benchmarks.acbench._aggregate import (
    METRIC_NOTES,
    PER_DEFINITION,
    _check,
    aggregate_acbench,
    leaderboard_text,
    mlflow_metrics,
)
from omnieval.benchmarks.acbench._brief import brief
from omnieval.benchmarks.acbench._conditions import task_inputs
from omnieval.benchmarks.acbench._deviations import acbench_deviations
from omnieval.benchmarks.acbench._metrics import SCORE_RANGE, AcbenchMetricsConfig, compute_acbench_metrics
from omnieval.benchmarks.acbench._record import SOURCE, AcbenchDataset, AcbenchInstance, AcbenchRecord
from omnieval.benchmarks.acbench._systems import NOT_EVALUATED, Neutral, OracleControl
from omnieval.lineage import Deviation
from omnieval.systems import SYSTEMS

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.systems import Task

# The classes themselves, so that each kind's typed config (``config_model``) is found.
SYSTEMS.register("oracle-control")(OracleControl)
SYSTEMS.register("neutral")(Neutral)


@api.benchmark("acbench")
class AcBench(DeclaredBenchmark[AcbenchRecord, AcbenchMetricsConfig]):
    """OmniACBench (PROTOCOLS.md, seed 003)."""

    # Name, dataset, conditions, systems, modalities and headline components: benchmark.yaml.
    metrics_config = AcbenchMetricsConfig
    record = AcbenchRecord
    """The model of one manifest line: the loader's checks, the dataset gate and the fingerprint."""
    source = SOURCE
    dataset_type = AcbenchDataset
    score_range: ClassVar[Mapping[str, tuple[float, float]]] = SCORE_RANGE
    metric_notes: ClassVar[Mapping[str, str]] = METRIC_NOTES
    """``per`` is omnieval's word-level decision on the heteronym, not the paper's PER."""
    commands: ClassVar[Mapping[str, str]] = {
        "make-sample": "._sample:sample_main",
        "human-tasks": "._human_cli:human_tasks_main",  # Table 4's subset as blind Label Studio tasks
        "metrics": "._metrics_cli:metrics_main",
    }

    def visible_task(self, instance: object, condition: str = "") -> Task:
        from omnieval.systems import AUDIO_ROLE, IMAGE_ROLE, Task

        assert isinstance(instance, AcbenchInstance)
        inputs = task_inputs(instance, condition)
        # The media a condition gives, by role: what a model's request shows (the brief says where).
        roles = {IMAGE_ROLE: inputs.image, AUDIO_ROLE: inputs.instruction_audio}
        files = {role: path for role, path in roles.items() if path is not None}
        return Task(
            self.name, instance.index, instance.id, inputs.condition, inputs, files=files, brief=brief(inputs)
        )

    def compute_metrics(self, job: api.MetricsJob) -> api.MetricsOutput:
        import pandas as pd

        assert isinstance(job.config, AcbenchMetricsConfig)
        frames: list[pd.DataFrame] = []
        lineage: dict[str, Any] = {}
        computed = hits = 0
        n = len(job.instances)
        total = n * len(job.candidates)
        for offset, (condition, root) in enumerate(job.candidates.items()):

            def step(done: int, _total: int, base: int = offset * n) -> None:
                if job.progress is not None:
                    job.progress(base + done, total)

            result = compute_acbench_metrics(
                job.instances,
                job.system,
                root,
                condition=condition,
                cache_dir=job.cache_dir,
                config=job.config,
                progress=step,
            )
            frames.append(result.scores)
            lineage[condition] = result.lineage
            computed += result.computed
            hits += result.cache_hits
        return api.MetricsOutput(pd.concat(frames, ignore_index=True), lineage, computed, hits)

    def leaderboard(self, scores: pd.DataFrame, facts: api.RunFacts | None = None) -> api.Leaderboard:
        document = aggregate_acbench(scores)
        metrics = {sid: mlflow_metrics(document, sid) for sid in document["systems"]}
        return api.Leaderboard.typed(declared_document(__file__).model_validate(document), metrics)

    def instance_components(self, scores: pd.DataFrame) -> pd.DataFrame:
        """``<condition>.<metric>`` per instance in the aggregate's units, read from the table
        through the sources ``leaderboard.yaml`` declares (after the aggregate's own checks)."""
        return declared_instance_components(_check(scores), __file__)

    def leaderboard_text(self, document: Mapping[str, object]) -> str:
        return leaderboard_text(dict(document))

    def write_report(self, job: api.ReportJob) -> None:
        from omnieval.benchmarks.acbench._report import write_acbench_report

        write_acbench_report(job)

    def deviations(self, run: api.RunSettings) -> list[Deviation]:
        """ASR, WER/WPM/VFR definitions, PER(word), evaluators, unusable clips (``_deviations.py``,
        where each is declared once)."""
        return acbench_deviations(run)


__all__ = ["NOT_EVALUATED", "PER_DEFINITION", "AcBench", "AcbenchMetricsConfig"]
