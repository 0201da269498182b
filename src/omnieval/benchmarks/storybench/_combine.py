"""One score per (system, track, policy) from a panel's rows: a view of storybench's aggregate.

The protocol's rules (FORMATS.md section 3, paper E.5) are implemented once, in
:func:`omnieval.benchmarks.storybench._aggregate.policy_scores`: a record is valid when all four criteria are; valid-only is
the equal-weight mean over the track's judges of each judge's mean over its valid records;
zero-filled is the same with every missing or invalid record counted as 0 over a fixed number of
instances. A track no judge could score (placeholder judge ``unavailable``) gets no row, and a
judge without any valid record is left out of its track under both policies.

Example:
    >>> import pandas as pd
    >>> from omnieval.judges import TRACKS
    >>> from omnieval.benchmarks.storybench._combine import combine_judges
    >>> rows = []
    >>> for judge, value in {"a": 8.0, "b": 6.0}.items():
    ...     for criterion in TRACKS["text"].criteria:
    ...         rows.append(dict(benchmark="storybench", system="s", instance_id="x", index=0, track="text",
    ...                          component="judge", judge=judge, criterion=criterion, value=value, status="ok"))
    >>> combine_judges(pd.DataFrame(rows))[["policy", "value", "judges"]].to_dict("records")
    [{'policy': 'valid_only', 'value': 7.0, 'judges': 2}, {'policy': 'zero_filled', 'value': 7.0, 'judges': 2}]
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from omnieval.benchmarks.storybench._aggregate import aggregate
from omnieval.benchmarks.storybench._names import POLICIES

if TYPE_CHECKING:
    import pandas as pd

COLUMNS: tuple[str, ...] = ("system", "track", "policy", "value", "judges")


def combine_judges(scores: pd.DataFrame, *, n_instances: int | None = None) -> pd.DataFrame:
    """Per system and track: ``policy`` (valid_only / zero_filled), ``value`` (1-10), ``judges`` used.

    Args:
        scores: scores-table rows; only ``component == "judge"`` rows are read.
        n_instances: zero-filled denominator; default the distinct instance ids of those rows.

    Returns:
        One row per (system, track, policy), sorted by system and track; ``value`` is NaN under
        valid-only when no judge has a valid record for the system; ``judges`` counts the judges
        averaged (valid-only: those with a valid record for the system).
    """
    import pandas as pd

    judge_rows = scores[scores["component"] == "judge"]
    if judge_rows.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    agg = aggregate(judge_rows, n_instances=n_instances)
    out: list[dict[str, object]] = []
    for s, system in enumerate(agg.systems):
        for track_name in sorted(agg.table.judges):
            for policy in POLICIES:
                ps = agg.policies[policy]
                per_judge = ps.per_judge[track_name][s]
                out.append(
                    {
                        "system": system,
                        "track": track_name,
                        "policy": policy,
                        "value": float(ps.components[f"judge.{track_name}"][s]),
                        "judges": sum(1 for v in per_judge if math.isfinite(float(v))),
                    }
                )
    return pd.DataFrame(out, columns=list(COLUMNS))
