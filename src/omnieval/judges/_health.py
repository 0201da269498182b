"""Judge health: does a judge use its scale, tell criteria apart and finish its rationales?

A judge that answers 1 or 10 to everything, gives all four criteria the same number, or has its
rationales cut mid-sentence still produces valid rows; the aggregate cannot tell. This module
summarizes each (panel, judge) from the run's own tables and flags such judges as *degenerate*.

What is measured, per ``<panel>/<judge_id>`` (valid verdicts = records with status ``ok`` or
``repaired``; unavailable tracks are skipped):

- ``n_records`` / ``n_verdicts``: records judged, and valid verdicts among them;
- ``histogram``: counts of the greedy criterion scores per integer ``"1"`` .. ``"10"``;
- ``distinct_values``: how many different greedy scores were used (``values_used`` lists them);
- ``identical_share``: share of valid verdicts whose criteria all got the same score, over the
  verdicts with at least two criteria (``n_multi_criterion``; a one-criterion verdict, such as a
  PRISM dimension with one active cell, cannot tell criteria apart and is left out; None when no
  verdict has two). A verdict is one (system, instance, track) and, where the table has them, one
  ``paired_with`` and ``condition``: PRISM judges a clip beside each system it is paired with;
- ``expected`` (only when ``judge_expected`` rows exist): the same two figures on the
  probability-weighted scores rounded to the nearest 0.5, plus ``n`` and ``mean``;
- ``rationale_chars``: ``{"mean", "p50", "max"}`` of rationale lengths in characters (every
  criterion's rationale of every valid verdict);
- ``truncated_share``: share of those rationales that look cut: the record stopped on its token
  budget (``finish_reason == "length"``), or the rationale does not end at a sentence boundary
  (``.``, ``!``, ``?``, ``…``, optionally followed by a closing quote or bracket) — what a character
  bound produces, mid-word or at a word boundary.

``degenerate`` is true when, with at least ``min_verdicts`` valid verdicts, any of these holds:

- the judge's scores use at most 2 distinct values (``max_distinct``);
- more than 80 % of its verdicts give all criteria the same score (``max_identical_share``);
- more than 50 % of its rationales are cut (``max_truncated_share``).

The two score rules are applied to each kind of score on its own: the greedy scores (what the
leaderboard averages) and, when the judge reports them, the ``judge_expected`` scores rounded to
0.5 (what drift's ``shift_expected`` reads). ``scores`` says which kind passed
(``{"judge": "ok" | "degenerate", "judge_expected": ...}``); a finding on either kind is a reason,
so well-spread probabilities never hide degenerate greedy scores (the leaderboard's numbers).
A judge with records but no valid verdict is degenerate ("no valid verdicts").

Example:
    >>> import pandas as pd
    >>> rows = [dict(panel="p", judge="j", system="s", instance_id=str(i), track="text",
    ...              component="judge", criterion=c, value=10.0, status="ok")
    ...         for i in range(12) for c in "abcd"]
    >>> h = judge_health(pd.DataFrame(), pd.DataFrame(rows))
    >>> h["degenerate"], h["judges"]["p/j"]["distinct_values"], h["judges"]["p/j"]["identical_share"]
    (['p/j'], 1, 1.0)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from omnieval.judges._tracks import SCORE_MAX, SCORE_MIN

if TYPE_CHECKING:
    import pandas as pd

_VALUED = frozenset({"ok", "repaired"})
_UNAVAILABLE = "unavailable"
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]»]*$")


@dataclass(frozen=True)
class HealthRules:
    """Thresholds of the degenerate-judge rules (see the module docstring)."""

    max_distinct: int = 2
    max_identical_share: float = 0.8
    max_truncated_share: float = 0.5
    min_verdicts: int = 10


def _round_half(value: float) -> float:
    """Nearest multiple of 0.5, halves away from zero (so 7.25 -> 7.5, unlike banker's rounding)."""
    return math.floor(value * 2 + 0.5) / 2


_VERDICT_COLUMNS = ("system", "instance_id", "track")
_OPTIONAL_VERDICT_COLUMNS = ("paired_with", "condition")


def _verdict_keys(frame: pd.DataFrame) -> list[tuple[str, ...]]:
    """One key per row: the verdict it belongs to (see the module docstring)."""
    columns = [*_VERDICT_COLUMNS, *(c for c in _OPTIONAL_VERDICT_COLUMNS if c in frame.columns)]
    return list(zip(*(frame[c].map(str) for c in columns), strict=True)) if len(frame) else []


def _verdict_groups(
    frame: pd.DataFrame, keys: list[tuple[str, ...]] | None = None
) -> dict[tuple[str, ...], list[float]]:
    """Verdict key -> the criterion values of that verdict (valid rows only); ``keys`` are the
    rows' :func:`_verdict_keys` when the caller has them already."""
    groups: dict[tuple[str, ...], list[float]] = {}
    keys = _verdict_keys(frame) if keys is None else keys
    for key, status, value in zip(keys, frame["status"], frame["value"], strict=True):
        if str(status) in _VALUED and value is not None and math.isfinite(float(value)):
            groups.setdefault(key, []).append(float(value))
    return groups


class _Spread(NamedTuple):
    used: list[float]
    """Distinct values used, ascending."""
    identical: float
    """Share of the verdicts with two or more criteria whose criteria are all equal (NaN: none)."""
    n: int
    """Verdicts."""
    n_multi: int
    """Verdicts with two or more criteria (the share's denominator)."""


def _spread(verdicts: Iterable[list[float]]) -> _Spread:
    values: set[float] = set()
    same = n = multi = 0
    for scores in verdicts:
        n += 1
        values.update(scores)
        if len(scores) >= 2:
            multi += 1
            same += len(set(scores)) == 1
    return _Spread(sorted(values), same / multi if multi else math.nan, n, multi)


def _rationales(judgments: pd.DataFrame) -> tuple[list[int], int]:
    """Lengths of every rationale of the valid verdicts, and how many of them look cut."""
    lengths: list[int] = []
    cut = 0
    # A ``rationales`` column holds sentence rationales; an ``evidence`` column holds short quoted
    # phrases, which end without a full stop by design: only a token-budget stop counts as cut there.
    column = "rationales" if "rationales" in judgments.columns else "evidence"
    if column not in judgments.columns:
        return lengths, cut
    sentences = column == "rationales"
    finishes = judgments["finish_reason"] if "finish_reason" in judgments.columns else [""] * len(judgments)
    for status, raw, finish in zip(judgments["status"], judgments[column], finishes, strict=True):
        if str(status) not in _VALUED:
            continue
        try:
            texts = json.loads(raw) if isinstance(raw, str) and raw else {}
        except ValueError:
            texts = {}
        for text in texts.values() if isinstance(texts, dict) else ():
            text = str(text).strip()
            lengths.append(len(text))
            cut += str(finish) == "length" or (sentences and not _SENTENCE_END.search(text))
    return lengths, cut


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _judge_health(
    judgments: pd.DataFrame, greedy: pd.DataFrame, expected: pd.DataFrame, rules: HealthRules
) -> dict[str, Any]:
    keys = _verdict_keys(greedy)
    verdicts = _verdict_groups(greedy, keys)
    used, identical, n_verdicts, n_multi = _spread(verdicts.values())
    histogram = {str(k): 0 for k in range(SCORE_MIN, SCORE_MAX + 1)}
    for scores in verdicts.values():
        for v in scores:
            if float(v).is_integer() and SCORE_MIN <= v <= SCORE_MAX:
                histogram[str(int(v))] += 1
    n_records = len(set(keys))
    lengths, cut = _rationales(judgments) if len(judgments) else ([], 0)
    out: dict[str, Any] = {
        "n_records": n_records,
        "n_verdicts": n_verdicts,
        "histogram": histogram,
        "values_used": [int(v) if v.is_integer() else v for v in used],
        "distinct_values": len(used),
        "identical_share": identical,
        "n_multi_criterion": n_multi,
        "rationale_chars": {
            "mean": sum(lengths) / len(lengths) if lengths else math.nan,
            "p50": _median(lengths) if lengths else math.nan,
            "max": max(lengths) if lengths else 0,
        },
        "n_rationales": len(lengths),
        "truncated_share": cut / len(lengths) if lengths else math.nan,
    }
    expected_problems: list[str] = []
    if len(expected):
        exp_groups = _verdict_groups(expected)
        rounded = {k: [_round_half(v) for v in vals] for k, vals in exp_groups.items()}
        e_used, e_identical, e_n, _ = _spread(rounded.values())
        all_values = [v for vals in exp_groups.values() for v in vals]
        out["expected"] = {
            "n": e_n,
            "mean": sum(all_values) / len(all_values) if all_values else math.nan,
            "values_used_rounded": e_used,
            "distinct_values_rounded": len(e_used),
            "identical_share_rounded": e_identical,
        }
        if e_n >= rules.min_verdicts:
            expected_problems = _score_problems(e_used, e_identical, rules)

    reasons: list[str] = []
    notes: list[str] = []
    if n_records and not n_verdicts:
        reasons.append("no valid verdicts")
    elif n_verdicts < rules.min_verdicts:
        notes.append(f"too few verdicts to judge health ({n_verdicts} < {rules.min_verdicts})")
    else:
        greedy_problems = _score_problems(used, identical, rules)
        reasons.extend(f"greedy scores: {p}" for p in greedy_problems)
        reasons.extend(f"judge_expected (rounded to 0.5): {p}" for p in expected_problems)
        out["scores"] = {"judge": "degenerate" if greedy_problems else "ok"}
        if "expected" in out:
            out["scores"]["judge_expected"] = "degenerate" if expected_problems else "ok"
        if lengths and cut / len(lengths) > rules.max_truncated_share:
            reasons.append(
                f"{cut / len(lengths):.0%} of rationales are cut (> {rules.max_truncated_share:.0%})"
            )
    out["degenerate"] = bool(reasons)
    out["reasons"] = reasons
    out["notes"] = notes
    return out


def _score_problems(used: list[float], identical: float, rules: HealthRules) -> list[str]:
    """What the two score rules find in one kind of score (distinct values, identical criteria)."""
    problems: list[str] = []
    if len(used) <= rules.max_distinct:
        shown = [int(v) if float(v).is_integer() else v for v in used]
        problems.append(f"only {len(used)} distinct score values used ({shown})")
    if identical > rules.max_identical_share:
        problems.append(
            f"{identical:.0%} of verdicts with two or more criteria give every criterion the same score "
            f"(> {rules.max_identical_share:.0%})"
        )
    return problems


def judge_health(
    judgments: pd.DataFrame, scores: pd.DataFrame, rules: HealthRules | None = None
) -> dict[str, Any]:
    """Health of every (panel, judge) of one judge stage.

    Args:
        judgments: ``judgments.parquet`` rows (``system, instance_id, track, judge, status,
            rationales, finish_reason`` and ``panel``; a missing ``panel`` column reads as ``""``).
            May be empty: the rationale figures are then None.
        scores: the judge stage's scores rows (``component`` ``judge`` and, when reported,
            ``judge_expected``; other components are ignored).
        rules: thresholds; default :class:`HealthRules`.

    Returns:
        ``{"judges": {"<panel>/<judge_id>": {...}}, "degenerate": ["<panel>/<judge_id>", ...]}`` with
        the figures the module docstring lists (shares in 0-1, lengths in characters).
    """
    rules = rules or HealthRules()
    judges: dict[str, Any] = {}
    if len(scores):
        panels = scores["panel"] if "panel" in scores else [""] * len(scores)
        keys = [f"{p}/{j}" for p, j in zip(panels, scores["judge"], strict=True)]
        tagged = scores.assign(_key=keys)
        jpanels = judgments["panel"] if "panel" in judgments else [""] * len(judgments)
        jkeys = (
            [f"{p}/{j}" for p, j in zip(jpanels, judgments["judge"], strict=True)] if len(judgments) else []
        )
        jtagged = judgments.assign(_key=jkeys) if len(judgments) else judgments
        for key in sorted(set(keys)):
            if key.rsplit("/", 1)[-1] == _UNAVAILABLE:
                continue
            mine = tagged[tagged["_key"] == key]
            greedy = mine[mine["component"] == "judge"]
            if not len(greedy):
                continue
            expected = mine[mine["component"] == "judge_expected"]
            own = jtagged[jtagged["_key"] == key] if len(judgments) else judgments
            judges[key] = _judge_health(own, greedy, expected, rules)
    return {
        "judges": _finite(judges),
        "degenerate": [k for k, v in judges.items() if v["degenerate"]],
    }


def _finite(value: Any) -> Any:
    """NaN (a figure with nothing to measure) as None, so ``health.json`` is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def judge_health_metrics(health: Mapping[str, Any]) -> dict[str, float]:
    """MLflow metrics from :func:`judge_health`'s result: ``judge.<panel>.<judge_id>.<figure>``.

    Figures: ``n_verdicts``, ``distinct_values``, ``identical_share``, ``truncated_share``,
    ``rationale_mean_chars``, ``degenerate`` (0/1) and, with ``judge_expected``,
    ``expected_distinct_values`` and ``expected_identical_share``. Missing (None) figures are left out.

    Example:
        >>> judge_health_metrics({"judges": {"cpu/j1": {"n_verdicts": 3, "distinct_values": 2,
        ...     "identical_share": 0.5, "truncated_share": 0.0, "rationale_chars": {"mean": 40.0},
        ...     "degenerate": False}}})["judge.cpu.j1.distinct_values"]
        2.0
    """
    out: dict[str, float] = {}
    for key, info in health.get("judges", {}).items():
        panel, _, judge_id = str(key).rpartition("/")
        prefix = f"judge.{panel}.{judge_id}" if panel else f"judge.{judge_id}"
        figures: dict[str, Any] = {
            "n_verdicts": info.get("n_verdicts"),
            "distinct_values": info.get("distinct_values"),
            "identical_share": info.get("identical_share"),
            "truncated_share": info.get("truncated_share"),
            "rationale_mean_chars": (info.get("rationale_chars") or {}).get("mean"),
            "degenerate": float(bool(info.get("degenerate"))),
        }
        expected = info.get("expected")
        if expected:
            figures["expected_distinct_values"] = expected.get("distinct_values_rounded")
            figures["expected_identical_share"] = expected.get("identical_share_rounded")
        for name, value in figures.items():
            if value is not None and math.isfinite(float(value)):
                out[f"{prefix}.{name}"] = float(value)
    return out
