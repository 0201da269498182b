"""The scores table (FORMATS.md section 3).

One row per (system, instance, track, component, panel, judge, criterion, condition, paired_with).
Every evaluation stage produces rows of this table; aggregation and analyses read only it. The last
four columns (``panel``, ``condition``, ``subset``, ``paired_with``) are newer: a table written
without them reads as if they held ``""``.

Values are *canonical*: :func:`scores_frame` and :func:`write_scores` round every ``value`` to its
component's number of decimals (:data:`PRECISION`, else :data:`DEFAULT_PRECISION`), so that a table
computed on another CPU model or with another thread count, whose floats differ only in their last
bits, has the same bytes (docs/metrics.md, "Canonical values").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

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


DEFAULT_PRECISION: Final[int] = 6
"""Decimals kept of a component :data:`PRECISION` does not name (a benchmark from outside the
package, e.g. ``examples/caption_f1``'s ``token_f1``)."""

PRECISION: Final[Mapping[str, int]] = MappingProxyType(
    {
        # Cosines of float32 embeddings (storybench). Another CPU's kernels (AVX2 instead of
        # AVX-512) or another thread count move them by 1e-8 to 1.5e-7 (measured on the packaged
        # MiniLM and EfficientNet-Lite0): at 6 decimals about one value in ten would still differ,
        # at 4 about one in a thousand. Half a unit of the 4th decimal (5e-5) is far below what
        # separates systems or instances (reported to 2-3 decimals, x10 in the Total Average).
        "bertscore_f1": 4,
        "image_similarity": 4,
        "dreamsim_distance": 4,
        # Probability-weighted judge score on 1-10: NumPy's float64 softmax of the judge's logits.
        # 5e-5 of a point, where judges and systems differ by tenths.
        "judge_expected": 4,
        # Exact by construction (integer judge scores, 0/1 matches, character counts, ratios of
        # word, phone or frame counts: one correctly rounded division, the same on every CPU), so
        # no noise to absorb: 9 decimals leave integers and 0/1 as they are and 1/3 at 0.333333333,
        # which keeps means of them within 5e-10 of the exact ones.
        "judge": 9,
        "speech_meta": 9,
        "narration_length": 9,
        "wer": 9,
        "per": 9,
        "vfr": 9,
        "attribute_accuracy": 9,
        # Words per minute (tens to hundreds) from a clip's duration: 1e-4 words per minute.
        "wpm": 4,
    }
)
"""Decimals kept per component of every shipped benchmark (storybench, acbench, prism; a test checks
that it names each component their ``score_range`` declares). Enough for the statistics: the
rounding error, at most half a unit in the last decimal kept, is orders of magnitude below the
spread between instances or systems; few enough that values which differ only in their last bits
(another CPU model, BLAS kernel or thread count) round to the same number."""


def precision(component: str) -> int:
    """Decimals kept of ``component``'s values in the scores table.

    Example:
        >>> precision("bertscore_f1"), precision("wer"), precision("token_f1")
        (4, 9, 6)
    """
    return PRECISION.get(component, DEFAULT_PRECISION)


def canonical(value: float, component: str) -> float:
    """``value`` rounded to ``component``'s decimals (half to even, on the decimal grid).

    NumPy's rounding (scale, round half to even, unscale) uses only correctly rounded IEEE
    operations, so it gives the same float on every machine; ``-0.0`` becomes ``0.0`` (a value
    within noise of zero must not keep its sign bit). NaN and infinities stay as they are. Two
    values that straddle a rounding boundary (within a few units in the last place of it) still
    round apart: rare, as likely as the noise is large next to the grid.

    Example:
        >>> canonical(0.7770137134274983, "bertscore_f1"), canonical(0.777013704419677, "bertscore_f1")
        (0.777, 0.777)
        >>> canonical(-0.00001, "image_similarity")
        0.0
    """
    import numpy as np

    return float(np.round(np.float64(value), precision(component))) + 0.0


def canonical_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of a scores table whose ``value`` column is rounded per component (:func:`canonical`).

    Idempotent: rounding a rounded table changes nothing.
    """
    import numpy as np

    out = frame.copy()
    values = out["value"].to_numpy(dtype="float64", copy=True)
    components = out["component"].astype(str).to_numpy()
    for component in dict.fromkeys(components.tolist()):
        at = components == component
        values[at] = np.round(values[at], precision(component))
    out["value"] = values + 0.0
    return out


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
    """Build the table with the contract's column order and dtypes, values canonical (:data:`PRECISION`)."""
    import pandas as pd

    frame = pd.DataFrame([asdict(r) for r in rows], columns=list(SCORE_COLUMNS))
    return canonical_scores(coerce_scores(frame))


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
    """Write atomically (temp file then rename) so a crash never leaves half a table.

    Values are written canonical (:func:`canonical_scores`): the file's bytes are the same on any
    CPU and thread count for values that differ only in their last bits.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    canonical_scores(coerce_scores(frame)).to_parquet(tmp, index=False)
    tmp.replace(path)
