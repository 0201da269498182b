"""OmniACBench analyses in the shared registry (``omnieval analyze``) over data supplied beside the
scores table: ``capability_diagnostics`` (the paper's Table 3) and ``human_validation`` (Table 4).

Neither experiment is part of a suite run: Table 3 runs three reduced tasks (read the script alone,
read it after a spoken instruction, pick the target value an image implies from a list), Table 4
has people label a class-balanced subset of generated clips. Their per-item results come in a CSV
or JSONL file (format in docs/acbench.md); the scores table supplies what the suite already knows
(the full task's WER under ``original`` for Table 3; each clip's feature, target value and evaluator
hit for Table 4). Table 4's labels may come from a Label Studio export of the tasks that
``omnieval human-tasks acbench`` writes: :func:`study_labels` applies the study's key file and gives
the rows :func:`human_validation` reads. Importing this module registers both analyses.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.analysis import AnalysisContext, AnalysisResult, Skip, analysis
from omnieval.benchmarks._human_tasks import annotator, export_items, load_json, submitted_annotations
from omnieval.benchmarks.acbench._aggregate import BENCHMARK, aggregate_acbench
from omnieval.benchmarks.acbench._human_sample import LABEL_CONTROL, STUDY, TASK_FIELD
from omnieval.benchmarks.acbench._record import FEATURES, canonical_target
from omnieval.errors import DataError
from omnieval.metrics.functional.labels import normalize_label
from omnieval.scores import VALUED_STATUSES

ACBENCH = (BENCHMARK,)

CAPABILITY_SETTINGS: dict[str, str] = {
    "script_only": "the script alone, read aloud (WER)",
    "spoken_conditioning": "the spoken instruction and the script, read aloud (WER)",
    "visual_cue": "the image alone, target value picked from a list of the feature's values (accuracy)",
}
"""Table 3's three component settings (paper section 5.1) and what each scores."""

_WER_SETTINGS = ("script_only", "spoken_conditioning")


# -- input files --------------------------------------------------------------------------------------


def read_records(path: Path) -> list[dict[str, Any]]:
    """Rows of a ``.csv`` (header line, comma-separated) or ``.jsonl`` (one JSON object a line) file.

    Raises:
        DataError: Another suffix, an unreadable or non-UTF-8 file, a line that is not a JSON object.
    """
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if suffix == ".csv":
        return [dict(row) for row in csv.DictReader(text.splitlines())]
    if suffix == ".jsonl":
        rows: list[dict[str, Any]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise DataError(f"{path}:{number}: not JSON: {exc}") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{number}: expected a JSON object")
            rows.append(row)
        return rows
    raise DataError(f"{path}: expected a .csv or .jsonl file")


def _given_rows(path: Path | None, option: str, what: str) -> list[dict[str, Any]]:
    """The rows of the file an analysis was given as ``option``; Skip when none was given or it is empty."""
    if path is None:
        raise Skip(f"no {what} given ({option}.csv|jsonl; format in docs/acbench.md)")
    records = read_records(path)
    if not records:
        raise Skip(f"{path} holds no rows")
    return records


def _text(row: Mapping[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if value is None or str(value).strip() == "":
        raise DataError(f"{where}: missing {key!r}")
    return str(value).strip()


def _percent(values: Sequence[float]) -> float | None:
    return 100.0 * sum(values) / len(values) if values else None


# -- Table 3: capability diagnostics -------------------------------------------------------------------


def _item_wer(row: Mapping[str, Any], where: str) -> float:
    """The row's ``wer`` (a fraction), or the WER of ``transcript`` against ``script`` after Whisper's
    English normalization, as the suite's metrics compute it."""
    raw = row.get("wer")
    if raw is not None and str(raw).strip() != "":
        try:
            value = float(raw)
        except ValueError:
            raise DataError(f"{where}: wer {raw!r} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise DataError(f"{where}: wer {raw!r} must be a finite fraction >= 0")
        return value
    from omnieval.benchmarks.acbench._metrics import word_error_rate

    script, transcript = row.get("script"), row.get("transcript")
    # An empty transcript is a clip in which nothing was heard (WER 1); an absent one is an error.
    if script is None or not str(script).strip() or transcript is None:
        raise DataError(f"{where}: needs 'wer' or both 'script' and 'transcript'")
    wer = word_error_rate(str(script), str(transcript))
    if wer is None:
        raise DataError(f"{where}: the script has no words")
    return wer


def capability_diagnostics(
    records: Sequence[Mapping[str, Any]], task_wer: Mapping[str, float | None] | None = None
) -> dict[str, Any]:
    """Table 3 per system: script-only WER, spoken-conditioning WER, visual cue accuracy.

    WER is the mean of per-item WER x 100 (percent, like the leaderboard's ``wer``); accuracy is the
    percent of ``visual_cue`` items whose ``choice`` equals ``answer`` (case and surrounding spaces
    ignored), also per ``feature`` when the rows name one. ``task_wer`` (system -> the full task's
    WER under ``original``, from the scores table) is put beside them: the paper's reading is that
    the components are easy while the full task is not.

    Args:
        records: Rows with ``system``, ``setting`` (:data:`CAPABILITY_SETTINGS`), ``instance_id``;
            WER settings also ``wer`` or ``script`` + ``transcript``; ``visual_cue`` also ``answer``,
            ``choice`` and optionally ``feature``.
        task_wer: Full-task WER per system (percent), when known.

    Raises:
        DataError: An unknown setting, a missing field, a repeated (system, setting, instance_id).
    """
    wers: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    hits: dict[str, list[float]] = defaultdict(list)
    by_feature: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    seen: set[tuple[str, str, str]] = set()
    for number, row in enumerate(records, start=1):
        where = f"row {number}"
        system, setting = _text(row, "system", where), _text(row, "setting", where)
        instance = _text(row, "instance_id", where)
        if setting not in CAPABILITY_SETTINGS:
            raise DataError(f"{where}: unknown setting {setting!r}; known: {', '.join(CAPABILITY_SETTINGS)}")
        if (system, setting, instance) in seen:
            raise DataError(f"{where}: {system} / {setting} / {instance} given twice")
        seen.add((system, setting, instance))
        if setting in _WER_SETTINGS:
            wers[system][setting].append(_item_wer(row, where))
            continue
        hit = float(
            normalize_label(_text(row, "choice", where)) == normalize_label(_text(row, "answer", where))
        )
        hits[system].append(hit)
        feature = str(row.get("feature") or "").strip()
        if feature:
            by_feature[system][feature].append(hit)
    systems: dict[str, Any] = {}
    for system in sorted(set(wers) | set(hits)):
        entry: dict[str, Any] = {
            setting: {"wer": _percent(wers[system][setting]), "n": len(wers[system][setting])}
            for setting in _WER_SETTINGS
        }
        entry["visual_cue"] = {
            "accuracy": _percent(hits[system]),
            "n": len(hits[system]),
            "by_feature": {
                f: {"accuracy": _percent(v), "n": len(v)} for f, v in sorted(by_feature[system].items())
            },
        }
        entry["task_wer_original"] = (task_wer or {}).get(system)
        systems[system] = entry
    return {
        "settings": CAPABILITY_SETTINGS,
        "units": "wer: mean per-item WER x 100 (percent); accuracy: percent of items",
        "systems": systems,
    }


def _task_wer(scores: Any) -> dict[str, float | None]:
    """System -> WER under ``original`` from the scores table (None where it has none)."""
    document = aggregate_acbench(scores)
    return {
        system: (entry["conditions"].get("original") or {}).get("wer")
        for system, entry in document["systems"].items()
    }


@analysis(
    "capability_diagnostics",
    summary="acbench Table 3: script-only / spoken-conditioning WER and visual cue accuracy (--capabilities)",
    benchmarks=ACBENCH,
    inputs=("capabilities",),
)
def capability_diagnostics_analysis(ctx: AnalysisContext) -> AnalysisResult:
    records = _given_rows(ctx.config.capabilities, "--capabilities RESULTS", "capability results")
    return AnalysisResult(capability_diagnostics(records, _task_wer(ctx.scores)))


# -- Table 4: human validation -------------------------------------------------------------------------


def _evaluator_rows(scores: Any) -> dict[tuple[str, str, str], tuple[str, str, float]]:
    """(system, condition, instance_id) -> (feature, target value, evaluator hit 0/1) of the valid
    ``attribute_accuracy`` rows of an acbench scores table."""
    frame = scores[(scores["component"] == "attribute_accuracy") & scores["status"].isin(VALUED_STATUSES)]
    columns = ["system", "condition", "instance_id", "track", "criterion", "value"]
    return {
        (str(s), str(c), str(i)): (str(t), str(k), float(v))
        for s, c, i, t, k, v in frame[columns].itertuples(index=False)
    }


def majority_label(votes: Sequence[str]) -> str | None:
    """The label most annotators gave (case and spaces ignored); None on a tie for the top.

    Example:
        >>> majority_label(["Joy", "joy", "fear", "sadness", "joy "]), majority_label(["uk", "india"])
        ('joy', None)
    """
    counts = Counter(normalize_label(v) for v in votes).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def human_validation(
    records: Sequence[Mapping[str, Any]], evaluator: Mapping[tuple[str, str, str], tuple[str, str, float]]
) -> dict[str, Any]:
    """Table 4: evaluator accuracy (E) beside majority-vote human accuracy (H) on the same clips.

    A clip is (system, condition, instance_id). Its human label is the majority of its annotators'
    labels; a tie for the most votes is no majority and counts as a miss (``ties`` counts them). E
    is the percent of the clips whose evaluator row is a hit (from the scores table), H the percent
    whose majority label equals the target value; ``agreement`` is the percent of clips where the
    two are both right or both wrong. Groups are (system, condition, feature); clips with no valid
    evaluator row in the scores table are left out of every figure and listed in ``unmatched``.

    Raises:
        DataError: A missing field, or one annotator labelling the same clip twice.
    """
    votes: dict[tuple[str, str, str], dict[str, str]] = defaultdict(dict)  # clip -> annotator -> label
    for number, row in enumerate(records, start=1):
        where = f"row {number}"
        clip = (_text(row, "system", where), _text(row, "condition", where), _text(row, "instance_id", where))
        annotator = _text(row, "annotator", where)
        if annotator in votes[clip]:
            raise DataError(f"{where}: annotator {annotator!r} labels {' / '.join(clip)} twice")
        votes[clip][annotator] = _text(row, "label", where)
    groups: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    unmatched: list[str] = []
    for clip, by_annotator in sorted(votes.items()):
        labels = list(by_annotator.values())
        if clip not in evaluator:
            unmatched.append(" / ".join(clip))
            continue
        feature, target, evaluator_hit = evaluator[clip]
        majority = majority_label(labels)
        human_hit = float(majority is not None and majority == normalize_label(target))
        group = groups[(clip[0], clip[1], feature)]
        group["evaluator"].append(evaluator_hit)
        group["human"].append(human_hit)
        group["agree"].append(float(evaluator_hit == human_hit))
        group["tie"].append(float(majority is None))
        group["annotators"].append(float(len(labels)))
    rows = []
    for (system, condition, feature), g in sorted(groups.items()):
        e, h = _percent(g["evaluator"]), _percent(g["human"])
        rows.append(
            {
                "system": system,
                "condition": condition,
                "feature": feature,
                "n": len(g["human"]),
                "evaluator_accuracy": e,
                "human_accuracy": h,
                "difference": None if e is None or h is None else e - h,
                "agreement": _percent(g["agree"]),
                "ties": int(sum(g["tie"])),
                "annotators": {"min": int(min(g["annotators"])), "max": int(max(g["annotators"]))},
            }
        )
    return {
        "rule": "human label = majority of the clip's annotators (a tie for the top is a miss); accuracies in percent",
        "groups": rows,
        "unmatched": unmatched,
    }


# -- Table 4 labels from a Label Studio export --------------------------------------------------------


@dataclass(frozen=True)
class StudyLabels:
    """The labels of a Label Studio export of ``omnieval human-tasks acbench`` tasks, key applied.

    Attributes:
        records: One row per annotation, the input of :func:`human_validation`: ``system``,
            ``condition``, ``instance_id``, ``annotator``, ``label`` (the class, canonical spelling),
            plus ``task``, ``feature`` and ``target_value`` for reading the file by eye.
        counts: ``tasks`` (in the exports), ``annotations``, ``labels`` (rows written), ``skipped``
            (cancelled or empty annotations), ``unlabelled_tasks`` (tasks of the key with no label).
        per_clip: Feature -> ``{"clips", "min", "max"}``: labelled clips and annotations per clip.
    """

    records: tuple[dict[str, Any], ...]
    counts: Mapping[str, int]
    per_clip: Mapping[str, Mapping[str, int]]


_KEY_FIELDS = ("feature", "target_value", "instance_id", "system", "condition")


def _study_key(key: Any, source: str) -> dict[str, dict[str, str]]:
    if not isinstance(key, Mapping) or key.get("study") != STUDY or not isinstance(key.get("tasks"), Mapping):
        raise DataError(f"{source}: not the key file of omnieval human-tasks acbench (study {STUDY!r})")
    tasks: dict[str, dict[str, str]] = {}
    for task, entry in key["tasks"].items():
        if not isinstance(entry, Mapping):
            raise DataError(f"{source}: task {task}: not an object")
        tasks[str(task)] = {f: _text(entry, f, f"{source}: task {task}") for f in _KEY_FIELDS}
    return tasks


def study_labels(exports: Sequence[tuple[str, Any]], key: Any, key_source: str = "key") -> StudyLabels:
    """Turn Label Studio exports of the human-validation tasks into :func:`human_validation` rows.

    Args:
        exports: ``(source name, decoded JSON)`` of each Label Studio "JSON" export (a list of
            tasks; one export per feature project). A task's ``data.task`` is its blind id; each
            annotation's ``result`` holds the choice of the ``label`` control, ``value`` =
            ``{"choices": [class]}``; ``completed_by`` (a user id, or an object with ``id`` or
            ``email``) is the annotator. Cancelled annotations and empty results are skipped.
        key: The decoded key file (``key.json`` written beside the tasks).
        key_source: Name of the key in messages.

    Raises:
        DataError: naming the export, task and annotation: a key that is not this study's, an export
            that is not a list of task objects, a task id not in the key, a label that is not one of the
            feature's classes, more than one label in an annotation, or one annotator labelling the
            same clip twice.
    """
    clips = _study_key(key, key_source)
    records: list[dict[str, Any]] = []
    counts = dict.fromkeys(("tasks", "annotations", "labels", "skipped", "unlabelled_tasks"), 0)
    seen: dict[tuple[str, str], str] = {}
    for source, tasks in exports:
        for task, where, data in export_items(tasks, source, counts):
            blind = data.get(TASK_FIELD)
            if not isinstance(blind, str) or blind not in clips:
                raise DataError(
                    f"{where}: field data.{TASK_FIELD}: {blind!r} is not a task of {key_source} "
                    "(an export of other tasks, or another study's key)"
                )
            clip = clips[blind]
            for ann, a_where, results in submitted_annotations(task, f"{where} ({blind})", counts):
                chosen = [
                    r.get("value")
                    for r in results
                    if isinstance(r, Mapping) and r.get("from_name") == LABEL_CONTROL
                ]
                if not chosen:
                    counts["skipped"] += 1
                    continue
                value = chosen[0]
                choices = value.get("choices") if isinstance(value, Mapping) else None
                if len(chosen) > 1 or not isinstance(choices, list) or len(choices) != 1:
                    raise DataError(f"{a_where}: field {LABEL_CONTROL}: expected exactly one choice")
                label = canonical_target(clip["feature"], choices[0])
                if label is None:
                    raise DataError(
                        f"{a_where}: field {LABEL_CONTROL}: {choices[0]!r} is not one of the {clip['feature']} "
                        f"classes ({', '.join(FEATURES.get(clip['feature'], ()))})"
                    )
                who = annotator(ann, a_where)
                first = seen.setdefault((blind, who), a_where)
                if first != a_where:
                    raise DataError(f"{a_where}: annotator {who!r} labelled {blind} already ({first})")
                records.append(
                    {
                        "system": clip["system"],
                        "condition": clip["condition"],
                        "instance_id": clip["instance_id"],
                        "annotator": who,
                        "label": label,
                        "task": blind,
                        "feature": clip["feature"],
                        "target_value": clip["target_value"],
                    }
                )
    counts["labels"] = len(records)
    per_task = Counter(str(r["task"]) for r in records)
    counts["unlabelled_tasks"] = sum(1 for task in clips if task not in per_task)
    per_clip: dict[str, dict[str, int]] = {}
    for feature in dict.fromkeys(c["feature"] for c in clips.values()):
        n = [per_task[t] for t, c in clips.items() if c["feature"] == feature and per_task[t]]
        per_clip[feature] = {"clips": len(n), "min": min(n, default=0), "max": max(n, default=0)}
    return StudyLabels(tuple(records), counts, per_clip)


def read_study_labels(exports: Sequence[Path], key: Path) -> StudyLabels:
    """Read Label Studio export files and the key file, then :func:`study_labels`.

    Raises:
        DataError: a file that cannot be read or is not JSON, and everything :func:`study_labels` raises.
    """
    decoded = [(str(p), load_json(p, "Label Studio export")) for p in exports]
    return study_labels(decoded, load_json(key, "key file"), str(key))


@analysis(
    "human_validation",
    summary="acbench Table 4: evaluator vs majority-vote human accuracy per system, condition, feature (--humans)",
    benchmarks=ACBENCH,
    inputs=("humans",),
)
def human_validation_analysis(ctx: AnalysisContext) -> AnalysisResult:
    records = _given_rows(ctx.config.humans, "--humans LABELS", "human labels")
    result = human_validation(records, _evaluator_rows(ctx.scores))
    if not result["groups"]:
        raise Skip("no labelled clip has a valid attribute_accuracy row in the scores table")
    return AnalysisResult(result)


__all__ = [
    "CAPABILITY_SETTINGS",
    "StudyLabels",
    "capability_diagnostics",
    "human_validation",
    "majority_label",
    "read_records",
    "read_study_labels",
    "study_labels",
]
