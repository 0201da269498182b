"""``omnieval night [DATE]``: print a night's record; ``--run SUITE ...`` runs a night now."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from omnieval.errors import ConfigError

if TYPE_CHECKING:
    from omnieval.night import CombinedNight

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "night",
        help="print a night's verdict (several suites on one schedule), or run one now with --run",
        description=(
            "Print the record of a night: its verdict (NO-GO when any suite is NO-GO, INCONCLUSIVE "
            "when any is INCONCLUSIVE or failed to run, else GO), the reasons naming suite and "
            "component, one line per suite and the night's usage, from <runs-dir>/nights/<DATE>/night.json "
            "(default: the latest night). 'omnieval serve --night SUITE ...' writes one every night; "
            "--run SUITE ... runs the suites one after another now, in this process, and writes it "
            "(night.json, night.html, an MLflow run in omnieval/nights, one notification). Exit code 2 "
            "when there is no such record or DATE is not a date; with --fail-on-regression, 3 when the "
            "night is NO-GO. With a shared tracking server (MLFLOW_TRACKING_URI=http(s)://...), the night "
            "combines this machine's record with the other machines' night runs of DATE on the server, "
            "each suite naming its machine (--json: the combined night.json plus 'machines'); a server "
            "that cannot be reached is said on stderr and the local record printed (docs/nightly.md, "
            "'The night record', 'One night on several machines')."
        ),
    )
    parser.add_argument(
        "date",
        nargs="?",
        default=None,
        metavar="DATE",
        help="the night, YYYY-MM-DD (default: the latest; with --run: today in --timezone); put it before --run",
    )
    parser.add_argument(
        "--run",
        type=Path,
        nargs="+",
        default=None,
        metavar="SUITE",
        help="run these suites now, one after another, as the night DATE, and print its record",
    )
    parser.add_argument("--json", action="store_true", help="print night.json as it is")
    parser.add_argument(
        "--runs-dir",
        type=Path,
        default=None,
        help="where nights/<DATE> lives (default runs; with --run, the first suite's runs_dir)",
    )
    parser.add_argument(
        "--timezone",
        default=None,
        help="with --run (an error without it): the time zone that names today's night (default UTC)",
    )
    parser.add_argument(
        "--fail-on-regression", action="store_true", help="exit 3 when the night's verdict is NO-GO"
    )
    parser.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from omnieval.cli import _checks

    # The options first: omnieval.night imports the comparison code (seconds).
    _checks.needs("--timezone", args.timezone is not None, "--run", args.run is not None)
    if args.runs_dir is not None:
        _checks.output_dir("--runs-dir", args.runs_dir)
    if args.run is not None:
        misplaced = [str(p) for p in args.run if _DATE.match(str(p)) and not p.is_file()]
        if misplaced:
            raise ConfigError(f"--run: {misplaced[0]} looks like a date: put DATE before --run")
        _check_timezone(args.timezone or "UTC")

    from omnieval.night import check_date, find_record, night_lines, read_record

    if args.date is not None:
        check_date(args.date)
    nights_dir = None if args.runs_dir is None else args.runs_dir / "nights"
    extra: list[str] = []
    if args.run is not None:
        timezone = args.timezone or "UTC"
        # Every suite before the night starts: the flow records a suite that fails as "failed to
        # run" and writes the night anyway, which is right at 2 a.m., not for a typo typed now.
        for suite in args.run:
            _checks.suite_file("--run", suite)
        from omnieval.runner import run_night

        summary = run_night(args.run, date=args.date, timezone=timezone, nights_dir=nights_dir)
        path = Path(summary["record"])
        if summary.get("mlflow_run_id"):
            extra.append(f"MLflow: run {summary['mlflow_run_id']} in experiment omnieval/nights")
        extra += [f"problem: {line}" for line in summary.get("problems") or []]
    else:
        nights = nights_dir or Path("runs") / "nights"
        team = _team_night(nights, args.date)
        if team is not None:
            return _print_team(team, args)
        path = find_record(nights, args.date)
    record = read_record(path)
    if args.json:
        print(json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=2))
    else:
        for line in night_lines(record, record_path=path):
            print(line)
        page = path.with_name("night.html")
        if page.is_file():
            print(f"page: {page}")
        for line in extra:
            print(line)
    if args.fail_on_regression and record.verdict == "NO-GO":
        print(f"night {record.date}: NO-GO; exit code 3 (--fail-on-regression)", file=sys.stderr)
        return 3
    return 0


def _team_night(nights: Path, date: str | None) -> CombinedNight | None:
    """With a tracking server (team mode): the night combined from every machine's record; None
    without one, or (said in one line on stderr) when it cannot be reached: the local record then."""
    from omnieval.compare import tracking_server
    from omnieval.night import ServerUnreachable, team_night
    from omnieval.security import redact

    server = tracking_server()
    if server is None:
        return None
    try:
        return team_night(nights, date, server=server)
    except ServerUnreachable as exc:
        print(
            f"tracking server {redact(server)} cannot be reached ({exc}): this machine's record only",
            file=sys.stderr,
        )
        return None


def _print_team(team: CombinedNight, args: argparse.Namespace) -> int:
    from omnieval.night import combined_document, team_lines

    if args.json:
        print(json.dumps(combined_document(team), indent=2))
    else:
        for line in team_lines(team):
            print(line)
    if args.fail_on_regression and team.record.verdict == "NO-GO":
        print(f"night {team.record.date}: NO-GO; exit code 3 (--fail-on-regression)", file=sys.stderr)
        return 3
    return 0


def _check_timezone(timezone: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"--timezone {timezone!r}: not a known time zone (e.g. UTC, Europe/Paris)"
        ) from None
