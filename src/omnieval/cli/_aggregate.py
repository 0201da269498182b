"""``omnieval aggregate``: both aggregation policies of a scores table, as JSON or a table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "aggregate",
        help="aggregate a scores table (valid-only and zero-filled, per component, Total Average)",
        description=(
            "Aggregate a scores table (FORMATS.md section 3) under both policies: valid-only (mean over "
            "valid examples) and zero-filled (missing or invalid records count 0 over a fixed number of "
            "instances). Prints every component, per-judge and per-criterion breakdowns, the Total "
            "Average with the components it covers, and output completeness per modality."
        ),
    )
    parser.add_argument("scores", type=Path, metavar="SCORES.parquet", help="the scores table")
    parser.add_argument("--json", action="store_true", help="print the full aggregate as JSON")
    parser.add_argument(
        "--n-instances",
        type=int,
        default=None,
        metavar="N",
        help="zero-filled denominator (default: distinct instance ids in the table)",
    )
    parser.add_argument("--out", type=Path, default=None, metavar="FILE", help="also write the JSON here")
    parser.set_defaults(func=handler)


def _load(path: Path) -> Any:
    from omnieval.errors import DataError
    from omnieval.scores import read_scores

    if not path.is_file():
        raise DataError(f"{path}: no such scores table")
    try:
        return read_scores(path)
    except (ValueError, OSError) as exc:
        raise DataError(f"{path}: cannot read scores table: {exc}") from None


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def handler(args: argparse.Namespace) -> int:
    from omnieval.analysis import aggregate
    from omnieval.errors import DataError
    from omnieval.jsonio import write_json_atomic

    if args.n_instances is not None and args.n_instances < 1:
        raise DataError("--n-instances must be at least 1")
    agg = aggregate(_load(args.scores), n_instances=args.n_instances)
    doc = agg.to_dict()
    text = json.dumps(doc, indent=2)
    if args.out is not None:
        write_json_atomic(args.out, doc, ensure_ascii=True, default=None)
    if args.json:
        sys.stdout.write(text + "\n")
        return 0

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{doc['benchmark']}: {doc['n_instances']} instances")
    table.add_column("system")
    for c in doc["components"]:
        table.add_column(c, justify="right")
    table.add_column("total (valid-only)", justify="right")
    table.add_column("total (zero-filled)", justify="right")
    ranked = sorted(
        doc["systems"].items(),
        key=lambda kv: -(kv[1]["valid_only"]["total_average"] or float("-inf")),
    )
    for name, entry in ranked:
        vo, zf = entry["valid_only"], entry["zero_filled"]
        table.add_row(
            name,
            *(_fmt(vo[c]) for c in doc["components"]),
            _fmt(vo["total_average"]),
            _fmt(zf["total_average"]),
        )
    console = Console()
    console.print(table)
    if doc["not_computed"]:
        console.print(f"not computed (excluded from the Total Average): {', '.join(doc['not_computed'])}")
    return 0
