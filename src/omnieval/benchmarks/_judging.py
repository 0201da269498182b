"""A benchmark's judge scorer: its panels, prompts, answer reader and the judge runs on its own tracks.

A benchmark with LLM judging declares ``judging = <a Judging subclass>``; the benchmark's public
judge methods (``judge``, ``judge_anchors``, ``known_set``, ``describe_panels``...) hand the work to
one instance of it, bound to the benchmark's name. Everything here defaults to the judges package's
registries, keyed by that name (:func:`omnieval.judges.register_tracks`, ``register_panels``,
``register_templates``), so two benchmarks' tracks live side by side in one process; a benchmark
overrides :meth:`Judging.judge` (always) and whichever other part it does differently (PRISM's
two-stage prompts and pairwise anchors, say).

Example (the shape of storybench's)::

    class StoryJudging(Judging):
        def judge(self, job: JudgeJob) -> JudgeOutput:
            return run_my_judges(job, benchmark=self.benchmark)

    @benchmark()
    class StoryBench(DeclaredBenchmark[StoryBenchRecord, MetricsConfig]):
        judging = StoryJudging
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from omnieval.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from omnieval.benchmarks._base import JudgeJob, JudgeOutput
    from omnieval.judges import AnchorTracks, JudgedPanel, KnownSetRunner, ParseResult
    from omnieval.judgments import JudgmentSchema


class Judging(ABC):
    """The judge scorer of one benchmark (module docstring); ``benchmark`` is its registry name."""

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


__all__ = ["Judging"]
