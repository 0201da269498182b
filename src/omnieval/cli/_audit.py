"""``omnieval audit DATASET``: duplicate clusters and condition-page overlap of a dataset folder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

_DESCRIPTION = """\
Audit a dataset folder the way Omni-StoryBench's paper audits its own (appendix, "String-overlap
audit" and "Internal-duplicate sensitivity"):

  duplicate clusters  pages whose word n-gram shingle sets overlap (Jaccard) or whose 64-bit DCT
                      pHashes are close, joined (union-find) into clusters of instances;
  shared spans        per instance, the N-word spans (default 8) its condition texts share with pages
                      outside its own, and the longest span they share with its target page.

Writes clusters.json, overlaps.json and audit.html into --out (default state/audit/<folder name>/).
`omnieval analyze` without --duplicates (and a suite's report stage) reads the clusters from there.
Exit status: 0 done, 2 invalid dataset or options (DATASET not a folder, --out a file).
"""


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "audit",
        help="find duplicate clusters and condition-page text overlap in a dataset folder",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dataset", type=Path, metavar="DATASET", help="dataset folder")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output folder (default state/audit/<folder name>/)",
    )
    parser.add_argument(
        "--benchmark", default=None, metavar="NAME", help="the dataset's benchmark (default: detected)"
    )
    parser.add_argument(
        "--ngram", type=int, default=None, metavar="N", help="words per text shingle (default 5)"
    )
    parser.add_argument(
        "--text-threshold",
        type=float,
        default=None,
        metavar="J",
        help="Jaccard index at or above which two pages are text near-duplicates (default 0.5)",
    )
    parser.add_argument(
        "--image-distance",
        type=int,
        default=None,
        metavar="BITS",
        help="pHash bits (of 64) at or below which two images are near-duplicates (default 8)",
    )
    parser.add_argument("--no-images", action="store_true", help="skip the image hashes (text clusters only)")
    parser.add_argument(
        "--within-group",
        action="store_true",
        help="also compare pages of the same book with each other (off: a book's pages share a setting)",
    )
    parser.add_argument(
        "--span-words", type=int, default=None, metavar="N", help="shared span length in words (default 8)"
    )
    parser.add_argument(
        "--engine",
        choices=("prefect", "local"),
        default="prefect",
        help="prefect: run the omnieval-audit flow (default); local: the same steps in a row, no Prefect",
    )
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.set_defaults(func=_audit)


def _options(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from omnieval.audit import AuditOptions
    from omnieval.errors import ConfigError

    given = {
        "ngram": args.ngram,
        "text_threshold": args.text_threshold,
        "image_distance": args.image_distance,
        "span_words": args.span_words,
    }
    values: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if args.no_images:
        values["images"] = False
    if args.within_group:
        values["within_group"] = True
    try:
        return AuditOptions(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"--{'.'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"invalid audit options: {problems}") from None


def _audit(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks

    _checks.input_dir("DATASET", args.dataset)
    if args.out is not None:
        _checks.output_dir("--out", args.out)
    options = _options(args)
    summary: dict[str, Any]
    if args.engine == "prefect":
        from omnieval.flows import prepare_prefect_env

        prepare_prefect_env()
        from omnieval.flows.audit import audit

        summary = audit(
            str(args.dataset),
            out=str(args.out) if args.out else None,
            benchmark=args.benchmark,
            options=options.model_dump(),
        )
    else:
        from omnieval.audit import default_audit_dir, run_audit
        from omnieval.flows.audit import load_audit_inputs

        inputs = load_audit_inputs(args.dataset, args.benchmark)
        out = args.out or default_audit_dir(args.dataset)
        summary = run_audit(inputs, options, out).summary()
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"audited {summary['n_instances']} instances: {summary['n_clusters']} duplicate clusters "
        f"({summary['n_flagged_instances']} instances flagged), {summary['n_instances_with_shared_span']} "
        f"instances with a condition span shared with another page"
    )
    for key in ("clusters", "overlaps", "report"):
        print(f"  {key:9s} {summary[key]}")
    return 0
