"""Dataset audits: duplicate clusters from text shingles and image hashes, and condition-page overlap.

A benchmark says what its pages and conditions are (``Benchmark.audit_inputs`` returns
:class:`AuditInputs`); this package knows no benchmark. ``omnieval audit DATASET`` runs the steps
as the Prefect flow ``omnieval.flows.audit`` (or in a row with ``--engine local``, :func:`run_audit`)
and writes ``clusters.json``, ``overlaps.json`` and ``audit.html``. The duplicate-cluster
sensitivity analysis reads ``clusters.json`` (:func:`find_audit_clusters`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnieval.audit._compute import (
    AUDIT_VERSION,
    PagePair,
    UnionFind,
    condition_overlaps,
    duplicate_clusters,
    image_hashes,
    image_pairs,
    text_pairs,
)
from omnieval.audit._files import (
    AUDIT_ROOT,
    CLUSTERS,
    OVERLAPS,
    REPORT,
    FoundClusters,
    default_audit_dir,
    find_audit_clusters,
    write_documents,
)
from omnieval.audit._model import AuditInputs, AuditInstance, AuditOptions, AuditPage
from omnieval.audit._phash import hamming, phash_file, phash_image, phash_pixels
from omnieval.audit._report import write_audit_report
from omnieval.audit._text import SharedSpan, SpanIndex, longest_common_span, shingles, words


@dataclass(frozen=True)
class AuditOutcome:
    """What one audit wrote, and its two documents.

    Attributes:
        out: the output folder.
        clusters_path: ``out/clusters.json``.
        overlaps_path: ``out/overlaps.json``.
        report_path: ``out/audit.html``.
        clusters: the ``clusters.json`` document.
        overlaps: the ``overlaps.json`` document.
    """

    out: Path
    clusters_path: Path
    overlaps_path: Path
    report_path: Path
    clusters: dict[str, Any]
    overlaps: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        """A short JSON-ready account (what the CLI prints)."""
        return {
            "out": str(self.out),
            "clusters": str(self.clusters_path),
            "overlaps": str(self.overlaps_path),
            "report": str(self.report_path),
            "n_instances": self.clusters["n_instances"],
            "n_clusters": self.clusters["n_clusters"],
            "n_flagged_instances": self.clusters["n_flagged_instances"],
            "n_instances_with_shared_span": self.overlaps["summary"]["n_instances_with_shared_span"],
        }


def write_audit(out: Path, clusters: dict[str, Any], overlaps: dict[str, Any]) -> AuditOutcome:
    """Write the two documents and the page into ``out`` (the last step of every audit)."""
    clusters_path, overlaps_path = write_documents(out, clusters, overlaps)
    report_path = write_audit_report(out, clusters, overlaps)
    return AuditOutcome(out, clusters_path, overlaps_path, report_path, clusters, overlaps)


def run_audit(inputs: AuditInputs, options: AuditOptions, out: Path) -> AuditOutcome:
    """Every step in this process, in the flow's order (``omnieval audit --engine local``)."""
    hashes = image_hashes(inputs) if options.images else {}
    pairs = text_pairs(inputs, options) + image_pairs(inputs, hashes, options)
    clusters = duplicate_clusters(inputs, pairs, options, n_images=len(hashes))
    return write_audit(out, clusters, condition_overlaps(inputs, options))


__all__ = [
    "AUDIT_ROOT",
    "AUDIT_VERSION",
    "CLUSTERS",
    "OVERLAPS",
    "REPORT",
    "AuditInputs",
    "AuditInstance",
    "AuditOptions",
    "AuditOutcome",
    "AuditPage",
    "FoundClusters",
    "PagePair",
    "SharedSpan",
    "SpanIndex",
    "UnionFind",
    "condition_overlaps",
    "default_audit_dir",
    "duplicate_clusters",
    "find_audit_clusters",
    "hamming",
    "image_hashes",
    "image_pairs",
    "longest_common_span",
    "phash_file",
    "phash_image",
    "phash_pixels",
    "run_audit",
    "shingles",
    "text_pairs",
    "words",
    "write_audit",
    "write_audit_report",
]
