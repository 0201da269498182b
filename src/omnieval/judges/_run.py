"""Run a judge panel over every system: model-major, batched, cached, resumable.

One *record* is one (track, judge, system, transition) judgement; it ends with exactly one status
(FORMATS.md section 3) and becomes four rows of the scores table (one per criterion) and one row
of ``judgments.parquet`` (raw answer, rationales, repair history, cache key, latency).

Order of work:

1. records whose inputs are missing (``missing_output``) or whose track cannot be judged here
   (``not_applicable``) are settled without a model;
2. every other record's request is rendered and keyed (:mod:`._cache`); cached answers are used;
3. judges are run *model-major*: all records of one model (every track, judge role and system) go
   through it while it is loaded, sorted so that consecutive requests share their longest prefix;
   each answer is written to the cache as soon as it arrives, so a killed run resumes where it
   stopped without repeating or losing a record;
4. answers are read by the ledger (:mod:`._parse`); unreadable non-empty answers go to the panel's
   repair model (:mod:`._repair`), through the same cache.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from omnieval.backends.llm import (
    ChatRequest,
    Completion,
    Message,
    ModelIdentity,
    output_fingerprint,
    reports_value_probs,
)
from omnieval.candidates import Modality, read_candidate
from omnieval.errors import ConfigError
from omnieval.judges._cache import (
    CACHE_FORMAT,
    DiskCache,
    cache_key,
    canonical_json,
    canonical_object,
    messages_material,
    sha256_text,
)
from omnieval.judges._calls import (
    CallCounters,
    CallJob,
    CallRunner,
    CallState,
    RepairJob,
    RepairLog,
    backend_group_key,
    judge_lineage_entry,
    judge_tags,
    mlflow_tag_part,
    role_lineage,
)
from omnieval.judges._panels import JudgeConfig, PanelConfig, load_panel, pin_revisions
from omnieval.judges._parse import OK as PARSE_OK
from omnieval.judges._parse import ParseResult, expected_score, parse_verdict
from omnieval.judges._registry import judge_registry, weights_verified
from omnieval.judges._render import JudgeInputs, render_messages, render_repair
from omnieval.judges._repair import judge_repair
from omnieval.judges._rubrics import registered_benchmark, repair_prompt_sha256, template
from omnieval.judges._tracks import (
    SCORE_MAX,
    SCORE_MIN,
    registered_reference,
    repair_schema,
    track,
    track_names,
    verdict_schema,
)
from omnieval.judgments import JudgmentSchema
from omnieval.scores import Status, canonical

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

COMPONENT = "judge"
NO_SPEECH_STATUSES = frozenset({"no_speech", "silent"})
"""Audio-analysis statuses of a speech candidate that holds no speech (scored as missing output)."""
EXPECTED_COMPONENT = "judge_expected"
"""Companion of each greedy ``judge`` row: the judge's probability-weighted score (1-10, float)."""
JUDGMENT_SCHEMA = JudgmentSchema(keys=("track",), reasons="rationales", extra=("expected_scores",))
"""Judgments of track panels: one record per (system, instance, track, judge), rationales per criterion,
and the probability-weighted scores beside the greedy ones."""
JUDGMENT_COLUMNS: tuple[str, ...] = JUDGMENT_SCHEMA.columns

DescribeAudio = Callable[[Path], Mapping[str, object]]
"""Audio path -> transcript and measured attributes. A describer may also offer
``line_fit(path, line) -> float | None`` (see :data:`LINE_FIT_KEY`)."""
DescribeImage = Callable[[Path, Path | None, Path | None], Mapping[str, object]]
"""(candidate image, current image, reference image) -> measured facts about the candidate (an image
cascade's input: its similarity to the two others, whether it is blank or noise, ...). A describer
names its settings in a ``version`` attribute, which keys the cache of its descriptions."""
LINE_FIT_KEY = "requested_line_logprob"
"""Analysis key set when the describer has ``line_fit``: how well the requested line fits the clip
(the ASR's mean log-probability per token of the line, forced; <= 0), None where it cannot say."""
Progress = Callable[[str, int, int], None]


class JudgedItem(Protocol):
    """What the panel runner needs of a dataset row itself: its id and its candidate index.

    What the judge is shown of the row (texts, images, conditions) comes from the ``reference``
    function the benchmark passes to :func:`run_judges`, so the runner is typed on no benchmark's
    records.
    """

    @property
    def id(self) -> str: ...
    @property
    def index(self) -> int: ...


ItemT = TypeVar("ItemT", bound=JudgedItem)
ReferenceInputs = Callable[[Any], JudgeInputs]
"""Item -> what the judge sees of it besides the candidate (the candidate fields are left unset)."""


@dataclass
class _Record(CallState[ParseResult]):
    track: str
    system: str
    item: JudgedItem

    @property
    def order(self) -> tuple[int, int, str, str]:
        return (track_names().index(self.track), self.item.index, self.judge_id, self.system)


@dataclass
class JudgeResult:
    """What a panel run produced.

    Attributes:
        scores: scores-table rows (FORMATS.md section 3), four per judge record.
        judgments: one row per judge record (columns :data:`JUDGMENT_COLUMNS`).
        model_calls: requests actually sent to a model (judging and repair, retries included).
        cache_hits: requests answered from the cache.
        lineage: panel, judge ids, revisions, weight hashes, prompt hashes, decoding parameters.
    """

    scores: pd.DataFrame
    judgments: pd.DataFrame
    model_calls: int
    cache_hits: int
    lineage: dict[str, Any]

    @property
    def panel(self) -> str:
        """The panel's name (its YAML ``name``), as written in the rows' ``panel`` column."""
        return str(self.lineage.get("panel", ""))

    def mlflow_tags(self, *, track_keys: bool = True) -> dict[str, str]:
        """Tags named as in FORMATS.md section 5.

        ``omnieval.judge.<judge_id>.revision`` / ``.sha256``, ``omnieval.prompt.<panel>.<track>.sha256``
        and, with ``track_keys`` (right when this is the suite's only panel),
        ``omnieval.prompt.<track>.sha256``. Merge several panels' tags with :func:`merge_panel_tags`,
        which keeps the per-track keys only when one panel ran (two panels may hash a track differently).
        """
        tags = judge_tags(self.lineage.get("judges", {}))
        panel = mlflow_tag_part(self.panel)
        for track_name, info in self.lineage.get("prompts", {}).items():
            tags[f"omnieval.prompt.{panel}.{track_name}.sha256"] = info["sha256"]
            if track_keys:
                tags[f"omnieval.prompt.{track_name}.sha256"] = info["sha256"]
        return tags


def merge_panel_tags(per_panel: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The MLflow tags of one suite's judge runs, from each panel's :meth:`JudgeResult.mlflow_tags`.

    Per-panel prompt keys (``omnieval.prompt.<panel>.<track>.sha256``) are kept for every panel; the
    plain ``omnieval.prompt.<track>.sha256`` only when a single panel ran, since two panels may judge
    a track with different templates (e.g. ``cpu``'s speech cascade) and one key cannot hold both.

    Example:
        >>> merge_panel_tags({"cpu": {"omnieval.prompt.text.sha256": "a", "omnieval.prompt.cpu.text.sha256": "a"},
        ...                   "paper": {"omnieval.prompt.text.sha256": "b", "omnieval.prompt.paper.text.sha256": "b"}})
        {'omnieval.prompt.cpu.text.sha256': 'a', 'omnieval.prompt.paper.text.sha256': 'b'}
    """
    plain = {f"omnieval.prompt.{t}.sha256" for t in track_names()}
    several = len(per_panel) > 1
    out: dict[str, str] = {}
    for tags in per_panel.values():
        out.update({k: v for k, v in tags.items() if not (several and k in plain)})
    return out


@dataclass
class _Counters(CallCounters):
    """Progress is in model calls: ``total`` grows by the cache misses of the judging and repair
    rounds and by every resend."""

    descriptions: int = 0


def _jsonable(value: object) -> object:
    if hasattr(value, "item"):
        return value.item()  # numpy scalars
    return str(value)


class _Runner(CallRunner):
    def __init__(
        self,
        panel: PanelConfig,
        cache_dir: Path,
        describe_audio: DescribeAudio | None,
        progress: Progress | None,
        reference: ReferenceInputs,
        describe_image: DescribeImage | None = None,
    ) -> None:
        super().__init__(cache_dir)
        self.panel = panel
        self.descriptions = DiskCache(cache_dir, "audio_descriptions")
        self.image_descriptions = DiskCache(cache_dir, "image_descriptions")
        self.describe_audio = describe_audio
        self.describe_image = describe_image
        self.reference = reference
        self.progress = progress
        self.counters: _Counters = _Counters()
        # Per-run memos of values that are the same for many records (speed only, same results).
        self._prompt_sha: dict[int, tuple[object, str]] = {}
        self._schemas: dict[tuple[str, int | None, bool], dict[str, Any]] = {}
        self._key_parts: dict[int, tuple[object, Any]] = {}

    # -- bookkeeping ------------------------------------------------------------------------------

    def _report(self) -> None:
        """Progress in model calls: records settled without one (unavailable tracks, missing
        outputs, cached answers) cost nothing and are not counted."""
        if self.progress is not None:
            self.progress(f"judge {self.panel.name}", self.counters.done, self.counters.total)

    def _misses(self, count: int) -> None:
        self.counters.total += count
        self._report()

    def _sent(self, count: int, resend: bool) -> None:
        super()._sent(count, resend)
        self.counters.done += count
        if resend:  # a resent request costs time again: count it as more work
            self.counters.total += count
        self._report()

    # -- records ----------------------------------------------------------------------------------

    def build_records(self, items: Sequence[JudgedItem], candidates: Mapping[str, Path]) -> list[_Record]:
        records: list[_Record] = []
        for track_name in track_names():
            track_cfg = self.panel.tracks.get(track_name)
            if track_cfg is None:
                continue
            judges: Sequence[JudgeConfig | None] = track_cfg.judges or (None,)
            for judge in judges:
                for system in candidates:
                    for item in items:
                        records.append(_Record(track_name, system, item, judge=judge))
        return records

    def _inputs(self, record: _Record, root: Path) -> JudgeInputs | str:
        """The judge inputs, or the reason an output the track needs is missing."""
        outputs: dict[Modality, Path] = {}
        for modality in track(record.track).needs:
            found = read_candidate(root, modality, record.item.index)
            if found.path is None:
                return f"{modality.value} output missing: {found.problem}"
            outputs[modality] = found.path
        text_path = outputs.get(Modality.TEXT)
        return dataclasses.replace(
            self.reference(record.item),
            candidate_text=text_path.read_text(encoding="utf-8") if text_path else None,
            candidate_image=outputs.get(Modality.IMAGE),
            candidate_audio=outputs.get(Modality.SPEECH),
        )

    def _describe(self, audio: Path, line: str | None) -> Mapping[str, object]:
        assert self.describe_audio is not None
        fn = self.describe_audio
        describer = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
        version = str(getattr(fn, "version", ""))
        audio_hash = self.hasher(audio)
        key = cache_key(kind="audio_description", describer=describer, version=version, audio=audio_hash)
        cached = self.descriptions.get_json(key)
        if cached is not None:
            description = dict(cached["description"])
        else:
            description = json.loads(json.dumps(dict(fn(audio)), default=_jsonable))
            self.descriptions.put_json(key, {"describer": describer, "description": description})
            self.counters.descriptions += 1
        line_fit = getattr(fn, "line_fit", None)
        if line_fit is None or not line or description.get("status", "ok") != "ok":
            return description
        # Keyed by the line too: one clip is judged against each row's requested line.
        fit_key = cache_key(
            kind="line_fit", describer=describer, version=version, audio=audio_hash, line=line
        )
        cached_fit = self.descriptions.get_json(fit_key)
        if cached_fit is not None:
            fit = cached_fit["fit"]
        else:
            fit = line_fit(audio, line)
            fit = None if fit is None else float(fit)
            self.descriptions.put_json(fit_key, {"describer": describer, "fit": fit})
        description[LINE_FIT_KEY] = fit
        return description

    def _describe_image(self, inputs: JudgeInputs) -> Mapping[str, object]:
        """The image describer's facts about the candidate image beside the row's current and
        reference images, cached by the three images' contents and the describer's version."""
        assert self.describe_image is not None and inputs.candidate_image is not None
        fn = self.describe_image
        describer = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
        version = str(getattr(fn, "version", ""))
        candidate, current, reference = inputs.candidate_image, inputs.current_image, inputs.reference_image
        digests = [
            self.hasher(p) if p is not None and Path(p).is_file() else None
            for p in (candidate, current, reference)
        ]
        key = cache_key(kind="image_description", describer=describer, version=version, images=digests)
        cached = self.image_descriptions.get_json(key)
        if cached is not None:
            return dict(cached["description"])
        description: dict[str, object] = json.loads(
            json.dumps(dict(fn(candidate, current, reference)), default=_jsonable)
        )
        self.image_descriptions.put_json(key, {"describer": describer, "description": description})
        self.counters.descriptions += 1
        return description

    def _cascade_inputs(self, record: _Record, inputs: JudgeInputs) -> JudgeInputs | tuple[Status, str]:
        """A cascade track's inputs with the measured analyses of its media added (the image's
        when the track judges an image, the audio's when it judges speech), or the status and note
        that settle the record without a model."""
        needs = track(record.track).needs
        if Modality.IMAGE in needs:
            if self.describe_image is None:
                return Status.NOT_APPLICABLE, "the image cascade needs an image describer"
            try:
                image = self._describe_image(inputs)
            except Exception as exc:  # the describer is outside our control: any failure is recorded
                return Status.INFERENCE_ERROR, f"image analysis failed: {type(exc).__name__}: {exc}"
            inputs = dataclasses.replace(inputs, candidate_image_analysis=image)
        if Modality.SPEECH not in needs:
            return inputs
        if self.describe_audio is None:
            return Status.NOT_APPLICABLE, "the speech cascade needs an audio describer"
        assert inputs.candidate_audio is not None
        try:
            line = inputs.reference_speech.get("line")
            analysis = self._describe(inputs.candidate_audio, line if isinstance(line, str) else None)
        except Exception as exc:  # the describer is outside our control: any failure is recorded
            return Status.INFERENCE_ERROR, f"audio analysis failed: {type(exc).__name__}: {exc}"
        audio_status = str(analysis.get("status", "ok"))
        if audio_status in NO_SPEECH_STATUSES:
            # Noise, music or silence is not a spoken line: the protocol's missing-audio rule
            # applies, as in the metrics (never a judge verdict on what nobody said).
            reason = analysis.get("message") or audio_status
            return Status.MISSING_OUTPUT, f"speech output holds no speech: {reason}"
        if audio_status != "ok":
            reason = analysis.get("message") or audio_status
            return Status.INFERENCE_ERROR, f"audio analysis failed: {reason}"
        return dataclasses.replace(inputs, candidate_audio_analysis=analysis)

    def prepare(self, records: list[_Record], candidates: Mapping[str, Path]) -> None:
        """Settle records that need no model; render and key the rest."""
        # Every judge of a track sees the same inputs: read and check each output once per call.
        inputs_memo: dict[tuple[str, str, int], JudgeInputs | str] = {}
        rendered: dict[tuple[str, str, int, str], tuple[Message, ...]] = {}
        for record in records:
            track_cfg = self.panel.tracks[record.track]
            if record.judge is None:
                self.settle(record, Status.NOT_APPLICABLE, track_cfg.unavailable or "")
                continue
            memo_key = (record.track, record.system, record.item.index)
            found = inputs_memo.get(memo_key)
            if found is None:
                found = self._inputs(record, Path(candidates[record.system]))
                inputs_memo[memo_key] = found
            if isinstance(found, str):
                self.settle(record, Status.MISSING_OUTPUT, found)
                continue
            inputs = found
            if track_cfg.input == "cascade":
                found_cascade = self._cascade_inputs(record, inputs)
                if isinstance(found_cascade, tuple):
                    self.settle(record, *found_cascade)
                    continue
                inputs = found_cascade
            identity = self.identity(record.judge)
            if identity is None:
                reason = self.identity_errors[backend_group_key(record.judge)]
                self.settle(record, Status.NOT_APPLICABLE, f"judge model unavailable: {reason}")
                continue
            record.revision = identity.revision
            tpl = template(record.track, track_cfg.variant)
            judge = record.judge
            schema = (
                self._schema(record.track, judge.framing.rationale_max_chars, judge.framing.rationale_first)
                if judge.framing.schema_constrained
                else None
            )
            record.prompt_sha256 = self._template_sha(tpl)
            # Judges sharing a framing get the same messages for the same (non-cascade) inputs.
            framing = judge.framing
            render_key = (*memo_key, self._fragment(framing, framing.model_dump_json))
            messages = rendered.get(render_key) if track_cfg.input != "cascade" else None
            if messages is None:
                messages = render_messages(tpl, inputs, judge.framing)
                if track_cfg.input != "cascade":
                    rendered[render_key] = messages
            record.request = ChatRequest(
                messages=messages,
                decoding=judge.decoding,
                json_schema=schema,
                chat_template_kwargs=dict(judge.framing.chat_template_kwargs),
            )
            record.key = self._key(identity, judge, record.prompt_sha256, record.request)

    def _schema(self, track_name: str, max_chars: int | None, rationale_first: bool) -> dict[str, Any]:
        memo_key = (track_name, max_chars, rationale_first)
        schema = self._schemas.get(memo_key)
        if schema is None:
            schema = verdict_schema(
                track_name, rationale_max_chars=max_chars, rationale_first=rationale_first
            )
            self._schemas[memo_key] = schema
        return schema

    def _template_sha(self, tpl: Any) -> str:
        known = self._prompt_sha.get(id(tpl))
        if known is None or known[0] is not tpl:
            known = (tpl, tpl.sha256())  # the template is kept so its id is never reused
            self._prompt_sha[id(tpl)] = known
        return known[1]

    def _key(
        self, identity: ModelIdentity, judge: JudgeConfig, prompt_sha256: str, request: ChatRequest
    ) -> str:
        """:func:`cache_key` of this request (the same text hashed), from fragments serialized once.

        Equal to ``cache_key(model=..., revision=..., weights=..., backend=..., prompt_sha256=...,
        request=request_material(request, hasher))``; only the messages are serialized per record.
        """
        judge_part = self._fragment(
            judge,
            lambda: {
                "cache_format": canonical_json(CACHE_FORMAT),
                "model": canonical_json(identity.model),
                "revision": canonical_json(identity.revision),
                "weights": canonical_json(identity.weights_digest),
                "backend": canonical_json(output_fingerprint(judge.backend)),
            },
        )
        schema = request.json_schema
        request_json = canonical_object(
            {
                "messages": canonical_json(messages_material(request, self.hasher)),
                "decoding": self._fragment(
                    request.decoding, lambda: canonical_json(request.decoding.model_dump(mode="json"))
                ),
                # Only the memoized verdict schemas are shared objects (a repair schema is per record).
                "json_schema": self._fragment(schema, lambda: canonical_json(schema))
                if any(schema is known for known in self._schemas.values())
                else canonical_json(schema),
                "chat_template_kwargs": canonical_json(dict(request.chat_template_kwargs)),
            }
        )
        return sha256_text(
            canonical_object(
                {**judge_part, "prompt_sha256": canonical_json(prompt_sha256), "request": request_json}
            )
        )

    def _fragment(self, owner: object, make: Callable[[], Any]) -> Any:
        """``make()`` memoized per object (kept alive with its value, so its id is never reused)."""
        known = self._key_parts.get(id(owner))
        if known is None or known[0] is not owner:
            known = (owner, make())
            self._key_parts[id(owner)] = known
        return known[1]

    # -- judging and repair -----------------------------------------------------------------------

    def judge(self, records: list[_Record]) -> None:
        jobs = [
            CallJob(
                self,
                r,
                partial(read_verdict, track_name=r.track),
                order=r.order,
                meta={"judge": r.judge_id, "track": r.track, "prompt_sha256": r.prompt_sha256},
                system=r.system,
                unavailable=lambda reason: f"judge model unavailable: {reason}",
            )
            for r in records
            if not r.status and r.request is not None
        ]
        repair_key = backend_group_key(self.panel.repair) if self.panel.repair else None
        self.run_jobs(jobs, keep_open=repair_key)

    def repair(self, records: list[_Record]) -> None:
        self.repair_round(records, self.panel.repair, self._identity_problem, self._repair_job)

    def _identity_problem(self, judge: JudgeConfig) -> str | None:
        return self.identity_errors[backend_group_key(judge)] if self.identity(judge) is None else None

    def _repair_job(self, record: _Record, _position: int, identity: ModelIdentity) -> RepairJob[ParseResult]:
        repair = self.panel.repair
        assert repair is not None and record.completion is not None and record.reading is not None
        request = ChatRequest(
            messages=render_repair(
                record.completion.text, record.reading.error, verdict_schema(record.track)
            ),
            decoding=repair.decoding,
            json_schema=repair_schema(record.track),
            chat_template_kwargs=dict(repair.framing.chat_template_kwargs),
        )
        return RepairJob(
            self,
            record,
            repair,
            request,
            self._key(identity, repair, repair_prompt_sha256(), request),
            decide=partial(judge_repair, track_name=record.track),
            log=_REPAIR_LOG,
            order=record.order,
            meta={
                "repair_for": record.judge_id,
                "track": record.track,
                "prompt_sha256": repair_prompt_sha256(),
            },
            system=record.system,
        )


_REPAIR_LOG = RepairLog(
    detailed=True, unavailable=lambda reason: ("skipped", f"repair model unavailable: {reason}")
)


def read_verdict(raw: str, track_name: str) -> ParseResult:
    """:func:`parse_verdict`, with a shortcut for the common clean answer (same result, faster).

    The shortcut takes only an answer that is exactly one strict JSON object holding the track's
    four criterion keys, each ``{"score": <int 1-10>, "rationale": <non-blank text>}`` and nothing
    else, with no character that could start a reasoning block (``<``), a code fence (a backtick)
    or a byte-order mark, and no brace beyond the five structural ones. On such a text the ledger's
    only complete reading is the whole object, read without a normalization, so its result is
    the one built here; anything else goes to the ledger.
    """
    criteria = track(track_name).criteria
    if (
        len(raw) > 100_000
        or raw.count("{") != len(criteria) + 1
        or "<" in raw
        or "`" in raw
        or "\ufeff" in raw
    ):
        return parse_verdict(raw, track_name)
    try:
        obj = json.loads(raw)
    except ValueError:
        return parse_verdict(raw, track_name)
    if not isinstance(obj, dict) or len(obj) != len(criteria):
        return parse_verdict(raw, track_name)
    scores: dict[str, int] = {}
    rationales: dict[str, str] = {}
    for criterion in criteria:
        value = obj.get(criterion)
        if not isinstance(value, dict) or len(value) != 2:
            return parse_verdict(raw, track_name)
        score, rationale = value.get("score"), value.get("rationale")
        if type(score) is not int or not SCORE_MIN <= score <= SCORE_MAX or not isinstance(rationale, str):
            return parse_verdict(raw, track_name)
        if not rationale.strip():
            return parse_verdict(raw, track_name)
        scores[criterion] = score
        rationales[criterion] = rationale.strip()
    return ParseResult(PARSE_OK, scores, rationales)


def has_expected(judge: JudgeConfig | None) -> bool:
    """Whether this judge's records get ``judge_expected`` rows (its backend reports value probabilities)."""
    if judge is None:
        return False
    return reports_value_probs(
        judge.backend,
        schema_constrained=judge.framing.schema_constrained,
        greedy=judge.decoding.greedy,
    )


def expected_scores(record_status: str, completion: Completion | None, track_name: str) -> dict[str, float]:
    """Criterion -> probability-weighted score of one record, for the criteria that have one.

    Only plain ``ok`` records: a repaired verdict's scores come from the repair model's rewrite,
    which the original answer's probabilities do not describe. Each value is canonical (rounded to
    ``judge_expected``'s decimals, :data:`omnieval.scores.PRECISION`) here, where it is made, so
    the ``judge_expected`` rows and the judgments' ``expected_scores`` hold the same number and
    both have the same bytes on any CPU.
    """
    if record_status != Status.OK or completion is None or not completion.value_probs:
        return {}
    out: dict[str, float] = {}
    for criterion in track(track_name).criteria:
        dist = completion.value_probs.get(f"{criterion}/score")
        value = expected_score(dist) if dist else None
        if value is not None:
            out[criterion] = canonical(value, EXPECTED_COMPONENT)
    return out


def _rows(
    records: list[_Record], *, panel: str, benchmark: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    score_rows: list[dict[str, Any]] = []
    judgment_rows: list[dict[str, Any]] = []
    for record in sorted(records, key=lambda r: (r.system, r.order)):
        t = record.item
        valued = record.status in (Status.OK, Status.REPAIRED)
        reading = record.reading
        scores = reading.scores if (valued and reading is not None) else {}
        with_expected = has_expected(record.judge)
        expected = expected_scores(record.status, record.completion, record.track) if with_expected else {}
        for criterion in track(record.track).criteria:
            value = float(scores[criterion]) if valued else None
            base = {
                "benchmark": benchmark,
                "system": record.system,
                "instance_id": t.id,
                "index": t.index,
                "track": record.track,
                "component": COMPONENT,
                "judge": record.judge_id,
                "criterion": criterion,
                "value": value,
                "status": str(record.status),
                "panel": panel,
            }
            score_rows.append(base)
            if with_expected:
                # Never a stand-in: a valued verdict without probabilities is not_applicable, not
                # its greedy score; an unvalued one keeps the greedy row's status.
                weighted = expected.get(criterion)
                status = (
                    str(record.status)
                    if not valued
                    else (Status.OK if weighted is not None else Status.NOT_APPLICABLE)
                )
                score_rows.append(
                    {**base, "component": EXPECTED_COMPONENT, "value": weighted, "status": str(status)}
                )
        judgment_rows.append(
            {
                "system": record.system,
                "instance_id": t.id,
                "index": t.index,
                "track": record.track,
                **record.ledger_columns(reading),
                "scores": json.dumps(scores),
                "rationales": json.dumps(
                    reading.rationales if (valued and reading) else {}, ensure_ascii=False
                ),
                "expected_scores": json.dumps(expected),
            }
        )
    return score_rows, judgment_rows


def _lineage(runner: _Runner, records: list[_Record]) -> dict[str, Any]:
    panel = runner.panel
    registry = judge_registry()
    judges: dict[str, dict[str, Any]] = {}
    entries = [(t, j) for t, j in panel.judges()]
    if panel.repair is not None:
        entries.append(("repair", panel.repair))
    for role, judge in entries:
        group = backend_group_key(judge)
        identity = runner.identities.get(group)
        info = judges.setdefault(judge.id, judge_lineage_entry(judge, identity))
        if group in runner.pool.threads:
            # What an in-process backend really ran with (``backend.n_threads`` null means "auto");
            # absent when no model was loaded (every answer came from the cache).
            info["runtime"] = {"n_threads": runner.pool.threads[group]}
        entry = registry.get(judge.id)
        if entry is not None and "registry" not in info:
            verified = weights_verified(entry.weights_sha256, info["weights_sha256"])
            info["registry"] = {
                "revision": entry.revision,
                "weights_sha256": dict(entry.weights_sha256),
                "weights_verified": verified,
            }
            if verified is False:
                log.warning("judge %s: local weights do not match models/judges.yaml", judge.id)
        info["roles"][role] = role_lineage(judge)
    prompts: dict[str, Any] = {}
    for track_name, cfg in panel.tracks.items():
        if cfg.judges:
            tpl = template(track_name, cfg.variant)
            prompts[track_name] = {"variant": tpl.variant, "version": tpl.version, "sha256": tpl.sha256()}
    prompts_repair = {"sha256": repair_prompt_sha256()} if panel.repair is not None else None
    statuses: dict[str, dict[str, int]] = {}
    for record in records:
        per = statuses.setdefault(f"{record.track}/{record.judge_id}", {})
        per[str(record.status)] = per.get(str(record.status), 0) + 1
    return {
        "panel": panel.name,
        "panel_sha256": panel.sha256(),
        "judges": judges,
        "prompts": prompts,
        "repair_prompt": prompts_repair,
        "unavailable": {t: cfg.unavailable for t, cfg in panel.tracks.items() if cfg.unavailable},
        "statuses": statuses,
        "model_calls": runner.counters.calls,
        "cache_hits": runner.counters.hits,
        "audio_descriptions_computed": runner.counters.descriptions,
        "usage": runner.usage_json(),
        "usage_by_system": runner.usage_by_system_json(),
    }


def checked_benchmark(benchmark: str | None) -> str:
    """The benchmark whose rubrics are registered, checked against the caller's ``benchmark``.

    Checked before any model loads: the registered rubrics are the only ones the judges can use.
    """
    scored = registered_benchmark()
    if benchmark is not None and benchmark != scored:
        raise ConfigError(f"judge rubrics are registered for {scored!r}, not for benchmark {benchmark!r}")
    return scored


def resolve_reference(reference: Callable[[ItemT], JudgeInputs] | None) -> ReferenceInputs:
    """``reference``, else the registered benchmark's; a ``ConfigError`` when there is neither."""
    if reference is not None:
        return reference
    registered = registered_reference(registered_benchmark())
    if registered is None:
        raise ConfigError(
            f"benchmark {registered_benchmark()!r} registered no reference inputs for its judges; "
            "pass reference= (row -> JudgeInputs)"
        )
    return registered


def run_judges(
    items: Sequence[ItemT],
    candidates: Mapping[str, Path],
    *,
    panel: str,
    cache_dir: Path,
    describe_audio: DescribeAudio | None = None,
    progress: Progress | None = None,
    benchmark: str | None = None,
    reference: Callable[[ItemT], JudgeInputs] | None = None,
    describe_image: DescribeImage | None = None,
) -> JudgeResult:
    """Judge every system's candidates with one panel.

    Args:
        items: the dataset rows (their ``index`` is the candidate index).
        candidates: system id -> candidate folder (FORMATS.md section 2).
        panel: a shipped panel name (``cpu``, ``paper-a``, ``paper-b``, ``paper-c``, ``paper``) or a
            path to a panel YAML file.
        cache_dir: where answers (and audio descriptions) are cached; safe to share between runs.
        describe_audio: for the speech cascade: audio path -> transcript and measured attributes
            (``transcript, f0_median_hz, pitch, speed, words_per_second, gender, emotion``).
        progress: called as ``progress(label, done, total)`` in model calls: once the cached
            answers are known (``done`` 0) and after each call; repairs and retries add to ``total``.
        benchmark: the scores rows' ``benchmark`` column: the benchmark whose rubrics are registered
            (:func:`~omnieval.judges.registered_benchmark`, the default); another name is refused.
        reference: item -> what the judge is shown of it besides the candidate (the benchmark's
            adapter from its own record type); by default the one the benchmark registered with
            its tracks (:func:`~omnieval.judges.register_tracks`).
        describe_image: for a cascade track that judges an image: (candidate, current, reference
            image) -> measured facts about the candidate (:data:`DescribeImage`); cached in
            ``cache_dir`` like the audio descriptions.

    Returns:
        The scores rows (``panel`` = the panel's name, so two panels of one suite never collide), the
        judgment records, call and cache counts and the lineage.

    Raises:
        ConfigError: no benchmark registered its rubrics, ``benchmark`` is not the one that did, or
            no ``reference`` is given and the benchmark registered none.
    """
    import pandas as pd

    from omnieval.scores import SCORE_COLUMNS, canonical_scores, coerce_scores

    scored = checked_benchmark(benchmark)
    inputs_of = resolve_reference(reference)
    registry = judge_registry()
    config = pin_revisions(load_panel(panel), {k: v.revision for k, v in registry.items() if v.revision})
    runner = _Runner(config, Path(cache_dir), describe_audio, progress, inputs_of, describe_image)
    started = time.perf_counter()
    records = runner.build_records(items, candidates)
    try:
        runner.prepare(records, candidates)
        runner.judge(records)
        runner.repair(records)
    finally:
        runner.pool.close_all()
    score_rows, judgment_rows = _rows(records, panel=config.name, benchmark=scored)
    scores = canonical_scores(coerce_scores(pd.DataFrame(score_rows, columns=list(SCORE_COLUMNS))))
    judgments = pd.DataFrame(judgment_rows, columns=list(JUDGMENT_COLUMNS))
    lineage = _lineage(runner, records)
    log.info(
        "judge panel %s: %d records, %d model calls, %d cache hits, %.1f s",
        config.name,
        len(records),
        runner.counters.calls,
        runner.counters.hits,
        time.perf_counter() - started,
    )
    return JudgeResult(scores, judgments, runner.counters.calls, runner.counters.hits, lineage)
