"""PRISM-Bench's judge-drift anchors: fixed clips judged blind beside their references each night.

An anchor is one candidate clip (copied once from a reference system's output) under
``data/anchors/prism/candidates/<anchor>/video/<index>/generated.mp4``. It is judged exactly as the
judge stage judges a system: beside its reference in its seeded blind order, in both stages (stage 1
scores AV coherence and audio quality, stage 2 expressiveness and prompt following). Its score on a
dimension is the mean of that dimension's active cells on the candidate's side of the call, so one
clip gives one drift figure per dimension, and a shift names the dimension (the track).

The drift check (:mod:`omnieval.judges._drift`) reads the shape storybench's judge stage writes:
one row per (anchor, instance, track, judge) with ``status`` and ``scores`` (JSON: cell -> value),
and a lineage whose judges carry their settings per track and whose prompts are per track. This
module turns a PRISM judge run into that shape: a dimension's prompt hash is its stage's template,
and its settings are the judge's role settings, the stage and, for the cascade, the measured-facts
version and describer (what can move a score without any change to the clips).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from omnieval.benchmarks._base import JudgeJob, JudgeOutput
from omnieval.benchmarks.prism._tags import STAGE_DIMENSIONS
from omnieval.judges import VALUED

CANDIDATE_SIDE = "ground_truth"
"""``paired_with`` of a score row on the candidate's side of a call (the other side is the reference)."""

ANCHOR_COLUMNS = (
    "system",
    "instance_id",
    "index",
    "track",
    "judge",
    "status",
    "scores",
    "expected_scores",
    "note",
)


def anchor_rows(scores: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per (system, instance, dimension, judge) from a PRISM run's tables.

    Args:
        scores: the run's scores table (one row per call side and active cell).
        judgments: the run's calls (one row per system, instance, stage and judge).

    Returns:
        Columns :data:`ANCHOR_COLUMNS`; ``scores`` is the JSON of the candidate side's cells of that
        dimension (empty unless the call's status carries scores), ``expected_scores`` ``{}``.

    Example:
        >>> calls = pd.DataFrame([{"system": "a", "instance_id": "on-01", "index": 0, "stage": 1,
        ...     "swapped": False, "judge": "j", "status": "ok", "note": ""}])
        >>> cells = pd.DataFrame([{"system": "a", "instance_id": "on-01", "track": "av_coherence",
        ...     "judge": "j", "criterion": "speech", "value": 7.0, "status": "ok", "paired_with": "ground_truth"}])
        >>> rows = anchor_rows(cells, calls)
        >>> rows[["track", "status", "scores"]].values.tolist()
        [['av_coherence', 'ok', '{"speech": 7.0}'], ['audio_quality', 'ok', '{}']]
    """
    cells: dict[tuple[str, str, str, str], dict[str, float]] = {}
    for row in scores.itertuples(index=False):
        if str(row.paired_with) != CANDIDATE_SIDE or str(row.status) not in VALUED or pd.isna(row.value):
            continue
        key = (str(row.system), str(row.instance_id), str(row.track), str(row.judge))
        cells.setdefault(key, {})[str(row.criterion)] = float(row.value)
    out: list[dict[str, Any]] = []
    for call in judgments.itertuples(index=False):
        if bool(call.swapped):
            continue  # a swap-check call is a second opinion, not the run's score
        status = str(call.status)
        for track in STAGE_DIMENSIONS[int(call.stage)]:
            key = (str(call.system), str(call.instance_id), track, str(call.judge))
            values = cells.get(key, {}) if status in VALUED else {}
            out.append(
                {
                    "system": key[0],
                    "instance_id": key[1],
                    "index": int(call.index),
                    "track": track,
                    "judge": key[3],
                    "status": status,
                    "scores": json.dumps(values, sort_keys=True),
                    "expected_scores": "{}",
                    "note": str(call.note or ""),
                }
            )
    return pd.DataFrame(out, columns=list(ANCHOR_COLUMNS))


def anchor_lineage(lineage: Mapping[str, Any]) -> dict[str, Any]:
    """A PRISM run's lineage with judge settings and prompt hashes per dimension (see the module)."""
    stage_of = {track: stage for stage, tracks in STAGE_DIMENSIONS.items() for track in tracks}
    prompts = lineage.get("prompts") or {}
    shared: dict[str, Any] = {
        "judge_kind": lineage.get("judge_kind"),
        "criteria_sha256": (lineage.get("criteria") or {}).get("sha256"),
        "seed": lineage.get("seed"),
    }
    facts = lineage.get("facts")
    if isinstance(facts, Mapping):  # the cascade: what its measured facts come from, not how many
        shared["facts"] = {k: v for k, v in facts.items() if k != "measured"}
    compose = lineage.get("compose")
    if isinstance(compose, Mapping):
        shared["compose"] = {k: v for k, v in compose.items() if k != "composed"}
    judges: dict[str, Any] = {}
    for jid, info in (lineage.get("judges") or {}).items():
        roles = info.get("roles") or {}
        judges[jid] = {
            **{k: v for k, v in info.items() if k != "roles"},
            "roles": {track: {**roles, **shared, "stage": stage} for track, stage in stage_of.items()},
        }
    return {
        **lineage,
        "judges": judges,
        "prompts": {
            track: {"sha256": (prompts.get(f"stage_{stage}") or {}).get("sha256", "")}
            for track, stage in stage_of.items()
        },
    }


def judge_prism_anchors(job: JudgeJob, *, seed: int) -> JudgeOutput:
    """Judge the anchor clips of ``job`` beside their references (every instance given, no
    per-subset cap, no swap check) and return the drift check's shape (see the module)."""
    from omnieval.benchmarks.prism._judge import judge_prism

    instances: Sequence[Any] = list(job.instances)
    result = judge_prism(
        instances,
        job.candidates,
        panel=job.panel,
        cache_dir=job.cache_dir,
        seed=seed,
        swap_check=False,
        progress=job.progress,
    )
    return JudgeOutput(
        result.scores,
        anchor_rows(result.scores, result.judgments),
        anchor_lineage(result.lineage),
        result.mlflow_tags,
        result.model_calls,
        result.cache_hits,
    )


__all__ = ["ANCHOR_COLUMNS", "anchor_lineage", "anchor_rows", "judge_prism_anchors"]
