"""The validity ledger per judge: how many judgments of each judge and track ended in each status."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from omnieval.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

LEDGER_STATUSES: tuple[str, ...] = (
    "ok",
    "repaired",
    "parse_error",
    "inference_error",
    "unrecoverable",
    "missing_output",
    "not_applicable",
)
"""Statuses in display order: valid first, then failures, then records that were never owed."""

VALID: frozenset[str] = frozenset({"ok", "repaired"})


@dataclass(frozen=True)
class LedgerRow:
    """Judgment counts of one judge on one track.

    Attributes:
        judge: ``<panel>/<judge id>`` (the key ``health.json`` uses too).
        track: the judge track (``text``, ``image``, ...).
        counts: status -> number of judgments (every status of :data:`LEDGER_STATUSES`, zeros kept).
    """

    judge: str
    track: str
    counts: Mapping[str, int]

    @property
    def total(self) -> int:
        """Every judgment of this judge and track, whatever its status."""
        return sum(self.counts.values())

    @property
    def owed(self) -> int:
        """Judgments that should have produced a verdict (all but ``not_applicable``)."""
        return self.total - self.counts.get("not_applicable", 0)

    @property
    def valid(self) -> int:
        """``ok`` plus ``repaired``."""
        return sum(self.counts.get(s, 0) for s in VALID)

    @property
    def valid_share(self) -> float | None:
        """valid / owed (None when nothing was owed, e.g. an unavailable track)."""
        return self.valid / self.owed if self.owed else None


def validity_ledger(judgments: pd.DataFrame) -> list[LedgerRow]:
    """Count judgments per (panel/judge, track, status), sorted by judge then track.

    Args:
        judgments: the judge stage's ``judgments.parquet`` (columns ``panel``, ``judge``, ``track``,
            ``status`` at least; ``panel`` may be absent in older tables and then reads as ``""``).

    Raises:
        DataError: a required column is missing or a status is not one of :data:`LEDGER_STATUSES`.

    Example:
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"panel": ["p", "p", "p"], "judge": ["j", "j", "j"],
        ...                       "track": ["text"] * 3, "status": ["ok", "parse_error", "ok"]})
        >>> row = validity_ledger(frame)[0]
        >>> row.judge, row.counts["ok"], row.counts["parse_error"], row.valid_share
        ('p/j', 2, 1, 0.6666666666666666)
    """
    missing = [c for c in ("judge", "track", "status") if c not in judgments.columns]
    if missing:
        raise DataError(f"judgments table: missing column(s) {', '.join(missing)}")
    unknown = sorted(set(judgments["status"].astype(str)) - set(LEDGER_STATUSES))
    if unknown:
        raise DataError(f"judgments table, column 'status': unknown status(es) {unknown}")
    panel = judgments["panel"].astype(str) if "panel" in judgments.columns else None
    keys = (
        (panel + "/" + judgments["judge"].astype(str))
        if panel is not None
        else judgments["judge"].astype(str)
    )
    grouped = judgments.assign(_key=keys.to_numpy()).groupby(["_key", "track", "status"], sort=True).size()
    rows: dict[tuple[str, str], dict[str, int]] = {}
    for (judge, track, status), n in grouped.items():
        rows.setdefault((str(judge), str(track)), dict.fromkeys(LEDGER_STATUSES, 0))[str(status)] = int(n)
    return [LedgerRow(judge, track, counts) for (judge, track), counts in sorted(rows.items())]


def read_ledger(path: Path) -> list[LedgerRow]:
    """:func:`validity_ledger` of a ``judgments.parquet`` file (only the columns it needs are read)."""
    import pandas as pd

    try:
        import pyarrow.parquet as pq

        names = set(pq.read_schema(path).names)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable Parquet file ({exc})") from None
    # PRISM-Bench judges per stage (one call scores several dimensions), storybench per track.
    group = "track" if "track" in names or "stage" not in names else "stage"
    missing = [c for c in ("judge", group, "status") if c not in names]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}")
    columns = ["judge", group, "status", *(["panel"] if "panel" in names else [])]
    frame = pd.read_parquet(path, columns=columns)
    if group == "stage":
        frame = frame.assign(track="stage " + frame.pop("stage").astype(str))
    return validity_ledger(frame)
