"""PRISM-Bench judging: blind pairs, two stages, cached and repaired, as scores-table rows.

One *call* is one (judge, system, instance, stage[, swapped]) request scoring both clips of the pair
(the system's candidate and the instance's reference, in the seeded order of
:func:`~._compose.pair_order`). It ends with exactly one status (FORMATS.md section 3) and becomes,
per active cell of its stage, a system row (``paired_with="ground_truth"``) and a ground-truth row
(``system="ground_truth"``, ``paired_with=<system>``), plus one row of the judgments table.

A stage answer is valid only when every active cell of both clips has an integer score 0-10 and a
non-empty evidence text (the same all-or-nothing rule as a storybench verdict): the two clips are
judged in one breath, so half an answer says little about either. Readable-format slips are
normalized locally (:mod:`omnieval.judges._parse`'s candidates and fixes, and its one score reader,
:func:`~omnieval.judges.parse_score`, on the 0-10 scale); a non-empty answer that
still fails goes to the panel's repair model, whose answer is accepted only when every score and
most evidence words already occur in the original (:mod:`omnieval.judges._repair`).

Panels (``panels/*.yaml``): ``paper`` sends the blinded clips to the paper's Gemini judge and
``ablation`` to the paper's ablation judges (two more Gemini models and Qwen3-Omni), ``omni`` to an
omni model behind an OpenAI-compatible API (vLLM, told to decode each video's own soundtrack);
``cpu-cascade`` gives the packaged 1.5B text model facts measured from each
clip (:mod:`._facts`). A panel whose model cannot be reached is reported in
:attr:`PrismJudgeResult.unavailable` and its rows are ``not_applicable``, never scores.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnieval.backends.llm import (
    BackendError,
    ChatBackend,
    ChatRequest,
    Completion,
    LlamaCppConfig,
    ModelIdentity,
    OpenAIBackendConfig,
    carries_video_audio,
    output_fingerprint,
)
from omnieval.benchmarks.prism._compose import ComposeSpec, PairOrder, compose_clips, compose_pair, pair_order
from omnieval.benchmarks.prism._facts import FACTS_VERSION, ClipFacts, measure_clip
from omnieval.benchmarks.prism._prompts import (
    PROMPT_VERSION,
    SCORE_MAX,
    SCORE_MIN,
    SLOTS,
    PromptKind,
    StageInputs,
    build_messages,
    field_path,
    render_repair,
    repair_prompt_sha256,
    repair_schema,
    template_sha256,
    verdict_schema,
)
from omnieval.benchmarks.prism._tags import (
    AUDIO_TYPES,
    DIMENSIONS,
    GROUND_TRUTH,
    STAGE_DIMENSIONS,
    Cell,
    stage_cells,
)
from omnieval.benchmarks.prism._tracks import criteria_count, load_criteria
from omnieval.errors import ConfigError, DataError, OmnievalError, validation_problems
from omnieval.judges import (
    BackendPool,
    CallCounters,
    CallRunner,
    CallState,
    DiskCache,
    JudgeConfig,
    ParseResult,
    backend_group_key,
    cache_key,
    canonical_json,
    find_keys,
    invented_rationales,
    invented_scores,
    judge_lineage_entry,
    judge_tags,
    mlflow_tag_part,
    normalize_key,
    parse_score,
    read_answer,
    read_scored_leaf,
    request_material,
    role_lineage,
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
    keys=("subset", "stage", "swapped"),
    call=("panel", "order_first", "order", "cells"),
    reasons="evidence",
)
"""PRISM's judgments: one row per call (stage, and the swap-check call beside the first), with the
blind order the judge saw and the cells it was asked, and cited evidence for its reasons."""
JUDGMENT_COLUMNS: tuple[str, ...] = JUDGMENT_SCHEMA.columns
LEDGER_STATUSES: tuple[str, ...] = ("ok", "repaired", "parse_error", "inference_error", "unrecoverable")


class PrismInstanceLike(Protocol):
    """What judging reads from an instance (helper A's ``PrismInstance`` satisfies it)."""

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


# -- panel configuration -----------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FactsConfig(_Strict):
    """How the cascade measures its facts."""

    asr_model: str = "whisper-tiny.en"
    """Packaged Whisper name or a local CTranslate2 folder (transcripts for samples with speech)."""


class ComposeConfig(_Strict):
    """How a native panel's blinded clips are made (see :class:`~._compose.ComposeSpec`)."""

    media: Literal["separate", "pair"] = "separate"
    """``separate``: two files (clip1, clip2), as the paper sends them; ``pair``: one joined file."""
    soundtracks: bool = True
    """Also attach each clip's audio as an audio part (servers that drop a video's audio track).
    Never for a judge whose backend hears a video's own track (Gemini; vLLM with
    ``use_audio_in_video``): there the sound stays inside the video, aligned with the frames."""
    width: int | None = Field(default=None, ge=16)
    height: int | None = Field(default=None, ge=16)
    fps: float | None = Field(default=None, gt=0)


class PrismPanelConfig(_Strict):
    """A PRISM-Bench judge panel."""

    name: str = Field(min_length=1)
    description: str = ""
    judge_kind: Literal["native", "cascade"]
    """``native``: the judge watches and hears the clips; ``cascade``: a text model reads measured facts."""
    requires: str = Field(min_length=1)
    """What the panel needs to run, stated when it cannot (e.g. an omni model behind an API)."""
    judges: tuple[JudgeConfig, ...] = Field(min_length=1)
    repair: JudgeConfig | None = None
    facts: FactsConfig = FactsConfig()
    compose: ComposeConfig = ComposeConfig()

    def sha256(self) -> str:
        import hashlib

        return hashlib.sha256(canonical_json(self.model_dump(mode="json")).encode()).hexdigest()


PRISM_PANELS: dict[str, str] = {
    "ablation": "ablation.yaml",
    "cpu-cascade": "cpu-cascade.yaml",
    "omni": "omni.yaml",
    "paper": "paper.yaml",
}


def prism_panel_names() -> list[str]:
    return sorted(PRISM_PANELS)


def load_prism_panel(name: str | Path) -> PrismPanelConfig:
    """A shipped PRISM panel by name, or a panel YAML file by path; ConfigError when invalid."""
    import yaml

    if isinstance(name, str) and name in PRISM_PANELS:
        source = f"omnieval/benchmarks/prism/panels/{PRISM_PANELS[name]}"
        text = (
            resources.files("omnieval.benchmarks.prism")
            .joinpath("panels", PRISM_PANELS[name])
            .read_text(encoding="utf-8")
        )
    else:
        path = Path(name)
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            raise ConfigError(
                f"unknown prism judge panel {str(name)!r}; known: {', '.join(prism_panel_names())} "
                "(or a path to a panel YAML file)"
            )
        source, text = str(path), path.read_text(encoding="utf-8")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    try:
        return PrismPanelConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(validation_problems(f"{source}: invalid prism judge panel", exc)) from None


def describe_prism_panels() -> list[dict[str, Any]]:
    """Each shipped PRISM panel as ``omnieval judge panels`` lists it: its judges score every
    dimension (the benchmark's judge tracks), so each track lists the same judges."""
    out: list[dict[str, Any]] = []
    for name in prism_panel_names():
        panel = load_prism_panel(name)
        judges = [
            {
                "id": j.id,
                "model": j.model,
                "backend": j.backend.kind,
                **({"unavailable": j.unavailable} if j.unavailable else {}),
            }
            for j in panel.judges
        ]
        entry = {"input": panel.judge_kind, "unavailable": None, "judges": judges}
        out.append(
            {
                "name": name,
                "description": " ".join(panel.description.split()),
                "judge_kind": panel.judge_kind,
                "requires": panel.requires,
                "tracks": {dimension: entry for dimension in DIMENSIONS},
                "repair": panel.repair.id if panel.repair else None,
            }
        )
    return out


# -- reading answers ---------------------------------------------------------------------------

_SLOT_ALIASES = {
    1: ("candidate_1", "candidate1", "clip_1", "clip1", "1"),
    2: ("candidate_2", "candidate2", "clip_2", "clip2", "2"),
}
_DIM_ALIASES = {
    "av_coherence": ("av_coherence", "audio_visual_coherence", "audiovisual_coherence", "av coherence"),
    "audio_quality": ("audio_quality",),
    "expressiveness": ("expressiveness", "audio_expressiveness"),
    "prompt_following": ("prompt_following",),
}
_TYPE_ALIASES = {"speech": ("speech",), "music": ("music",), "sound": ("sound", "sounds", "sound_effects")}
_EVIDENCE_KEYS = frozenset({"evidence", "rationale", "reason", "reasoning", "explanation", "justification"})


@dataclass(frozen=True)
class StageReading:
    """How one stage answer was read.

    Attributes:
        status: ``ok`` or ``parse_error``.
        scores: :func:`~._prompts.field_path` -> integer 0-10 (every cell of both clips when ok).
        evidence: field path -> non-empty text (likewise).
        error: why the answer is not valid ('' when ok).
        normalizations: format fixes that were needed.
    """

    status: str
    scores: dict[str, int] = field(default_factory=dict)
    evidence: dict[str, str] = field(default_factory=dict)
    error: str = ""
    normalizations: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == Status.OK


def _stage_score(value: object) -> int | str:
    """A stage answer's score: the judges' one score reader on this benchmark's 0-10 scale.

    Example:
        >>> _stage_score("7/10"), _stage_score(0), _stage_score(7.5), _stage_score(11)
        (7, 0, 'score 7.5 is not an integer', 'score 11 is outside 0-10')
    """
    return parse_score(value, low=SCORE_MIN, high=SCORE_MAX)


def _expand_dotted(obj: Any) -> Any:
    """Nest ``{"candidate_1.audio_quality.speech.score": 7}`` as ``{"candidate_1": {...: {"score": 7}}}``."""
    if isinstance(obj, list):
        return [_expand_dotted(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out: dict[str, Any] = {}
    for key, value in obj.items():
        parts = [p for p in str(key).split(".") if p]
        node = out
        for part in parts[:-1] or ():
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1] if parts else str(key)] = _expand_dotted(value)
    return out


def _lookup(obj: Any, aliases: Sequence[str], canonical: str) -> Any:
    found = find_keys(obj, {normalize_key(a): canonical for a in aliases})
    return found.get(canonical)


def _extract(obj: Any, cells: Sequence[Cell]) -> tuple[dict[str, int], dict[str, str], list[str]]:
    obj = _expand_dotted(obj)
    scores: dict[str, int] = {}
    evidence: dict[str, str] = {}
    problems: list[str] = []
    for slot in SLOTS:
        cand = _lookup(obj, _SLOT_ALIASES[slot], "slot")
        if not isinstance(cand, dict):
            problems.append(f"candidate_{slot}: missing")
            continue
        for cell in cells:
            path = field_path(slot, cell)
            dim = _lookup(cand, _DIM_ALIASES[cell.dimension], "dim")
            leaf = _lookup(dim, _TYPE_ALIASES[cell.audio_type], "type") if isinstance(dim, dict) else None
            if not isinstance(leaf, dict):
                problems.append(f"{path}: missing")
                continue
            read = read_scored_leaf(leaf, path, _stage_score, _EVIDENCE_KEYS, "evidence")
            if isinstance(read, str):
                problems.append(read)
            else:
                scores[path], evidence[path] = read
    return scores, evidence, problems


def read_stage(raw: str | None, cells: Sequence[Cell]) -> StageReading:
    """Read a stage answer for ``cells`` (both clips), forgiving format slips, strict on content.

    Example:
        >>> from omnieval.benchmarks.prism._tags import Cell
        >>> cells = [Cell("audio_quality", "speech")]
        >>> answer = '```json\\n{"candidate_1": {"audio_quality": {"speech": {"score": "7", "evidence": "clear"}}},'
        >>> answer += ' "candidate_2": {"Audio Quality": {"Speech": {"score": 3.0, "evidence": "robotic",}}}}\\n```'
        >>> r = read_stage(answer, cells)
        >>> r.status, r.scores
        ('ok', {'candidate_1.audio_quality.speech': 7, 'candidate_2.audio_quality.speech': 3})
    """
    # The shared reader (format fixes, one complete reading or a parse error); the nested
    # candidate -> dimension -> audio type shape is _extract's. At most eight problems are named.
    reading = read_answer(raw, lambda obj: _extract(obj, cells), max_problems=8)
    return StageReading(
        reading.status,
        reading.scores,
        reading.texts,
        error=reading.error,
        normalizations=reading.normalizations,
    )


def read_dimension_answer(raw: str | None, dimension: str) -> ParseResult:
    """Read one dimension's scores from a raw stage answer (what ``omnieval judge parse`` shows).

    Which audio types a stage asks about comes from the sample's tags, which a lone answer does not
    carry: the cells read are the audio types the answer itself holds under ``dimension`` for either
    clip, and each of them must then be scored (0-10, with evidence) for both clips.

    Example:
        >>> answer = '{"candidate_1": {"audio_quality": {"speech": {"score": 7, "evidence": "clear"}}},'
        >>> answer += ' "candidate_2": {"audio_quality": {"speech": {"score": "3/10", "evidence": "hiss"}}}}'
        >>> r = read_dimension_answer(answer, "audio_quality")
        >>> r.status, r.scores
        ('ok', {'candidate_1.audio_quality.speech': 7, 'candidate_2.audio_quality.speech': 3})
        >>> read_dimension_answer(answer, "expressiveness").error
        'no expressiveness scores for any audio type (speech, music, sound) under candidate_1 or candidate_2'
    """
    if dimension not in _DIM_ALIASES:
        raise ValueError(f"unknown prism dimension {dimension!r}; known: {', '.join(_DIM_ALIASES)}")

    def extract(obj: Any) -> tuple[dict[str, int], dict[str, str], list[str]]:
        obj = _expand_dotted(obj)
        present: list[str] = []
        for slot in SLOTS:
            cand = _lookup(obj, _SLOT_ALIASES[slot], "slot")
            dim = _lookup(cand, _DIM_ALIASES[dimension], "dim") if isinstance(cand, dict) else None
            if isinstance(dim, dict):
                present += [
                    t
                    for t in AUDIO_TYPES
                    if t not in present and _lookup(dim, _TYPE_ALIASES[t], "type") is not None
                ]
        if not present:
            return (
                {},
                {},
                [
                    f"no {dimension} scores for any audio type ({', '.join(AUDIO_TYPES)}) "
                    "under candidate_1 or candidate_2"
                ],
            )
        ordered = [t for t in AUDIO_TYPES if t in present]
        return _extract(obj, [Cell(dimension, t) for t in ordered])

    reading = read_answer(raw, extract, max_problems=8)
    return ParseResult(
        reading.status,
        reading.scores,
        reading.texts,
        error=reading.error,
        normalizations=reading.normalizations,
        partial_scores=reading.partial_scores,
    )


def _is_unrecoverable_marker(text: str) -> bool:
    try:
        value = json.loads(text.strip())
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("unrecoverable") is True


def judge_stage_repair(
    original: str, repair_answer: str, cells: Sequence[Cell]
) -> tuple[str, str, StageReading | None]:
    """(status, reason, reading) for a repair answer: ``repaired`` only for a pure format fix."""
    if _is_unrecoverable_marker(repair_answer):
        return Status.UNRECOVERABLE, "the repair model found the answer unrecoverable", None
    reading = read_stage(repair_answer, cells)
    if not reading.ok:
        return Status.UNRECOVERABLE, f"the repair answer is not a valid verdict: {reading.error}", None
    invented = invented_scores(original, reading.scores)
    if invented:
        return (
            Status.UNRECOVERABLE,
            "excluded: the repair supplied scores absent from the original (" + ", ".join(invented) + ")",
            None,
        )
    made_up = invented_rationales(original, reading.evidence)
    if made_up:
        return (
            Status.UNRECOVERABLE,
            "excluded: the repair supplied evidence absent from the original (" + ", ".join(made_up) + ")",
            None,
        )
    return Status.REPAIRED, "format repaired", reading


# -- the run -------------------------------------------------------------------------------------


@dataclass
class _Call(CallState):
    system: str
    instance: PrismInstanceLike
    stage: int
    order: PairOrder
    swapped: bool
    cells: tuple[Cell, ...]
    reading: StageReading | None = None

    @property
    def sort_key(self) -> tuple[int, int, str, bool]:
        # Consecutive calls of one stage and instance share their prompt prefix (llama.cpp reuses it).
        return (self.stage, self.instance.index, self.system, self.swapped)


@dataclass
class PrismJudgeResult:
    """What one PRISM panel run produced.

    Attributes:
        scores: scores-table rows (FORMATS.md section 3): per call and active cell, one system row
            and one ground-truth row; rows of swap-check calls are not included.
        judgments: one row per call (columns :data:`JUDGMENT_COLUMNS`), swap-check calls included.
        lineage: panel, judge kind, judges (model, revision, weights), prompt hashes, decoding,
            criteria and facts versions, validity ledger, timing.
        mlflow_tags: ``omnieval.judge.<id>.revision`` / ``.sha256``, ``omnieval.prompt.<panel>.stage_<n>.sha256``.
        model_calls: requests sent to a model (judging and repair).
        cache_hits: requests answered from the cache.
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


def _quick_unavailable(judge: JudgeConfig) -> str | None:
    """Why a judge surely cannot run here, found without loading anything (None = try it)."""
    import os

    backend = judge.backend
    if isinstance(backend, OpenAIBackendConfig):
        url = backend.base_url or (os.environ.get(backend.base_url_env, "") if backend.base_url_env else "")
        if not url:
            where = f"${backend.base_url_env}" if backend.base_url_env else "base_url"
            return f"no server address for {judge.model}: set {where}"
        if backend.api_key_env and not os.environ.get(backend.api_key_env):
            return f"the API key variable ${backend.api_key_env} is not set"
    if isinstance(backend, LlamaCppConfig):
        from omnieval.backends.llm import resolve_model_path

        try:
            resolve_model_path(backend.model_path)
        except BackendError as exc:
            return str(exc)
    return None


@dataclass
class _Counters(CallCounters):
    """Progress counts settled calls (``total`` is every call, known up front)."""

    facts_measured: int = 0
    compositions: int = 0
    latencies: list[float] = field(default_factory=list)


class _Runner(CallRunner):
    """PRISM's calls through the shared :class:`~omnieval.judges._calls.CallRunner` (cache, model
    groups, batches, retries); what is PRISM's own is the inputs (facts or blinded clips), the stage
    reading and repair, and the rows."""

    close_groups = False  # every model stays loaded until the run ends (as the judge and repair share one)

    def __init__(
        self,
        panel: PrismPanelConfig,
        cache_dir: Path,
        progress: Progress | None,
        backend_factory: BackendFactory | None,
    ) -> None:
        self.cache_dir = Path(cache_dir)
        super().__init__(self.cache_dir, BackendPool(backend_factory, what="prism judge"))
        self.panel = panel
        self.kind: PromptKind = panel.judge_kind
        self.facts_cache = DiskCache(self.cache_dir, "prism_facts")
        self.progress = progress
        self.backend_factory = backend_factory
        self.counters: _Counters = _Counters()
        self.unavailable = self.pool.failed
        """Why a judge's model cannot run here, by group key (found before loading, or on loading)."""
        self._facts: dict[tuple[str, bool], ClipFacts] = {}

    # -- bookkeeping ------------------------------------------------------------------------------

    def settle(self, call: _Call, status: str, note: str = "") -> None:
        call.status = status
        if note:
            call.note = note
        self.counters.done += 1
        if self.progress is not None:
            self.progress(f"prism judge {call.judge_id}", self.counters.done, self.counters.total)

    def availability(self, judge: JudgeConfig) -> str | None:
        key = backend_group_key(judge)
        if key in self.unavailable:
            return self.unavailable[key]
        if self.backend_factory is None:
            reason = _quick_unavailable(judge)
            if reason is not None:
                self.unavailable[key] = reason
                return reason
        if self.identity(judge) is None:
            self.unavailable[key] = self.identity_errors[key]
            return self.unavailable[key]
        return None

    def close_all(self) -> None:
        self.pool.close_all()

    # -- inputs -----------------------------------------------------------------------------------

    def facts(self, clip: Path, *, transcribe: bool) -> ClipFacts:
        memo = (str(clip.resolve()), transcribe)
        if memo in self._facts:
            return self._facts[memo]
        settings: dict[str, Any] = {"transcribe": transcribe}
        if transcribe:
            from omnieval.backends.asr import load_transcriber

            asr = load_transcriber(self.panel.facts.asr_model).identity()
            settings["asr"] = {"name": asr.name, "sha256": asr.sha256, "settings": asr.settings}
        key = cache_key(kind="prism_facts", version=FACTS_VERSION, clip=self.hasher(clip), settings=settings)
        cached = self.facts_cache.get_json(key)
        if cached is not None:
            facts = ClipFacts.from_json(cached["facts"])
        else:
            facts = measure_clip(clip, transcribe=transcribe, asr_model=self.panel.facts.asr_model)
            self.facts_cache.put_json(key, {"facts": facts.to_json(), "settings": settings})
            self.counters.facts_measured += 1
        self._facts[memo] = facts
        return facts

    def composed(
        self, candidate: Path, reference: Path, order: PairOrder, *, soundtracks: bool
    ) -> tuple[tuple[Path, Path] | None, tuple[Path, Path] | None, Path | None]:
        """(clips, soundtracks, pair video) for a native judge, made once and kept in the cache folder.

        ``soundtracks``: also extract each clip's audio for a separate audio part (a judge whose
        backend hears a video's own track gets none: the sound stays time-aligned inside the video).
        """
        from omnieval.benchmarks.prism._media import extract_audio

        cfg = self.panel.compose
        spec = ComposeSpec(width=cfg.width, height=cfg.height, fps=cfg.fps)
        key = cache_key(
            kind="prism_compose",
            candidate=self.hasher(candidate),
            reference=self.hasher(reference),
            first=order.first,
            media=cfg.media,
            spec=[
                spec.width,
                spec.height,
                spec.fps,
                spec.sample_rate,
                spec.id_seconds,
                spec.crf,
                spec.preset,
            ],
        )
        folder = self.cache_dir / "prism_media" / key[:2] / key
        if cfg.media == "pair":
            out = folder / "pair.mp4"
            if not out.is_file():
                compose_pair(candidate, reference, order, out, spec=spec)
                self.counters.compositions += 1
            return None, None, out
        clip1, clip2 = folder / "clip1.mp4", folder / "clip2.mp4"
        if not (clip1.is_file() and clip2.is_file()):
            compose_clips(candidate, reference, order, folder, spec=spec)
            self.counters.compositions += 1
        tracks: tuple[Path, Path] | None = None
        if soundtracks:
            wavs = (folder / "clip1.wav", folder / "clip2.wav")
            for clip, wav in zip((clip1, clip2), wavs, strict=True):
                if not wav.is_file():
                    extract_audio(clip, wav, sr=16_000)
            tracks = wavs
        return (clip1, clip2), tracks, None

    # -- preparing ------------------------------------------------------------------------------------

    def prepare(self, calls: list[_Call], candidates: Mapping[str, Path]) -> None:
        from omnieval.benchmarks.prism._record import candidate_video

        for call in calls:
            judge = call.judge
            if judge is None:
                self.settle(call, Status.NOT_APPLICABLE, self.panel.requires)
                continue
            reason = self.availability(judge)
            if reason is not None:
                self.settle(call, Status.NOT_APPLICABLE, f"unavailable: {self.panel.requires} ({reason})")
                continue
            inst = call.instance
            reference = Path(inst.reference_video)
            if not reference.is_file():
                raise DataError(f"prism instance {inst.id}: reference video {reference} not found")
            candidate = candidate_video(Path(candidates[call.system]), inst.index)
            if not candidate.is_file():
                self.settle(call, Status.MISSING_OUTPUT, f"video output missing: {candidate} not found")
                continue
            by_role = {"candidate": candidate, "reference": reference}
            ordered = (by_role[call.order.role(1)], by_role[call.order.role(2)])
            caption = inst.caption if call.stage == 2 else None
            try:
                if self.kind == "cascade":
                    transcribe = any(t.startswith("SPEECH_") for t in inst.active_tags)
                    facts = (
                        self.facts(ordered[0], transcribe=transcribe),
                        self.facts(ordered[1], transcribe=transcribe),
                    )
                    inputs = StageInputs(
                        call.stage, tuple(inst.active_tags), call.cells, caption, facts=facts
                    )
                else:
                    separate_sound = self.panel.compose.soundtracks and not carries_video_audio(judge.backend)
                    clips, tracks, pair = self.composed(
                        candidate, reference, call.order, soundtracks=separate_sound
                    )
                    inputs = StageInputs(
                        call.stage,
                        tuple(inst.active_tags),
                        call.cells,
                        caption,
                        clips=clips,
                        soundtracks=tracks,
                        pair_video=pair,
                    )
            except OmnievalError as exc:
                # An unreadable candidate is the system's failure; an unreadable reference is bad data.
                if reference.resolve() == Path(getattr(exc, "path", "") or "").resolve():
                    raise DataError(f"prism instance {inst.id}: reference video unreadable: {exc}") from None
                self.settle(call, Status.MISSING_OUTPUT, f"video output unreadable: {exc}")
                continue
            except Exception as exc:  # a measurement library failing on odd media: recorded, not fatal
                self.settle(
                    call,
                    Status.INFERENCE_ERROR,
                    f"preparing the judge input failed: {type(exc).__name__}: {exc}",
                )
                continue
            framing = judge.framing
            schema = (
                verdict_schema(
                    call.cells,
                    evidence_max_chars=framing.rationale_max_chars,
                    evidence_first=framing.rationale_first,
                )
                if framing.schema_constrained
                else None
            )
            identity = self.identities[backend_group_key(judge)]
            call.revision = identity.revision
            call.prompt_sha256 = template_sha256(self.kind, call.stage)
            call.request = ChatRequest(
                messages=build_messages(self.kind, inputs, framing),
                decoding=judge.decoding,
                json_schema=schema,
                chat_template_kwargs=dict(framing.chat_template_kwargs),
            )
            call.key = self.key(identity, judge, call.prompt_sha256, call.request)

    def key(
        self, identity: ModelIdentity, judge: JudgeConfig, prompt_sha256: str, request: ChatRequest
    ) -> str:
        return cache_key(
            benchmark=BENCHMARK,
            model=identity.model,
            revision=identity.revision,
            weights=identity.weights_digest,
            backend=output_fingerprint(judge.backend),
            prompt_sha256=prompt_sha256,
            request=request_material(request, self.hasher),
        )

    # -- model calls --------------------------------------------------------------------------------

    def judge(self, calls: list[_Call]) -> None:
        todo = sorted((c for c in calls if not c.status and c.request is not None), key=lambda c: c.sort_key)
        self.run_jobs([_StageJob(self, call) for call in todo])

    def repair(self, calls: list[_Call]) -> None:
        todo = [
            c for c in calls if c.status == Status.PARSE_ERROR and c.completion and c.completion.text.strip()
        ]
        if not todo:
            return
        repair = self.panel.repair
        reason = None if repair is None else self.availability(repair)
        if repair is None or reason is not None:
            detail = (
                "the panel has no repair model" if repair is None else f"repair model unavailable: {reason}"
            )
            for call in todo:
                call.repair_history.append({"outcome": "skipped", "detail": detail})
            return
        identity = self.identities[backend_group_key(repair)]
        jobs = []
        for position, call in enumerate(todo):
            assert call.completion is not None and call.reading is not None
            request = ChatRequest(
                messages=render_repair(call.completion.text, call.reading.error, call.cells),
                decoding=repair.decoding,
                json_schema=repair_schema(call.cells),
                chat_template_kwargs=dict(repair.framing.chat_template_kwargs),
            )
            key = self.key(identity, repair, repair_prompt_sha256(), request)
            jobs.append(_StageRepairJob(self, call, repair, request, key, position))
        self.run_jobs(jobs)

    def unavailable_note(self, reason: str) -> str:
        return f"unavailable: {self.panel.requires} ({reason})"


class _StageJob:
    """One call's stage request (a :class:`~omnieval.judges._calls.Job`)."""

    def __init__(self, runner: _Runner, call: _Call) -> None:
        assert call.judge is not None and call.request is not None
        self.runner, self.call = runner, call
        self.judge, self.request, self.key = call.judge, call.request, call.key
        self.order: tuple[int, int, str, bool] = call.sort_key
        self.meta = {"judge": call.judge.id, "benchmark": BENCHMARK}
        self.system = call.system

    def on_done(self, completion: Completion, cached: bool) -> None:
        call = self.call
        if not cached:
            self.runner.counters.latencies.append(completion.latency_s)
        call.completion, call.cache_hit = completion, cached
        call.reading = read_stage(completion.text, call.cells)
        self.runner.settle(call, Status.OK if call.reading.ok else Status.PARSE_ERROR)

    def on_error(self, error: BackendError) -> None:
        self.runner.settle(self.call, Status.INFERENCE_ERROR, f"{type(error).__name__}: {error}")

    def on_unavailable(self, reason: str) -> None:
        self.runner.settle(self.call, Status.NOT_APPLICABLE, self.runner.unavailable_note(reason))


class _StageRepairJob:
    """The repair request for one call's unreadable stage answer (a :class:`~omnieval.judges._calls.Job`)."""

    def __init__(
        self, runner: _Runner, call: _Call, repair: JudgeConfig, request: ChatRequest, key: str, position: int
    ) -> None:
        self.runner, self.call = runner, call
        self.judge, self.request, self.key = repair, request, key
        self.order = (position,)
        self.meta = {"judge": repair.id, "benchmark": BENCHMARK}
        self.system = call.system

    def on_done(self, completion: Completion, cached: bool) -> None:
        call = self.call
        assert call.completion is not None
        if not cached:
            self.runner.counters.latencies.append(completion.latency_s)
        status, why, reading = judge_stage_repair(call.completion.text, completion.text, call.cells)
        call.repair_history.append(
            {
                "model": self.judge.model,
                "outcome": str(status),
                "detail": why,
                "raw_response": completion.text,
                "cache_key": self.key,
                "cache_hit": cached,
            }
        )
        call.status = status
        if reading is not None:
            call.reading = reading

    def on_error(self, error: BackendError) -> None:
        self._failed(f"{type(error).__name__}: {error}")

    def on_unavailable(self, reason: str) -> None:
        self._failed(self.runner.unavailable_note(reason))

    def _failed(self, why: str) -> None:
        self.call.repair_history.append(
            {"model": self.judge.model, "outcome": "inference_error", "detail": why}
        )


# -- output ----------------------------------------------------------------------------------------


def _score_rows(calls: Sequence[_Call], panel: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for call in calls:
        if call.swapped:
            continue
        inst = call.instance
        valued = call.status in (Status.OK, Status.REPAIRED) and call.reading is not None
        for cell in call.cells:
            for role in ("candidate", "reference"):
                value: float | None = None
                if valued:
                    assert call.reading is not None
                    value = float(call.reading.scores[field_path(call.order.slot(role), cell)])
                rows.append(
                    {
                        "benchmark": BENCHMARK,
                        "system": call.system if role == "candidate" else GROUND_TRUTH,
                        "instance_id": inst.id,
                        "index": inst.index,
                        "track": cell.dimension,
                        "component": COMPONENT,
                        "judge": call.judge_id,
                        "criterion": cell.audio_type,
                        "value": value,
                        "status": str(call.status),
                        "panel": panel,
                        "condition": "",
                        "subset": inst.subset,
                        "paired_with": GROUND_TRUTH if role == "candidate" else call.system,
                    }
                )
    return rows


def _judgment_rows(calls: Sequence[_Call], panel: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for call in calls:
        reading = call.reading
        valued = call.status in (Status.OK, Status.REPAIRED) and reading is not None
        rows.append(
            {
                "system": call.system,
                "instance_id": call.instance.id,
                "index": call.instance.index,
                "subset": call.instance.subset,
                "stage": call.stage,
                "swapped": call.swapped,
                **call.ledger_columns(reading),
                "panel": panel,
                "order_first": call.order.first,
                "order": json.dumps(call.order.sidecar(), ensure_ascii=False),
                "cells": json.dumps([str(c) for c in call.cells]),
                "scores": json.dumps(reading.scores if valued and reading else {}),
                "evidence": json.dumps(reading.evidence if valued and reading else {}, ensure_ascii=False),
            }
        )
    return rows


def _preference(call: _Call, cell: Cell) -> str:
    assert call.reading is not None
    cand = call.reading.scores[field_path(call.order.slot("candidate"), cell)]
    ref = call.reading.scores[field_path(call.order.slot("reference"), cell)]
    return "candidate" if cand > ref else ("reference" if ref > cand else "tie")


def swap_summary(calls: Sequence[_Call]) -> dict[str, Any]:
    """Per stage: cells judged validly in both orders, how often the preferred clip changed.

    ``flip_rate`` counts any change of preference (candidate, reference or tie) between the two
    orders; ``strict_flip_rate`` only candidate <-> reference; ``first_slot_wins`` is the share of
    cells, over both orders, where the clip shown first scored higher (0.5 x non-ties when unbiased).
    """
    pairs: dict[tuple[str, str, str, int], dict[bool, _Call]] = {}
    for call in calls:
        if call.status in (Status.OK, Status.REPAIRED) and call.reading is not None:
            pairs.setdefault((call.judge_id, call.system, call.instance.id, call.stage), {})[call.swapped] = (
                call
            )
    out: dict[str, Any] = {}
    for stage in STAGE_DIMENSIONS:
        cells = flips = strict = first_wins = comparisons = 0
        for (_j, _s, _i, st), both in pairs.items():
            if st != stage or len(both) != 2:
                continue
            for cell in both[False].cells:
                a, b = _preference(both[False], cell), _preference(both[True], cell)
                cells += 1
                flips += a != b
                strict += {a, b} == {"candidate", "reference"}
                for call in both.values():
                    assert call.reading is not None
                    s1 = call.reading.scores[field_path(1, cell)]
                    s2 = call.reading.scores[field_path(2, cell)]
                    comparisons += 1
                    first_wins += s1 > s2
        out[f"stage_{stage}"] = {
            "cells": cells,
            "flips": flips,
            "flip_rate": flips / cells if cells else None,
            "strict_flips": strict,
            "strict_flip_rate": strict / cells if cells else None,
            "first_slot_wins": first_wins / comparisons if comparisons else None,
        }
    return out


def _ledger(calls: Sequence[_Call]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for call in calls:
        per = out.setdefault(call.judge_id, {s: 0 for s in LEDGER_STATUSES})
        per[str(call.status)] = per.get(str(call.status), 0) + 1
    return out


def _lineage(
    runner: _Runner, calls: Sequence[_Call], seed: int, swap_check: bool, unavailable: list[str]
) -> dict[str, Any]:
    panel = runner.panel
    judges: dict[str, Any] = {}
    roles = [("judge", j) for j in panel.judges] + ([("repair", panel.repair)] if panel.repair else [])
    for role, judge in roles:
        identity = runner.identities.get(backend_group_key(judge))
        info = judges.setdefault(judge.id, judge_lineage_entry(judge, identity))
        info["roles"][role] = role_lineage(judge)
    book = load_criteria()
    lat = runner.counters.latencies
    lineage: dict[str, Any] = {
        "benchmark": BENCHMARK,
        "panel": panel.name,
        "panel_sha256": panel.sha256(),
        "description": panel.description,
        "judge_kind": panel.judge_kind,
        "judges": judges,
        "prompts": {
            f"stage_{s}": {"version": PROMPT_VERSION, "sha256": template_sha256(panel.judge_kind, s)}
            for s in STAGE_DIMENSIONS
        },
        "repair_prompt": {"sha256": repair_prompt_sha256()} if panel.repair else None,
        "criteria": {
            "version": book.version,
            "sha256": book.sha256,
            "count": criteria_count(),
            "wordings": len(book.criteria),
        },
        "seed": seed,
        "swap_check": swap_check,
        "ledger": _ledger(calls),
        "model_calls": runner.counters.calls,
        "cache_hits": runner.counters.hits,
        "seconds_per_call": (sum(lat) / len(lat)) if lat else None,
        "usage": runner.usage_json(),
        "usage_by_system": runner.usage_by_system_json(),
        "unavailable": unavailable,
    }
    if panel.judge_kind == "cascade":
        lineage["facts"] = {
            "version": FACTS_VERSION,
            "asr_model": panel.facts.asr_model,
            "measured": runner.counters.facts_measured,
        }
    else:
        lineage["compose"] = panel.compose.model_dump(mode="json") | {
            "composed": runner.counters.compositions
        }
    return lineage


def _mlflow_tags(lineage: Mapping[str, Any]) -> dict[str, str]:
    tags = judge_tags(lineage["judges"])
    panel = mlflow_tag_part(str(lineage["panel"]))
    for stage, info in lineage["prompts"].items():
        tags[f"omnieval.prompt.{panel}.{stage}.sha256"] = info["sha256"]
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

    Returns:
        Rows for every (system, instance, active cell), for the system and for the ground truth.

    Raises:
        ConfigError: unknown or invalid panel. DataError: a reference clip is missing or unreadable.
    """
    import pandas as pd

    from omnieval.scores import SCORE_COLUMNS, coerce_scores

    config = panel if isinstance(panel, PrismPanelConfig) else load_prism_panel(panel)
    runner = _Runner(config, Path(cache_dir), progress, backend_factory)
    calls: list[_Call] = []
    for judge in config.judges:
        for system in candidates:
            for inst in instances:
                primary = pair_order(seed, system, inst.id)
                orders = [(primary, False)] + ([(primary.swapped(), True)] if swap_check else [])
                for stage in STAGE_DIMENSIONS:
                    cells = tuple(stage_cells(inst.active_tags, stage))
                    if not cells:
                        continue
                    for order, swapped in orders:
                        calls.append(_Call(system, inst, stage, order, swapped, cells, judge=judge))
    runner.counters.total = len(calls)
    started = time.perf_counter()
    try:
        runner.prepare(calls, candidates)
        runner.judge(calls)
        runner.repair(calls)
    finally:
        runner.close_all()
    unavailable = sorted(
        {
            f"{config.name}/{j.id}: unavailable: {config.requires} ({runner.unavailable[backend_group_key(j)]})"
            for j in config.judges
            if backend_group_key(j) in runner.unavailable
        }
    )
    scores = coerce_scores(pd.DataFrame(_score_rows(calls, config.name), columns=list(SCORE_COLUMNS)))
    judgments = pd.DataFrame(_judgment_rows(calls, config.name), columns=list(JUDGMENT_COLUMNS))
    lineage = _lineage(runner, calls, seed, swap_check, unavailable)
    lineage["seconds"] = round(time.perf_counter() - started, 3)
    log.info(
        "prism panel %s: %d calls, %d model calls, %d cache hits, %.1f s",
        config.name,
        len(calls),
        runner.counters.calls,
        runner.counters.hits,
        lineage["seconds"],
    )
    return PrismJudgeResult(
        scores=scores,
        judgments=judgments,
        lineage=lineage,
        mlflow_tags=_mlflow_tags(lineage),
        model_calls=runner.counters.calls,
        cache_hits=runner.counters.hits,
        swap=swap_summary(calls) if swap_check else None,
        unavailable=unavailable,
    )


__all__ = [
    "JUDGMENT_COLUMNS",
    "PRISM_PANELS",
    "PrismJudgeResult",
    "PrismPanelConfig",
    "StageReading",
    "judge_prism",
    "load_prism_panel",
    "read_stage",
]
