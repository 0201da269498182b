"""Re-judging a run another machine made (issue 47): its candidates come from the tracking server.

A real ``mlflow server`` on loopback (sqlite, served artifacts; the fixture of
``tests/night/test_team_nights.py``) and two project folders as two machines. Machine A tracks a
run with ``log_suite_run`` and the track stage's candidate logging; machine B fetches the run
folder as the nightly does (``previous_run_on_server``) and locates the candidates re-judging needs.
The judging itself is covered by ``test_rejudge.py`` (a real end-to-end run); here a stand-in for
:func:`rejudged_scores` records which folders it was given.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.night import test_team_nights

from omnieval.compare import compare_runs, read_run, rejudge_comparison, rejudge_lines
from omnieval.compare._mlflow import FETCHED_CANDIDATES, previous_run_on_server
from omnieval.compare._rejudge import RejudgeCost, locate_candidates, rejudge_document
from omnieval.config import RegressionConfig, SuiteConfig
from omnieval.errors import DataError
from omnieval.stages.track import _log_candidates
from omnieval.tracking import log_suite_run
from omnieval.tracking.candidates import CANDIDATES_ARTIFACTS, CandidateManifest

from .conftest import LINEAGE, storybench_scores

server = test_team_nights.server
"""The real ``mlflow server`` (module-scoped here too)."""
machines = test_team_nights.machines
"""Machines A and B: two project folders tracking on that server, credentials and offline mode cleared."""

EXPERIMENT = "omnieval/fetch-rejudge"
CONFIG = RegressionConfig(bootstrap_draws=200)
ALPHA = {f"text/{i}/generated.txt": f"alpha's story {i}" for i in range(3)}
# Two of beta's files hold the same bytes: stored on the server once.
BETA = {
    "text/0/generated.txt": "beta's story",
    "text/1/generated.txt": "beta's story",
    "text/2/generated.txt": "end",
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def _rejudging_suite(name: str, b: Path, tmp_path: Path) -> SuiteConfig:
    """Machine B's suite ``name`` with ``regression.rejudge`` on, over systems alpha and beta."""
    return SuiteConfig.model_validate(
        {
            "suite": name,
            "systems": {"alpha": {"kind": "oracle"}, "beta": {"kind": "oracle"}},
            "runs_dir": str(b / "runs"),
            "state_dir": str(tmp_path / "state"),
            "regression": {"bootstrap_draws": 200, "rejudge": True},
        }
    )


def _track_on_a(a: Path, *, log_candidates: bool = True, suite: str = "demo") -> tuple[str, Path]:
    """Machine A's run: alpha's candidates copied into the run folder, beta imported from
    ``a/imported/beta``; tracked on the server; returns (run id, the imported folder)."""
    imported = a / "imported" / suite / "beta"
    _write(imported, BETA)

    def build(run_id: str, _analyses: dict[str, str]) -> Path:
        folder = a / "runs" / suite / run_id
        folder.mkdir(parents=True)
        (folder / "lineage.json").write_text(json.dumps({"run_id": run_id, **LINEAGE}), encoding="utf-8")
        storybench_scores().to_parquet(folder / "scores.parquet")
        (folder / "leaderboard.json").write_text("{}", encoding="utf-8")
        _write(folder / "candidates" / "alpha", ALPHA)
        pointer = {"imported_from": str(imported), "missing": {}, "problems": []}
        (folder / "candidates" / "beta").mkdir(parents=True)
        (folder / "candidates" / "beta" / "IMPORTED.json").write_text(json.dumps(pointer), encoding="utf-8")
        return folder

    ids = log_suite_run(
        experiment=EXPERIMENT,
        suite=suite,
        config={},
        tags={"omnieval.benchmark": "storybench"},
        dataset_frame=pd.DataFrame({"instance_id": ["book/p00__p01"]}),
        dataset_name="demo",
        dataset_source=str(a),
        dataset_digest="0" * 64,
        system_metrics={"alpha": {}, "beta": {}},
        system_params={},
        artifacts=[],
        run_folder_for=build,
    )
    if log_candidates:
        _log_candidates(ids.parent, a / "runs" / suite / ids.parent)
    return ids.parent, imported


def _fetch_on_b(b: Path, suite: str = "demo") -> Path:
    folder = previous_run_on_server(EXPERIMENT, suite, None, b / "runs")
    assert folder is not None and folder.is_relative_to(b / "runs")
    return folder


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_imported_candidates_are_fetched_by_content_and_verified(machines: tuple[Path, Path]) -> None:
    from mlflow.tracking import MlflowClient

    a, b = machines
    run_id, imported = _track_on_a(a, suite="imports")
    blobs = MlflowClient().list_artifacts(run_id, f"{CANDIDATES_ARTIFACTS}/blobs")
    assert len(blobs) == 2  # beta's three files hold two distinct contents; alpha's are under run/
    # Machine A's imported folder changes after the run: B must judge what the run read, and the
    # path the pointer names (here reachable) must not be read at all.
    _write(imported, {rel: "rewritten later" for rel in BETA})

    folder = _fetch_on_b(b, "imports")
    roots, block = locate_candidates(read_run(folder), ["alpha", "beta"])
    assert roots == {"alpha": folder / "candidates" / "alpha", "beta": folder / FETCHED_CANDIDATES / "beta"}
    assert _files(roots["alpha"]) == ALPHA and _files(roots["beta"]) == BETA
    assert block is not None and block["fetched_from"]["run_id"] == run_id and "note" not in block
    assert block["systems"] == {
        "alpha": {"source": "run_folder", "downloaded": 0, "files": 3, "bytes": 45, "verified": True},
        "beta": {"source": "server", "downloaded": 2, "files": 3, "bytes": 27, "verified": True},
    }
    # A second comparison reuses the verified copy.
    again = locate_candidates(read_run(folder), ["beta"])[1]
    assert again is not None and again["systems"]["beta"]["downloaded"] == 0
    # Only the systems asked for are fetched.
    (folder / FETCHED_CANDIDATES / "beta").rename(folder / "beta-before")
    only = locate_candidates(read_run(folder), ["alpha"])[1]
    assert only is not None and set(only["systems"]) == {"alpha"}
    assert not (folder / FETCHED_CANDIDATES / "beta").exists()


def test_a_fetched_candidate_that_differs_from_the_manifest_is_named(machines: tuple[Path, Path]) -> None:
    a, b = machines
    _track_on_a(a, suite="tampered")
    folder = _fetch_on_b(b, "tampered")
    (folder / "candidates" / "alpha" / "text" / "1" / "generated.txt").write_text("edited on B")
    (folder / "candidates" / "alpha" / "text" / "9").mkdir()
    (folder / "candidates" / "alpha" / "text" / "9" / "generated.txt").write_text("extra")
    with pytest.raises(DataError) as raised:
        locate_candidates(read_run(folder), ["alpha", "beta"])
    message = str(raised.value)
    assert message.startswith(f"cannot re-judge run A ({folder}")
    assert "alpha: " in message and "differs from the run's manifest" in message
    assert "text/1/generated.txt has SHA-256" in message and "text/9/generated.txt is not in" in message
    assert "beta" not in message.split("\n", 1)[1]  # beta checked out


def test_a_blob_whose_bytes_do_not_match_its_hash_is_refused(
    machines: tuple[Path, Path], tmp_path: Path
) -> None:
    import hashlib

    from mlflow.tracking import MlflowClient

    a, b = machines
    run_id, _ = _track_on_a(a, suite="badblob")
    sha = hashlib.sha256(BETA["text/2/generated.txt"].encode()).hexdigest()
    forged = tmp_path / "forged" / sha
    forged.parent.mkdir()
    forged.write_text("not the bytes the manifest names")
    MlflowClient().log_artifact(run_id, str(forged), artifact_path="candidates/blobs")  # overwrites it
    folder = _fetch_on_b(b, "badblob")
    with pytest.raises(DataError) as raised:
        locate_candidates(read_run(folder), ["alpha", "beta"])
    assert f"beta: candidates/blobs/{sha} on http://127.0.0.1:" in str(raised.value)
    assert f"not {sha[:12]}" in str(raised.value)
    assert not (folder / FETCHED_CANDIDATES / "beta").exists()  # nothing half-fetched is left to judge


def test_a_run_tracked_without_candidates_fails_the_rejudge_block_clearly(
    machines: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = machines
    run_id, imported = _track_on_a(a, log_candidates=False, suite="old")
    folder = _fetch_on_b(b, "old")
    run_a = read_run(folder)
    # The copied system alone: used from the fetched folder, unverified, and said so.
    roots, block = locate_candidates(run_a, ["alpha"])
    assert roots == {"alpha": folder / "candidates" / "alpha"}
    assert block is not None and block["systems"]["alpha"]["verified"] is False
    assert f"run {run_id} has no candidates/manifest.json" in block["note"]

    # The nightly's re-judging with the imported system: recorded as failed, the plain verdict stands.
    lineage = copy.deepcopy(LINEAGE)
    lineage["judges"]["cpu"]["prompts"]["text"]["sha256"] = "b" * 64
    new = b / "runs" / "old" / "bbbb0002"
    new.mkdir()
    (new / "lineage.json").write_text(json.dumps({"run_id": "bbbb0002", **lineage}))
    storybench_scores().to_parquet(new / "scores.parquet")
    run_b = read_run(new)
    suite = _rejudging_suite("old", b, tmp_path)
    document = compare_runs(run_a, run_b, CONFIG)
    out = rejudge_document(document, run_a, run_b, suite, CONFIG)
    assert out["rejudge"]["performed"] is False
    error = out["rejudge"]["error"]
    assert f"beta: imported from {imported} on the machine that ran it, and not on" in error
    assert "has no candidates/manifest.json" in error
    assert any(
        r.startswith("re-judging failed, the plain verdict stands: cannot re-judge run A")
        for r in out["reasons"]
    )
    assert not (folder / FETCHED_CANDIDATES / "beta").exists()


def test_the_rejudge_block_names_the_fetched_candidates(
    machines: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = machines
    run_id, _ = _track_on_a(a, suite="block")
    folder = _fetch_on_b(b, "block")
    run_a = read_run(folder)
    lineage = copy.deepcopy(LINEAGE)
    lineage["judges"]["cpu"]["prompts"]["text"]["sha256"] = "b" * 64
    new = b / "runs" / "block" / "bbbb0002"
    new.mkdir()
    (new / "lineage.json").write_text(json.dumps({"run_id": "bbbb0002", **lineage}))
    storybench_scores().to_parquet(new / "scores.parquet")
    run_b = read_run(new)
    given: dict[str, Any] = {}

    def stand_in(
        run: Any, config: Any, systems: Any, *, roots: Any = None
    ) -> tuple[pd.DataFrame, RejudgeCost]:
        # Stands in for the judges (test_rejudge.py judges for real): A' = B's scores.
        given["roots"] = dict(roots)
        return run_b.scores, RejudgeCost(0, 60, {"cpu": {"model_calls": 0, "cache_hits": 60}})

    monkeypatch.setattr("omnieval.compare._rejudge.rejudged_scores", stand_in)
    suite = _rejudging_suite("block", b, tmp_path)
    out = rejudge_comparison(compare_runs(run_a, run_b, CONFIG), run_a, run_b, suite, CONFIG)
    assert given["roots"] == {
        "alpha": folder / "candidates" / "alpha",
        "beta": folder / FETCHED_CANDIDATES / "beta",
    }
    block = out["rejudge"]
    assert block["performed"] is True
    assert block["candidates"]["fetched_from"]["run_id"] == run_id
    assert block["candidates"]["systems"]["beta"]["source"] == "server"
    line = next(x for x in rejudge_lines(out) if "candidates from run" in x)
    assert line.startswith(f"  run A's candidates from run {run_id} on http://127.0.0.1:")
    assert "alpha 3 files (run_folder, verified), beta 3 files (server, verified)" in line


def test_no_candidates_are_logged_without_a_tracking_server(mlflow_uri: str, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    run_id, _ = _track_on_a(tmp_path)  # the embedded store: the track stage logs no manifest
    assert not MlflowClient().list_artifacts(run_id, CANDIDATES_ARTIFACTS)


def test_a_manifest_path_outside_the_folder_is_refused() -> None:
    entry = {"tree_sha256": "0" * 64, "files": [{"path": "../x", "bytes": 1, "sha256": "0" * 64}]}
    with pytest.raises(ValueError, match="not a relative path inside"):
        CandidateManifest.model_validate({"run_id": "r", "systems": {"beta": entry}})
