"""The deviation ledger's record (FORMATS.md section 12): entries, ids, reading it back from lineage.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omnieval.benchmarks import BENCHMARKS, RunSettings
from omnieval.config import load_suite
from omnieval.errors import DataError
from omnieval.lineage import Deviation, build_lineage, check_ledger, deviations_tag, read_deviations

ROOT = Path(__file__).resolve().parents[1]


def test_an_entry_needs_a_slug_and_both_sentences() -> None:
    assert Deviation("per-subset-limit", "What.", "none").as_dict() == {
        "id": "per-subset-limit",
        "what": "What.",
        "effect": "none",
    }
    for bad in ("Per Subset", "per_subset", "-per", "per--subset", ""):
        with pytest.raises(ValueError, match="not a slug"):
            Deviation(bad, "What.", "none")
    with pytest.raises(ValueError, match="'effect' must be non-empty"):
        Deviation("per-subset-limit", "What.", " ")
    with pytest.raises(ValueError, match="declared twice"):
        check_ledger([Deviation("a", "w", "e"), Deviation("a", "w2", "e2")])


def test_lineage_records_the_ledger_in_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no data.dvc, no git checkout: the ledger does not depend on them
    ledger = [
        Deviation("prompt-paraphrase", "Own words.", "Unmeasured."),
        Deviation("dataset-limit", "2.", "Over 2."),
    ]
    parts: dict[str, Any] = dict(
        suite="s", dataset_name="d", dataset_path=Path("d"), dataset_digest="x", code_digest="c",
        metrics={}, judges={}, systems={}, seeds={},
    )  # fmt: skip
    lineage = build_lineage(**parts, deviations=ledger)
    assert lineage["deviations"] == [d.as_dict() for d in ledger]
    assert read_deviations(lineage, "lineage.json") == ledger
    assert build_lineage(**parts)["deviations"] == []  # the run followed the protocol
    assert deviations_tag(ledger) == "prompt-paraphrase,dataset-limit" and deviations_tag([]) == "none"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ("judge-substitute-cpu", "field 'deviations': expected a list, got str"),
        (["judge-substitute-cpu"], r"deviations\[0\]: expected an object with id, what and effect"),
        (
            [{"id": "a", "what": "w", "effect": "e"}, {"id": "b", "what": "w"}],
            r"deviations\[1\], field 'effect'",
        ),
        ([{"id": "Not A Slug", "what": "w", "effect": "e"}], r"deviations\[0\]: deviation id 'Not A Slug'"),
    ],
)
def test_a_malformed_ledger_names_the_entry_and_field(entries: object, message: str) -> None:
    with pytest.raises(DataError, match=message):
        read_deviations({"deviations": entries}, "runs/s/r/lineage.json")
    assert read_deviations({}, "old/lineage.json") is None  # written before the ledger existed


def test_a_declared_benchmark_has_none_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/caption_f1 declares no deviation: only the framework's dataset limit can apply."""
    # Loading the example registers caption_f1; later tests on this worker list the shipped ones.
    with BENCHMARKS.restoring():
        _declared_ledger(monkeypatch)


def _declared_ledger(monkeypatch: pytest.MonkeyPatch) -> None:
    suite = load_suite(ROOT / "examples" / "caption_f1" / "suite.yaml")
    bench = suite.bench
    assert bench.deviation_ledger(RunSettings(panels=suite.panels, metrics=suite.metrics)) == []
    limited = bench.deviation_ledger(RunSettings(dataset_limit=3))
    assert [d.id for d in limited] == ["dataset-limit"]
    assert "first 3 instances" in limited[0].what
    one = bench.deviation_ledger(RunSettings(dataset_limit=1))[0]
    assert one.what.startswith("Only the first instance of the dataset is evaluated (dataset.limit 1)")
    assert BENCHMARKS.get("storybench").deviation_ledger(RunSettings(dataset_limit=3))[-1] == limited[0]
    # A declared benchmark states the ones every run has as data.
    own = Deviation("metric-tokenizer", "Whitespace tokens, not the paper's tokenizer.", "F1 may differ.")
    monkeypatch.setattr(type(bench), "paper_deviations", (own,))
    assert bench.deviation_ledger(RunSettings(dataset_limit=3)) == [own, limited[0]]
