"""One-line readings of the analysis outputs, generated from their numbers.

Each reader takes one ``<name>.json`` document (:mod:`omnieval.analysis`) and returns one plain
sentence; :func:`analysis_reading` dispatches by name and falls back to the analysis's registered
summary when an output has no reader or not the expected keys.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from omnieval.reporting._blocks import bootstrap_reading, fmt, pct

Reader = Callable[[Any], str]


def _valid(doc: Mapping[str, Any]) -> Any:
    return doc.get("valid_only", doc)


def _p(p: Any) -> str:
    if p is None:
        return "n/a"
    return "< 0.001" if float(p) < 0.001 else f"{float(p):.3f}"


def _bottleneck(doc: Mapping[str, Any]) -> str:
    d = _valid(doc)
    systems = d.get("systems") or []
    single = Counter(s["weakest"][0] for s in systems if len(s.get("weakest") or []) == 1)
    ties = sum(1 for s in systems if len(s.get("weakest") or []) > 1)
    parts = [f"{m} for {n}" for m, n in single.most_common()]
    weakest = (
        f"Weakest modality per system: {', '.join(parts)} of {len(systems)} systems"
        if parts
        else f"No single weakest modality in any of {len(systems)} systems"
    )
    if ties and parts:
        weakest += f" ({ties} tied)"
    iqr = (d.get("strongest_signal") or {}).get("iqr") or []
    spread = f"; the widest spread across systems (IQR) is in {' and '.join(iqr)}" if iqr else ""
    return weakest + spread + "."


def _correlations(doc: Mapping[str, Any]) -> str:
    rows = [
        r for r in _valid(doc) if r.get("subset", "all") == "all" and "total_average" not in (r["x"], r["y"])
    ]
    if not rows:
        return "No pair of modality scores could be correlated."
    lo, hi = min(rows, key=lambda r: r["r"]), max(rows, key=lambda r: r["r"])
    n = rows[0].get("n")
    return (
        f"Across {n} systems the modality scores correlate from r = {fmt(lo['r'])} ({lo['x']}-{lo['y']}) "
        f"to r = {fmt(hi['r'])} ({hi['x']}-{hi['y']}, p {_p(hi.get('p'))}) (valid-only)."
    )


def _partial(doc: Any) -> str:
    rows = [
        r for r in doc if r.get("policy", "valid_only") == "valid_only" and r.get("subset", "all") == "all"
    ]
    if not rows:
        return "No partial correlation was computed."
    text = "; ".join(f"{r['x']}-{r['y']} r = {fmt(r['r'])} (p {_p(r.get('p'))})" for r in rows[:4])
    return f"Controlling for the other modalities: {text}."


def _bertscore_text(doc: Mapping[str, Any]) -> str:
    d = _valid(doc)
    return (
        f"BERTScore and the text judge across {d['n']} systems: Pearson r = {fmt(d['pearson']['r'])} "
        f"(p {_p(d['pearson'].get('p'))}), Spearman rho = {fmt(d['spearman']['rho'])} (valid-only)."
    )


def _zero_filled(doc: Mapping[str, Any]) -> str:
    a = doc["agreement"]
    drop = doc.get("largest_decrease") or {}
    same = "the same winner" if a.get("same_winner") else "a different winner"
    delta = drop.get("delta")
    lost = (
        f"largest drop {drop.get('system', 'n/a')} {fmt(abs(delta))} points"
        if delta is not None and abs(delta) > 1e-9
        else "no system loses points"
    )
    return (
        f"Counting missing or invalid records as 0 moves {a['n_moved']} of {a['n']} systems "
        f"(Spearman {fmt(a['spearman'])}) with {same}; {lost}."
    )


def _aggregation(doc: Mapping[str, Any]) -> str:
    rules = doc.get("rules") or {}
    same = sum(1 for r in rules.values() if r.get("same_winner"))
    rhos = [r["spearman"] for r in rules.values() if r.get("spearman") is not None]
    rho = f"; Spearman with the original ranking {fmt(min(rhos))}-{fmt(max(rhos))}" if rhos else ""
    return (
        f"Judges carry {pct(doc.get('judge_share'))} of the Total Average's between-system variance; "
        f"{same} of {len(rules)} alternative aggregation rules keep the same winner{rho}."
    )


def _weights(doc: Mapping[str, Any]) -> str:
    d, u = doc["dirichlet"], doc["uniform"]
    return (
        f"Under random component weights {d['original_winner']} stays first in "
        f"{pct(d['original_winner_share'])} of {d['draws']} Dirichlet draws (median Spearman "
        f"{fmt(d['spearman_median'])}) and in {pct(u['original_winner_share'])} of bounded-uniform draws."
    )


def _length(doc: Mapping[str, Any]) -> str:
    desc = doc.get("descriptives") or {}
    r = (desc.get("length_vs_text_judge") or {}).get("pearson")
    m1 = (doc.get("variants") or {}).get("m1") or {}
    text = f"Per narration, length vs text-judge score: Pearson r = {fmt(r)}"
    if m1.get("n"):
        same = "same winner" if m1.get("same_winner") else "winner changes"
        text += f"; controlling for length (M1) moves {m1['n_moved']} of {m1['n']} systems (Spearman {fmt(m1['spearman'])}, {same})"
    return text + "."


def _inter_judge(doc: Mapping[str, Any]) -> str:
    parts = []
    for track, t in (doc.get("tracks") or {}).items():
        pairs = t.get("pairs") or []
        rhos = [p["system_spearman"] for p in pairs if p.get("system_spearman") is not None]
        maes = [p["item_mae"] for p in pairs if p.get("item_mae") is not None]
        if rhos:
            mae = f", item MAE {fmt(sum(maes) / len(maes))}" if maes else ""
            parts.append(f"{track} {fmt(sum(rhos) / len(rhos))}{mae}")
    if not parts:
        return "No judge pair could be compared."
    return "Mean pairwise Spearman of the judges' system rankings: " + "; ".join(parts) + "."


def _judge_tracks(doc: Mapping[str, Any]) -> str:
    tracks = doc["tracks"]
    parts = [f"{t} {v['n_above_zero']} of {v['n_pairs']}" for t, v in tracks.items() if v["n_pairs"]]
    if not parts:
        return "No judge track has two systems with scores to compare."
    level = round(100 * float(doc["level"]))
    return (
        f"System pairs whose judge-score difference has its {level}% interval above 0: "
        + "; ".join(parts)
        + "."
    )


def _human(doc: Mapping[str, Any]) -> str:
    agreement = doc.get("agreement") or {}
    parts = [f"{t} {fmt(a['spearman'])} (n = {a['n']})" for t, a in agreement.items() if "spearman" in a]
    if not parts:
        return "Too few systems with human ratings to correlate with the judges."
    return "Spearman between human and judge system means: " + "; ".join(parts) + "."


def _dreamsim(doc: Mapping[str, Any]) -> str:
    rows = [r for r in _valid(doc) if r.get("y") in ("image_similarity", "judge.image", "total_average")]
    if not rows:
        return "DreamSim distances were computed but no score could be correlated with them."
    text = "; ".join(f"{r['y']} r = {fmt(r['r'])}" for r in rows)
    return f"Mean DreamSim distance vs {text} across systems (lower distance = more similar)."


def _integrated(doc: Mapping[str, Any]) -> str:
    cats = _valid(doc)["categories"]
    name, top = max(cats.items(), key=lambda kv: kv[1]["loss_share"])
    return (
        f"The integrated judge loses most on {name} ({pct(top['loss_share'])} of the lost points; "
        f"lowest category for {top['lowest_for_systems']} of {_valid(doc)['n_systems']} systems)."
    )


def _duplicates(doc: Mapping[str, Any]) -> str:
    drop = doc["modes"]["drop_all"]
    v = drop["valid_only"]
    same = "same winner" if v.get("same_winner") else "winner changes"
    return (
        f"Dropping {doc['n_flagged_instances']} instances in {doc['n_clusters']} duplicate clusters: "
        f"Spearman {fmt(v.get('spearman'))}, {same}, largest total change {fmt(v.get('max_abs_change'))} points."
    )


READERS: dict[str, Reader] = {
    "bootstrap": bootstrap_reading,
    "bottleneck": _bottleneck,
    "correlations": _correlations,
    "partial_correlations": _partial,
    "bertscore_text_judge": _bertscore_text,
    "zero_filled_sensitivity": _zero_filled,
    "aggregation_sensitivity": _aggregation,
    "weight_sweeps": _weights,
    "narration_length": _length,
    "inter_judge": _inter_judge,
    "judge_track_differences": _judge_tracks,
    "human_agreement": _human,
    "dreamsim": _dreamsim,
    "integrated_categories": _integrated,
    "duplicate_sensitivity": _duplicates,
}
"""Analysis name -> reader of its JSON document."""


def analysis_summary(name: str) -> str:
    """The analysis's registered one-line summary (empty when it is not a registered analysis)."""
    from omnieval.analysis import ANALYSES, analysis_names

    # analysis_names() imports the modules that register the analyses.
    return ANALYSES.get(name).summary if name in analysis_names() else ""


def analysis_reading(name: str, doc: Any) -> str:
    """The one-line reading of one analysis output; skipped ones read as the reason they were skipped."""
    if isinstance(doc, Mapping) and doc.get("status") == "skipped":
        return f"Skipped: {doc.get('reason', 'no reason given')}."
    reader = READERS.get(name)
    if reader is not None:
        try:
            return reader(doc)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            pass  # an older or newer output shape: fall back to what the analysis is about
    summary = analysis_summary(name)
    return f"Ran: {summary}; the numbers are in the JSON." if summary else "Ran; the numbers are in the JSON."
