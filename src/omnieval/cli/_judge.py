"""``omnieval judge``: inspect how judge answers are read, which judge panels and prompts exist, and
pin the judge-drift anchors."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from omnieval.cli._judge_check import add_check_parsers
from omnieval.errors import DataError


class _RegisteredTracks(Sequence[str]):
    """Every registered benchmark's judge tracks, read only when argparse first needs them.

    The track names are the benchmarks' (``Benchmark.judge_tracks``, in benchmark name order),
    registered when ``omnieval.benchmarks`` is imported. That import takes seconds, and every
    ``omnieval`` command builds this parser, so the lookup waits until ``judge parse`` checks
    ``--track`` or prints its help.
    """

    def _names(self) -> tuple[str, ...]:
        return tuple(track_owners())

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


def track_owners() -> dict[str, list[str]]:
    """Judge track -> the benchmarks that judge it, over every registered benchmark."""
    from omnieval.cli._registries import load_benchmarks

    benchmarks = load_benchmarks()
    owners: dict[str, list[str]] = {}
    for name in benchmarks.names():
        for track_name in benchmarks.get(name).judge_tracks:
            owners.setdefault(track_name, []).append(name)
    return owners


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
            "validation by the track's benchmark (story continuation: all four criteria, integer "
            "1-10, non-empty rationale; audio-video judging: both clips' 0-10 scores with evidence "
            "for each audio type the answer holds under the dimension). Nothing is clamped and the "
            "repair model is not called."
        ),
    )
    track = parse.add_argument(
        "--track", required=True, help="judge track (any registered benchmark's) whose criteria to expect"
    )
    # Set after add_argument, which formats the argument once to check it: the names are read only
    # when ``judge parse`` is used, not whenever the parser is built.
    track.choices = _RegisteredTracks()
    parse.add_argument(
        "--benchmark",
        default=None,
        metavar="NAME",
        help="the benchmark whose track --track is (needed only when two benchmarks share the name)",
    )
    parse.add_argument("file", type=Path, metavar="FILE", help="file holding the raw answer ('-' for stdin)")
    parse.add_argument(
        "--json",
        action="store_true",
        help='print {"status": ..., "scores": {...}, "rationales": {...}} (plus "error" when not ok)',
    )
    parse.set_defaults(func=_parse)

    panels = judge_sub.add_parser(
        "panels",
        help="list every benchmark's judge panels (cpu, paper-a, cpu-cascade, ...) and their judges per track",
        description=(
            "List the judge panels every registered benchmark ships, with the benchmark's name: each "
            "track's judges, or why the track is unavailable, and for a judge whose model omnieval "
            "cannot build itself, why and what it needs instead."
        ),
    )
    panels.add_argument("--json", action="store_true", help="print the panels as JSON")
    panels.set_defaults(func=_panels)

    prompts = judge_sub.add_parser(
        "prompts",
        help="list every benchmark's judge prompt templates with their version and SHA-256",
        description=(
            "List every registered benchmark's judge prompt templates (per track, or per stage for "
            "audio-video judging, and input variant), with the benchmark, version and hash."
        ),
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
    # ``check`` and ``pin-known-set`` (judges graded on the benchmark's known set) live apart.
    add_check_parsers(judge_sub)


def _read_raw(path: Path) -> str:
    from omnieval.cli import _checks

    if str(path) == "-":
        return sys.stdin.read()
    _checks.input_file("FILE", path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None


def _track_benchmark(track_name: str, benchmark: str | None) -> str:
    """The benchmark whose ``track_name`` ``judge parse`` reads (``--benchmark`` when given)."""
    from omnieval.cli._registries import registered_benchmark
    from omnieval.errors import ConfigError

    owners = track_owners().get(track_name, [])
    if benchmark is not None:
        if track_name not in registered_benchmark(benchmark).judge_tracks:
            raise ConfigError(
                f"--track {track_name!r} is not a judge track of {benchmark} (it is one of "
                f"{', '.join(owners) or 'no benchmark'}'s)"
            )
        return benchmark
    if len(owners) > 1:
        raise ConfigError(
            f"--track {track_name!r} is a judge track of {', '.join(owners)}: pass --benchmark NAME"
        )
    return owners[0]


def _parse(args: argparse.Namespace) -> int:
    from omnieval.cli._registries import registered_benchmark

    raw = _read_raw(args.file)
    bench = registered_benchmark(_track_benchmark(args.track, args.benchmark))
    result = bench.read_judge_answer(raw, args.track)
    if args.json:
        print(json.dumps(result.as_dict(), ensure_ascii=False))
        return 0
    print(f"status: {result.status} ({bench.name} track {args.track})")
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


def describe_all_panels() -> list[dict[str, Any]]:
    """Every registered benchmark's panels (:meth:`Benchmark.describe_panels`), each with its
    ``benchmark``, in benchmark then panel name order."""
    from omnieval.cli._registries import load_benchmarks

    benchmarks = load_benchmarks()
    return [
        {"benchmark": name, **panel}
        for name in benchmarks.names()
        if benchmarks.get(name).judge_tracks
        for panel in benchmarks.get(name).describe_panels()
    ]


def _panels(args: argparse.Namespace) -> int:
    described = describe_all_panels()
    if args.json:
        print(json.dumps(described, indent=2, ensure_ascii=False))
        return 0
    for panel in described:
        print(f"{panel['name']} ({panel['benchmark']}): {panel['description']}")
        # Tracks judged alike (every prism dimension by the same judges) share one line.
        groups: dict[str, tuple[list[str], dict[str, Any]]] = {}
        for track_name, entry in panel["tracks"].items():
            key = json.dumps(entry, sort_keys=True)
            groups.setdefault(key, ([], entry))[0].append(track_name)
        for names, entry in groups.values():
            label = ", ".join(names)
            width = max(11, len(label))
            if entry["unavailable"]:
                print(f"  {label:{width}s} unavailable: {entry['unavailable']}")
            else:
                judges = ", ".join(f"{j['id']} [{j['backend']}]" for j in entry["judges"])
                print(f"  {label:{width}s} {judges}")
                for judge in entry["judges"]:
                    if judge.get("unavailable"):
                        print(f"  {'':{width}s} {judge['id']} unavailable: {judge['unavailable']}")
        if panel["repair"]:
            print(f"  {'repair':11s} {panel['repair']}")
    return 0


def _prompts(args: argparse.Namespace) -> int:
    from omnieval.cli._registries import load_benchmarks

    benchmarks = load_benchmarks()
    catalog = [
        {"benchmark": name, **entry}
        for name in benchmarks.names()
        if benchmarks.get(name).judge_tracks
        for entry in benchmarks.get(name).prompt_catalog()
    ]
    if args.json:
        print(json.dumps(catalog, indent=2))
        return 0
    for entry in catalog:
        print(
            f"{entry['benchmark']:11s} {entry['track']:11s} {entry['variant']:9s} {entry['version']}  "
            f"sha256 {entry['sha256']}"
        )
    return 0


def _pin_anchors(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks
    from omnieval.judges import pin_anchors, pinned_path
    from omnieval.stages.judge import anchor_instances, panel_judge
    from omnieval.stages.validate import load_instances

    config = _checks.suite_file("SUITE", args.suite)
    # The whole dataset, as the nightly check reads it: the anchors may sit beyond a `dataset.limit`.
    instances = anchor_instances(config, load_instances(config))
    document = pin_anchors(
        config, instances, judge=panel_judge(config), anchor_tracks=config.bench.anchor_tracks()
    )
    n = sum(len(per) for per in document["anchors"].values())
    print(f"pinned {n} anchor verdicts of panel {document['panel']} to {pinned_path(config)}")
    return 0
