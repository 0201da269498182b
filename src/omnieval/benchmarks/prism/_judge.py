"""PRISM-Bench judging: blind pairs, two stages, on the judges' pair runner, as scores-table rows.

One *call* is one (judge, system, instance, stage[, swapped]) request scoring both clips of the pair
(the system's candidate and the instance's reference, in the seeded order of
:func:`~._compose.pair_order`). It ends with exactly one status (FORMATS.md section 3) and becomes,
per active cell of its stage, a system row (``paired_with="ground_truth"``) and a ground-truth row
(``system="ground_truth"``, ``paired_with=<system>``), plus one row of the judgments table.

PRISM's own part is here: its stages and cells, what a judge is shown of a pair (facts measured
from each clip, :mod:`._facts`, or the blinded clips, :mod:`._compose`) and the rows; sending,
caching, retries, repair and the swap check are the judges' (:class:`~omnieval.judges.PairRunner`),
the answer's reading is :func:`~._prompts.read_stage`, the panels are :mod:`._tracks`'. A panel whose
model cannot be reached is reported in ``unavailable`` and its rows are ``not_applicable``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

from omnieval.backends.llm import ChatBackend, carries_video_audio
from omnieval.benchmarks.prism import _prompts as prompts
from omnieval.benchmarks.prism._compose import ComposeSpec, PairOrder, compose_clips, compose_pair, pair_order
from omnieval.benchmarks.prism._facts import FACTS_VERSION, ClipFacts, measure_clip
from omnieval.benchmarks.prism._prompts import StageReading, read_dimension_answer, read_stage
from omnieval.benchmarks.prism._tags import GROUND_TRUTH, STAGE_DIMENSIONS, Cell, stage_cells
from omnieval.benchmarks.prism._tracks import (
    PrismPanelConfig,
    criteria_count,
    describe_prism_panels,
    load_criteria,
    load_prism_panel,
    prism_panel_names,
)
from omnieval.errors import DataError, OmnievalError
from omnieval.judges import (
    JudgeConfig,
    PairCall,
    PairJudgeResult,
    PairRunner,
    cache_key,
    pair_calls,
    pair_score_rows,
    pair_tags,
    swap_summary,
)
from omnieval.judgments import JudgmentSchema
from omnieval.scores import Status

log = logging.getLogger(__name__)

BENCHMARK = "prism"
COMPONENT = "judge"
Progress = Callable[[str, int, int], None]
BackendFactory = Callable[[JudgeConfig], ChatBackend]
JUDGMENT_SCHEMA = JudgmentSchema(
    keys=("subset", "stage", "swapped"), call=("panel", "order_first", "order", "cells"), reasons="evidence"
)
"""PRISM's judgments: one row per call (stage, and the swap-check call beside the first), with the
blind order the judge saw and the cells it was asked, and cited evidence for its reasons."""
JUDGMENT_COLUMNS: tuple[str, ...] = JUDGMENT_SCHEMA.columns
LEDGER_STATUSES: tuple[str, ...] = ("ok", "repaired", "parse_error", "inference_error", "unrecoverable")
_stage_score = prompts.stage_score  # the judges' score reader on the 0-10 scale (pinned by the tests)
_Call = PairCall[StageReading]  # ``group`` is the stage, ``item`` the instance


class PrismInstanceLike(Protocol):
    """What judging reads from an instance (``PrismInstance`` satisfies it)."""

    @property
    def id(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def subset(self) -> str: ...
    @property
    def active_tags(self) -> tuple[str, ...]: ...
    @property
    def caption(self) -> str: ...
    @property
    def reference_video(self) -> Path: ...


PrismJudgeResult = PairJudgeResult
"""What one PRISM panel run produced (scores rows: per call and active cell, a system row and a
ground-truth row; ``swap``: per stage flip rates when the swap check ran)."""


class _Runner(PairRunner):
    """The pair runner, shown what PRISM shows a judge: facts measured from each clip (cascade) or
    the two blinded clips (native), both made once and kept in the cache folder."""

    panel: PrismPanelConfig

    def facts(self, clip: Path, transcribe: bool) -> ClipFacts:
        settings: dict[str, Any] = {"transcribe": transcribe}
        if transcribe:
            from omnieval.backends.asr import load_transcriber

            asr = load_transcriber(self.panel.facts.asr_model).identity()
            settings["asr"] = {"name": asr.name, "sha256": asr.sha256, "settings": asr.settings}
        key = cache_key(kind="prism_facts", version=FACTS_VERSION, clip=self.hasher(clip), settings=settings)

        def measure() -> dict[str, Any]:
            facts = measure_clip(clip, transcribe=transcribe, asr_model=self.panel.facts.asr_model)
            return {"facts": facts.to_json(), "settings": settings}

        return ClipFacts.from_json(self.derived("prism_facts", key, measure)["facts"])

    def composed(
        self, candidate: Path, reference: Path, order: PairOrder, soundtracks: bool
    ) -> dict[str, Any]:
        """The blinded clips (or the joined pair video) and, when asked, each clip's soundtrack."""
        from omnieval.benchmarks.prism._media import extract_audio

        cfg = self.panel.compose
        spec = ComposeSpec(width=cfg.width, height=cfg.height, fps=cfg.fps)
        settings = list(dataclasses.astuple(spec))  # every setting of the composition is in the key
        clips = {"candidate": self.hasher(candidate), "reference": self.hasher(reference)}
        key = cache_key(kind="prism_compose", **clips, first=order.first, media=cfg.media, spec=settings)
        folder = self.cache_dir / "prism_media" / key[:2] / key
        made = (folder / "pair.mp4",) if cfg.media == "pair" else (folder / "clip1.mp4", folder / "clip2.mp4")
        if not all(path.is_file() for path in made):
            if cfg.media == "pair":
                compose_pair(candidate, reference, order, made[0], spec=spec)
            else:
                compose_clips(candidate, reference, order, folder, spec=spec)
            self.made["prism_media"] += 1
        if cfg.media == "pair":
            return {"pair_video": made[0]}
        wavs = (folder / "clip1.wav", folder / "clip2.wav")
        for clip, wav in zip(made, wavs, strict=True):
            if soundtracks and not wav.is_file():
                extract_audio(clip, wav, sr=16_000)
        return {"clips": made, "soundtracks": wavs if soundtracks else None}

    def prepare(self, call: _Call, judge: JudgeConfig, candidates: Mapping[str, Path]) -> None:
        """Settle a call that needs no model; else build its request (facts or blinded clips)."""
        from omnieval.benchmarks.prism._record import candidate_video

        reason = self.availability(judge)
        if reason is not None:
            return self.settle(call, Status.NOT_APPLICABLE, self.unavailable_note(reason))
        inst: PrismInstanceLike = call.item
        reference = Path(inst.reference_video)
        if not reference.is_file():
            raise DataError(f"prism instance {inst.id}: reference video {reference} not found")
        candidate = candidate_video(Path(candidates[call.system]), inst.index)
        if not candidate.is_file():
            return self.settle(call, Status.MISSING_OUTPUT, f"video output missing: {candidate} not found")
        clip = {"candidate": candidate, "reference": reference}
        try:
            if self.panel.judge_kind == "cascade":
                speech = any(t.startswith("SPEECH_") for t in inst.active_tags)
                media: dict[str, Any] = {
                    "facts": tuple(self.facts(clip[call.order.role(s)], speech) for s in (1, 2))
                }
            else:
                sound = self.panel.compose.soundtracks and not carries_video_audio(judge.backend)
                media = self.composed(candidate, reference, cast(PairOrder, call.order), sound)
        except OmnievalError as exc:
            # An unreadable candidate is the system's failure; an unreadable reference is bad data.
            if reference.resolve() == Path(getattr(exc, "path", "") or "").resolve():
                raise DataError(f"prism instance {inst.id}: reference video unreadable: {exc}") from None
            return self.settle(call, Status.MISSING_OUTPUT, f"video output unreadable: {exc}")
        except Exception as exc:  # a measurement library failing on odd media: recorded, not fatal
            why = f"preparing the judge input failed: {type(exc).__name__}: {exc}"
            return self.settle(call, Status.INFERENCE_ERROR, why)
        caption = inst.caption if call.group == 2 else None
        inputs = prompts.StageInputs(call.group, tuple(inst.active_tags), call.cells, caption, **media)
        framing, kind = judge.framing, self.panel.judge_kind
        schema = prompts.verdict_schema(
            call.cells, evidence_max_chars=framing.rationale_max_chars, evidence_first=framing.rationale_first
        )
        messages = prompts.build_messages(kind, inputs, framing)
        sha = prompts.template_sha256(kind, call.group)
        self.ask(call, judge, sha, messages, schema, benchmark=BENCHMARK)


def _cell_columns(call: _Call, cell: Cell) -> dict[str, Any]:
    inst: PrismInstanceLike = call.item
    row = {"benchmark": BENCHMARK, "instance_id": inst.id, "index": inst.index, "subset": inst.subset}
    return row | {
        "track": cell.dimension,
        "criterion": cell.audio_type,
        "component": COMPONENT,
        "condition": "",
    }


def _judgment_row(call: _Call, panel: str) -> dict[str, Any]:
    inst: PrismInstanceLike = call.item
    reading = call.reading if call.valued else None
    row = {"system": call.system, "instance_id": inst.id, "index": inst.index, "subset": inst.subset}
    row |= {"stage": call.group, "swapped": call.swapped, **call.ledger_columns(call.reading), "panel": panel}
    row |= call.judgment_columns() | {"scores": json.dumps(reading.scores if reading else {})}
    return row | {"evidence": json.dumps(reading.evidence if reading else {}, ensure_ascii=False)}


def _lineage(runner: _Runner, calls: Sequence[_Call], seed: int, swap_check: bool) -> dict[str, Any]:
    panel, book, kind = runner.panel, load_criteria(), runner.panel.judge_kind
    lineage = runner.lineage_head()
    lineage["prompts"] = {
        f"stage_{s}": {"version": prompts.PROMPT_VERSION, "sha256": prompts.template_sha256(kind, s)}
        for s in STAGE_DIMENSIONS
    }
    lineage["repair_prompt"] = {"sha256": prompts.repair_prompt_sha256()} if panel.repair else None
    criteria = {"version": book.version, "sha256": book.sha256, "count": criteria_count()}
    lineage["criteria"] = criteria | {"wordings": len(book.criteria)}
    lineage |= {"seed": seed, "swap_check": swap_check, **runner.figures(calls, LEDGER_STATUSES)}
    lineage["unavailable"] = runner.unavailable()
    if kind == "cascade":
        facts = {"version": FACTS_VERSION, "asr_model": panel.facts.asr_model}
        lineage["facts"] = facts | {"measured": runner.made["prism_facts"]}
    else:
        lineage["compose"] = panel.compose.model_dump(mode="json") | {"composed": runner.made["prism_media"]}
    return lineage


def judge_prism(
    instances: Sequence[PrismInstanceLike],
    candidates: Mapping[str, Path],
    *,
    panel: str | Path | PrismPanelConfig,
    cache_dir: Path,
    seed: int = 0,
    swap_check: bool = False,
    progress: Progress | None = None,
    backend_factory: BackendFactory | None = None,
) -> PrismJudgeResult:
    """Judge every system's clips beside the references with one PRISM panel.

    Args:
        instances: the dataset rows (``index`` is the candidate index).
        candidates: system id -> candidate root (``video/<index>/generated.mp4``); the
            ``ground-truth`` system (references judged beside themselves) is an ordinary entry.
        panel: ``cpu-cascade``, ``omni``, a panel YAML path, or a loaded config.
        cache_dir: answers, measured facts and blinded clips are kept here (safe to share).
        seed: decides each pair's order (:func:`~._compose.pair_order`).
        swap_check: also judge each pair in the other order and report flip rates in ``swap``.
        progress: ``progress(label, done, total)`` as calls settle.
        backend_factory: build the chat backend for a judge (tests inject an in-process model).

    Raises:
        ConfigError: unknown or invalid panel. DataError: a reference clip is missing or unreadable.
    """
    import pandas as pd

    from omnieval.scores import SCORE_COLUMNS, coerce_scores

    config = panel if isinstance(panel, PrismPanelConfig) else load_prism_panel(panel)
    runner = _Runner(config, Path(cache_dir), benchmark=BENCHMARK, progress=progress, factory=backend_factory)
    calls: list[_Call] = pair_calls(
        config.judges,
        candidates,
        instances,
        lambda inst: ((stage, stage_cells(inst.active_tags, stage)) for stage in STAGE_DIMENSIONS),
        lambda system, inst: pair_order(seed, system, inst.id),
        swap_check,
    )
    started = time.perf_counter()
    runner.run(calls, lambda call, judge: runner.prepare(call, judge, candidates), read_stage, prompts.REPAIR)
    rows = [
        r | {"panel": config.name}
        for r in pair_score_rows(calls, GROUND_TRUTH, prompts.field_path, _cell_columns)
    ]
    scores = coerce_scores(pd.DataFrame(rows, columns=list(SCORE_COLUMNS)))
    judgments = pd.DataFrame([_judgment_row(c, config.name) for c in calls], columns=list(JUDGMENT_COLUMNS))
    lineage = _lineage(runner, calls, seed, swap_check)
    lineage["seconds"] = round(time.perf_counter() - started, 3)
    counts = (config.name, len(calls), runner.counters.calls, runner.counters.hits, lineage["seconds"])
    log.info("prism panel %s: %d calls, %d model calls, %d cache hits, %.1f s", *counts)
    labels = [f"stage_{s}" for s in STAGE_DIMENSIONS]
    paired = [c.paired(prompts.field_path, f"stage_{c.group}") for c in calls if c.valued]
    swap = swap_summary(paired, labels) if swap_check else None
    model_calls, hits = runner.counters.calls, runner.counters.hits
    return PairJudgeResult(
        scores, judgments, lineage, pair_tags(lineage), model_calls, hits, swap, lineage["unavailable"]
    )


__all__ = [  # with the panels and the answer reader, which live beside the tracks and the prompts
    "JUDGMENT_COLUMNS",
    "JUDGMENT_SCHEMA",
    "PrismInstanceLike",
    "PrismJudgeResult",
    "PrismPanelConfig",
    "StageReading",
    "describe_prism_panels",
    "judge_prism",
    "load_prism_panel",
    "prism_panel_names",
    "read_dimension_answer",
    "read_stage",
]
