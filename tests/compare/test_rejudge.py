"""Counterfactual re-judging: the judge / system split on synthetic runs, its failure modes, and one
real end-to-end check (two runs whose only difference is a judge prompt edit)."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from omnieval.compare import (
    GO,
    INCONCLUSIVE,
    NO_GO,
    compare_runs,
    nightly_regression,
    read_run,
    rejudge_comparison,
    rejudge_lines,
    split_effects,
)
from omnieval.config import RegressionConfig, SuiteConfig
from omnieval.errors import DataError

from .conftest import LINEAGE, storybench_scores

CONFIG = RegressionConfig(bootstrap_draws=500)


def _new_prompt_lineage() -> dict[str, Any]:
    lineage = copy.deepcopy(LINEAGE)
    lineage["judges"]["cpu"]["prompts"]["text"]["sha256"] = "b" * 64
    return lineage


def _shift_judge(scores: pd.DataFrame, by: float, *, system: str | None = None) -> pd.DataFrame:
    out = scores.copy()
    rows = out["judge"] != ""
    if system is not None:
        rows &= out["system"] == system
    out.loc[rows, "value"] = out.loc[rows, "value"] + by
    return out


def test_split_of_a_judge_change_and_a_system_drop(make_run: Callable[..., Path]) -> None:
    """A' = A with every judge score +1 (the new prompt is more lenient); B = A' with beta 1 lower."""
    from omnieval.compare._rejudge import counterfactual_run

    scores_a = storybench_scores(seed=0)
    scores_a_new_judge = _shift_judge(scores_a, +1.0)
    scores_b = _shift_judge(scores_a_new_judge, -1.0, system="beta")
    run_a = read_run(make_run("aaaa0001", scores_a))
    run_b = read_run(make_run("bbbb0002", scores_b, lineage=_new_prompt_lineage()))

    plain = compare_runs(run_a, run_b, CONFIG)
    assert plain["verdict"] == INCONCLUSIVE
    assert any("judge prompt changed" in r for r in plain["reasons"])

    rejudged = counterfactual_run(run_a, run_b, scores_a_new_judge)
    assert rejudged.lineage["judges"] == run_b.lineage["judges"]
    effects, system_doc = split_effects(run_a, rejudged, run_b, CONFIG)

    # Only judge-based components are split (BERTScore does not depend on the judges).
    assert set(effects) == {"alpha", "beta"}
    assert set(effects["alpha"]) == {"judge.text", "total_average"}
    for system in ("alpha", "beta"):
        judge = effects[system]["judge.text"]["judge_effect"]
        assert judge == {
            "delta": pytest.approx(1.0),
            "ci_low": pytest.approx(1.0),
            "ci_high": pytest.approx(1.0),
        }
    assert effects["alpha"]["judge.text"]["system_effect"] == {"delta": 0.0, "ci_low": 0.0, "ci_high": 0.0}
    beta = effects["beta"]["judge.text"]["system_effect"]
    assert beta["delta"] == pytest.approx(-1.0) and beta["ci_high"] == pytest.approx(-1.0)
    # The two effects add up to the plain delta (every instance is valid in all three runs).
    for system in ("alpha", "beta"):
        for component in ("judge.text", "total_average"):
            cell = effects[system][component]
            total = cell["judge_effect"]["delta"] + cell["system_effect"]["delta"]
            assert total == pytest.approx(plain["systems"][system][component]["delta"])
    # With the judge held fixed the drop of beta is a real regression.
    assert system_doc["verdict"] == NO_GO
    assert not system_doc["changed"]["judges"] and not system_doc["changed"]["prompts"]
    assert any("beta / judge.text" in r for r in system_doc["reasons"])


def _suite(tmp_path: Path, *, rejudge: bool = True) -> SuiteConfig:
    return SuiteConfig.model_validate(
        {
            "suite": "demo",
            "systems": {"alpha": {"kind": "oracle"}, "beta": {"kind": "oracle"}},
            "runs_dir": str(tmp_path / "runs"),
            "state_dir": str(tmp_path / "state"),
            "regression": {"bootstrap_draws": 500, "rejudge": rejudge},
        }
    )


def test_nothing_to_rejudge_without_a_judge_change(make_run: Callable[..., Path], tmp_path: Path) -> None:
    run_a, run_b = read_run(make_run("aaaa0001")), read_run(make_run("bbbb0002"))
    document = compare_runs(run_a, run_b, CONFIG)
    out = rejudge_comparison(dict(document), run_a, run_b, _suite(tmp_path), CONFIG)
    assert out["verdict"] == document["verdict"] == GO
    assert out["rejudge"]["performed"] is False and "nothing to re-judge" in out["rejudge"]["reason"]
    assert rejudge_lines(out)[-1].startswith("re-judging: not performed")


def test_missing_candidates_are_named(make_run: Callable[..., Path], tmp_path: Path) -> None:
    folder_a = make_run("aaaa0001")
    run_b = read_run(make_run("bbbb0002", lineage=_new_prompt_lineage()))
    shutil.rmtree(folder_a / "candidates" / "beta")
    run_a = read_run(folder_a)
    document = compare_runs(run_a, run_b, CONFIG)
    with pytest.raises(DataError) as raised:
        rejudge_comparison(document, run_a, run_b, _suite(tmp_path), CONFIG)
    message = str(raised.value)
    assert "candidates are missing" in message and str(folder_a / "candidates" / "beta") in message
    assert str(folder_a / "candidates" / "alpha") not in message


def test_nightly_records_a_failed_rejudge_and_keeps_the_plain_verdict(
    make_run: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("omnieval.compare._mlflow.set_run_tags", lambda run_id, tags: None)
    folder_a = make_run("aaaa0001")
    shutil.rmtree(folder_a / "candidates")
    folder_b = make_run("bbbb0002", lineage=_new_prompt_lineage())
    document = nightly_regression(_suite(tmp_path), folder_b, run_id="bbbb0002")
    assert document["verdict"] == INCONCLUSIVE
    assert document["rejudge"]["performed"] is False
    assert "candidates are missing" in document["rejudge"]["error"]
    assert any(r.startswith("re-judging failed, the plain verdict stands") for r in document["reasons"])
    saved = json.loads((folder_b / "regression.json").read_text())
    assert saved["rejudge"] == document["rejudge"]
    # Without the option the nightly does not re-judge.
    plain = nightly_regression(_suite(tmp_path, rejudge=False), folder_b, run_id="bbbb0002")
    assert "rejudge" not in plain


ROOT = Path(__file__).resolve().parents[2]
SHIPPED_PANEL = ROOT / "src" / "omnieval" / "benchmarks" / "storybench" / "panels" / "cpu.yaml"
PROMPT_WORD, EDITED_WORD = (
    "one short sentence about that criterion",
    "one brief sentence about that criterion",
)


def prompt_reading_judge(request: Any) -> str:
    """A scripted judge (no model) whose scores follow the wording of the system prompt: 8 with the
    shipped wording, 6 with the edited one, so a prompt edit moves every score as a real judge's
    might. The real CPU judge runs in tests/e2e/test_nightly_flow.py; here the point is the
    re-judging of two real runs, not the model."""
    from tests.judges.judge_scripts import verdict

    track = "speech" if "<candidate_speech_analysis>" in request.messages[-1].text else "text"
    score = 8 if PROMPT_WORD in request.messages[0].text else 6
    return verdict(track, (score,) * 4, reason="scripted")


def _scripted_panel(path: Path, *, edited: bool) -> None:
    """The shipped cpu panel (its prompts, framing and tracks) with the scripted judge as its backend."""
    import yaml

    panel = yaml.safe_load(SHIPPED_PANEL.read_text(encoding="utf-8"))
    judges = [judge for track in panel["tracks"].values() for judge in track.get("judges", [])]
    # The YAML aliases one judge under both tracks: edit each distinct mapping once.
    for judge in {id(j): j for j in [*judges, panel["repair"]]}.values():
        judge["backend"] = {"kind": "scripted", "script": f"{__name__}:prompt_reading_judge"}
        judge["model"] = "scripted-prompt-reader"
        prefix = judge.get("framing", {}).get("system_prefix")
        if prefix is not None:
            assert prefix.count(PROMPT_WORD) == 1
            judge["framing"]["system_prefix"] = prefix.replace(PROMPT_WORD, EDITED_WORD) if edited else prefix
    path.write_text(yaml.safe_dump(panel, sort_keys=False), encoding="utf-8")


def _real_suite(tmp_path: Path, name: str, panel: Path) -> Path:
    """pipelines/nightly.yaml cut to one system on one transition, judged by ``panel``.

    Each run gets its own state folder (so the second run judges again: the judge stage's content
    key names a panel file, not its bytes); both share the judge cache beside them (state/.cache).
    """
    import yaml

    suite = yaml.safe_load((ROOT / "pipelines" / "nightly.yaml").read_text())
    suite.update(
        suite="rejudge",
        state_dir=str(tmp_path / "state" / name),
        runs_dir=str(tmp_path / "runs"),
        systems={"oracle": {"kind": "oracle"}},
        judges={"panels": [str(panel)]},
        drift={"enabled": False},
        analyses={"enabled": False},
        tracking={"experiment": "omnieval/rejudge-e2e"},
        regression={"bootstrap_draws": 500},
    )
    suite["dataset"] = {**suite["dataset"], "path": str(ROOT / "data" / "storybench-sample"), "limit": 1}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.usefixtures("prefect_api", "mlflow_uri")
def test_rejudge_two_real_runs_differing_only_in_a_judge_prompt_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two real runs of the nightly flow (one system, one transition: a verdict per judged track)
    whose only difference is one word of the judge's system prompt; the judge is scripted
    (:func:`prompt_reading_judge`), everything else is the shipped cpu panel."""
    from omnieval.cli import main
    from omnieval.runner import run_suite

    panel = tmp_path / "panels" / "cpu.yaml"
    panel.parent.mkdir()
    _scripted_panel(panel, edited=False)
    folder_a = Path(run_suite(_real_suite(tmp_path, "a", panel), sync_dvc=False)["run_folder"])
    _scripted_panel(panel, edited=True)
    folder_b = Path(run_suite(_real_suite(tmp_path, "b", panel), sync_dvc=False)["run_folder"])
    capsys.readouterr()  # the runs' own summaries

    assert main(["compare", str(folder_a), str(folder_b), "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["verdict"] == INCONCLUSIVE
    assert any("framing.system_prefix" in r for r in plain["reasons"]), plain["reasons"]
    assert not plain["changed"]["candidates"]  # the oracle wrote the same bytes both nights

    assert main(["compare", str(folder_a), str(folder_b), "--json", "--rejudge"]) == 0
    document = json.loads(capsys.readouterr().out)
    block = document["rejudge"]
    assert block["performed"] and block["verdict_basis"] == "system_effect"
    assert block["plain_verdict"] == INCONCLUSIVE
    assert document["verdict"] == block["verdict"] == GO, document["reasons"]
    cells = block["systems"]["oracle"]
    assert {"judge.text", "judge.speech"} <= set(cells)
    for component, cell in cells.items():
        judge = cell["judge_effect"]
        assert judge["ci_low"] <= judge["delta"] <= judge["ci_high"], component
        # Same candidates, same (new) judge, same cache: A' and B are the same verdicts.
        assert cell["system_effect"] == {"delta": 0.0, "ci_low": 0.0, "ci_high": 0.0}, component
        plain_delta = plain["systems"]["oracle"][component]["delta"]
        assert judge["delta"] == pytest.approx(plain_delta), component
        # The scripted judge gives 8 with the shipped wording and 6 with the edited one.
        if component.startswith("judge."):
            assert judge["delta"] == pytest.approx(-2.0), (component, judge)
    # B's judges had already judged these very bytes: re-judging A paid nothing.
    cost = block["cost"]
    # One judge call per judged track at least (text, speech, image, integrated), every one a hit.
    assert cost["judge_calls"] >= 4 and cost["cache_hits"] == cost["judge_calls"], cost
    assert cost["model_calls"] == 0, cost
    assert cost["panels"] == {str(panel): {"model_calls": 0, "cache_hits": cost["judge_calls"]}}, cost

    assert main(["compare", str(folder_a), str(folder_b), "--rejudge"]) == 0
    lines = capsys.readouterr().out
    assert (
        lines.startswith("verdict: GO")
        and "judge effect" in lines
        and f"0 made, {cost['judge_calls']} cached" in lines
    )
