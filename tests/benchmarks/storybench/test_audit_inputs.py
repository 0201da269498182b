"""Storybench's audit hook on a generated dataset with a planted reprint and a planted 8-word leak,
and the duplicate-cluster sensitivity analysis reading the audit's clusters without a hand-made file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from omnieval.analysis import AnalysisConfig, run_analyses
from omnieval.audit import AuditOptions, default_audit_dir, run_audit
from omnieval.benchmarks import get_benchmark
from omnieval.benchmarks.storybench._audit import FIELDS
from omnieval.benchmarks.storybench._sample import BOOKS, write_sample
from omnieval_testkit.storybench_synthetic import make_scores

FOX, LIGHTHOUSE, ROBOT = BOOKS[0], BOOKS[1], BOOKS[2]
SOURCE_PAGE = LIGHTHOUSE.pages[2]
LEAKED = " ".join(SOURCE_PAGE.text.split()[:9])


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FOX, a reprint of FOX under another collection (same texts and pictures), the robot book
    whose first scene quotes nine words of a lighthouse page, and the lighthouse book."""
    reprint = FOX.model_copy(update={"source": "omnieval-reprints", "key": "pip-reprinted"})
    leaked = ROBOT.steps[0].model_copy(update={"scene": f"outside, {LEAKED}"})
    robot = ROBOT.model_copy(update={"steps": (leaked, *ROBOT.steps[1:])})
    root = tmp_path_factory.mktemp("planted") / "storybench-planted"
    write_sample(root, size=64, books=(FOX, reprint, robot, LIGHTHOUSE))
    return root


@pytest.fixture(scope="module")
def audited(planted: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict]:  # type: ignore[type-arg]
    bench = get_benchmark("storybench")
    inputs = bench.audit_inputs(bench.load(planted))
    cwd = tmp_path_factory.mktemp("cwd")
    outcome = run_audit(inputs, AuditOptions(), cwd / default_audit_dir(planted))
    return cwd, outcome.clusters, outcome.overlaps


def test_pages_are_listed_once_with_their_book_and_conditions(planted: Path) -> None:
    bench = get_benchmark("storybench")
    inputs = bench.audit_inputs(bench.load(planted))
    assert inputs.fields == FIELDS
    n_pages = sum(len(b.pages) for b in (FOX, FOX, ROBOT, LIGHTHOUSE))
    assert len(inputs.pages) == n_pages == len({p.id for p in inputs.pages})
    first = inputs.instances[0]
    assert first.pages == (f"{FOX.source}/{FOX.key}/p01", f"{FOX.source}/{FOX.key}/p02")
    assert first.target == first.pages[1]
    fields = [f for f, _ in first.conditions]
    assert fields[:4] == ["topic", "scene", "text_instruction", "ambient_sound"]
    assert "character_action" in fields and "character_speech_intent" in fields
    assert inputs.digest == bench.fingerprint(bench.load(planted)).digest


def test_the_reprint_is_one_cluster_of_both_books(audited: tuple[Path, dict, dict]) -> None:  # type: ignore[type-arg]
    _, clusters, _ = audited
    fox = [f"{FOX.source}/{FOX.key}/{a.key}__{b.key}" for a, b in zip(FOX.pages, FOX.pages[1:], strict=False)]
    reprint = [i.replace(f"{FOX.source}/{FOX.key}", "omnieval-reprints/pip-reprinted") for i in fox]
    assert [sorted(c["members"]) for c in clusters["clusters"]] == [sorted(fox + reprint)]
    kinds = {p["kind"] for p in clusters["clusters"][0]["pairs"]}
    assert kinds == {"text", "image"}


def test_the_planted_leak_is_listed_for_its_instance(audited: tuple[Path, dict, dict]) -> None:  # type: ignore[type-arg]
    _, _, overlaps = audited
    leaking = {r["id"]: r["shared_spans"] for r in overlaps["instances"] if r["shared_spans"]}
    robot = f"{ROBOT.source}/{ROBOT.key}/{ROBOT.pages[0].key}__{ROBOT.pages[1].key}"
    assert list(leaking) == [robot]
    (span,) = leaking[robot]
    assert span["field"] == "scene" and span["words"] == 9
    assert span["pages"] == [f"{LIGHTHOUSE.source}/{LIGHTHOUSE.key}/{SOURCE_PAGE.key}"]


def test_duplicate_sensitivity_reads_the_audit_without_a_file(
    audited: tuple[Path, dict, dict],  # type: ignore[type-arg]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cwd, clusters, _ = audited
    ids = clusters["instance_ids"]
    frame = make_scores(benchmark="storybench", n_systems=4, n_instances=len(ids), seed=3)
    rename = dict(zip(sorted(frame["instance_id"].unique()), ids, strict=True))
    frame = frame.assign(instance_id=frame["instance_id"].map(rename))
    assert isinstance(frame, pd.DataFrame)
    monkeypatch.chdir(cwd)
    outputs = run_analyses(frame, tmp_path / "a", only=["duplicate_sensitivity"], config=AnalysisConfig())
    assert outputs["duplicate_sensitivity"].status == "ok", outputs["duplicate_sensitivity"].reason
    doc = json.loads((tmp_path / "a" / "duplicate_sensitivity.json").read_text())
    assert doc["clusters_source"] == "audit"
    assert Path(doc["clusters_file"]) == Path("state/audit/storybench-planted/clusters.json")
    assert doc["n_flagged_instances"] == 10 and doc["modes"]["drop_all"]["n_removed"] == 10
    assert doc["modes"]["keep_one"]["n_removed"] == 9
    # an explicit file still wins
    own = tmp_path / "mine.json"
    own.write_text(json.dumps([ids[:2]]))
    run_analyses(frame, tmp_path / "b", only=["duplicate_sensitivity"], config=AnalysisConfig(duplicates=own))
    doc = json.loads((tmp_path / "b" / "duplicate_sensitivity.json").read_text())
    assert doc["clusters_source"] == "config" and doc["n_flagged_instances"] == 2
