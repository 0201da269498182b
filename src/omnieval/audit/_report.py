"""``audit.html``: the audit's two documents as one self-contained page (the shared report templates)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnieval.audit._files import CLUSTERS, OVERLAPS, REPORT
from omnieval.reporting import Section, esc, fmt, render, render_page, table, write_page

LIMITS = (
    "These are string and pixel-hash checks inside the dataset: exact word spans and shingles miss "
    "paraphrases, and perceptual hashes miss heavily edited pictures, so a missing match is not "
    "evidence that no content is shared or that no model saw it."
)

_SHOWN = 200
"""Rows of each long table shown on the page (the JSON files hold all of them)."""


def _truncated(n: int) -> str:
    if n <= _SHOWN:
        return ""
    return render(
        "blocks/note.html.j2", text=f"First {_SHOWN} of {n} rows; all are in ", code=OVERLAPS, tail="."
    )


def _clusters_section(doc: dict[str, Any]) -> Section:
    method = doc["method"]
    text, image = method["text"], method["image"]
    summary = (
        f"{doc['n_clusters']} clusters of two or more instances; {doc['n_flagged_instances']} of "
        f"{doc['n_instances']} instances flagged. Text: {text['shingles']}, Jaccard >= {text['threshold']} "
        f"({doc['n_page_pairs']['text']} page pairs). Images: "
        + (
            f"pHash distance <= {image['max_distance']} of 64 bits over {image['n_hashed']} images "
            f"({doc['n_page_pairs']['image']} page pairs)."
            if image["enabled"]
            else "not hashed (--no-images)."
        )
    )
    body = render("blocks/paragraph.html.j2", text=summary)
    rows = []
    for c in doc["clusters"]:
        evidence = "; ".join(
            f"{p['a']} ~ {p['b']} ({p['kind']} "
            + (f"J={p['jaccard']:.2f}" if p["kind"] == "text" else f"d={p['distance']}")
            + ")"
            for p in c["pairs"]
        )
        rows.append([esc(c["id"]), str(len(c["members"])), esc(", ".join(c["members"])), esc(evidence)])
    if rows:
        body += table(
            ["cluster", "instances", "members", "near-duplicate pages"], rows[:_SHOWN], left_cols=(2, 3)
        )
        body += _truncated(len(rows))
    else:
        body += render(
            "blocks/note.html.j2", text="No near-duplicate pages at these thresholds.", code=None, tail=""
        )
    return Section("clusters", "Duplicate clusters", body)


def _overlaps_section(doc: dict[str, Any]) -> Section:
    k = doc["method"]["span_words"]
    s = doc["summary"]
    fields = ", ".join(doc["method"]["fields"])
    body = render(
        "blocks/paragraph.html.j2",
        text=(
            f"{s['n_instances_with_shared_span']} of {doc['n_instances']} instances have a condition text "
            f"sharing a {k}-word span with a page outside their own ({s['n_shared_spans']} spans; fields: "
            f"{fields}). Against the instance's own target page, the longest shared span has a median of "
            f"{fmt(s['longest_span_with_target_median'], 1)} words; {s['n_target_span_at_least_k']} "
            f"instances share at least {k} words. Identical condition sets: "
            f"{s['n_duplicate_condition_groups']} groups."
        ),
    )
    rows = [
        [
            esc(r["id"]),
            esc(span["field"]),
            str(span["words"]),
            esc(span["span"]),
            esc(", ".join(span["pages"])),
        ]
        for r in doc["instances"]
        for span in r["shared_spans"]
    ]
    if rows:
        body += table(
            ["instance", "field", "words", "span", "other pages"], rows[:_SHOWN], left_cols=(1, 3, 4)
        )
        body += _truncated(len(rows))
    else:
        body += render("blocks/note.html.j2", text=f"No shared {k}-word span.", code=None, tail="")
    top = sorted(
        (r for r in doc["instances"] if r["longest_span_with_target"]),
        key=lambda r: -int(r["longest_span_with_target"]),
    )[:10]
    if top:
        body += render("blocks/paragraph.html.j2", text="Longest spans shared with the target page:")
        body += table(
            ["instance", "field", "words"],
            [[esc(r["id"]), esc(r["longest_span_field"]), str(r["longest_span_with_target"])] for r in top],
            left_cols=(1,),
        )
    return Section("overlaps", f"Shared {k}-word spans", body)


def write_audit_report(out: Path, clusters: dict[str, Any], overlaps: dict[str, Any]) -> Path:
    """Write ``out/audit.html`` from the two documents (which sit beside it, and are linked)."""
    facts = (
        f"{esc(clusters['benchmark'])} dataset <code>{esc(clusters['dataset'])}</code>, digest "
        f"<code>{esc(clusters['dataset_digest'][:16])}</code>; {clusters['n_instances']} instances, "
        f'{clusters["n_pages"]} pages. Files: <a href="{CLUSTERS}">{CLUSTERS}</a>, '
        f'<a href="{OVERLAPS}">{OVERLAPS}</a>.'
    )
    page = render_page(
        title=f"omnieval audit {clusters['dataset_name']}",
        heading=f"omnieval — dataset audit of {clusters['dataset_name']}",
        facts=facts,
        sections=[
            _clusters_section(clusters),
            _overlaps_section(overlaps),
            Section("limits", "What this does not show", render("blocks/paragraph.html.j2", text=LIMITS)),
        ],
        footer=f"Written by omnieval audit; numbers come from {CLUSTERS} and {OVERLAPS}.",
    )
    path = out / REPORT
    write_page(path, page)
    return path
