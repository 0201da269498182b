"""``omnieval judge``: inspect how judge answers are read, which judge panels and prompts exist, and
pin the judge-drift anchors."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

from omnieval.errors import DataError


class _RegisteredTracks(Sequence[str]):
    """The judge tracks the benchmarks register, read only when argparse first needs them.

    The track names are the benchmark's (``omnieval.judges.track_names()``), registered when
    ``omnieval.benchmarks`` is imported. That import takes seconds, and every ``omnieval`` command
    builds this parser, so the lookup waits until ``judge parse`` checks ``--track`` or prints its
    help.
    """

    def _names(self) -> tuple[str, ...]:
        import omnieval.benchmarks  # noqa: F401  (the benchmarks register their judge tracks)
        from omnieval.judges import track_names

        return track_names()

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, value: object) -> bool:
        return value in self._names()


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "judge",
        help="LLM-as-judge tools: parse a raw answer, list panels and prompt versions, pin drift anchors",
        description=(
            "Tools around the LLM judges. Judging itself runs inside `omnieval run`; "
            "these subcommands show how a raw answer is read and which panels and prompts exist, "
            "and pin the anchor scores the nightly judge-drift check compares with."
        ),
    )
    parser.set_defaults(func=lambda _args: (parser.print_help(), 0)[1])
    judge_sub = parser.add_subparsers(dest="judge_command", metavar="SUBCOMMAND")

    parse = judge_sub.add_parser(
        "parse",
        help="show how one raw judge answer is read (status, scores, rationales)",
        description=(
            "Read one raw judge answer the way the validity ledger does: local format normalization "
            "(code fences, prose, trailing commas, quoted or '8/10' scores, key case), then strict "
            "validation (all four criteria, integer 1-10, non-empty rationale; nothing is clamped). "
            "The repair model is not called."
        ),
    )
    track = parse.add_argument("--track", required=True, help="judge track whose criteria to expect")
    # Set after add_argument, which formats the argument once to check it: the names are read only
    # when ``judge parse`` is used, not whenever the parser is built.
    track.choices = _RegisteredTracks()
    parse.add_argument("file", type=Path, metavar="FILE", help="file holding the raw answer ('-' for stdin)")
    parse.add_argument(
        "--json",
        action="store_true",
        help='print {"status": ..., "scores": {...}, "rationales": {...}} (plus "error" when not ok)',
    )
    parse.set_defaults(func=_parse)

    panels = judge_sub.add_parser(
        "panels",
        help="list the judge panels (paper-a, paper-b, paper-c, cpu, ...) and their judges per track",
        description=(
            "List the shipped judge panels: each track's judges, or why the track is unavailable, and "
            "for a judge whose model omnieval cannot build itself, why and what it needs instead."
        ),
    )
    panels.add_argument("--json", action="store_true", help="print the panels as JSON")
    panels.set_defaults(func=_panels)

    prompts = judge_sub.add_parser(
        "prompts",
        help="list the prompt templates with their version and SHA-256",
        description="List every judge prompt template (per track and input variant), its version and hash.",
    )
    prompts.add_argument("--json", action="store_true", help="print as JSON")
    prompts.set_defaults(func=_prompts)

    pin = judge_sub.add_parser(
        "pin-anchors",
        help="judge the drift anchors now and write <drift.anchors>/pinned.json",
        description=(
            "Judge the suite's drift anchors now (its drift block: anchor folder and panel; real "
            "model calls) and write the verdicts to <drift.anchors>/pinned.json, the reference the "
            "nightly drift check compares with (docs/judges.md). Run it after a deliberate judge "
            "change (model, prompt, settings), review the scores, then commit the file."
        ),
    )
    pin.add_argument(
        "suite", type=Path, metavar="SUITE", help="suite config whose drift block names the anchors"
    )
    pin.set_defaults(func=_pin_anchors)


def _read_raw(path: Path) -> str:
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None


def _parse(args: argparse.Namespace) -> int:
    import omnieval.benchmarks  # noqa: F401  (the benchmarks register their judge tracks)
    from omnieval.judges import parse_verdict

    result = parse_verdict(_read_raw(args.file), args.track)
    if args.json:
        print(json.dumps(result.as_dict(), ensure_ascii=False))
        return 0
    print(f"status: {result.status}")
    if result.normalizations:
        print(f"normalized: {', '.join(result.normalizations)}")
    if not result.ok:
        print(f"error: {result.error}")
        for key, score in result.partial_scores.items():
            print(f"  (readable but not scored) {key}: {score}")
        return 0
    for key, score in result.scores.items():
        print(f"  {key}: {score}  -- {result.rationales[key]}")
    return 0


def _panels(args: argparse.Namespace) -> int:
    import omnieval.benchmarks  # noqa: F401  (the benchmarks register their tracks and judge panels)
    from omnieval.judges import describe_panels

    described = describe_panels()
    if args.json:
        print(json.dumps(described, indent=2, ensure_ascii=False))
        return 0
    for panel in described:
        print(f"{panel['name']}: {panel['description']}")
        for track_name, entry in panel["tracks"].items():
            if entry["unavailable"]:
                print(f"  {track_name:11s} unavailable: {entry['unavailable']}")
            else:
                judges = ", ".join(f"{j['id']} [{j['backend']}]" for j in entry["judges"])
                print(f"  {track_name:11s} {judges}")
                for judge in entry["judges"]:
                    if judge.get("unavailable"):
                        print(f"  {'':11s} {judge['id']} unavailable: {judge['unavailable']}")
        if panel["repair"]:
            print(f"  {'repair':11s} {panel['repair']}")
    return 0


def _prompts(args: argparse.Namespace) -> int:
    import omnieval.benchmarks  # noqa: F401  (the benchmarks register their judge rubrics)
    from omnieval.judges import template_catalog

    catalog = template_catalog()
    if args.json:
        print(json.dumps(catalog, indent=2))
        return 0
    for entry in catalog:
        print(f"{entry['track']:11s} {entry['variant']:9s} {entry['version']}  sha256 {entry['sha256']}")
    return 0


def _pin_anchors(args: argparse.Namespace) -> int:
    from omnieval.config import load_suite
    from omnieval.judges import pin_anchors, pinned_path
    from omnieval.stages.validate import load_instances

    config = load_suite(args.suite)
    document = pin_anchors(config, load_instances(config))
    n = sum(len(per) for per in document["anchors"].values())
    print(f"pinned {n} anchor verdicts of panel {document['panel']} to {pinned_path(config)}")
    return 0
