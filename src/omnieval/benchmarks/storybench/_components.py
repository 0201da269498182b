"""Storybench per-instance headline components: what ``omnieval compare`` pairs between two runs.

Every value is on the Total Average's 0-10 scale (FORMATS.md section 3): the three automatic metrics
are multiplied by 10 exactly as they enter the Total Average (so a leaderboard ``bertscore_f1`` of
0.32 is 3.2 here), the judge components are already 1-10. One scale for all eight components lets a
single regression tolerance and one "top movers" ranking cover them all.

Per instance:

- ``bertscore_f1``, ``image_similarity``: the metric's value x 10 (valid rows only);
- ``speech_meta_accuracy``: the fraction of the covered speech fields (emotion, speed, pitch, gender)
  predicted right, x 10 (instances without any valid field prediction are left out);
- ``judge.<track>``: the mean, over the track's judges with a valid record for this instance, of the
  record's example score (the mean of its four criteria; a record is valid only when all four are);
- ``total_average``: the mean of the computed components, only where every computed component has
  a value for this instance (an instance missing one component has no total).

The mean over instances of an automatic component equals its valid-only aggregate x 10. For a judge
track with several judges the aggregate weighs judges equally over their own valid examples while
this weighs instances equally; the two agree whenever the judges are valid on the same instances.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from omnieval.benchmarks._spec import declaration_error, package_spec
from omnieval.benchmarks.storybench._names import COMPONENTS

if TYPE_CHECKING:
    import pandas as pd

HEADLINE_COMPONENTS: Final[tuple[str, ...]] = package_spec(__file__).headline_components()
"""The seven Total Average components in the paper's order, then the Total Average itself
(``benchmark.yaml``: ``headline.components``)."""

# What :func:`storybench_instance_components` computes is code: the Total Average's components,
# then the Total Average; the declaration must list exactly those.
if set(HEADLINE_COMPONENTS) != {*COMPONENTS, "total_average"}:
    raise declaration_error(
        __file__,
        "headline.components",
        f"{__name__} computes {', '.join((*COMPONENTS, 'total_average'))}; got {', '.join(HEADLINE_COMPONENTS)}",
    )

COLUMNS: Final[tuple[str, ...]] = ("system", "instance_id", "component", "value")


def storybench_instance_components(scores: pd.DataFrame) -> pd.DataFrame:
    """Per-(system, instance) values of the headline components on the 0-10 scale.

    Args:
        scores: A storybench scores table (FORMATS.md section 3).

    Returns:
        Long frame with columns ``system, instance_id, component, value`` (float), one row per
        system, instance and component that has a valid value there; components in
        :data:`HEADLINE_COMPONENTS` order, then systems and instances in the table's order.

    Raises:
        DataError: The scores table fails the aggregation's validation.

    Example:
        >>> import pandas as pd
        >>> rows = [dict(benchmark="storybench", system="s", instance_id=f"i{k}", index=k, track="text",
        ...              component="bertscore_f1", judge="", criterion="value", value=v, status="ok")
        ...         for k, v in enumerate([0.2, 0.4])]
        >>> storybench_instance_components(pd.DataFrame(rows))[["instance_id", "component", "value"]]
          instance_id      component  value
        0          i0   bertscore_f1    2.0
        1          i1   bertscore_f1    4.0
        2          i0  total_average    2.0
        3          i1  total_average    4.0
    """
    import numpy as np
    import pandas as pd

    from omnieval.benchmarks.storybench._names import AUTOMATIC, scale
    from omnieval.benchmarks.storybench._table import FloatArray, _nanmean, build_table

    table = build_table(scores, benchmark="storybench")
    per_component: dict[str, FloatArray] = {}
    for name in AUTOMATIC:
        if name == "speech_meta_accuracy":
            if table.speech is not None:
                per_component[name] = table.speech.accuracy * scale(name)
        elif name in table.auto:
            per_component[name] = table.auto[name].values * scale(name)
    for track, judged in table.judges.items():
        per_component[f"judge.{track}"] = _nanmean(judged.example, axis=2)
    covered = [c for c in HEADLINE_COMPONENTS if c in per_component]
    if covered:
        stacked = np.stack([per_component[c] for c in covered], axis=2)  # (S, n, K)
        complete = np.isfinite(stacked).all(axis=2)
        per_component["total_average"] = np.where(complete, stacked.mean(axis=2), np.nan)

    n_present = table.n_present
    frames = []
    for name in HEADLINE_COMPONENTS:
        if name not in per_component:
            continue
        values = per_component[name][:, :n_present]
        s_idx, i_idx = np.nonzero(np.isfinite(values))
        frames.append(
            pd.DataFrame(
                {
                    "system": [table.systems[k] for k in s_idx],
                    "instance_id": [table.instances[k] for k in i_idx],
                    "component": name,
                    "value": values[s_idx, i_idx].astype(np.float64),
                }
            )
        )
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object if c != "value" else np.float64) for c in COLUMNS})
    return pd.concat(frames, ignore_index=True)[list(COLUMNS)]
