"""The night's verdict rule (FORMATS.md §11), each suite's entry from its run folder, and night.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnieval.errors import DataError
from omnieval.night import (
    SuiteNight,
    build_record,
    deciders,
    failed_suite,
    find_record,
    kept_records,
    night_verdict,
    read_record,
    record_document,
    suite_night,
    write_record,
)

from .runs import WORSE_WER, usage, write_run


def _suite(verdict: str, *reasons: str) -> SuiteNight:
    return SuiteNight.model_validate(
        {"run_id": f"r-{verdict}", "run_folder": f"/runs/{verdict}", "verdict": verdict, "reasons": reasons}
    )


GO = _suite("GO", "no headline component got worse", "GO: no wer rise >= 2.1 points")
UNSURE = _suite("INCONCLUSIVE", "judge prompt changed: panel cpu, prompt text (a -> b)")
NO_GO = _suite("NO-GO", WORSE_WER)
FAILED = failed_suite(RuntimeError("judge server unreachable"), stage="judge")


def test_all_go_is_go_and_lists_what_each_suite_ruled_out() -> None:
    verdict, reasons = night_verdict({"nightly": GO, "acbench": GO, "prism": GO})
    assert verdict == "GO"
    assert reasons[0] == "nightly: no headline component got worse"
    assert [r.split(": ", 1)[0] for r in reasons] == ["nightly"] * 2 + ["acbench"] * 2 + ["prism"] * 2


def test_one_inconclusive_suite_makes_the_night_inconclusive_and_only_it_is_named() -> None:
    verdict, reasons = night_verdict({"nightly": GO, "prism": UNSURE})
    assert verdict == "INCONCLUSIVE"
    assert reasons == ["prism: judge prompt changed: panel cpu, prompt text (a -> b)"]


def test_one_no_go_suite_makes_the_night_no_go() -> None:
    verdict, reasons = night_verdict({"nightly": GO, "acbench": NO_GO, "prism": UNSURE})
    assert verdict == "NO-GO"
    assert reasons == [f"acbench: {WORSE_WER}", f"prism: {UNSURE.reasons[0]}"]


def test_a_suite_that_failed_to_run_makes_the_night_inconclusive_with_its_error() -> None:
    verdict, reasons = night_verdict({"nightly": GO, "prism": FAILED})
    assert verdict == "INCONCLUSIVE"
    assert reasons == ["prism: failed to run in the judge stage: RuntimeError: judge server unreachable"]
    assert FAILED.failed and FAILED.run_id is None and FAILED.run_folder is None


def test_degraded_and_failing_is_no_go_naming_the_regression_first_then_the_failure() -> None:
    verdict, reasons = night_verdict({"nightly": GO, "prism": FAILED, "acbench": NO_GO})
    assert verdict == "NO-GO"
    assert reasons[0] == f"acbench: {WORSE_WER}"
    assert reasons[1].startswith("prism: failed to run in the judge stage")
    assert len(reasons) == 2


def test_a_night_of_no_suites_claims_nothing() -> None:
    assert night_verdict({}).verdict == "INCONCLUSIVE"


def test_deciders_name_suite_and_component() -> None:
    record = build_record("2026-12-03", {"nightly": GO, "acbench": NO_GO, "prism": FAILED})
    assert [tuple(d) for d in deciders(record)] == [("acbench", "NO-GO", "cascade-cpu / original.wer")]
    record = build_record("2026-12-03", {"nightly": UNSURE, "prism": FAILED, "x": failed_suite("boom")})
    assert [(d.suite, d.component) for d in deciders(record)] == [
        ("nightly", "judge prompt changed"),
        ("prism", "judge stage"),
        ("x", "run"),
    ]
    assert deciders(build_record("2026-12-03", {"nightly": GO})) == []


def test_failed_suite_words_user_errors_as_they_are_and_others_by_type() -> None:
    from omnieval.errors import GateFailed

    report = "dataset d failed validation (2 problems)\n  - d: folder not found\n  - d: no manifest"
    assert failed_suite(GateFailed(report)).reasons == (
        "failed to run: dataset d failed validation (2 problems): d: folder not found",
    )
    assert failed_suite(KeyError("x"), stage="generate").reasons == (
        "failed to run in the generate stage: KeyError: 'x'",
    )


def test_suite_entry_reads_verdict_mde_and_usage_from_the_run_folder(tmp_path: Path) -> None:
    folder = write_run(
        tmp_path,
        "acbench",
        "abc123",
        "NO-GO",
        [WORSE_WER],
        mde=(0.25, 3.5, float("nan")),
        usage_doc=usage(judge_calls=4, system_calls=2, seconds=2.5),
        regressed=("cascade-cpu", "original.wer"),
    )
    entry = suite_night(folder)
    assert entry.verdict == "NO-GO" and entry.reasons == (WORSE_WER,)
    assert entry.run_id == "abc123" and entry.run_folder == str(folder.resolve())
    assert entry.mde_max == 3.5
    assert entry.usage.judging.calls == 4 and entry.usage.judging.prompt_tokens == 400
    assert entry.usage.generation.calls == 2 and entry.usage.generation.seconds == 2.5


def test_a_usage_json_with_its_own_split_is_taken_as_it_is(tmp_path: Path) -> None:
    split = {
        "generation": {
            "calls": 3,
            "prompt_tokens": 30,
            "completion_tokens": 3,
            "calls_with_tokens": 3,
            "seconds": 1,
        },
        "judging": {"j": {"calls": 5, "prompt_tokens": None, "completion_tokens": None, "seconds": 2}},
        "judges": {"ignored": {"calls": 99}},
    }
    entry = suite_night(write_run(tmp_path, "s", "r1", "GO", ["fine"], usage_doc=split))
    assert entry.usage.generation.calls == 3
    assert entry.usage.judging.calls == 5 and entry.usage.judging.prompt_tokens is None


def test_a_run_folder_without_a_verdict_is_inconclusive(tmp_path: Path) -> None:
    folder = write_run(tmp_path, "s", "r1", "GO", ["fine"])
    (folder / "regression.json").unlink()
    entry = suite_night(folder)
    assert entry.verdict == "INCONCLUSIVE" and entry.reasons[0].startswith("no verdict: ")
    assert "regression.json is missing" in entry.reasons[0] and not entry.failed
    (folder / "regression.json").write_text("{broken")
    assert suite_night(folder).reasons[0].startswith("no verdict: ")


def test_the_record_sums_usage_and_keeps_the_contract_keys(tmp_path: Path) -> None:
    a = suite_night(write_run(tmp_path, "nightly", "r1", "GO", ["ok"], usage_doc=usage(judge_calls=2)))
    b = suite_night(write_run(tmp_path, "acbench", "r2", "GO", ["ok"], usage_doc=usage(system_calls=3)))
    record = build_record("2026-12-03", {"nightly": a, "acbench": b, "prism": FAILED})
    path = write_record(record, tmp_path / "nights")
    assert path == tmp_path / "nights" / "2026-12-03" / "night.json"
    doc = json.loads(path.read_text())
    assert list(doc) == ["date", "suites", "verdict", "reasons", "usage"]
    assert list(doc["suites"]) == ["nightly", "acbench", "prism"]
    for entry in doc["suites"].values():
        assert list(entry) == ["run_id", "run_folder", "verdict", "reasons", "mde_max", "usage"]
        assert set(entry["usage"]) == {"generation", "judging"}
    assert set(doc["usage"]) == {"generation", "judging"}
    assert doc["usage"]["judging"]["calls"] == 2 and doc["usage"]["generation"]["calls"] == 3
    assert doc["verdict"] == "INCONCLUSIVE"
    assert doc["suites"]["prism"]["run_id"] is None and doc["suites"]["prism"]["run_folder"] is None
    assert read_record(path) == record
    assert not list(path.parent.glob("*.tmp"))  # written through a temporary file and a rename


def test_find_record_takes_the_date_or_the_latest_and_says_when_there_is_none(tmp_path: Path) -> None:
    nights = tmp_path / "nights"
    with pytest.raises(DataError, match="no night record under"):
        find_record(nights)
    for day in ("2026-12-01", "2026-12-03", "2026-12-02"):
        write_record(build_record(day, {"nightly": GO}), nights)
    (nights / "notes").mkdir()
    assert find_record(nights).parent.name == "2026-12-03"
    assert find_record(nights, "2026-12-01").parent.name == "2026-12-01"
    with pytest.raises(DataError, match="no night record for 2026-11-30"):
        find_record(nights, "2026-11-30")
    with pytest.raises(DataError, match="YYYY-MM-DD"):
        find_record(nights, "yesterday")
    with pytest.raises(DataError, match="not a calendar date"):
        find_record(nights, "2026-02-30")
    (nights / "2026-12-01" / "night.json").write_text('{"date": "2026-12-01"}')
    with pytest.raises(DataError, match="not a night record"):
        read_record(nights / "2026-12-01" / "night.json")


def test_a_second_record_of_the_same_date_keeps_the_first_and_becomes_the_answer(tmp_path: Path) -> None:
    """Issue 47: a restarted serve's INCONCLUSIVE night replaced the date's GO night.json."""
    nights = tmp_path / "nights"
    go = build_record("2026-12-03", {"nightly": GO})
    unsure = build_record("2026-12-03", {"nightly": UNSURE})
    first = write_record(go, nights)
    second = write_record(unsure, nights)
    assert first == second == find_record(nights, "2026-12-03")
    assert read_record(second) == unsure  # night.json: the date's answer, the latest record
    kept = kept_records(second.parent)
    assert [read_record(p).verdict for p in kept] == ["GO", "INCONCLUSIVE"]
    assert kept[-1].read_bytes() == second.read_bytes()
    assert find_record(nights) == second  # records/ is not taken for a night


def test_a_night_json_written_before_records_were_kept_is_kept_before_it_is_replaced(tmp_path: Path) -> None:
    nights = tmp_path / "nights"
    old = nights / "2026-12-03" / "night.json"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps(record_document(build_record("2026-12-03", {"nightly": GO}))))
    write_record(build_record("2026-12-03", {"nightly": NO_GO}), nights)
    write_record(build_record("2026-12-03", {"nightly": NO_GO}), nights)
    assert [read_record(p).verdict for p in kept_records(old.parent)] == ["GO", "NO-GO", "NO-GO"]
    assert read_record(old).verdict == "NO-GO"
