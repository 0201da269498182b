"""One notification per night, through the union of the suites' notifiers, naming who decided it."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import TypeAdapter

from omnieval.config import NotifierConfig
from omnieval.night import (
    build_record,
    failed_suite,
    finish_night,
    night_lines,
    suite_night,
    union_notifiers,
)

from .runs import WORSE_WER, write_run

NOTIFIER = TypeAdapter(NotifierConfig)


def _notifier(**spec: object) -> NotifierConfig:
    return NOTIFIER.validate_python(spec)


def test_union_keeps_each_target_once_in_order(tmp_path: Path) -> None:
    shared = _notifier(kind="file", path=str(tmp_path / "verdicts.jsonl"))
    same_file = _notifier(kind="file", path=str(tmp_path / "." / "verdicts.jsonl"))
    hook = _notifier(kind="webhook", url="https://hooks.example.org/x", headers={"X-Token": "a"})
    other_token = _notifier(kind="webhook", url="https://hooks.example.org/x", headers={"X-Token": "b"})
    assert union_notifiers([(shared, hook), (same_file,), (), (hook, other_token)]) == [
        shared,
        hook,
        other_token,
    ]


def test_the_night_sends_one_message_naming_suite_and_component(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    log = tmp_path / "verdicts.jsonl"
    suites = {
        "nightly": suite_night(write_run(runs, "nightly", "n1", "GO", ["fine"])),
        "acbench": suite_night(write_run(runs, "acbench", "a1", "NO-GO", [WORSE_WER])),
        "prism": failed_suite(RuntimeError("boom"), stage="judge"),
    }
    notifiers = union_notifiers([[_notifier(kind="file", path=str(log))]] * 3)
    outcome = finish_night("2026-12-03", suites, nights_dir=runs / "nights", notifiers=notifiers, track=False)
    assert outcome.problems == [] and outcome.mlflow_run_id is None
    assert [o.ok for o in outcome.notifications] == [True]
    lines = log.read_text().splitlines()
    assert len(lines) == 1
    message = json.loads(lines[0])
    assert message["subject"] == "omnieval night 2026-12-03: NO-GO (acbench: cascade-cpu / original.wer)"
    assert message["suite"] == "acbench" and message["component"] == "cascade-cpu / original.wer"
    assert message["verdict"] == "NO-GO" and message["night"] == "2026-12-03"
    assert message["suites"]["prism"] == {"verdict": "INCONCLUSIVE", "run_id": None, "run_folder": None}
    assert message["record"] == str(outcome.record_path) and Path(message["report"]).name == "night.html"
    assert message["reasons"][1] == "prism: failed to run in the judge stage: RuntimeError: boom"
    assert message["text"].startswith(message["subject"])


def test_a_failing_notifier_is_a_problem_not_a_failed_night(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    notifier = _notifier(kind="file", path=str(blocked / "verdicts.jsonl"))  # its folder is a file
    suites = {"nightly": failed_suite("boom")}
    outcome = finish_night(
        "2026-12-03", suites, nights_dir=tmp_path / "nights", notifiers=[notifier], track=False
    )
    assert outcome.record_path.is_file() and outcome.page_path is not None
    assert [o.ok for o in outcome.notifications] == [False]
    assert outcome.problems and outcome.problems[0].startswith("notification via file")


def test_terminal_lines_lead_with_the_verdict() -> None:
    record = build_record("2026-12-03", {"prism": failed_suite("boom")})
    lines = night_lines(record, record_path=Path("runs/nights/2026-12-03/night.json"))
    assert lines[0] == "night 2026-12-03: INCONCLUSIVE  (runs/nights/2026-12-03/night.json)"
    assert lines[1] == "  - prism: failed to run: boom"
    assert lines[-1].startswith("usage: generation 0 calls")
