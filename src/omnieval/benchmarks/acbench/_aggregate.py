"""OmniACBench aggregation: the scores table -> the paper's Table 2 metrics per system and condition.

:func:`aggregate_acbench` computes FORMATS.md section 7's acbench document from valid rows only
(status ``ok``/``repaired``): a missing output or a failed analysis drops out of numerator and
denominator alike, and a metric with no valid row is ``null`` and listed in ``not_computed``, never 0.
The rest renders that document: MLflow metrics (section 5), a terminal table, the controlled input
decomposition read as the paper reads it (section 5.2), and an HTML section with bar charts.

Units follow the paper's Table 2: WER and PER in percent (mean of per-instance rates), delta-WPM in
words per minute, VFR@0.3 and the three accuracies in percent.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from omnieval.benchmarks._leaderboard import ComponentSource, leaderboard_declaration
from omnieval.benchmarks.acbench._conditions import CONDITIONS
from omnieval.errors import DataError
from omnieval.metrics.functional.acoustic import delta_wpm
from omnieval.scores import ALL_STATUSES, ROW_KEY, VALUED_STATUSES, duplicate_rows_problem

if TYPE_CHECKING:
    import pandas as pd

BENCHMARK = "acbench"


@dataclass(frozen=True)
class MetricFacts:
    """How one aggregate metric is printed and read.

    Attributes:
        key: Key in the section 7 document and in MLflow metric names.
        label: Column title as in the paper's Table 2.
        feature: The acoustic feature it scores (``semantic`` for WER, which covers every instance).
        higher_is_better: Direction.
        reference: The paper's Reference Scores row, as printed.
        chance: Random baseline in the metric's unit: the paper's for the three accuracies, 0 for
            delta-WPM and VFR@0.3 (a system that ignores the target neither separates fast from slow
            nor whispers); None where no baseline applies (WER, PER).
        comparable: Whether omnieval measures what the paper's column measures, so the reference
            figure can be read beside it. False for PER: the reference is printed with a mark and
            the table says why (:data:`PER_DEFINITION`).
    """

    key: str
    label: str
    feature: str
    higher_is_better: bool
    reference: float
    chance: float | None
    comparable: bool = True


PER_DEFINITION = (
    "PER(word) is omnieval's word-level decision, not the paper's PER: pocketsphinx force-aligns the script "
    "once per reading of the heteronym, keeps the reading whose phones fit the word's audio best, and scores "
    "only that word's phones against the target reading (0 when the target reading won). The paper's PER "
    "(Reference Scores 1.21) is POWSM phone recognition over the whole utterance against its reference "
    "phonemes; the two figures are not comparable."
)
"""What the ``per`` key measures, shown wherever it is printed (leaderboard text and HTML, the
document's ``metric_notes``, MLflow tags, ``omnieval metrics acbench``); the key name stays ``per``."""

METRIC_NOTES: dict[str, str] = {"per": PER_DEFINITION}
"""Metric key -> how it departs from the paper's column of the same name (``metric_notes`` of the
section 7 document)."""

NOT_COMPARABLE_MARK = "*"
"""Printed after a reference figure the paper measured differently (PER)."""


AGGREGATE_METRICS: tuple[MetricFacts, ...] = (
    MetricFacts("wer", "WER", "semantic", False, 0.05, None),
    MetricFacts("delta_wpm", "dWPM", "speech_rate", True, 65.87, 0.0),
    MetricFacts("per", "PER(word)", "pronunciation", False, 1.21, None, comparable=False),
    MetricFacts("vfr_at_0_3", "VFR@0.3", "phonation", True, 96.78, 0.0),
    MetricFacts("emotion_accuracy", "Emo-Acc", "emotion", True, 89.43, 16.7),
    MetricFacts("accent_accuracy", "GA-Acc", "accent", True, 97.29, 33.3),
    MetricFacts("timbre_accuracy", "Tim-Acc", "timbre", True, 96.67, 25.0),
)
"""The seven Table 2 metrics in the paper's column order."""

METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in AGGREGATE_METRICS)
_FACTS = {m.key: m for m in AGGREGATE_METRICS}

_SOURCES = leaderboard_declaration(__file__).instance_components
"""Where every metric but delta-WPM comes from in the scores table (``leaderboard.yaml``): the
sources of the per-instance components ``omnieval compare`` pairs, whose mean is the metric. Read at
import, so a bad file fails the import of the benchmark, as a bad ``benchmark.yaml`` does."""


# -- aggregation ----------------------------------------------------------------------------------


def _check(scores: pd.DataFrame) -> pd.DataFrame:
    """The acbench rows of a scores table, after the checks aggregation relies on."""
    from omnieval.scores import coerce_scores

    frame = coerce_scores(scores)
    others = sorted(set(frame["benchmark"]) - {BENCHMARK})
    if others:
        raise DataError(f"acbench aggregation got rows of other benchmarks: {', '.join(others)}")
    problems: list[str] = []
    bad_status = sorted(set(frame["status"]) - ALL_STATUSES)
    if bad_status:
        problems.append(f"unknown status values {bad_status}")
    bad_condition = sorted(set(frame["condition"]) - set(CONDITIONS))
    if bad_condition:
        problems.append(f"unknown conditions {bad_condition}; known: {', '.join(CONDITIONS)}")
    valued = frame["status"].isin(VALUED_STATUSES)
    no_value = frame[valued & ~frame["value"].map(lambda v: math.isfinite(v))]
    if len(no_value):
        problems.append(f"{len(no_value)} ok/repaired rows without a finite value")
    problems += duplicate_rows_problem(
        frame, ROW_KEY, lambda first: f"{first['component']!r} condition {first['condition']!r}"
    )
    if problems:
        raise DataError("invalid acbench scores table", problems)
    return frame


def _declared_mean(valid: pd.DataFrame, source: ComponentSource) -> float | None:
    """``times`` x the mean of the values ``source`` selects (0/1 against ``at_most`` when set)."""
    for column, wanted in source.where.items():
        valid = valid[valid[column] == wanted]
    values = [float(v) for v in valid["value"]]
    if source.at_most is not None:
        values = [float(v <= source.at_most) for v in values]
    return source.times * (sum(values) / len(values)) if values else None


def _condition_metrics(rows: pd.DataFrame) -> dict[str, Any]:
    """Section 7's M for the rows of one system under one condition."""
    valid = rows[rows["status"].isin(VALUED_STATUSES)]
    wpm = valid[valid["component"] == "wpm"]
    fast_and_slow = {"fast", "slow"} <= set(wpm["criterion"])
    delta = delta_wpm(wpm["value"].tolist(), wpm["criterion"].tolist()) if fast_and_slow else None
    out: dict[str, Any] = {
        key: delta if key == "delta_wpm" else _declared_mean(valid, _SOURCES[key]) for key in METRIC_KEYS
    }
    out["n"] = int(rows["instance_id"].nunique())
    out["not_computed"] = [k for k in METRIC_KEYS if out[k] is None]
    return out


def in_decomposition_order(conditions: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(condition, value)`` pairs in the paper's order, whatever order the mapping has (a JSON
    document written with sorted keys has lost it).

    Example:
        >>> [c for c, _ in in_decomposition_order({"oracle": 1, "original": 2, "s_to_t": 3})]
        ['original', 's_to_t', 'oracle']
    """
    rank = {c: i for i, c in enumerate(CONDITIONS)}
    return sorted(conditions.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))


def aggregate_acbench(scores: pd.DataFrame) -> dict[str, Any]:
    """Aggregate an acbench scores table into FORMATS.md section 7's document.

    Per system and condition: ``wer`` = mean per-instance WER x 100; ``delta_wpm`` = mean WPM of
    ``fast`` minus mean WPM of ``slow`` instances (words/minute); ``per`` = mean per-instance PER x
    100; ``vfr_at_0_3`` = percent of ``whisper`` instances with VFR <= 0.3; ``emotion_accuracy``,
    ``accent_accuracy``, ``timbre_accuracy`` = mean 0/1 evaluator hit x 100; ``n`` = instances of that
    system and condition (any status); ``not_computed`` = the metric keys left null. Only ``ok`` and
    ``repaired`` rows count. Values are unrounded.

    Args:
        scores: Scores table (FORMATS.md section 3) holding acbench rows only.

    Returns:
        ``{"benchmark": "acbench", "systems": {system: {"conditions": {condition: M}}},
        "metric_notes": {key: note}}`` with systems sorted by name and conditions in decomposition
        order; ``metric_notes`` says where a key measures something other than the paper's column of
        that name (``per``: :data:`PER_DEFINITION`).

    Raises:
        DataError: Rows of another benchmark, unknown statuses or conditions, valued rows without a
            finite value, or duplicate rows.

    Example:
        >>> import pandas as pd
        >>> rows = [
        ...     ("a", "speech_rate", "wer", "fast", 0.1), ("a", "speech_rate", "wpm", "fast", 200.0),
        ...     ("b", "speech_rate", "wer", "slow", 0.3), ("b", "speech_rate", "wpm", "slow", 120.0),
        ... ]
        >>> frame = pd.DataFrame(
        ...     [dict(benchmark="acbench", system="s", instance_id=i, index=n, track=t, component=c,
        ...           judge="", criterion=k, value=v, status="ok", condition="original")
        ...      for n, (i, t, c, k, v) in enumerate(rows)])
        >>> m = aggregate_acbench(frame)["systems"]["s"]["conditions"]["original"]
        >>> round(m["wer"], 6), m["delta_wpm"], m["n"], m["not_computed"][:2]
        (20.0, 80.0, 2, ['per', 'vfr_at_0_3'])
    """
    frame = _check(scores)
    groups = dict(list(frame.groupby(["system", "condition"])))  # rows keep the table's order
    systems = {
        system: {
            "conditions": {
                c: _condition_metrics(groups[system, c]) for c in CONDITIONS if (system, c) in groups
            }
        }
        for system in sorted(set(frame["system"]))
    }
    return {"benchmark": BENCHMARK, "systems": systems, "metric_notes": dict(METRIC_NOTES)}


def mlflow_metrics(agg: Mapping[str, Any], system: str) -> dict[str, float]:
    """MLflow metrics of one system: ``acbench.<condition>.<metric>`` (FORMATS.md section 5).

    Null metrics are left out (MLflow has no null); ``n`` is logged as ``acbench.<condition>.n``.

    Example:
        >>> agg = {"systems": {"s": {"conditions": {"original": {"wer": 2.5, "per": None, "n": 4}}}}}
        >>> mlflow_metrics(agg, "s")
        {'acbench.original.wer': 2.5, 'acbench.original.n': 4.0}
    """
    out: dict[str, float] = {}
    for condition, metrics in agg["systems"][system]["conditions"].items():
        for key in (*METRIC_KEYS, "n"):
            value = metrics.get(key)
            if value is not None:
                out[f"{BENCHMARK}.{condition}.{key}"] = float(value)
    return out


# -- the per-condition table (text and HTML) -------------------------------------------------------

_REFERENCE_ROW: tuple[str, ...] = tuple(
    f"{m.reference:.2f}" + ("" if m.comparable else NOT_COMPARABLE_MARK) for m in AGGREGATE_METRICS
)
"""The paper's Reference Scores as printed, marked where omnieval measures the column differently."""

_BASELINE_ROW: tuple[str, ...] = tuple(
    f"{m.chance:.1f}" if m.chance and m.key.endswith("accuracy") else "" for m in AGGREGATE_METRICS
)
"""The paper's random baselines (Emo 16.7, GA 33.3, Tim 25.0); empty for the other columns."""

_FOOTNOTES: tuple[str, ...] = tuple(METRIC_NOTES[m.key] for m in AGGREGATE_METRICS if not m.comparable)
"""Why a marked reference figure is not comparable (after :data:`NOT_COMPARABLE_MARK`)."""


def _board(agg: Mapping[str, Any]) -> list[tuple[str, str, list[str | None], Any]]:
    """The rows both tables print: ``(system, condition, metric cells, n)`` per system and condition
    in decomposition order; a cell is the value with two decimals, None where it is null."""
    return [
        (
            system,
            condition,
            [
                None if (v := metrics.get(m.key)) is None else f"{v:.2f}" if isinstance(v, float) else str(v)
                for m in AGGREGATE_METRICS
            ],
            metrics.get("n", 0),
        )
        for system, entry in agg["systems"].items()
        for condition, metrics in in_decomposition_order(entry["conditions"])
    ]


def leaderboard_text(agg: Mapping[str, Any]) -> str:
    """A plain-text table: one line per system and condition, plus the paper's reference lines.

    WER and PER are percent here; the paper's Reference Scores and random baselines (Emo 16.7,
    GA 33.3, Tim 25.0) are shown as printed in its Table 2. A reference figure the paper measured
    differently (PER) carries :data:`NOT_COMPARABLE_MARK` and a footnote says why.
    """
    name_width = max([24, *(len(s) + 11 for s in agg["systems"])])
    widths = [max(8, len(m.label)) for m in AGGREGATE_METRICS]

    def line(label: str, cells: Sequence[str | None]) -> str:
        return label.ljust(name_width) + "".join(
            f" {('n/a' if c is None else c).rjust(w)}" for c, w in zip(cells, widths, strict=True)
        )

    header = line("system / condition", [m.label for m in AGGREGATE_METRICS])
    rule = "-" * len(header)
    lines = [f"{BENCHMARK} leaderboard (valid rows only; WER and PER(word) in %)", header, rule]
    lines += [
        line(f"{system} / {condition}", cells) + f"  n={n}" for system, condition, cells, n in _board(agg)
    ]
    lines += [
        rule,
        line("Reference Scores (paper)", _REFERENCE_ROW),
        line("Random baseline (paper)", _BASELINE_ROW),
    ]
    missing = sorted(
        {
            key
            for entry in agg["systems"].values()
            for m in entry["conditions"].values()
            for key in m["not_computed"]
        },
        key=METRIC_KEYS.index,
    )
    if missing:
        lines.append(f"n/a = not computed (no valid row): {', '.join(missing)}")
    lines += [f"{NOT_COMPARABLE_MARK} {note}" for note in _FOOTNOTES]
    return "\n".join(lines) + "\n"


# -- failure attribution --------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """One pairwise reading of the decomposition.

    Attributes:
        name: Key in the attribution document.
        before: The harder condition.
        after: The condition with that cue made textual or explicit.
        cue: What the step removes from the task.
        needs_input: The system input the step changes (``None`` = every system sees the change).
        forms: The inputs that carry the cue in ``before`` and in ``after`` (e.g. the picture, then
            its keywords): a system that reads either form gets different inputs in the two
            conditions, so the step measures something about it.
    """

    name: str
    before: str
    after: str
    cue: str
    needs_input: str | None
    forms: tuple[str, ...] = ()


COMPARISONS: tuple[Comparison, ...] = (
    Comparison(
        "speech_instruction",
        "original",
        "s_to_t",
        "the spoken instruction (given as text instead)",
        "speech",
        ("speech", "instruction_text"),
    ),
    Comparison(
        "image",
        "original",
        "i_to_t",
        "the image (given as keywords instead)",
        "image",
        ("image", "image_keywords"),
    ),
    Comparison(
        "target_inference", "all_to_t", "oracle", "inferring the target value from textual context", None
    ),
)
"""original -> s_to_t isolates the spoken instruction, original -> i_to_t the image, all_to_t ->
oracle the inference of the target value from context (paper section 5.2)."""

PATTERNS: dict[str, str] = {
    "no_direct_control": "at chance even under oracle: the system cannot realize the value when told (type I)",
    "implicit_inference": "controls the value when told (oracle) but not when it must be inferred from text "
    "(all_to_t at chance) (type II)",
    "multimodal_grounding": "infers the value from all-text context (all_to_t) but loses it when part of the "
    "context comes as speech or image: s_to_t or i_to_t more than the margin below all_to_t (type III)",
    "grounded": "original is within the margin of oracle: no bottleneck in this decomposition",
    "partial_inference": "above chance when inferred from text, but original below oracle by more than the "
    "margin, and neither s_to_t nor i_to_t falls below all_to_t by more than the margin",
    "incomplete": "a condition needed to read the pattern is missing or its metric is null",
    "no_chance_level": "WER and PER have no chance level; only the pairwise changes are reported",
}
"""The paper's three failure types (section 5.2) plus the other outcomes a reading can have."""


def _gain(key: str, before: float | None, after: float | None) -> float | None:
    """How much better the metric is after the step (positive = the removed cue was being lost)."""
    if before is None or after is None:
        return None
    return after - before if _FACTS[key].higher_is_better else before - after


def _pattern(key: str, values: Mapping[str, float | None], margin: float) -> str:
    chance = _FACTS[key].chance
    if chance is None:
        return "no_chance_level"
    oracle, all_text, original = values.get("oracle"), values.get("all_to_t"), values.get("original")
    if oracle is None:
        return "incomplete"
    if oracle - chance <= margin:
        return "no_direct_control"
    if all_text is None:
        return "incomplete"
    if all_text - chance <= margin:
        return "implicit_inference"
    if original is not None and oracle - original <= margin:
        return "grounded"
    if grounding_drops(values, margin):
        return "multimodal_grounding"
    partial = [values.get(c) for c in GROUNDING_CONDITIONS]
    if original is None or any(v is None for v in partial):
        return "incomplete"
    return "partial_inference"


GROUNDING_CONDITIONS: tuple[str, ...] = ("s_to_t", "i_to_t")
"""The partly textual conditions type III is read on: one cue is text, the other still arrives as
speech (``i_to_t``) or as a picture (``s_to_t``)."""


def grounding_drops(values: Mapping[str, float | None], margin: float) -> list[str]:
    """The partly textual conditions whose value falls more than ``margin`` below ``all_to_t``.

    The paper's type III (section 5.2) is a system that infers the target from all-text context but
    loses it as soon as part of that context comes through another modality; it is read on
    ``s_to_t`` and ``i_to_t`` against ``all_to_t``, not on ``original`` (which differs from
    ``all_to_t`` in both channels at once and so cannot tell grounding from anything else). Values
    are in the metric's higher-is-better direction (the accuracies, delta-WPM, VFR@0.3).

    Example:
        >>> grounding_drops({"all_to_t": 60.0, "s_to_t": 40.0, "i_to_t": 57.0}, 5.0)
        ['s_to_t']
    """
    all_text = values.get("all_to_t")
    if all_text is None:
        return []
    return [c for c in GROUNDING_CONDITIONS if (v := values.get(c)) is not None and all_text - v > margin]


def _meaningful(comparison: Comparison, seen: set[str] | None) -> bool | None:
    """Whether a step measures something about a system that reads ``seen`` (None: unknown)."""
    if comparison.needs_input is None:
        return True
    if seen is None:
        return None
    return bool(seen & set(comparison.forms or (comparison.needs_input,)))


def _channel_note(comparison: Comparison, seen: set[str] | None, unseen: Mapping[str, str]) -> str | None:
    """Why a system read only one form of a step's cue (e.g. ``image not seen: no vision backend``)."""
    if seen is None or comparison.needs_input is None:
        return None
    missed = [unseen[form] for form in comparison.forms if form not in seen and form in unseen]
    return "; ".join(missed) or None


def failure_attribution(
    agg: Mapping[str, Any],
    *,
    margin: float = 5.0,
    wpm_margin: float = 10.0,
    inputs_seen: Mapping[str, Collection[str]] | None = None,
    inputs_not_seen: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Read the controlled input decomposition per system and metric, as the paper's section 5.2 does.

    For every system and metric: the values per condition; the gain of each step of
    :data:`COMPARISONS` (positive = the metric improves once the cue is textual/explicit, i.e. that
    channel was losing it; sign-corrected so lower-is-better WER/PER read the same way); whether the
    gain exceeds the margin (``loses_cue``); and a ``pattern`` (:data:`PATTERNS`): the paper's type I
    (chance even under oracle), type II (oracle above chance, all_to_t at chance) or type III
    (all_to_t above chance, and ``s_to_t`` or ``i_to_t`` more than the margin below it: the
    conditions where part of the context is still speech or a picture; those conditions are listed
    in ``grounding_drops``). "At chance" means within ``margin`` of the random
    baseline (16.7 / 33.3 / 25.0 % for the accuracies, 0 for delta-WPM and VFR@0.3).

    The two channel comparisons (original vs s_to_t, original vs i_to_t) say something only for a
    system that reads the cue in at least one of its two forms (the spoken instruction or its text;
    the picture or its keywords): a system that reads neither (it ignores the context) gets the same
    input in both conditions, and any difference is noise. ``inputs_seen`` (system -> inputs among
    ``speech``, ``instruction_text``, ``image``, ``image_keywords``, ``target_statement``, ``text``)
    marks the comparisons of a system that reads neither form ``meaningful: false``; without it they
    are ``meaningful: null`` (unknown). A system that reads only the textual form (e.g. a cascade
    with no vision model reads the keywords but not the picture) gets a measured gain: what the
    channel it cannot read costs it; ``inputs_not_seen`` (system -> input -> why) puts that reason
    in the comparison's ``notes``.

    Args:
        agg: The :func:`aggregate_acbench` document.
        margin: Percentage points within which a percent metric counts as unchanged / at chance.
        wpm_margin: The same for delta-WPM, in words per minute.
        inputs_seen: Which inputs each system receives, when known.
        inputs_not_seen: Inputs a system was given but could not take in, with the reason.

    Returns:
        ``{"benchmark", "margin", "wpm_margin", "comparisons": [...], "patterns": PATTERNS,
        "systems": {system: {metric: {"values", "gains", "loses_cue", "meaningful", "pattern",
        "grounding_drops"}}}}``.
    """
    comparisons = [
        {
            "name": c.name,
            "from": c.before,
            "to": c.after,
            "cue": c.cue,
            "meaningful_for": (
                f"only systems that read the {c.needs_input} input in either form ({' or '.join(c.forms)})"
                if c.needs_input
                else "every system"
            ),
        }
        for c in COMPARISONS
    ]
    systems: dict[str, Any] = {}
    for system, entry in agg["systems"].items():
        conditions: Mapping[str, Mapping[str, Any]] = entry["conditions"]
        seen = None if inputs_seen is None or system not in inputs_seen else set(inputs_seen[system])
        unseen = dict((inputs_not_seen or {}).get(system, {}))
        notes = {c.name: _channel_note(c, seen, unseen) for c in COMPARISONS}
        per_metric: dict[str, Any] = {}
        for facts in AGGREGATE_METRICS:
            key = facts.key
            tolerance = wpm_margin if key == "delta_wpm" else margin
            values = {c: conditions[c].get(key) if c in conditions else None for c in CONDITIONS}
            gains = {c.name: _gain(key, values[c.before], values[c.after]) for c in COMPARISONS}
            per_metric[key] = {
                "feature": facts.feature,
                "higher_is_better": facts.higher_is_better,
                "chance": facts.chance,
                "values": values,
                "gains": gains,
                "loses_cue": {name: None if g is None else g > tolerance for name, g in gains.items()},
                "meaningful": {c.name: _meaningful(c, seen) for c in COMPARISONS},
                "notes": notes,
                "pattern": _pattern(key, values, tolerance),
                "grounding_drops": grounding_drops(values, tolerance) if facts.chance is not None else [],
            }
        systems[system] = per_metric
    return {
        "benchmark": BENCHMARK,
        "margin": margin,
        "wpm_margin": wpm_margin,
        "comparisons": comparisons,
        "patterns": PATTERNS,
        "systems": systems,
    }


# -- HTML -------------------------------------------------------------------------------------------


def _bar_chart(agg: Mapping[str, Any], facts: MetricFacts) -> str:
    """One metric, grouped bars (conditions x systems), as an ``<img>`` with an embedded PNG."""
    import numpy as np

    from omnieval.reporting import plot

    systems = list(agg["systems"])
    x = np.arange(len(CONDITIONS), dtype=np.float64)
    width = 0.8 / max(1, len(systems))
    with plot(size=(5.6, 3.2), dpi=110) as canvas:
        ax = canvas.axes[0][0]
        for i, system in enumerate(systems):
            conditions = agg["systems"][system]["conditions"]
            heights = [(conditions.get(c) or {}).get(facts.key) for c in CONDITIONS]
            ax.bar(
                x + (i - (len(systems) - 1) / 2) * width,
                [np.nan if h is None else h for h in heights],
                width,
                label=system,
            )
        if facts.chance is not None and facts.key.endswith("accuracy"):
            # The paper's Figure 3 marks the random baseline with a dashed red line.
            ax.axhline(facts.chance, color="red", linestyle="--", linewidth=1, label="random")
        ax.set_xticks(x, list(CONDITIONS))
        unit = " (words/min)" if facts.key == "delta_wpm" else " (%)"
        arrow = "higher is better" if facts.higher_is_better else "lower is better"
        ax.set_title(f"{facts.label}{unit}, {arrow}", fontsize=9)
        ax.legend(fontsize=7)
    data = base64.b64encode(canvas.png).decode("ascii")
    return f'<img alt="acbench {html.escape(facts.label)}" src="data:image/png;base64,{data}" style="max-width:560px">'


def _gain_cell(reading: Mapping[str, Any], name: str) -> str:
    """One step's gain in the attribution table: ``*`` past the margin, and why a system missed the cue."""
    gain = reading["gains"][name]
    if gain is None:
        return '<td class="na">n/a</td>'
    flag = " *" if reading["loses_cue"][name] else ""
    why = "input not seen" if reading["meaningful"][name] is False else (reading.get("notes") or {}).get(name)
    note = f" ({why})" if why else ""
    return f"<td>{gain:+.2f}{flag}{html.escape(note)}</td>"


def report_html_section(
    agg: Mapping[str, Any],
    *,
    attribution: Mapping[str, Any] | None = None,
    charts: bool = True,
    heading_level: int = 2,
) -> str:
    """An HTML fragment for ``report.html``: Table 2 per system and condition, the reference lines,
    the failure attribution and one bar chart per metric (embedded PNGs).

    Args:
        agg: The :func:`aggregate_acbench` document.
        attribution: A :func:`failure_attribution` document; computed with defaults when None.
        charts: Draw the bar charts (matplotlib); False gives a text-only fragment.
        heading_level: ``<hN>`` level of the section heading (subheadings use N+1).
    """
    h, sub = f"h{heading_level}", f"h{heading_level + 1}"
    attribution = failure_attribution(agg) if attribution is None else attribution
    esc = html.escape
    head = "".join(f"<th>{esc(m.label)}<br><small>{esc(m.feature)}</small></th>" for m in AGGREGATE_METRICS)
    rows = "".join(
        f"<tr><th>{esc(system)}</th><th>{esc(condition)}</th>"
        + "".join('<td class="na">n/a</td>' if c is None else f"<td>{esc(c)}</td>" for c in cells)
        + f"<td>{n}</td></tr>"
        for system, condition, cells, n in _board(agg)
    )
    reference = "".join(
        f"<td>{esc(text)}</td>"
        if m.comparable
        else f'<td title="{esc(METRIC_NOTES[m.key])}">{esc(text)}</td>'
        for m, text in zip(AGGREGATE_METRICS, _REFERENCE_ROW, strict=True)
    )
    footnotes = "".join(f'<p class="note">{esc(NOT_COMPARABLE_MARK)} {esc(note)}</p>' for note in _FOOTNOTES)
    baseline = "".join(f"<td>{text}</td>" for text in _BASELINE_ROW)
    table = (
        f"<table><tr><th>system</th><th>condition</th>{head}<th>n</th></tr>{rows}"
        f'<tr class="ref"><th colspan=2>Reference Scores (paper)</th>{reference}<td></td></tr>'
        f'<tr class="ref"><th colspan=2>Random baseline (paper)</th>{baseline}<td></td></tr></table>'
    )
    steps = [(c, f"{esc(c['from'])} &rarr; {esc(c['to'])}") for c in attribution["comparisons"]]
    gain_head = "".join(f"<th>{step}<br><small>{esc(c['cue'])}</small></th>" for c, step in steps)
    attr_rows = []
    for system, per_metric in attribution["systems"].items():
        for key, reading in per_metric.items():
            pattern, drops = reading["pattern"], reading.get("grounding_drops") or []
            if pattern == "multimodal_grounding" and drops:
                pattern += f" ({', '.join(drops)} below all_to_t)"
            gains = "".join(_gain_cell(reading, c["name"]) for c, _ in steps)
            attr_rows.append(
                f"<tr><th>{esc(system)}</th><th>{esc(_FACTS[key].label)}</th>{gains}"
                f"<td style='text-align:left'>{esc(pattern)}</td></tr>"
            )
    notes = "".join(
        f"<li><b>{step}</b>: {esc(c['cue'])}; meaningful for {esc(c['meaningful_for'])}.</li>"
        for c, step in steps
    )
    patterns = "".join(
        f"<li><code>{esc(k)}</code>: {esc(v)}</li>" for k, v in attribution["patterns"].items()
    )
    attr_table = (
        f"<table><tr><th>system</th><th>metric</th>{gain_head}<th>pattern</th></tr>{''.join(attr_rows)}</table>"
        f"<p>Gain = improvement once the cue is textual or explicit (sign-corrected for WER/PER); "
        f"* = larger than the margin ({attribution['margin']} points, {attribution['wpm_margin']} words/min "
        f"for dWPM).</p><ul>{notes}</ul><ul>{patterns}</ul>"
    )
    figures = "".join(_bar_chart(agg, m) for m in AGGREGATE_METRICS) if charts and agg["systems"] else ""
    return (
        f'<section class="acbench"><{h}>OmniACBench</{h}>'
        f"<p>Valid rows only; WER and PER(word) are percent (mean per-instance rates), dWPM in words per minute; "
        f"reference lines as printed in the paper's Table 2.</p>{table}{footnotes}"
        f"<{sub}>Controlled input decomposition</{sub}>{attr_table}"
        + (f"<{sub}>Per metric</{sub}><div>{figures}</div>" if figures else "")
        + "</section>"
    )
