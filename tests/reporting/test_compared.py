"""A/B candidates in instances.html: which (instance, system) candidates changed since the compared
run (SHA-256 of each output), what the page embeds for a changed and an unchanged pair, the "changed
outputs" filter, the top movers' links, ``omnieval view``'s ``_compared/`` route and the pair opened
in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from PIL import Image
from tests._browser import chromium, fetch_statuses, wait_ready

from omnieval.benchmarks import get_benchmark
from omnieval.reporting import changed_outputs, output_digests, what_moved
from omnieval.scores import SCORE_COLUMNS
from omnieval.stages import compared_run, write_run_instances

IDS = ("book/p01__p02", "book/p02__p03")


def _wav(path: Path, level: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(level.to_bytes(2, "little", signed=True) * 800)


def _png(path: Path, colour: tuple[int, int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), colour).save(path)


def _text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _candidates(folder: Path, *, lantern: str, colour: tuple[int, int, int], level: int) -> None:
    """alpha: text, image and speech for both instances (instance 0 as given, 1 fixed); beta: text."""
    alpha = folder / "candidates" / "alpha"
    _text(alpha / "text" / "0" / "generated.txt", lantern)
    _png(alpha / "image" / "0" / "generated.png", colour)
    _wav(alpha / "speech" / "0" / "generated.wav", level)
    _text(alpha / "text" / "1" / "generated.txt", "The river is calm.")
    _png(alpha / "image" / "1" / "generated.png", (10, 10, 10))
    _wav(alpha / "speech" / "1" / "generated.wav", 0)
    for index in (0, 1):
        _text(folder / "candidates" / "beta" / "text" / str(index) / "generated.txt", "Same words.")


def _scores(value: float) -> pd.DataFrame:
    rows = []
    for system in ("alpha", "beta"):
        for index, iid in enumerate(IDS):
            row = {c: "" for c in SCORE_COLUMNS}
            row.update(
                benchmark="storybench",
                system=system,
                instance_id=iid,
                index=index,
                track="text",
                component="judge",
                judge="j1",
                criterion="coherence",
                panel="p",
                value=value,
                status="ok",
            )
            rows.append(row)
    return pd.DataFrame(rows)


def _judgments(rationale: str, score: int) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "system": system,
                "instance_id": iid,
                "index": index,
                "track": "text",
                "judge": "j1",
                "panel": "p",
                "model": "m",
                "status": "ok",
                "scores": json.dumps({"coherence": score}),
                "rationales": json.dumps({"coherence": f"{rationale} ({system}, {iid})"}),
                "raw_response": "{}",
            }
            for system in ("alpha", "beta")
            for index, iid in enumerate(IDS)
        ]
    )


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    """runs/s/run-a and run-b (compared with run-a): alpha's instance 0 changed in every modality."""
    runs = tmp_path / "runs" / "s"
    before, after = runs / "run-a", runs / "run-b"
    _candidates(before, lantern="Pip lifts the lantern.", colour=(200, 120, 40), level=100)
    _scores(5.0).to_parquet(before / "scores.parquet")
    _judgments("Yesterday's page loses the lantern", 5).to_parquet(before / "judgments.parquet")
    _candidates(after, lantern="Pip lifts the old brass lantern.", colour=(40, 120, 200), level=-300)
    _scores(7.0).to_parquet(after / "scores.parquet")
    _judgments("Today's page keeps the lantern", 7).to_parquet(after / "judgments.parquet")
    (after / "regression.json").write_text(
        json.dumps({"verdict": "GO", "baseline": {"run_id": "run-a", "folder": str(before)}}),
        encoding="utf-8",
    )
    (after / "config.resolved.yaml").write_text(
        yaml.safe_dump({"suite": "s", "benchmark": "storybench", "dataset": {"path": "absent"}}),
        encoding="utf-8",
    )
    return before, after


def _blobs(html: str) -> tuple[dict[str, Any], dict[str, Any]]:
    index = json.loads(re.search(r'id="omni-index">(.*?)</script>', html, re.S).group(1))  # type: ignore[union-attr]
    details: dict[str, Any] = {}
    for text in re.findall(r'id="omni-chunk-\d+">(.*?)</script>', html, re.S):
        details.update(json.loads(text))
    return index, details


def _page(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    page = write_run_instances(
        get_benchmark("storybench"), folder, dataset_path=None, suite="s", run_id="run-b"
    )
    return _blobs(page.read_text(encoding="utf-8"))


# -- hashing and changed detection ------------------------------------------------------------------


def test_digests_are_the_sha256_of_each_output(two_runs: tuple[Path, Path]) -> None:
    import hashlib

    _, after = two_runs
    root = after / "candidates" / "alpha"
    digests = output_digests(root, 0)
    assert set(digests) == {"text", "image", "speech"}
    assert digests["text"] == hashlib.sha256(b"Pip lifts the old brass lantern.").hexdigest()
    assert output_digests(root, 7) == {"text": None, "image": None, "speech": None}


def test_changed_pairs_are_found_by_content_not_by_file_time(two_runs: tuple[Path, Path]) -> None:
    before, after = two_runs
    assert changed_outputs(after, before, "alpha", index=0) == ("image", "speech", "text")
    # Instance 1 and beta were written again with the same bytes: unchanged.
    assert changed_outputs(after, before, "alpha", index=1) == ()
    assert changed_outputs(after, before, "beta", index=0) == ()
    # An output that vanished is a change; one the compared run keeps at another index is not.
    (after / "candidates" / "beta" / "text" / "1" / "generated.txt").unlink()
    assert changed_outputs(after, before, "beta", index=1) == ("text",)
    assert changed_outputs(after, before, "alpha", index=1, compared_index=1) == ()
    assert changed_outputs(after, before, "alpha", index=0, compared_index=1) == ("image", "speech", "text")


# -- the page ---------------------------------------------------------------------------------------


def test_changed_pair_carries_both_candidates_and_both_runs_judgments(two_runs: tuple[Path, Path]) -> None:
    _, after = two_runs
    index, details = _page(after)
    assert index["baseline"] == "run-a" and index["compared_file"] == "../run-a"
    assert index["compared_route"] == "_compared" and index["compared_gone"] is False
    assert index["compared_systems"] == ["alpha", "beta"]
    alpha = index["systems"].index("alpha")
    assert index["changed"] == [[0, alpha, 0]]

    block = details["0"]["systems"]["alpha"][""]
    compared = block["compared"]
    assert compared["changed"] == ["image", "speech", "text"]
    theirs = {o["modality"]: o for o in compared["outputs"]}
    ours = {o["modality"]: o for o in block["outputs"]}
    # Both runs' media: ours relative to this folder, theirs relative to the compared run's folder.
    assert ours["image"]["src"] == theirs["image"]["src"] == "candidates/alpha/image/0/generated.png"
    assert (after / ".." / "run-a" / theirs["speech"]["src"]).is_file()
    assert theirs["text"]["text"] == "Pip lifts the lantern."
    assert ours["text"]["text"] == "Pip lifts the old brass lantern."
    (theirs_judged,) = compared["judgments"]
    (ours_judged,) = block["judgments"]
    assert theirs_judged["rationales"]["coherence"].startswith("Yesterday's page loses the lantern")
    assert theirs_judged["scores"] == {"coherence": 5}
    assert ours_judged["rationales"]["coherence"].startswith("Today's page keeps the lantern")


def test_unchanged_pairs_carry_nothing_of_the_compared_run(two_runs: tuple[Path, Path]) -> None:
    _, after = two_runs
    _, details = _page(after)
    assert "compared" not in details["1"]["systems"]["alpha"][""]
    assert "compared" not in details["0"]["systems"]["beta"][""]
    assert "Yesterday" not in json.dumps(details["1"])


def test_a_compared_run_whose_folder_is_gone_is_said_not_linked(two_runs: tuple[Path, Path]) -> None:
    before, after = two_runs
    shutil.rmtree(before)
    assert compared_run(after) == ("run-a", None)
    index, details = _page(after)
    assert index["baseline"] == "run-a" and index["compared_gone"] is True
    assert index["changed"] == [] and index["compared_file"] == ""
    assert "compared" not in json.dumps(details)


def test_a_run_never_compared_has_no_ab_data(two_runs: tuple[Path, Path]) -> None:
    _, after = two_runs
    (after / "regression.json").unlink()
    index, _ = _page(after)
    assert index["baseline"] == "" and index["compared_gone"] is False and index["changed"] == []


def test_page_has_the_changed_outputs_filter(two_runs: tuple[Path, Path]) -> None:
    _, after = two_runs
    _page(after)
    html = (after / "instances.html").read_text(encoding="utf-8")
    assert re.search(r'<input id="f-changed" type="checkbox">\s*changed outputs only', html)


def test_top_movers_link_to_the_pair_in_the_viewer() -> None:
    regression = {
        "verdict": "GO",
        "baseline": "run-a",
        "top_movers": [
            {"system": "alpha", "component": "judge", "instance_id": IDS[0], "a": 5, "b": 7, "delta": 2},
            {
                "system": "copy current",
                "component": "judge",
                "instance_id": IDS[1],
                "a": 5,
                "b": 4,
                "delta": -1,
            },
        ],
    }
    html = what_moved(regression)
    assert 'href="instances.html#book/p01__p02/alpha"' in html
    assert 'href="instances.html#book/p02__p03/copy%20current"' in html


# -- omnieval view ----------------------------------------------------------------------------------


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture
def viewed(two_runs: tuple[Path, Path]) -> Iterator[str]:
    """``omnieval view run-b`` (the console script, as a user runs it); yields the page's URL."""
    _, after = two_runs
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("omnieval")), "view", str(after), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.endswith("/instances.html"), url
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_view_serves_the_compared_runs_candidates_and_nothing_else_of_it(viewed: str) -> None:
    base = viewed.removesuffix("instances.html")
    assert _status(base + "_compared/candidates/alpha/image/0/generated.png") == 200
    assert _status(base + "_compared/scores.parquet") == 404
    assert _status(base + "_compared/candidates/%2e%2e/scores.parquet") == 404
    assert _status(base + "_compared/candidates/../../run-a/scores.parquet") == 404


@pytest.mark.slow
def test_opening_a_moved_pair_shows_both_runs_media(viewed: str, two_runs: tuple[Path, Path]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with chromium() as driver:
        driver.get(viewed + "#book/p01__p02/alpha")
        wait_ready(driver)
        WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".detail .ab"))
        shown = driver.find_elements(By.CSS_SELECTOR, ".detail .sys[data-system]")
        assert [s.get_attribute("data-system") for s in shown] == ["alpha"]
        assert "target" in (shown[0].get_attribute("class") or "")
        ab = driver.find_element(By.CSS_SELECTOR, ".detail .ab")
        players = ab.find_elements(By.CSS_SELECTOR, ".player")
        kinds = sorted(str(p.get_attribute("data-kind")) for p in players)
        assert kinds == ["audio", "audio", "image", "image"]
        srcs = [str(p.get_attribute("src")) for p in players]
        assert sum("/_compared/candidates/" in s for s in srcs) == 2
        assert fetch_statuses(driver, srcs) == [200] * 4
        # Both images decoded (a broken link would have been replaced by a note).
        assert driver.execute_script(
            "return [...arguments[0].querySelectorAll('img.player')].every(i => i.naturalWidth === 8)", ab
        )
        assert ab.find_element(By.CSS_SELECTOR, "[data-run=this] ins").text == "old"
        assert "Yesterday's page loses the lantern" in ab.text
        assert "Today's page keeps the lantern" in ab.text

        # The filter keeps only the instance whose alpha candidate changed.
        driver.get(viewed)
        wait_ready(driver)
        assert len(driver.find_elements(By.CSS_SELECTOR, "#list tr.inst")) == 2
        driver.find_element(By.ID, "f-changed").click()
        rows = driver.find_elements(By.CSS_SELECTOR, "#list tr.inst")
        assert [r.get_attribute("data-id") for r in rows] == [IDS[0]]
        assert "alpha · candidate changed" in rows[0].text and "beta" not in rows[0].text
        assert "differs from run-a's (SHA-256): 1;" in driver.find_element(By.ID, "compared-note").text

        # The compared run's folder deleted after the page was written: a note, not broken media.
        shutil.rmtree(two_runs[0])
        driver.get(viewed + "?again#book/p01__p02/alpha")
        wait_ready(driver)
        WebDriverWait(driver, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".ab .gone")) == 2)
        assert "the compared run's file is gone (run-a" in driver.find_element(By.CSS_SELECTOR, ".ab").text
        assert len(driver.find_elements(By.CSS_SELECTOR, ".ab .player")) == 2  # this run's own


def test_a_system_the_compared_run_kept_no_candidates_of_is_not_called_changed(
    two_runs: tuple[Path, Path],
) -> None:
    before, after = two_runs
    shutil.rmtree(before / "candidates" / "alpha")
    index, details = _page(after)
    assert index["changed"] == [] and index["compared_systems"] == ["beta"]
    assert "compared" not in details["0"]["systems"]["alpha"][""]
