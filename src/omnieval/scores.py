"""The scores table (FORMATS.md section 3).

One row per (system, instance, track, component, panel, judge, criterion, condition, paired_with).
Every evaluation stage produces rows of this table; aggregation and analyses read only it. The last
four columns (``panel``, ``condition``, ``subset``, ``paired_with``) are newer: a table written
without them reads as if they held ``""``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

SCORE_COLUMNS: tuple[str, ...] = (
    "benchmark",
    "system",
    "instance_id",
    "index",
    "track",
    "component",
    "judge",
    "criterion",
    "value",
    "status",
    "panel",
    "condition",
    "subset",
    "paired_with",
)

OPTIONAL_COLUMNS: tuple[str, ...] = ("panel", "condition", "subset", "paired_with")
"""Columns added after the first release; absent means ``""`` on every row."""

ROW_KEY: tuple[str, ...] = (
    "system",
    "instance_id",
    "track",
    "component",
    "panel",
    "judge",
    "criterion",
    "condition",
    "paired_with",
)
"""Columns that identify one row: two rows with the same key are a duplicate."""


class Status(StrEnum):
    """Outcome of one scored record. Only ``ok`` and ``repaired`` carry a value."""

    OK = "ok"
    REPAIRED = "repaired"
    MISSING_OUTPUT = "missing_output"
    INFERENCE_ERROR = "inference_error"
    PARSE_ERROR = "parse_error"
    UNRECOVERABLE = "unrecoverable"
    NOT_APPLICABLE = "not_applicable"


VALUED_STATUSES = frozenset({Status.OK.value, Status.REPAIRED.value})
ALL_STATUSES = frozenset(s.value for s in Status)


@dataclass(frozen=True)
class ScoreRow:
    """One row of the scores table. ``value`` is None unless ``status`` is ok/repaired."""

    benchmark: str
    system: str
    instance_id: str
    index: int
    track: str
    component: str
    judge: str
    criterion: str
    value: float | None
    status: str
    panel: str = ""
    condition: str = ""
    subset: str = ""
    paired_with: str = ""

    def __post_init__(self) -> None:
        if self.status not in ALL_STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if self.status in VALUED_STATUSES:
            if self.value is None or not math.isfinite(self.value):
                raise ValueError(f"status {self.status} needs a finite value, got {self.value!r}")
        elif self.value is not None:
            raise ValueError(f"status {self.status} must not carry a value")


def scores_frame(rows: list[ScoreRow]) -> pd.DataFrame:
    """Build the table with the contract's column order and dtypes."""
    import pandas as pd

    frame = pd.DataFrame([asdict(r) for r in rows], columns=list(SCORE_COLUMNS))
    return coerce_scores(frame)


def coerce_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """Cast a frame holding the score columns to the contract's dtypes and column order."""
    missing = [c for c in SCORE_COLUMNS if c not in frame.columns and c not in OPTIONAL_COLUMNS]
    if missing:
        raise ValueError(f"scores table lacks columns: {', '.join(missing)}")
    frame = frame.assign(**{c: "" for c in OPTIONAL_COLUMNS if c not in frame.columns})
    out = frame.loc[:, list(SCORE_COLUMNS)].copy()
    text_columns = [c for c in SCORE_COLUMNS if c not in ("index", "value")]
    for col in text_columns:
        out[col] = out[col].astype("string").fillna("").astype(str)
    out["index"] = out["index"].astype("int64")
    out["value"] = out["value"].astype("float64")
    return out.reset_index(drop=True)


def duplicate_rows_problem(
    frame: pd.DataFrame, key: Sequence[str], detail: Callable[[pd.Series], str]
) -> list[str]:
    """The problem line for rows that share ``key`` (none when there are none), naming the first.

    Benchmarks key their rows differently (a condition, a panel and a pairing), so ``detail``
    describes the first duplicate by the key columns beyond system and instance; the count and the
    wording are the same for every benchmark's aggregation check.
    """
    dup = frame[frame.duplicated(list(key), keep=False)]
    if not len(dup):
        return []
    first = dup.iloc[0]
    return [
        f"{len(dup)} duplicate rows, e.g. system {first['system']!r} instance {first['instance_id']!r} "
        + detail(first)
    ]


def read_scores(path: Path) -> pd.DataFrame:
    """Read a scores parquet file and check it against the contract."""
    import pandas as pd

    frame = pd.read_parquet(path)
    frame = coerce_scores(frame)
    bad = sorted(set(frame["status"]) - ALL_STATUSES)
    if bad:
        raise ValueError(f"{path}: unknown status values {bad}")
    return frame


def write_scores(frame: pd.DataFrame, path: Path) -> None:
    """Write atomically (temp file then rename) so a crash never leaves half a table."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    coerce_scores(frame).to_parquet(tmp, index=False)
    tmp.replace(path)
