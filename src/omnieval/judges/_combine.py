"""How a panel's judges combine into one score per (system, track) (FORMATS.md section 3, paper E.5).

- A judge record is valid when all four of its criteria are valid (``ok`` or ``repaired``); its
  score is the mean of the four.
- Valid-only: each judge's mean over its own valid records; the track score is the equal-weight mean
  of those judge means (a judge with no valid record is left out and not counted).
- Zero-filled: each judge's sum over valid records divided by its number of records (every
  missing or invalid record counts 0); the track score is the mean over the judges.
- Tracks that no judge could score here (judge id ``unavailable``) get no value.

Example:
    >>> import pandas as pd
    >>> rows = []
    >>> for judge, values in {"a": [8, 8, 8, 8], "b": [6, 6, 6, 6]}.items():
    ...     for i, v in enumerate(values):
    ...         rows.append(dict(benchmark="storybench", system="s", instance_id="x", index=0, track="text",
    ...                          component="judge", judge=judge, criterion=f"c{i}", value=float(v), status="ok"))
    >>> combine_judges(pd.DataFrame(rows))[["policy", "value", "judges"]].to_dict("records")
    [{'policy': 'valid_only', 'value': 7.0, 'judges': 2}, {'policy': 'zero_filled', 'value': 7.0, 'judges': 2}]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

_VALUED = ("ok", "repaired")
UNAVAILABLE_JUDGE = "unavailable"


def record_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per judge record: ``system, instance_id, index, track, judge, valid, score``."""
    judge_rows = scores[scores["component"] == "judge"].copy()
    judge_rows["valued"] = judge_rows["status"].isin(_VALUED)
    keys = ["system", "instance_id", "index", "track", "judge"]
    grouped = judge_rows.groupby(keys, sort=True, dropna=False)
    out = grouped.agg(valid=("valued", "all"), n=("valued", "size"), score=("value", "mean")).reset_index()
    out["valid"] = out["valid"] & (out["n"] == 4)
    out.loc[~out["valid"], "score"] = float("nan")
    return out.drop(columns="n")


def combine_judges(scores: pd.DataFrame) -> pd.DataFrame:
    """Per system and track: ``policy`` (valid_only / zero_filled), ``value`` (1-10), ``judges`` used."""
    import pandas as pd

    records = record_scores(scores)
    records = records[records["judge"] != UNAVAILABLE_JUDGE]
    per_judge = (
        records.assign(filled=records["score"].fillna(0.0))
        .groupby(["system", "track", "judge"], sort=True)
        .agg(valid_only=("score", "mean"), zero_filled=("filled", "mean"))
        .reset_index()
    )
    rows: list[dict[str, object]] = []
    for (system, track_name), group in per_judge.groupby(["system", "track"], sort=True):
        valid = group["valid_only"].dropna()
        rows.append(
            {
                "system": system,
                "track": track_name,
                "policy": "valid_only",
                "value": float(valid.mean()) if len(valid) else float("nan"),
                "judges": len(valid),
            }
        )
        rows.append(
            {
                "system": system,
                "track": track_name,
                "policy": "zero_filled",
                "value": float(group["zero_filled"].mean()),
                "judges": len(group),
            }
        )
    return pd.DataFrame(rows, columns=["system", "track", "policy", "value", "judges"])
