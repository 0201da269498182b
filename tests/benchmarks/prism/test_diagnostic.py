"""Diagnostic systems in the PRISM calibration: scored against the systems under test's global
ground-truth mean, never part of it, so adding one moves no other system's score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from benchmarks._leaderboard_checks import GENERATION, assert_round_trips, with_report_facts
from benchmarks.prism._tables import frame, make_prism_scores, row
from omnieval.benchmarks import BENCHMARKS, RunFacts, prism
from omnieval.benchmarks._leaderboard import declared_document
from omnieval.benchmarks.prism._aggregate import DEFAULT_DIAGNOSTIC, aggregate_prism, leaderboard_text
from omnieval.benchmarks.prism._report import leaderboard_html
from omnieval.cli import main
from omnieval.scores import write_scores
from omnieval.systems import SystemConfig, config_model

PrismLeaderboard = declared_document(prism.__file__)  # prism/leaderboard.yaml

GT = "ground_truth"


def _without(table: pd.DataFrame, system: str) -> pd.DataFrame:
    """``table`` less every row of ``system`` and of the ground truth judged beside it."""
    keep = (table["system"] != system) & (table["paired_with"] != system)
    return table[keep].reset_index(drop=True)


def _renamed(table: pd.DataFrame, old: str, new: str) -> pd.DataFrame:
    return table.assign(
        system=table["system"].replace(old, new), paired_with=table["paired_with"].replace(old, new)
    )


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    # Invalid and missing rows too: the invariance must hold where cells drop out of the means.
    return make_prism_scores(
        seed=7, systems=("sys-a", "sys-b", "probe"), items_per_subset=4, invalid_rate=0.1, missing_rate=0.1
    )


def test_hand_computed_cell() -> None:
    # One off-screen item: a scores 6 beside a reference scored 8; muted scores 1 beside 4.
    rows = [
        row("a", "i1", "audio_quality", "speech", 6.0),
        row(GT, "i1", "audio_quality", "speech", 8.0, paired_with="a"),
        row("muted", "i1", "audio_quality", "speech", 1.0),
        row(GT, "i1", "audio_quality", "speech", 4.0, paired_with="muted"),
    ]
    doc = aggregate_prism(frame(rows))
    # Global mean over a's pairing only: 8. a = 6 / 8 * 8; muted = 1 / 4 * 8.
    assert doc["systems"]["a"]["subsets"]["off_screen"]["final"] == 6.0
    assert doc["systems"]["muted"]["subsets"]["off_screen"]["final"] == 2.0
    assert doc["ground_truth"]["subsets"]["off_screen"]["final"] == 8.0
    assert doc["systems"]["muted"]["diagnostic"] is True and "diagnostic" not in doc["systems"]["a"]
    # Nothing diagnostic (the old rule): global mean (8 + 4) / 2 = 6; a = 6 / 8 * 6.
    old = aggregate_prism(frame(rows), diagnostic=())
    assert old["systems"]["a"]["subsets"]["off_screen"]["final"] == 4.5
    assert "diagnostic" not in old["systems"]["muted"]


def test_adding_a_diagnostic_system_changes_no_other_score(table: pd.DataFrame) -> None:
    base = aggregate_prism(_without(table, "probe"), diagnostic={"probe"})
    added = aggregate_prism(table, diagnostic={"probe"})
    for system in ("sys-a", "sys-b"):
        assert added["systems"][system] == base["systems"][system]
    assert added["ground_truth"] == base["ground_truth"]
    assert added["systems"]["probe"]["diagnostic"] is True
    finals = [e["final"] for e in added["systems"]["probe"]["subsets"].values()]
    assert any(f is not None for f in finals)
    # The same table with the probe under test moves the others: the test above has teeth.
    counted = aggregate_prism(table, diagnostic=())
    assert counted["systems"]["sys-a"] != base["systems"]["sys-a"]


def test_default_ids_and_facts(table: pd.DataFrame) -> None:
    base = aggregate_prism(_without(table, "probe"))
    for probe in DEFAULT_DIAGNOSTIC:
        added = aggregate_prism(_renamed(table, "probe", probe))
        assert added["systems"]["sys-a"] == base["systems"]["sys-a"], probe
        assert added["systems"][probe]["diagnostic"] is True
    muted = _renamed(table, "probe", "muted")
    # Facts name the ids (the report stage's RunFacts); an empty set means none is diagnostic.
    assert "diagnostic" not in aggregate_prism(muted, RunFacts(diagnostic=frozenset()))["systems"]["muted"]
    by_facts = aggregate_prism(table, {"diagnostic": ["probe"]})
    assert by_facts["systems"]["sys-a"] == base["systems"]["sys-a"]


def test_only_diagnostic_systems_leave_the_subset_uncalibrated() -> None:
    rows = [
        row("muted", "i1", "audio_quality", "speech", 1.0),
        row(GT, "i1", "audio_quality", "speech", 4.0, paired_with="muted"),
    ]
    doc = aggregate_prism(frame(rows))
    assert doc["systems"]["muted"]["subsets"]["off_screen"]["final"] is None
    assert doc["ground_truth"]["subsets"]["off_screen"]["final"] is None
    assert any("beside a system under test" in line for line in doc["not_computed"])


def test_leaderboard_marks_diagnostic_systems(table: pd.DataFrame, tmp_path: Path) -> None:
    board = BENCHMARKS.get("prism").leaderboard(table, RunFacts(diagnostic=frozenset({"probe"})))
    assert isinstance(board.model, PrismLeaderboard)
    assert board.model.systems["probe"].diagnostic is True and board.model.systems["sys-a"].diagnostic is None
    model = assert_round_trips(PrismLeaderboard, with_report_facts(board.document, GENERATION), tmp_path)
    assert model.systems["probe"].diagnostic is True
    text = leaderboard_text(board.document)
    assert "probe [diagnostic]" in text and "sys-a [diagnostic]" not in text
    assert "[diagnostic] = diagnostic probe" in text
    assert "[diagnostic]" not in leaderboard_text(aggregate_prism(table))
    page = leaderboard_html(board.document)
    assert "probe <small>[diagnostic]</small>" in page and "sys-a <small>" not in page


def test_suite_systems_diagnostic_by_kind_or_flag() -> None:
    prism = BENCHMARKS.get("prism")
    systems = {
        "ground-truth": config_model("ground-truth").model_validate({"kind": "ground-truth"}),
        "muted": config_model("muted").model_validate({"kind": "muted"}),
        "kept": config_model("offset").model_validate({"kind": "offset", "diagnostic": False}),
        "other": config_model("import").model_validate({"kind": "import", "path": "x", "diagnostic": True}),
    }
    assert prism.diagnostic_systems(systems) == {"muted", "other"}
    assert BENCHMARKS.get("storybench").diagnostic_systems(systems) == {"other"}
    # Unset, the field is left out of dumps (configs and cache keys of existing suites are unchanged).
    assert SystemConfig(kind="muted").model_dump() == {"kind": "muted", "seed": None, "path": None}
    assert SystemConfig(kind="muted", diagnostic=False).model_dump()["diagnostic"] is False


def test_suite_file_marks_systems(tmp_path: Path) -> None:
    from omnieval.config import load_suite

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "suite: diag\nbenchmark: prism\ndataset: {name: s, path: data/prism-sample}\n"
        "systems:\n  model: {kind: import, path: x}\n  muted: {kind: muted}\n"
        "  offset: {kind: offset, diagnostic: false}\n  baseline: {kind: import, path: y, diagnostic: true}\n",
        encoding="utf-8",
    )
    config = load_suite(suite, check=False)
    assert config.bench.diagnostic_systems(config.systems) == {"muted", "baseline"}


def _cli_json(args: list[str], capsys: Any) -> dict[str, Any]:
    assert main(["aggregate", *args, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_cli_aggregate_on_a_table(table: pd.DataFrame, tmp_path: Path, capsys: Any) -> None:
    with_muted, without = tmp_path / "with.parquet", tmp_path / "without.parquet"
    write_scores(_renamed(table, "probe", "muted"), with_muted)
    write_scores(_without(table, "probe"), without)
    base = _cli_json([str(without)], capsys)
    added = _cli_json([str(with_muted)], capsys)
    assert added["systems"]["sys-a"] == base["systems"]["sys-a"]
    assert added["systems"]["muted"]["diagnostic"] is True
    plain = _cli_json([str(with_muted), "--no-default-diagnostics"], capsys)
    assert (
        "diagnostic" not in plain["systems"]["muted"]
        and plain["systems"]["sys-a"] != base["systems"]["sys-a"]
    )
    named = _cli_json([str(with_muted), "--no-default-diagnostics", "--diagnostic", "sys-b"], capsys)
    assert named["systems"]["sys-b"]["diagnostic"] is True and "diagnostic" not in named["systems"]["muted"]
    both = _cli_json([str(with_muted), "--diagnostic", "sys-b", "--diagnostic", "nobody"], capsys)
    assert {s for s, e in both["systems"].items() if e.get("diagnostic")} == {"muted", "sys-b"}
    assert main(["aggregate", str(with_muted)]) == 0
    assert "muted [diagnostic]" in capsys.readouterr().out
