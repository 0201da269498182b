"""``omnieval human-tasks prism``: the stratified human-study sample written as blind Label Studio
tasks (the key apart, the clips under blind names), only for systems whose tasks measure something,
and the ``labels`` step that puts the key back into an export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omnieval.benchmarks.prism._human import apply_key, parse_two_stage_export
from omnieval.benchmarks.prism._tags import active_cells
from omnieval.cli import main
from omnieval.errors import DataError

SAMPLE = Path("data/prism-sample")
ROWS = len(SAMPLE.joinpath("manifest.jsonl").read_text(encoding="utf-8").splitlines())
OMNIEVAL = str(Path(sys.executable).with_name("omnieval"))


def _clips(folder: Path) -> Path:
    """A candidate folder with a (tiny, distinct) clip per sample row: the command links each one."""
    for index in range(ROWS):
        clip = folder / "video" / str(index) / "generated.mp4"
        clip.parent.mkdir(parents=True, exist_ok=True)
        clip.write_bytes(f"{folder.name}-{index}".encode())
    return folder


def _written(tmp_path: Path) -> list[Path]:
    return sorted(p for p in tmp_path.rglob("*") if p.is_file() and "cands" not in p.parts)


def test_blind_tasks_key_and_clips_of_the_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "study" / "tasks.json"
    sys_a, sys_b = _clips(tmp_path / "cands" / "sora-2"), _clips(tmp_path / "cands" / "ltx-2")
    argv = ["human-tasks", "prism", str(SAMPLE), "--system", "sora-2", "--system", "ltx-2"]
    argv += ["--candidates", f"sora-2={sys_a}", "--candidates", f"ltx-2={sys_b}"]
    assert main([*argv, "--out", str(out), "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    text = out.read_text(encoding="utf-8")
    tasks = json.loads(text)
    items = {t["data"]["instance_id"] for t in tasks}
    # One task per (sampled item, system), numbered in order.
    assert len(tasks) == 2 * len(items) and [t["data"]["num"] for t in tasks] == list(
        range(1, len(tasks) + 1)
    )
    assert f"{len(tasks)} tasks: {len(items)} items x 2 systems" in printed
    # Blind: no task says which system it shows or which clip is the ground truth, not even in a path.
    for task in tasks:
        assert set(task["data"]) == {"num", "instance_id", "subset", "tags", "caption", "video1", "video2"}
    assert "sora-2" not in text and "ltx-2" not in text and "prism-sample" not in text
    assert '"system"' not in text and '"order"' not in text
    # The key says it, matched on the task number, with each blind clip's source.
    key = json.loads((tmp_path / "study" / "tasks.key.json").read_text(encoding="utf-8"))
    assert key["study"] == "prism-human-preference" and key["seed"] == 3
    assert set(key["tasks"]) == {str(t["data"]["num"]) for t in tasks}
    media = tmp_path / "study" / "tasks.media"
    for task in tasks:
        data, entry = task["data"], key["tasks"][str(task["data"]["num"])]
        assert entry["instance_id"] == data["instance_id"] and entry["system"] in ("sora-2", "ltx-2")
        gt_slot = 1 if entry["order"] == "gt_first" else 2
        for slot in (1, 2):
            clip = media / f"{data['num']:04d}-{slot}.mp4"
            assert data[f"video{slot}"] == clip.as_posix()
            source = Path(entry["sources"][f"video{slot}"])
            assert clip.read_bytes() == source.read_bytes()
            assert (SAMPLE.resolve() in source.parents) == (slot == gt_slot)
    # The bundled sample holds fewer than four items per combination: reported, not padded.
    assert "short: " in printed and "key (keep from raters)" in printed
    # Served elsewhere: the prefix and the blind name only.
    again = tmp_path / "served" / "tasks.json"
    assert main([*argv, "--out", str(again), "--video-url-prefix", "/data/local-files/?d="]) == 0
    first = json.loads(again.read_text(encoding="utf-8"))[0]["data"]
    assert (first["video1"], first["video2"]) == (
        "/data/local-files/?d=0001-1.mp4",
        "/data/local-files/?d=0001-2.mp4",
    )


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    before = _written(tmp_path)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    assert _written(tmp_path) == before  # nothing written
    return captured.err


@pytest.mark.parametrize(
    ("systems", "said"),
    [
        (["ground-truth"], "--system ground-truth: a reference: its clip is the ground truth"),
        (["ground_truth"], "--system ground_truth: a reference"),
        (["muted"], "--system muted: a diagnostic probe (muted, made from the ground truth clip)"),
        (["swapped-audio"], "--system swapped-audio: a diagnostic probe (swapped-audio"),
        (["offset", "sora-2"], "--system offset: a diagnostic probe"),
        (["sora-2", "sora-2"], "--system sora-2: given twice"),
    ],
)
def test_systems_that_measure_nothing_are_refused(
    systems: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["human-tasks", "prism", str(SAMPLE), *(a for s in systems for a in ("--system", s))]
    argv += [
        a for s in dict.fromkeys(systems) for a in ("--candidates", f"{s}={_clips(tmp_path / 'cands' / s)}")
    ]
    err = _refused([*argv, "--out", str(tmp_path / "tasks.json")], capsys, tmp_path)
    assert "human tasks pair systems under test with the ground truth; refused:" in err and said in err


def test_a_runs_reference_clips_under_another_name_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "cands" / "runs" / "prism" / "r1"
    _clips(run / "candidates" / "ground-truth")
    (run / "lineage.json").write_text(json.dumps({"systems": {"ground-truth": {"kind": "ground-truth"}}}))
    argv = ["human-tasks", "prism", str(SAMPLE), "--system", "mine"]
    argv += ["--candidates", f"mine={run / 'candidates' / 'ground-truth'}", "--out", str(tmp_path / "t.json")]
    err = _refused(argv, capsys, tmp_path)
    assert f"--system mine: its candidates are kind ground-truth ({run / 'lineage.json'})" in err
    # the generate stage's summary beside a state folder's candidates says the same
    state = tmp_path / "cands" / "state" / "candidates"
    _clips(state / "probe")
    (state / "probe.summary.json").write_text(json.dumps({"system": "probe", "kind": "offset"}))
    argv = ["human-tasks", "prism", str(SAMPLE), "--system", "probe"]
    argv += ["--candidates", f"probe={state / 'probe'}", "--out", str(tmp_path / "t.json")]
    assert "--system probe: its candidates are kind offset" in _refused(argv, capsys, tmp_path)


def test_tasks_without_clips_only_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tasks.json"
    argv = ["human-tasks", "prism", str(SAMPLE), "--system", "sora-2", "--out", str(out)]
    err = _refused(argv, capsys, tmp_path)
    assert "no --candidates: the tasks would have no clips to rate" in err and "--allow-missing-media" in err
    assert main([*argv, "--allow-missing-media"]) == 0
    assert "no clips (--allow-missing-media)" in capsys.readouterr().out
    tasks = json.loads(out.read_text(encoding="utf-8"))
    assert tasks and all("video1" not in t["data"] and "system" not in t["data"] for t in tasks)
    assert (tmp_path / "tasks.key.json").is_file() and not (tmp_path / "tasks.media").exists()


def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clips = _clips(tmp_path / "cands" / "sora-2")
    base = ["human-tasks", "prism", str(SAMPLE), "--system", "sora-2"]
    out = ["--out", str(tmp_path / "tasks.json")]
    assert "expected ID=DIR" in _refused([*base, "--candidates", "sora-2", *out], capsys, tmp_path)
    absent = tmp_path / "absent"
    err = _refused([*base, "--candidates", f"sora-2={absent}", *out], capsys, tmp_path)
    assert f"--candidates sora-2={absent}: no such folder" in err
    err = _refused(
        [*base, "--candidates", f"sora-2={clips}", "--candidates", f"ovi={clips}", *out], capsys, tmp_path
    )
    assert "--candidates ovi=...: ovi is not given with --system" in err
    # --out that is a folder: exit 2 naming --out, nothing written (was a traceback)
    folder = tmp_path / "a-folder"
    folder.mkdir()
    err = _refused([*base, "--candidates", f"sora-2={clips}", "--out", str(folder)], capsys, tmp_path)
    assert f"--out: {folder} is a folder" in err and not any(folder.iterdir())
    err = _refused(
        [*base, "--candidates", f"sora-2={clips}", *out, "--key", str(tmp_path / "tasks.json")],
        capsys,
        tmp_path,
    )
    assert "the key must stay apart from the tasks" in err
    assert main(["human-tasks", "storybench", str(tmp_path)]) == 2
    assert "storybench has no human-study task command" in capsys.readouterr().err
    assert main(["human-tasks", "nonsense"]) == 2


# -- the labels step --------------------------------------------------------------------------------


def _labelled(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tasks as a Label Studio export: one annotation each, video2 scored one point above video1."""
    exported = []
    for tid, task in enumerate(tasks, start=100):
        cells = active_cells(task["data"]["tags"].split(","))
        result = [
            {"from_name": f"v{v}_{c.dimension}_{c.audio_type}", "value": {"number": 5 + v}}
            for c in cells
            for v in (1, 2)
        ]
        exported.append(
            {**task, "id": tid, "annotations": [{"id": tid, "completed_by": 1, "result": result}]}
        )
    return exported


def test_labels_put_the_key_back_for_the_analysis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tasks.json"
    argv = ["human-tasks", "prism", str(SAMPLE), "--system", "sora-2", "--system", "ltx-2"]
    assert main([*argv, "--allow-missing-media", "--out", str(out)]) == 0
    capsys.readouterr()
    export = tmp_path / "export.json"
    export.write_text(json.dumps(_labelled(json.loads(out.read_text()))))
    labels = tmp_path / "labels.json"
    key = tmp_path / "tasks.key.json"
    assert main(["human-tasks", "prism", "labels", str(export), "--key", str(key), "--out", str(labels)]) == 0
    printed = capsys.readouterr().out
    keyed = json.loads(labels.read_text())
    parsed = parse_two_stage_export(keyed)
    assert {c.system for c in parsed.comparisons} == {"sora-2", "ltx-2"}
    assert parsed.counts["scored"] == len(keyed) and f"{len(keyed)} tasks" in printed
    assert "--only human_preference --humans" in printed
    # video2 scored higher: the system's side is whichever the key's order says
    entries = json.loads(key.read_text())["tasks"]
    for comparison, task in zip(parsed.comparisons, keyed, strict=True):
        own, gt = next(iter(comparison.cells.values()))
        expected = (7.0, 6.0) if entries[str(task["data"]["num"])]["order"] == "gt_first" else (6.0, 7.0)
        assert (own, gt) == expected
    # the export alone cannot be read as keyed (the analysis names the step)
    with pytest.raises(DataError, match="apply the study's key first"):
        parse_two_stage_export(json.loads(export.read_text()))


def test_labels_refuse_a_key_of_another_draw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = [{"id": 1, "data": {"num": 1, "instance_id": "on-01"}}]
    key = {
        "study": "prism-human-preference",
        "tasks": {"1": {"instance_id": "on-02", "system": "s", "order": "gt_first"}},
    }
    with pytest.raises(
        DataError, match=r"export: task 1: field data.instance_id: 'on-01', but key has 'on-02'"
    ):
        apply_key(tasks, key)
    with pytest.raises(DataError, match=r"field data.num: 2 is not a task of key"):
        apply_key([{"id": 1, "data": {"num": 2, "instance_id": "on-01"}}], key)
    with pytest.raises(DataError, match="not the key of a PRISM-Bench human study"):
        apply_key(tasks, {"study": "acbench-table-4", "tasks": {}})
    (tmp_path / "export.json").write_text(json.dumps(tasks))
    (tmp_path / "key.json").write_text(json.dumps(key))
    argv = [
        "human-tasks",
        "prism",
        "labels",
        str(tmp_path / "export.json"),
        "--key",
        str(tmp_path / "key.json"),
    ]
    assert main([*argv, "--out", str(tmp_path / "labels.json")]) == 2
    assert "but " in capsys.readouterr().err and not (tmp_path / "labels.json").exists()


# -- as a user runs it ------------------------------------------------------------------------------


def test_console_script_refuses_the_ground_truth_and_writes_for_a_system(tmp_path: Path) -> None:
    root = Path.cwd()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [OMNIEVAL, "human-tasks", "prism", str(root / SAMPLE), *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=tmp_path,
        )

    refused = run("--system", "ground-truth", "--out", "tasks.json")
    assert refused.returncode == 2, refused.stderr
    assert "--system ground-truth: a reference" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "tasks.json").exists()
    clips = _clips(tmp_path / "cands" / "sora-2")
    done = run("--system", "sora-2", "--candidates", f"sora-2={clips}", "--out", "study/tasks.json")
    assert done.returncode == 0, done.stderr
    assert "tasks:" in done.stdout and (tmp_path / "study" / "tasks.key.json").is_file()
    assert "sora-2" not in (tmp_path / "study" / "tasks.json").read_text()
