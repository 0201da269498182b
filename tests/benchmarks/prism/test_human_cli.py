"""``omnieval human-tasks prism``: the stratified human-study sample written as Label Studio tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnieval.benchmarks.prism._human import parse_two_stage_export
from omnieval.cli import main

SAMPLE = Path("data/prism-sample")


def test_tasks_of_the_sample_with_clips_and_shortfall(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tasks.json"
    rows = len(SAMPLE.joinpath("manifest.jsonl").read_text(encoding="utf-8").splitlines())
    for folder in ("m", "o"):  # (empty) clips: the command checks each linked clip exists
        for index in range(rows):
            clip = tmp_path / folder / "video" / str(index) / "generated.mp4"
            clip.parent.mkdir(parents=True)
            clip.touch()
    argv = ["human-tasks", "prism", str(SAMPLE), "--system", "muted", "--system", "offset"]
    argv += ["--candidates", f"muted={tmp_path / 'm'}", "--candidates", f"offset={tmp_path / 'o'}"]
    assert main([*argv, "--out", str(out), "--seed", "3"]) == 0
    tasks = json.loads(out.read_text(encoding="utf-8"))
    err = capsys.readouterr().err
    items = {t["data"]["instance_id"] for t in tasks}
    # One task per (sampled item, system), numbered in order; the clips are the pair in blind order.
    assert len(tasks) == 2 * len(items) and [t["data"]["num"] for t in tasks] == list(
        range(1, len(tasks) + 1)
    )
    assert {t["data"]["system"] for t in tasks} == {"muted", "offset"}
    assert all({"video1", "video2", "order", "tags", "subset"} <= set(t["data"]) for t in tasks)
    assert f"{len(tasks)} tasks: {len(items)} items x 2 systems" in err
    # The bundled sample holds fewer than four items per combination: reported, not padded.
    # (Determinism and the quota rules are checked on synthetic instances in test_human_sample.py.)
    assert "short: " in err
    # The export reader accepts the task data (no annotations yet: nothing to read back).
    export = [{"id": t["data"]["num"], "data": t["data"], "annotations": []} for t in tasks]
    parse_two_stage_export(export)


def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["human-tasks", "prism", str(SAMPLE), "--system", "muted", "--candidates", "muted"]) == 2
    assert "expected ID=DIR" in capsys.readouterr().err
    assert main(["human-tasks", "storybench", str(tmp_path)]) == 2
    assert "storybench has no human-study task command" in capsys.readouterr().err
    assert main(["human-tasks", "nonsense"]) == 2
    absent = tmp_path / "absent"
    argv = ["human-tasks", "prism", str(SAMPLE), "--system", "muted", "--candidates", f"muted={absent}"]
    assert main(argv) == 2
    assert f"--candidates muted={absent}: no such folder" in capsys.readouterr().err
