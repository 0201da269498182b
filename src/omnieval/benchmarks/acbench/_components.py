"""OmniACBench per-instance headline components: what ``omnieval compare`` pairs between two runs.

A component is ``<condition>.<metric>`` with the metric keys and units of the aggregate
(FORMATS.md section 7, the paper's Table 2), so the mean over instances of a component equals the
leaderboard's value for that system and condition:

- ``wer``, ``per``: the instance's error rate x 100 (percent; lower is better);
- ``vfr_at_0_3``: on ``whisper`` instances, 100 when the voiced-frame ratio is <= 0.3, else 0;
- ``emotion_accuracy``, ``accent_accuracy``, ``timbre_accuracy``: the evaluator's 0/1 hit x 100 on
  instances of that feature.

delta-WPM is left out: it is a difference between the ``fast`` and the ``slow`` instances' means,
not a quantity of one instance, so a paired per-instance comparison does not apply to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from omnieval.benchmarks._spec import declaration_error, package_spec
from omnieval.benchmarks.acbench._conditions import CONDITIONS

if TYPE_CHECKING:
    import pandas as pd

_SPEC = package_spec(__file__)

INSTANCE_METRICS: Final[tuple[str, ...]] = _SPEC.headline.components
"""The aggregate metrics that are means of per-instance values, in the paper's column order
(``benchmark.yaml``: ``headline.components``)."""

LOWER_IS_BETTER_METRICS: Final[frozenset[str]] = frozenset(_SPEC.headline.lower_is_better)

HEADLINE_COMPONENTS: Final[tuple[str, ...]] = _SPEC.headline_components()
"""``<condition>.<metric>``, condition-major (``headline.per_condition``)."""
LOWER_IS_BETTER: Final[frozenset[str]] = _SPEC.headline_lower_is_better()

_ACCURACY_FEATURES: Final[dict[str, str]] = {
    "emotion": "emotion_accuracy",
    "accent": "accent_accuracy",
    "timbre": "timbre_accuracy",
}

# What :func:`acbench_instance_components` computes is code; the declaration must name exactly
# those metrics, per condition, or compare would miss a component or meet one it cannot place.
_COMPUTED: Final[frozenset[str]] = frozenset({"wer", "per", "vfr_at_0_3", *_ACCURACY_FEATURES.values()})
if not _SPEC.headline.per_condition:
    raise declaration_error(__file__, "headline.per_condition", f"{__name__} needs it true")
if set(INSTANCE_METRICS) != _COMPUTED:
    raise declaration_error(
        __file__,
        "headline.components",
        f"{__name__} computes exactly {', '.join(sorted(_COMPUTED))}; got {', '.join(INSTANCE_METRICS)}",
    )


def acbench_instance_components(scores: pd.DataFrame) -> pd.DataFrame:
    """Per-(system, instance) values of ``<condition>.<metric>`` in the aggregate's units.

    Args:
        scores: An acbench scores table (FORMATS.md section 3).

    Returns:
        Long frame with columns ``system, instance_id, component, value`` (float), one row per
        system, instance and component with a valid (``ok``/``repaired``) value.

    Raises:
        DataError: The table fails the aggregation's checks (other benchmarks' rows, unknown
            statuses or conditions, duplicates, valued rows without a value).

    Example:
        >>> import pandas as pd
        >>> rows = [("a", "phonation", "vfr", "whisper", 0.2), ("b", "phonation", "vfr", "whisper", 0.5),
        ...         ("a", "phonation", "wer", "whisper", 0.25)]
        >>> frame = pd.DataFrame(
        ...     [dict(benchmark="acbench", system="s", instance_id=i, index=n, track=t, component=c,
        ...           judge="", criterion=k, value=v, status="ok", condition="original")
        ...      for n, (i, t, c, k, v) in enumerate(rows)])
        >>> acbench_instance_components(frame)[["instance_id", "component", "value"]]
          instance_id            component  value
        0           a         original.wer   25.0
        1           a  original.vfr_at_0_3  100.0
        2           b  original.vfr_at_0_3    0.0
    """
    import numpy as np
    import pandas as pd

    from omnieval.benchmarks.acbench._aggregate import _check
    from omnieval.metrics.functional.acoustic import is_whisper_like
    from omnieval.scores import VALUED_STATUSES

    frame = _check(scores)
    valid = frame[frame["status"].isin(VALUED_STATUSES)]
    parts: list[pd.DataFrame] = []

    def add(rows: pd.DataFrame, metric: str, values: pd.Series) -> None:
        if len(rows):
            parts.append(
                pd.DataFrame(
                    {
                        "system": rows["system"].astype(str).to_numpy(),
                        "instance_id": rows["instance_id"].astype(str).to_numpy(),
                        "component": (rows["condition"].astype(str) + f".{metric}").to_numpy(),
                        "value": values.to_numpy(dtype=np.float64),
                        "_order": rows["index"].to_numpy(),
                        "_metric": INSTANCE_METRICS.index(metric),
                    }
                )
            )

    for metric in ("wer", "per"):
        rows = valid[valid["component"] == metric]
        add(rows, metric, rows["value"] * 100.0)
    vfr = valid[(valid["component"] == "vfr") & (valid["criterion"] == "whisper")]
    add(vfr, "vfr_at_0_3", vfr["value"].map(lambda v: 100.0 if is_whisper_like(float(v)) else 0.0))
    for feature, metric in _ACCURACY_FEATURES.items():
        rows = valid[(valid["component"] == "attribute_accuracy") & (valid["track"] == feature)]
        add(rows, metric, rows["value"] * 100.0)
    if not parts:
        return pd.DataFrame(
            {
                "system": pd.Series(dtype=object),
                "instance_id": pd.Series(dtype=object),
                "component": pd.Series(dtype=object),
                "value": pd.Series(dtype=np.float64),
            }
        )
    out = pd.concat(parts, ignore_index=True)
    rank = {c: k for k, c in enumerate(CONDITIONS)}
    out["_condition"] = out["component"].map(lambda c: rank.get(c.split(".", 1)[0], len(rank)))
    out = out.sort_values(["_condition", "_metric", "system", "_order", "instance_id"], kind="stable")
    return out[["system", "instance_id", "component", "value"]].reset_index(drop=True)
