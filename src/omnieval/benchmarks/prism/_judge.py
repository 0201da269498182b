"""PRISM-Bench judging: blind pairs, two stages, on the judges' one runner, as scores-table rows.

One *call* is one (judge, system, instance, stage[, swapped]) request scoring both clips of the pair
(the system's candidate and the instance's reference, in the seeded order of
:func:`~._compose.pair_order`). It ends with exactly one status (FORMATS.md section 3) and becomes,
per active cell of its stage, a system row (``paired_with="ground_truth"``) and a ground-truth row
(``system="ground_truth"``, ``paired_with=<system>``), plus one row of the judgments table.

What is PRISM's own is here: which pairs and stages there are, what a judge is shown (facts
measured from each clip, :mod:`._facts`, or the blinded clips, :mod:`._compose`), the answer's
cells, and the rows. Sending, caching, retries, the answer's format fixes and its one score reader
(:func:`~omnieval.judges.parse_score`, 0-10 here), the repair rule and the swap check are the
judges' (:mod:`omnieval.judges`). A stage answer is valid only when every active cell of both clips
has a score and non-empty evidence: the two clips are judged in one breath.

Panels (``panels/*.yaml``): ``paper`` and ``ablation`` send the blinded clips to the paper's judges,
``omni`` to an omni model behind an OpenAI-compatible API, ``cpu-cascade`` gives the packaged 1.5B
text model facts measured from each clip. A panel whose model cannot be reached is reported in
:attr:`PrismJudgeResult.unavailable` and its rows are ``not_applicable``, never scores.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from omnieval.backends.llm import ChatBackend, ChatRequest, ModelIdentity, carries_video_audio
from omnieval.benchmarks.prism import _prompts as prompts
from omnieval.benchmarks.prism._compose import ComposeSpec, PairOrder, compose_clips, compose_pair, pair_order
from omnieval.benchmarks.prism._facts import FACTS_VERSION, ClipFacts, measure_clip
from omnieval.benchmarks.prism._prompts import StageReading, read_dimension_answer, read_stage
from omnieval.benchmarks.prism._tags import GROUND_TRUTH, STAGE_DIMENSIONS, Cell, stage_cells
from omnieval.benchmarks.prism._tracks import (
    PRISM_PANELS,
    ComposeConfig,
    FactsConfig,
    PrismPanelConfig,
    criteria_count,
    describe_prism_panels,
    load_criteria,
    load_prism_panel,
    prism_panel_names,
)
from omnieval.errors import DataError, OmnievalError
from omnieval.judges import (
    BackendPool,
    CallCounters,
    CallJob,
    CallRunner,
    CallState,
    DiskCache,
    JudgeConfig,
    PairedReading,
    RepairJob,
    RepairLog,
    backend_group_key,
    cache_key,
    judge_tags,
    judges_lineage,
    mlflow_tag_part,
    status_ledger,
    swap_summary,
)
from omnieval.judgments import JudgmentSchema
from omnieval.scores import Status

if TYPE_CHECKING:
    import pandas as pd

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
_stage_score = prompts.stage_score  # the judges' score reader on the 0-10 scale (pinned by the tests)
LEDGER_STATUSES: tuple[str, ...] = ("ok", "repaired", "parse_error", "inference_error", "unrecoverable")


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


# -- the run -----------------------------------------------------------------------------------------


@dataclass
class _Call(CallState[StageReading]):
    system: str
    instance: PrismInstanceLike
    stage: int
    order: PairOrder
    swapped: bool
    cells: tuple[Cell, ...]

    @property
    def sort_key(self) -> tuple[int, int, str, bool]:
        # Consecutive calls of one stage and instance share their prompt prefix (llama.cpp reuses it).
        return (self.stage, self.instance.index, self.system, self.swapped)

    @property
    def valued(self) -> bool:
        return self.status in (Status.OK, Status.REPAIRED) and self.reading is not None


@dataclass
class PrismJudgeResult:
    """What one PRISM panel run produced.

    Attributes:
        scores: scores-table rows (FORMATS.md section 3): per call and active cell, one system row
            and one ground-truth row; rows of swap-check calls are not included.
        judgments: one row per call (columns :data:`JUDGMENT_COLUMNS`), swap-check calls included.
        lineage: panel, judge kind, judges, prompt hashes, criteria and facts versions, ledger, timing.
        mlflow_tags: ``omnieval.judge.<id>.revision`` / ``.sha256``, ``omnieval.prompt.<panel>.stage_<n>.sha256``.
        model_calls: requests sent to a model (judging and repair); cache_hits: answered from the cache.
        swap: per stage flip rates when the swap check ran, else None.
        unavailable: why the panel (or one of its judges) could not run; empty when it ran.
    """

    scores: pd.DataFrame
    judgments: pd.DataFrame
    lineage: dict[str, Any]
    mlflow_tags: dict[str, str]
    model_calls: int
    cache_hits: int
    swap: dict[str, Any] | None
    unavailable: list[str]


@dataclass
class _Counters(CallCounters):
    facts_measured: int = 0
    compositions: int = 0


class _Runner(CallRunner):
    """PRISM's calls on the judges' runner; its own part is what a judge is shown of a pair."""

    close_groups = False  # every model stays loaded until the run ends (the judge and repair may share one)

    def __init__(
        self,
        panel: PrismPanelConfig,
        cache_dir: Path,
        progress: Progress | None,
        factory: BackendFactory | None,
    ) -> None:
        super().__init__(cache_dir, BackendPool(factory, what="prism judge"))
        self.cache_dir, self.panel, self.progress = cache_dir, panel, progress
        self.facts_cache = DiskCache(cache_dir, "prism_facts")
        self.counters: _Counters = _Counters()
        self._facts: dict[tuple[str, bool], ClipFacts] = {}

    def _settled(self, call: CallState[Any]) -> None:
        self.counters.done += 1  # progress in calls (``total`` is every call, known up front)
        if self.progress is not None:
            self.progress(f"prism judge {call.judge_id}", self.counters.done, self.counters.total)

    def unavailable_note(self, reason: str) -> str:
        return f"unavailable: {self.panel.requires} ({reason})"

    def facts(self, clip: Path, transcribe: bool) -> ClipFacts:
        memo = (str(clip.resolve()), transcribe)
        if memo not in self._facts:
            settings: dict[str, Any] = {"transcribe": transcribe}
            if transcribe:
                from omnieval.backends.asr import load_transcriber

                asr = load_transcriber(self.panel.facts.asr_model).identity()
                settings["asr"] = {"name": asr.name, "sha256": asr.sha256, "settings": asr.settings}
            key = cache_key(
                kind="prism_facts", version=FACTS_VERSION, clip=self.hasher(clip), settings=settings
            )
            cached = self.facts_cache.get_json(key)
            if cached is None:
                facts = measure_clip(clip, transcribe=transcribe, asr_model=self.panel.facts.asr_model)
                self.facts_cache.put_json(key, {"facts": facts.to_json(), "settings": settings})
                self.counters.facts_measured += 1
            self._facts[memo] = facts if cached is None else ClipFacts.from_json(cached["facts"])
        return self._facts[memo]

    def composed(
        self, candidate: Path, reference: Path, order: PairOrder, soundtracks: bool
    ) -> dict[str, Any]:
        """The blinded clips (or joined pair video) and, when asked, their soundtracks: made once,
        kept in the cache folder."""
        from omnieval.benchmarks.prism._media import extract_audio

        cfg = self.panel.compose
        spec = ComposeSpec(width=cfg.width, height=cfg.height, fps=cfg.fps)
        key = cache_key(
            kind="prism_compose", candidate=self.hasher(candidate), reference=self.hasher(reference),
            first=order.first, media=cfg.media,
            spec=[spec.width, spec.height, spec.fps, spec.sample_rate, spec.id_seconds, spec.crf, spec.preset],
        )  # fmt: skip
        folder = self.cache_dir / "prism_media" / key[:2] / key
        if cfg.media == "pair":
            if not (folder / "pair.mp4").is_file():
                compose_pair(candidate, reference, order, folder / "pair.mp4", spec=spec)
                self.counters.compositions += 1
            return {"pair_video": folder / "pair.mp4"}
        clips = (folder / "clip1.mp4", folder / "clip2.mp4")
        if not all(c.is_file() for c in clips):
            compose_clips(candidate, reference, order, folder, spec=spec)
            self.counters.compositions += 1
        if not soundtracks:
            return {"clips": clips}
        wavs = (folder / "clip1.wav", folder / "clip2.wav")
        for clip, wav in zip(clips, wavs, strict=True):
            if not wav.is_file():
                extract_audio(clip, wav, sr=16_000)
        return {"clips": clips, "soundtracks": wavs}

    def prepare(self, call: _Call, judge: JudgeConfig, candidates: Mapping[str, Path]) -> None:
        """Settle a call that needs no model; else build its request (facts or blinded clips)."""
        from omnieval.benchmarks.prism._loader import candidate_video

        reason = self.availability(judge)
        if reason is not None:
            return self.settle(call, Status.NOT_APPLICABLE, self.unavailable_note(reason))
        inst = call.instance
        reference = Path(inst.reference_video)
        if not reference.is_file():
            raise DataError(f"prism instance {inst.id}: reference video {reference} not found")
        candidate = candidate_video(Path(candidates[call.system]), inst.index)
        if not candidate.is_file():
            return self.settle(call, Status.MISSING_OUTPUT, f"video output missing: {candidate} not found")
        clip = {"candidate": candidate, "reference": reference}
        caption = inst.caption if call.stage == 2 else None
        try:
            if self.panel.judge_kind == "cascade":
                speech = any(t.startswith("SPEECH_") for t in inst.active_tags)
                media: dict[str, Any] = {
                    "facts": tuple(self.facts(clip[call.order.role(s)], speech) for s in (1, 2))
                }
            else:
                sound = self.panel.compose.soundtracks and not carries_video_audio(judge.backend)
                media = self.composed(candidate, reference, call.order, sound)
        except OmnievalError as exc:
            # An unreadable candidate is the system's failure; an unreadable reference is bad data.
            if reference.resolve() == Path(getattr(exc, "path", "") or "").resolve():
                raise DataError(f"prism instance {inst.id}: reference video unreadable: {exc}") from None
            return self.settle(call, Status.MISSING_OUTPUT, f"video output unreadable: {exc}")
        except Exception as exc:  # a measurement library failing on odd media: recorded, not fatal
            why = f"preparing the judge input failed: {type(exc).__name__}: {exc}"
            return self.settle(call, Status.INFERENCE_ERROR, why)
        inputs = prompts.StageInputs(call.stage, tuple(inst.active_tags), call.cells, caption, **media)
        schema = prompts.verdict_schema(
            call.cells,
            evidence_max_chars=judge.framing.rationale_max_chars,
            evidence_first=judge.framing.rationale_first,
        )
        messages = prompts.build_messages(self.panel.judge_kind, inputs, judge.framing)
        sha = prompts.template_sha256(self.panel.judge_kind, call.stage)
        self.ask(call, judge, sha, messages, schema, benchmark=BENCHMARK)

    def judge(self, calls: list[_Call]) -> None:
        todo = sorted((c for c in calls if not c.status and c.request is not None), key=lambda c: c.sort_key)
        self.run_jobs([
            CallJob(self, c, partial(read_stage, cells=c.cells), order=c.sort_key,
                    meta={"judge": c.judge_id, "benchmark": BENCHMARK}, system=c.system, unavailable=self.unavailable_note)
            for c in todo
        ])  # fmt: skip

    def repair_job(self, call: _Call, position: int, identity: ModelIdentity) -> RepairJob[StageReading]:
        repair = self.panel.repair
        assert repair is not None and call.completion is not None and call.reading is not None
        request = ChatRequest(
            messages=prompts.render_repair(call.completion.text, call.reading.error, call.cells),
            decoding=repair.decoding,
            json_schema=prompts.repair_schema(call.cells),
            chat_template_kwargs=dict(repair.framing.chat_template_kwargs),
        )
        key = self.request_key(identity, repair, prompts.repair_prompt_sha256(), request, benchmark=BENCHMARK)
        return RepairJob(
            self, call, repair, request, key, order=(position,), system=call.system,
            decide=lambda original, answer: prompts.judge_stage_repair(original, answer, call.cells),
            log=RepairLog(detailed=False, unavailable=lambda r: ("inference_error", self.unavailable_note(r))),
            meta={"judge": repair.id, "benchmark": BENCHMARK},
        )  # fmt: skip


# -- output ----------------------------------------------------------------------------------------------


def _score_rows(calls: Sequence[_Call], panel: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for call in (c for c in calls if not c.swapped):
        inst = call.instance
        for cell in call.cells:
            for role in ("candidate", "reference"):
                path = prompts.field_path(call.order.slot(role), cell)
                value = float(call.reading.scores[path]) if call.valued and call.reading else None
                rows.append({
                    "benchmark": BENCHMARK, "system": call.system if role == "candidate" else GROUND_TRUTH,
                    "instance_id": inst.id, "index": inst.index, "track": cell.dimension, "component": COMPONENT,
                    "judge": call.judge_id, "criterion": cell.audio_type, "value": value, "status": str(call.status),
                    "panel": panel, "condition": "", "subset": inst.subset,
                    "paired_with": GROUND_TRUTH if role == "candidate" else call.system,
                })  # fmt: skip
    return rows


def _judgment_row(call: _Call, panel: str) -> dict[str, Any]:
    reading = call.reading if call.valued else None
    inst = call.instance
    return {
        "system": call.system, "instance_id": inst.id, "index": inst.index, "subset": inst.subset,
        "stage": call.stage, "swapped": call.swapped, **call.ledger_columns(call.reading), "panel": panel,
        "order_first": call.order.first, "order": json.dumps(call.order.sidecar(), ensure_ascii=False),
        "cells": json.dumps([str(c) for c in call.cells]), "scores": json.dumps(reading.scores if reading else {}),
        "evidence": json.dumps(reading.evidence if reading else {}, ensure_ascii=False),
    }  # fmt: skip


def _paired(call: _Call) -> PairedReading:
    assert call.reading is not None
    scores = call.reading.scores
    cells = {str(c): (scores[prompts.field_path(1, c)], scores[prompts.field_path(2, c)]) for c in call.cells}
    pair = (call.judge_id, call.system, call.instance.id)
    return PairedReading(pair, f"stage_{call.stage}", call.swapped, cells, call.order.slot("candidate"))


def _lineage(
    runner: _Runner, calls: Sequence[_Call], seed: int, swap_check: bool, unavailable: list[str]
) -> dict[str, Any]:
    panel, book, lat = runner.panel, load_criteria(), runner.counters.latencies
    roles = [("judge", j) for j in panel.judges] + ([("repair", panel.repair)] if panel.repair else [])
    lineage: dict[str, Any] = {
        "benchmark": BENCHMARK, "panel": panel.name, "panel_sha256": panel.sha256(),
        "description": panel.description, "judge_kind": panel.judge_kind, "judges": judges_lineage(runner, roles),
        "prompts": {
            f"stage_{s}": {"version": prompts.PROMPT_VERSION, "sha256": prompts.template_sha256(panel.judge_kind, s)}
            for s in STAGE_DIMENSIONS
        },
        "repair_prompt": {"sha256": prompts.repair_prompt_sha256()} if panel.repair else None,
        "criteria": {"version": book.version, "sha256": book.sha256, "count": criteria_count(), "wordings": len(book.criteria)},
        "seed": seed, "swap_check": swap_check, "ledger": status_ledger(calls, LEDGER_STATUSES),
        "model_calls": runner.counters.calls, "cache_hits": runner.counters.hits,
        "seconds_per_call": (sum(lat) / len(lat)) if lat else None,
        "usage": runner.usage_json(), "usage_by_system": runner.usage_by_system_json(), "unavailable": unavailable,
    }  # fmt: skip
    if panel.judge_kind == "cascade":
        measured = runner.counters.facts_measured
        lineage["facts"] = {
            "version": FACTS_VERSION,
            "asr_model": panel.facts.asr_model,
            "measured": measured,
        }
    else:
        lineage["compose"] = panel.compose.model_dump(mode="json") | {
            "composed": runner.counters.compositions
        }
    return lineage


def _mlflow_tags(lineage: Mapping[str, Any]) -> dict[str, str]:
    tags, panel = judge_tags(lineage["judges"]), mlflow_tag_part(str(lineage["panel"]))
    tags |= {
        f"omnieval.prompt.{panel}.{stage}.sha256": info["sha256"]
        for stage, info in lineage["prompts"].items()
    }
    tags[f"omnieval.prism.{panel}.judge_kind"] = str(lineage["judge_kind"])
    return tags


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
    runner = _Runner(config, Path(cache_dir), progress, backend_factory)
    calls: list[_Call] = []
    for judge, system, inst in ((j, s, i) for j in config.judges for s in candidates for i in instances):
        primary = pair_order(seed, system, inst.id)
        for stage in STAGE_DIMENSIONS:
            cells = tuple(stage_cells(inst.active_tags, stage))
            for order, swapped in [(primary, False)] + ([(primary.swapped(), True)] if swap_check else []):
                calls += [_Call(system, inst, stage, order, swapped, cells, judge=judge)] if cells else []
    runner.counters.total = len(calls)
    started = time.perf_counter()
    try:
        for call in calls:
            assert call.judge is not None
            runner.prepare(call, call.judge, candidates)
        runner.judge(calls)
        runner.repair_round(calls, config.repair, runner.availability, runner.repair_job)
    finally:
        runner.pool.close_all()
    unavailable = sorted(
        {
            f"{config.name}/{j.id}: {runner.unavailable_note(runner.pool.failed[backend_group_key(j)])}"
            for j in config.judges
            if backend_group_key(j) in runner.pool.failed
        }
    )
    scores = coerce_scores(pd.DataFrame(_score_rows(calls, config.name), columns=list(SCORE_COLUMNS)))
    judgments = pd.DataFrame([_judgment_row(c, config.name) for c in calls], columns=list(JUDGMENT_COLUMNS))
    lineage = _lineage(runner, calls, seed, swap_check, unavailable)
    lineage["seconds"] = round(time.perf_counter() - started, 3)
    counts = (config.name, len(calls), runner.counters.calls, runner.counters.hits, lineage["seconds"])
    log.info("prism panel %s: %d calls, %d model calls, %d cache hits, %.1f s", *counts)
    valid = [_paired(c) for c in calls if c.valued]
    swap = swap_summary(valid, [f"stage_{s}" for s in STAGE_DIMENSIONS]) if swap_check else None
    tags = _mlflow_tags(lineage)
    return PrismJudgeResult(
        scores, judgments, lineage, tags, runner.counters.calls, runner.counters.hits, swap, unavailable
    )


__all__ = [  # panels and the answer reader live beside the tracks and the prompts; named here too
    "JUDGMENT_COLUMNS",
    "PRISM_PANELS",
    "ComposeConfig",
    "FactsConfig",
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
