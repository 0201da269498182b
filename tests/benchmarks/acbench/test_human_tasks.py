"""``omnieval human-tasks acbench``: the class-balanced Table 4 subset, its blind Label Studio tasks, and
the annotations read back into the ``human_validation`` analysis."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import yaml
from pydantic import ValidationError

from benchmarks.acbench.test_aggregate import _row
from omnieval.benchmarks.acbench._analyses import _evaluator_rows, human_validation, study_labels
from omnieval.benchmarks.acbench._human_sample import (
    PAPER_TOTALS,
    HumanSampleConfig,
    blind_clips,
    class_balanced_sample,
    labeling_config,
    study_key,
)
from omnieval.benchmarks.acbench._record import FEATURES
from omnieval.cli import main
from omnieval.errors import DataError
from omnieval.scores import coerce_scores, write_scores


@dataclass(frozen=True)
class _Inst:
    index: int
    id: str
    feature: str
    target_value: str


def _dataset(per_class: int = 12, *, short: dict[tuple[str, str], int] | None = None) -> list[_Inst]:
    """``per_class`` instances of every class of the three abstract features (``short`` overrides some
    classes' counts), plus speech-rate instances the draw must ignore; ids in shuffled line order."""
    short = short or {}
    specs = [(f, v) for f in ("emotion", "accent", "timbre") for v in FEATURES[f]] + [("speech_rate", "fast")]
    rows = [(f, v, n) for f, v in specs for n in range(short.get((f, v), per_class))]
    random.Random(5).shuffle(rows)
    return [_Inst(i, f"{f[:2]}-{v.replace(' ', '_')}-{n:02d}", f, v) for i, (f, v, n) in enumerate(rows)]


def _ids(sample: Any) -> list[str]:
    return [inst.id for inst in sample.instances()]


# -- the draw -----------------------------------------------------------------------------------------


def test_the_papers_design_on_a_dataset_with_enough_instances() -> None:
    sample = class_balanced_sample(_dataset())
    assert sample.features == ("emotion", "accent", "timbre")
    assert sample.config.totals == PAPER_TOTALS
    for feature, total in PAPER_TOTALS.items():
        draws = sample.of(feature)
        assert [d.target_value for d in draws] == list(FEATURES[feature])
        # 60/6, 30/3, 40/4: ten of each class, each of that class, none twice.
        assert [len(d.instances) for d in draws] == [10] * len(FEATURES[feature])
        assert all(i.target_value == d.target_value for d in draws for i in d.instances)
        assert len(sample.instances(feature)) == total
    assert len(set(_ids(sample))) == 130 and not sample.short and not sample.absent_classes
    clips = blind_clips(sample, ["m1", "m2"], ["original", "oracle"])
    assert {f: len(c) for f, c in clips.items()} == {"emotion": 240, "accent": 120, "timbre": 160}


def test_seeded_and_independent_of_line_order() -> None:
    data = _dataset()
    first = _ids(class_balanced_sample(data))
    assert _ids(class_balanced_sample(data)) == first
    assert _ids(class_balanced_sample(list(reversed(data)))) == first
    assert _ids(class_balanced_sample(sorted(data, key=lambda i: i.id))) == first
    other = _ids(class_balanced_sample(data, HumanSampleConfig(seed=1)))
    assert other != first and len(other) == len(first)
    # More instances of one class change no other class's draw.
    grown = _dataset(short={("emotion", "joy"): 20})
    unchanged = [i for i in _ids(class_balanced_sample(grown)) if not i.startswith("em-joy")]
    assert unchanged == [i for i in first if not i.startswith("em-joy")]


def test_too_few_instances_or_an_uneven_total_is_an_error() -> None:
    data = _dataset(short={("emotion", "joy"): 9, ("timbre", "elderly male"): 3})
    with pytest.raises(DataError) as info:
        class_balanced_sample(data)
    assert info.value.problems == [
        "emotion / joy: 9 instance(s), 10 needed",
        "timbre / elderly male: 3 instance(s), 10 needed",
    ]
    # Asked for: a short class gives what it has, and says so; nothing is padded from elsewhere.
    sample = class_balanced_sample(data, HumanSampleConfig(take_short=True))
    assert [(d.target_value, len(d.instances), d.shortfall) for d in sample.short] == [
        ("joy", 9, 1),
        ("elderly male", 3, 7),
    ]
    assert len(sample.instances("emotion")) == 59 and len(sample.instances("accent")) == 30
    with pytest.raises(DataError) as info:
        class_balanced_sample(_dataset(), HumanSampleConfig(totals={"emotion": 50, "accent": 30}))
    assert info.value.problems == [
        "emotion: a total of 50 does not split equally over its 6 classes "
        "(angry, disgust, fear, joy, sadness, surprised); give a multiple of 6, e.g. 48 or 54"
    ]


def test_classes_as_the_dataset_has_them_and_the_totals_option() -> None:
    data = [i for i in _dataset() if i.target_value != "surprised"]
    sample = class_balanced_sample(data, HumanSampleConfig(totals={"emotion": 60}))
    assert sample.features == ("emotion",) and sample.absent_classes == {"emotion": ("surprised",)}
    assert [len(d.instances) for d in sample.draws] == [12] * 5
    config = HumanSampleConfig(totals={"Global Accent": 6, "emotion": 0, "timbre": 4})
    assert config.totals == {"accent": 6, "timbre": 4}
    with pytest.raises(ValidationError, match="not a feature people validate"):
        HumanSampleConfig(totals={"speech_rate": 2})
    with pytest.raises(ValidationError, match="no feature has a positive total"):
        HumanSampleConfig(totals={"emotion": 0})
    with pytest.raises(DataError, match="duplicate instance ids: x"):
        class_balanced_sample([_Inst(0, "x", "accent", "UK"), _Inst(1, "x", "accent", "India")])


def test_blind_order_and_labelling_config() -> None:
    sample = class_balanced_sample(_dataset(), HumanSampleConfig(totals={"accent": 6}))
    clips = blind_clips(sample, ["m1", "m2"], ["original", "oracle"])["accent"]
    assert [c.task for c in clips] == [f"accent-{n:04d}" for n in range(1, 25)]
    plan = [(c.instance_id, c.system, c.condition) for c in clips]
    assert len(set(plan)) == 24 and plan != sorted(plan)
    assert blind_clips(sample, ["m2", "m1"], ["oracle", "original"])["accent"] == clips
    reseeded = class_balanced_sample(_dataset(), HumanSampleConfig(totals={"accent": 6}, seed=1))
    assert [c.task for c in blind_clips(reseeded, ["m1"], ["oracle"])["accent"]] == [
        f"accent-{n:04d}" for n in range(1, 7)
    ]
    with pytest.raises(DataError, match="named more than once: m1"):
        blind_clips(sample, ["m1", "m1"], ["oracle"])
    for feature in ("emotion", "accent", "timbre"):
        view = ET.fromstring(labeling_config(feature))
        choices = view.find("Choices")
        assert choices is not None and choices.get("name") == "label" and choices.get("toName") == "audio"
        assert [c.get("value") for c in choices] == list(FEATURES[feature])
        audio = view.find("Audio")
        assert audio is not None and audio.get("value") == "$audio"


# -- the command ----------------------------------------------------------------------------------


def _wav(path: Path, seconds: float = 0.05, rate: int = 16_000) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * rate)) / rate
    sf.write(path, (0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), rate, subtype="FLOAT")


@pytest.fixture
def run_folder(ac_sample: Path, tmp_path: Path) -> Path:
    """A run folder of the bundled sample: systems m1 (its ``original`` imported from elsewhere) and
    m2 under original, s_to_t and oracle; one tiny clip per emotion/accent/timbre row."""
    run = tmp_path / "runs" / "acbench" / "r1"
    rows = [
        json.loads(line)["feature"]
        for line in (ac_sample / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    imported = tmp_path / "elsewhere"
    for system in ("m1", "m2"):
        for condition in ("original", "s_to_t", "oracle"):
            folder = run / "candidates" / system / condition
            root = imported if (system, condition) == ("m1", "original") else folder
            if root is imported:
                folder.mkdir(parents=True)
                (folder / "IMPORTED.json").write_text(json.dumps({"imported_from": str(imported)}))
            for index, feature in enumerate(rows):
                if feature in ("emotion", "accent", "timbre"):
                    _wav(root / "speech" / str(index) / "generated.wav")
    config = {
        "suite": "acbench",
        "benchmark": "acbench",
        "dataset": {"name": "acbench-sample", "path": str(ac_sample)},
        "systems": {"m1": {"kind": "import"}, "m2": {"kind": "import"}},
        "conditions": ["original", "s_to_t", "oracle"],
    }
    (run / "config.resolved.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return run


def test_console_script_writes_the_blind_tasks(run_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "study"
    omnieval = Path(sys.executable).with_name("omnieval")
    totals = ["--total", "emotion=12", "--total", "global_accent=6", "--total", "timbre=8"]
    done = subprocess.run(
        [str(omnieval), "human-tasks", "acbench", str(run_folder), "--out", str(out), *totals, "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # The bundled sample has two instances per class: totals of two per class.
    assert "26 instances, 104 clips (2 systems x 2 conditions)" in done.stdout
    assert "accent 6 instances (2 per class: Australia 2, India 2, UK 2), 24 clips" in " ".join(
        done.stdout.split()
    )
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (summary["instances"], summary["clips"], summary["conditions"]) == (
        26,
        104,
        ["original", "oracle"],
    )
    for feature, n_classes in (("emotion", 6), ("accent", 3), ("timbre", 4)):
        classes = summary["features"][feature]["classes"]
        assert [c["drawn"] for c in classes.values()] == [2] * n_classes
    key = json.loads((out / "key.json").read_text(encoding="utf-8"))
    assert len(key["tasks"]) == 104 and key["seed"] == 1
    for feature, n in (("emotion", 48), ("accent", 24), ("timbre", 32)):
        tasks = json.loads((out / feature / "tasks.json").read_text(encoding="utf-8"))
        assert len(tasks) == n
        # Blind: a task names its number and its audio, never a system, condition or target.
        assert all(set(t["data"]) == {"task", "audio"} for t in tasks)
        assert tasks[0]["data"]["audio"] == f"/data/local-files/?d={feature}/{feature}-0001.wav"
        assert all(key["tasks"][t["data"]["task"]]["feature"] == feature for t in tasks)
        assert len(list((out / "media" / feature).glob("*.wav"))) == n
        ET.fromstring((out / feature / "labeling_config.xml").read_text(encoding="utf-8"))
    entry = next(e for e in key["tasks"].values() if e["system"] == "m1" and e["condition"] == "original")
    assert entry["source"].startswith(str(tmp_path / "elsewhere"))  # the import pointer was followed
    clip = out / "media" / "emotion" / "emotion-0001.wav"
    assert sf.info(clip).subtype == "PCM_16" and sf.info(clip).frames == 800


def test_refusals_exit_2(run_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = ["--out", str(tmp_path / "study")]
    # The paper's totals need ten instances a class; the bundled sample has two.
    assert main(["human-tasks", "acbench", str(run_folder), *out]) == 2
    assert "emotion / angry: 2 instance(s), 10 needed" in capsys.readouterr().err
    assert main(["human-tasks", "acbench", str(run_folder), *out, "--condition", "i_to_t"]) == 2
    assert "--condition i_to_t: not offered by" in capsys.readouterr().err
    assert main(["human-tasks", "acbench", str(tmp_path), *out]) == 2
    assert "no config.resolved.yaml, so not a run folder" in capsys.readouterr().err
    (run_folder / "candidates" / "m2" / "oracle" / "speech" / "20" / "generated.wav").unlink()
    small = ["--total", "emotion=12", "--total", "accent=0", "--total", "timbre=0"]
    assert main(["human-tasks", "acbench", str(run_folder), *out, *small]) == 2
    err = capsys.readouterr().err
    assert "clip(s) of the drawn subset are missing" in err and "system m2, condition oracle" in err
    assert not (tmp_path / "study").exists()
    (run_folder / "dataset.manifest.json").write_text(json.dumps({"digest": "0" * 64}))
    assert main(["human-tasks", "acbench", str(run_folder), *out, *small]) == 2
    assert "is not the dataset the run evaluated" in capsys.readouterr().err


def test_systems_that_validate_nothing_are_refused(
    run_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "study"
    small = ["--total", "emotion=12", "--total", "accent=0", "--total", "timbre=0", "--out", str(out)]
    assert main(["human-tasks", "acbench", str(run_folder), "--system", "m1", "--system", "m1", *small]) == 2
    assert "--system m1: given twice" in capsys.readouterr().err
    # The run's references, by the kind its config gives them: refused when named, left out by default.
    config_path = run_folder / "config.resolved.yaml"
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    config["systems"]["m2"] = {"kind": "oracle-control"}
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["human-tasks", "acbench", str(run_folder), "--system", "m2", *small]) == 2
    err = capsys.readouterr().err
    assert "human validation labels systems under test; refused:" in err
    assert "--system m2: a reference (oracle-control: espeak-ng renders the target" in err
    assert not out.exists()
    assert main(["human-tasks", "acbench", str(run_folder), *small]) == 0
    assert "systems: m1;" in capsys.readouterr().out
    assert json.loads((out / "key.json").read_text(encoding="utf-8"))["systems"] == ["m1"]
    config["systems"]["m1"] = {"kind": "neutral"}
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["human-tasks", "acbench", str(run_folder), *small]) == 2
    err = capsys.readouterr().err
    assert (
        "no system under test to label: the run's systems are references" in err
        and "neutral: the floor" in err
    )
    # Outputs made elsewhere are known by their id only: a reference kind's name is refused too.
    elsewhere = run_folder / "candidates" / "m2"
    argv = ["human-tasks", "acbench", "--dataset", str(config["dataset"]["path"]), *small]
    assert main([*argv, "--candidates", f"neutral={elsewhere}", "--system", "neutral"]) == 2
    assert "--system neutral: a reference (neutral" in capsys.readouterr().err


# -- reading the labels back ----------------------------------------------------------------------


def _study() -> tuple[dict[str, Any], dict[tuple[str, str, str], str]]:
    """Key of a small study (emotion e1 joy, e2 angry; accent a1 UK; systems m1, m2; original and
    oracle) and (system, condition, instance) -> task id."""
    data = [
        _Inst(0, "e1", "emotion", "joy"),
        _Inst(1, "e2", "emotion", "angry"),
        _Inst(2, "a1", "accent", "UK"),
    ]
    config = HumanSampleConfig(totals={"emotion": 2, "accent": 1})
    sample = class_balanced_sample(data, config)
    assert sample.absent_classes["accent"] == ("Australia", "India")  # the total splits over UK alone
    clips = blind_clips(sample, ["m1", "m2"], ["original", "oracle"])
    key = study_key(clips, seed=0)
    tasks = {(c.system, c.condition, c.instance_id): c.task for cs in clips.values() for c in cs}
    return key, tasks


# Five raters per clip, and whether the evaluator was right on it.
_LABELS: dict[tuple[str, str, str], tuple[list[str], float]] = {
    ("m1", "original", "e1"): (["joy", "joy", "joy", "fear", "sadness"], 1.0),  # H hit
    ("m1", "original", "e2"): (["joy", "joy", "angry", "joy", "fear"], 1.0),  # H miss
    ("m1", "oracle", "e1"): (["joy", "joy", "fear", "fear", "sadness"], 0.0),  # 2-2 tie: miss
    ("m1", "oracle", "e2"): (["angry"] * 5, 1.0),  # H hit
    ("m2", "original", "e1"): (["fear", "fear", "fear", "joy", "joy"], 0.0),  # miss
    ("m2", "original", "e2"): (["Sadness", "sadness ", "angry", "joy", "sadness"], 0.0),  # miss
    ("m2", "oracle", "e1"): (["joy"] * 4 + ["angry"], 1.0),  # hit
    ("m2", "oracle", "e2"): (["angry"] * 3 + ["fear"] * 2, 0.0),  # hit
    ("m1", "original", "a1"): (["UK"] * 5, 1.0),  # hit
    ("m1", "oracle", "a1"): (["india", "India", "India", "uk", "UK"], 0.0),  # miss
    ("m2", "original", "a1"): (["uk", "uk", "uk", "India", "Australia"], 0.0),  # hit
    ("m2", "oracle", "a1"): (["Australia"] * 5, 1.0),  # miss
}
# (system, condition, feature) -> (n, E, H), by hand from the rows above.
_TABLE4 = {
    ("m1", "original", "emotion"): (2, 100.0, 50.0),
    ("m1", "oracle", "emotion"): (2, 50.0, 50.0),
    ("m2", "original", "emotion"): (2, 0.0, 0.0),
    ("m2", "oracle", "emotion"): (2, 50.0, 100.0),
    ("m1", "original", "accent"): (1, 100.0, 100.0),
    ("m1", "oracle", "accent"): (1, 0.0, 0.0),
    ("m2", "original", "accent"): (1, 0.0, 100.0),
    ("m2", "oracle", "accent"): (1, 100.0, 0.0),
}


def _export(tasks: dict[tuple[str, str, str], str]) -> list[dict[str, Any]]:
    """A Label Studio JSON export of the study: one entry per task, LS's own ids, five annotations,
    plus a cancelled one and an empty one on the first task (skipped)."""
    export = []
    for n, (clip, task) in enumerate(sorted(tasks.items(), key=lambda kv: kv[1]), start=101):
        annotations: list[dict[str, Any]] = [
            {
                "id": 10 * n + r,
                "completed_by": r + 1 if r % 2 else {"id": r + 1, "email": f"rater{r + 1}@lab"},
                "was_cancelled": False,
                "result": [
                    {
                        "from_name": "label",
                        "to_name": "audio",
                        "type": "choices",
                        "value": {"choices": [label]},
                    }
                ],
            }
            for r, label in enumerate(_LABELS[clip][0])
        ]
        if n == 101:
            annotations.append({"id": 1, "completed_by": 9, "was_cancelled": True, "result": []})
            annotations.append({"id": 2, "completed_by": 8, "result": []})
        export.append(
            {"id": n, "data": {"task": task, "audio": f"/x/{task}.wav"}, "annotations": annotations}
        )
    return export


def _scores() -> pd.DataFrame:
    ids = {"e1": (0, "emotion", "joy"), "e2": (1, "emotion", "angry"), "a1": (2, "accent", "UK")}
    rows = [
        _row(s, i, ids[i][0], ids[i][1], "attribute_accuracy", ids[i][2], hit, "ok", c)
        for (s, c, i), (_, hit) in _LABELS.items()
    ]
    return coerce_scores(pd.DataFrame(rows))


def test_an_export_gives_table_4_by_hand() -> None:
    key, tasks = _study()
    labels = study_labels([("export.json", _export(tasks))], key)
    assert dict(labels.counts) == {
        "tasks": 12,
        "annotations": 62,
        "labels": 60,
        "skipped": 2,
        "unlabelled_tasks": 0,
    }
    assert labels.per_clip == {
        "emotion": {"clips": 8, "min": 5, "max": 5},
        "accent": {"clips": 4, "min": 5, "max": 5},
    }
    out = human_validation(labels.records, _evaluator_rows(_scores()))
    got = {
        (g["system"], g["condition"], g["feature"]): (g["n"], g["evaluator_accuracy"], g["human_accuracy"])
        for g in out["groups"]
    }
    assert got == _TABLE4 and out["unmatched"] == []


def test_labels_command_then_analyze(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key, tasks = _study()
    export = _export(tasks)
    (tmp_path / "key.json").write_text(json.dumps(key), encoding="utf-8")
    # One Label Studio project per feature: two exports.
    for feature in ("emotion", "accent"):
        part = [t for t in export if t["data"]["task"].startswith(feature)]
        (tmp_path / f"{feature}.json").write_text(json.dumps(part), encoding="utf-8")
    labels = tmp_path / "labels.jsonl"
    argv = ["human-tasks", "acbench", "labels", str(tmp_path / "emotion.json"), str(tmp_path / "accent.json")]
    assert main([*argv, "--key", str(tmp_path / "key.json"), "--out", str(labels)]) == 0
    printed = capsys.readouterr().out
    assert f"60 labels from 12 tasks (2 annotations skipped: cancelled or empty) -> {labels}" in printed
    assert "emotion 8 clips labelled, 5-5 annotations per clip" in " ".join(printed.split())
    scores = tmp_path / "scores.parquet"
    write_scores(_scores(), scores)
    analyses = tmp_path / "analyses"
    only = ["--only", "human_validation", "--humans", str(labels)]
    assert main(["analyze", str(scores), "--out", str(analyses), *only]) == 0
    table4 = json.loads((analyses / "human_validation.json").read_text(encoding="utf-8"))
    got = {
        (g["system"], g["condition"], g["feature"]): (g["n"], g["evaluator_accuracy"], g["human_accuracy"])
        for g in table4["groups"]
    }
    assert table4["status"] == "ok" and got == _TABLE4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda t: t[0]["data"].update(task="emotion-0999"),
            "data.task: 'emotion-0999' is not a task of key",
        ),
        (
            lambda t: t[0]["annotations"][0]["result"][0]["value"].update(choices=["joy"]),
            "'joy' is not one of the accent classes (Australia, India, UK)",
        ),
        (
            lambda t: t[0]["annotations"][1].update(completed_by=1),
            "annotator '1' labelled accent-0001 already",
        ),
        (
            lambda t: t[0]["annotations"][0]["result"][0]["value"].update(choices=[]),
            "expected exactly one choice",
        ),
    ],
)
def test_export_problems_name_the_task(change: Any, message: str) -> None:
    key, tasks = _study()
    export = _export(tasks)
    change(export)
    with pytest.raises(DataError, match=r"export\.json: task 101") as info:
        study_labels([("export.json", export)], key)
    assert message in str(info.value)
    with pytest.raises(DataError, match="not the key file"):
        study_labels([("export.json", export)], {"tasks": {}})


@pytest.mark.parametrize("argv", [[], ["labels"]])
def test_help_of_both_steps(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["human-tasks", "acbench", *argv, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert (
        out.startswith(f"usage: omnieval human-tasks acbench {' '.join(argv)}".rstrip()) and "%%" not in out
    )
