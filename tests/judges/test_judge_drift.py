"""The judge-drift check with a scripted judge: ok, drift, identity change, date salt, pinning."""

from __future__ import annotations

import datetime as dt
import json
import textwrap
from pathlib import Path

import judge_scripts
import pytest
from judge_fixtures import NARRATIONS, Story

from omnieval.config import SuiteConfig
from omnieval.errors import DataError
from omnieval.judges._drift import compare_runs, load_anchors, pin_anchors, run_drift_check

DAY1, DAY2 = dt.date(2026, 1, 5), dt.date(2026, 1, 6)


def _panel(tmp_path: Path, model: str = "scripted/drift", decoding: str = "max_tokens: 128") -> Path:
    path = tmp_path / f"panel-{model.replace('/', '_')}-{len(decoding)}.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: drift-test
            tracks:
              text:
                judges:
                  - id: drift-judge
                    model: {model}
                    backend: {{kind: scripted, script: "judge_scripts:drift_judge"}}
                    decoding: {{temperature: 0.0, {decoding}}}
                    framing: {{schema_constrained: true}}
            """
        ),
        encoding="utf-8",
    )
    return path


def _anchors(story: Story) -> Path:
    """Two anchors: the reference narration of transition 0 (good), another page's of transition 1 (bad)."""
    folder = story.root / "anchors"
    if folder.exists():
        return folder
    entries = []
    for aid, index, text in (("good", 0, NARRATIONS[0][1]), ("bad", 1, NARRATIONS[2][1])):
        out = folder / "candidates" / aid / "text" / str(index) / "generated.txt"
        out.parent.mkdir(parents=True)
        out.write_text(text, encoding="utf-8")
        entries.append(
            {
                "id": aid,
                "instance_id": story.transitions[index].id,
                "index": index,
                "track": "text",
                "candidate": f"candidates/{aid}",
            }
        )
    (folder / "manifest.json").write_text(json.dumps({"anchors": entries}), encoding="utf-8")
    return folder


def _suite(story: Story, panel: Path, threshold: float = 1.0) -> SuiteConfig:
    drift = {"enabled": True, "anchors": str(_anchors(story)), "threshold": threshold, "panel": str(panel)}
    return SuiteConfig.model_validate(
        {
            "suite": "drift-test",
            "systems": {"oracle": {"kind": "oracle"}},
            "state_dir": str(story.root / "state"),
            "drift": drift,
        }
    )


@pytest.fixture(autouse=True)
def _no_shift(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_scripts, "DRIFT_SHIFT", 0)


def test_same_judge_is_ok_and_pinned_file_has_identity(story: Story, tmp_path: Path) -> None:
    config = _suite(story, _panel(tmp_path))
    pinned = pin_anchors(config, story.transitions, today=DAY1)
    assert pinned["judges"]["drift-judge"]["model"] == "scripted/drift"
    assert pinned["judges"]["drift-judge"]["prompt_sha256"]["text"]
    assert pinned["anchors"]["good"]["drift-judge"]["scores"]["alignment_with_metadata"] == 7.0
    assert pinned["anchors"]["bad"]["drift-judge"]["scores"]["alignment_with_metadata"] == 3.0
    doc = run_drift_check(config, story.transitions, today=DAY2)
    assert doc["status"] == "ok" and doc["reasons"] == []
    assert doc["mean_shift"] == 0.0 and doc["max_shift"] == 0.0 and doc["n_anchors"] == 2
    assert doc["date"] == "2026-01-06" and doc["threshold"] == 1.0
    written = json.loads((story.root / "state" / "judge" / "drift.json").read_text())
    assert written["status"] == "ok" and written["judge"] == pinned["judges"]


def test_the_anchors_go_through_the_judge_the_suite_hands_in(story: Story, tmp_path: Path) -> None:
    """A benchmark's own judging (its judge inputs, its audio describer) replaces the default call."""
    from omnieval.judges import run_judges

    calls: list[tuple[str, list[str]]] = []

    def judge(instances, candidates, panel, cache_dir, progress):  # type: ignore[no-untyped-def]
        calls.append((panel, sorted(candidates)))
        return run_judges(instances, candidates, panel=panel, cache_dir=cache_dir, progress=progress)

    config = _suite(story, _panel(tmp_path))
    pinned = pin_anchors(config, story.transitions, today=DAY1, judge=judge)
    assert calls == [(str(_panel(tmp_path)), ["bad", "good"])]
    assert pinned["panel"] == "drift-test"  # the panel's own name, as its run reports it
    doc = run_drift_check(config, story.transitions, today=DAY2, judge=judge)
    assert len(calls) == 2 and doc["status"] == "ok" and doc["by_track"]["text"]["n_anchors"] == 2


def test_shift_beyond_threshold_is_drift(
    story: Story, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _suite(story, _panel(tmp_path))
    pin_anchors(config, story.transitions, today=DAY1)
    monkeypatch.setattr(judge_scripts, "DRIFT_SHIFT", 2)
    doc = run_drift_check(config, story.transitions, today=DAY2)
    assert doc["status"] == "drift"
    # good: 7 -> 9, bad: 3 -> 5: both anchors moved by +2.
    assert doc["mean_shift"] == 2.0 and doc["max_shift"] == 2.0 and doc["mean_signed_shift"] == 2.0
    assert "mean absolute shift 2.000 > threshold 1" in doc["reasons"][0]
    # A looser threshold accepts the same shift.
    loose = _suite(story, _panel(tmp_path), threshold=2.5)
    assert run_drift_check(loose, story.transitions, today=DAY2)["status"] == "ok"


def test_changed_model_or_settings_is_identity_changed(story: Story, tmp_path: Path) -> None:
    config = _suite(story, _panel(tmp_path))
    pin_anchors(config, story.transitions, today=DAY1)
    other = _suite(story, _panel(tmp_path, model="scripted/other"))
    doc = run_drift_check(other, story.transitions, today=DAY2)
    assert doc["status"] == "identity_changed"
    assert any("model changed" in r for r in doc["reasons"])
    assert doc["mean_shift"] == 0.0  # still compared and reported
    settings = _suite(story, _panel(tmp_path, decoding="max_tokens: 64"))
    doc = run_drift_check(settings, story.transitions, today=DAY2)
    assert doc["status"] == "identity_changed" and any("settings_sha256" in r for r in doc["reasons"])


def test_a_new_date_calls_the_model_again(story: Story, tmp_path: Path) -> None:
    config = _suite(story, _panel(tmp_path))
    pin_anchors(config, story.transitions, today=DAY1)
    first = run_drift_check(config, story.transitions, today=DAY2)
    again = run_drift_check(config, story.transitions, today=DAY2)
    later = run_drift_check(config, story.transitions, today=DAY2 + dt.timedelta(days=1))
    # Two anchors -> two real calls; the same day reuses them; the next day calls again.
    assert first["model_calls"] == 2 and first["cache_hits"] == 0
    assert again["model_calls"] == 0 and again["cache_hits"] == 2
    assert later["model_calls"] == 2
    days = sorted(p.name for p in (story.root / ".cache" / "drift").iterdir())
    assert days == ["2026-01-07"]  # earlier days' caches are dropped


def test_unavailable_without_pinned_scores(story: Story, tmp_path: Path) -> None:
    config = _suite(story, _panel(tmp_path))
    doc = run_drift_check(config, story.transitions, today=DAY1)
    assert doc["status"] == "unavailable" and "no pinned anchor scores" in doc["reasons"][0]


def test_bad_manifest_names_the_entry(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"anchors": [{"id": "a", "instance_id": "x"}]}))
    with pytest.raises(DataError, match=r"anchors\[0\]: missing field 'index'"):
        load_anchors(tmp_path)


def test_compare_runs_by_hand() -> None:
    ident = {
        "j": {
            "model": "m",
            "revision": "r",
            "weights_sha256": {},
            "settings_sha256": "s",
            "prompt_sha256": {"text": "p"},
        }
    }
    crit = (
        "alignment_with_metadata",
        "natural_flow_from_current_narration",
        "satisfaction_of_generation_conditions",
        "semantic_consistency_with_ground_truth",
    )

    def doc(values: dict[str, tuple[int, ...]]) -> dict:  # type: ignore[type-arg]
        return {
            "judges": ident,
            "tracks": {a: "text" for a in values},
            "anchors": {
                a: {"j": {"status": "ok", "scores": dict(zip(crit, v, strict=True)), "expected": {}}}
                for a, v in values.items()
            },
        }

    pinned = doc({"a": (8, 8, 8, 8), "b": (2, 2, 4, 4), "c": (5, 5, 5, 5)})
    now = doc({"a": (8, 8, 8, 6), "b": (4, 4, 4, 4), "c": (5, 5, 5, 5)})
    out = compare_runs(now, pinned, threshold=0.5)
    # a: 8 -> 7.5 (-0.5), b: 3 -> 4 (+1), c: 0 -> mean |shift| = 0.5, not above 0.5.
    assert out["mean_shift"] == pytest.approx(0.5) and out["max_shift"] == 1.0
    assert out["mean_signed_shift"] == pytest.approx(1 / 6)
    assert out["status"] == "ok"
    assert compare_runs(now, pinned, threshold=0.4)["status"] == "drift"


def _two_track_doc(
    text: tuple[int, ...], speech: tuple[int, ...], *, speech_prompt: str = "ps", speech_settings: str = "ss"
) -> dict:  # type: ignore[type-arg]
    """Three text anchors holding ``text`` and one speech anchor holding ``speech`` (one judge)."""
    from omnieval.judges._tracks import TRACKS

    ident = {
        "j": {
            "model": "m",
            "revision": "r",
            "weights_sha256": {},
            "settings_sha256": f"st+{speech_settings}",
            "settings_sha256_by_track": {"text": "st", "speech": speech_settings},
            "prompt_sha256": {"text": "pt", "speech": speech_prompt},
        }
    }
    values = {"t1": ("text", text), "t2": ("text", text), "t3": ("text", text), "s1": ("speech", speech)}
    return {
        "judges": ident,
        "tracks": {a: track for a, (track, _) in values.items()},
        "anchors": {
            a: {
                "j": {"status": "ok", "scores": dict(zip(TRACKS[t].criteria, v, strict=True)), "expected": {}}
            }
            for a, (t, v) in values.items()
        },
    }


def test_a_drifting_track_is_not_averaged_away_and_is_named() -> None:
    # Text steady on three anchors, speech +2 on its one: overall mean |shift| 0.5 <= 1, speech 2 > 1.
    pinned = _two_track_doc((6, 6, 6, 6), (4, 4, 4, 4))
    now = _two_track_doc((6, 6, 6, 6), (6, 6, 6, 6))
    out = compare_runs(now, pinned, threshold=1.0)
    assert out["mean_shift"] == pytest.approx(0.5)
    assert out["by_track"]["speech"] == {
        "mean_shift": 2.0,
        "max_shift": 2.0,
        "mean_signed_shift": 2.0,
        "n_anchors": 1,
    }
    assert out["by_track"]["text"]["mean_shift"] == 0.0 and out["by_track"]["text"]["n_anchors"] == 3
    assert out["status"] == "drift"
    assert out["reasons"] == ["track speech: mean absolute shift 2.000 > threshold 1"]
    assert compare_runs(pinned, pinned, threshold=1.0)["status"] == "ok"


def test_a_changed_setting_names_the_track() -> None:
    pinned = _two_track_doc((6, 6, 6, 6), (4, 4, 4, 4))
    prompt = compare_runs(
        _two_track_doc((6, 6, 6, 6), (4, 4, 4, 4), speech_prompt="ps2"), pinned, threshold=1.0
    )
    assert prompt["status"] == "identity_changed"
    assert prompt["reasons"][0].startswith("judge j: prompt template changed on track speech (")
    settings = compare_runs(
        _two_track_doc((6, 6, 6, 6), (4, 4, 4, 4), speech_settings="ss2"), pinned, threshold=1.0
    )
    assert settings["status"] == "identity_changed"
    assert settings["reasons"][0].startswith("judge j: settings_sha256 changed on track speech (")


def _suite_file(story: Story, panel: Path, anchors: Path) -> Path:
    """The suite YAML ``omnieval judge pin-anchors`` reads (its drift block names anchors and panel)."""
    path = story.root / "drift-suite.yaml"
    body = {
        "suite": "drift-test",
        "systems": {"oracle": {"kind": "oracle"}},
        "state_dir": str(story.root / "state"),
        "drift": {"enabled": True, "anchors": str(anchors), "panel": str(panel)},
    }
    path.write_text(json.dumps(body), encoding="utf-8")  # JSON is YAML
    return path


def test_pin_anchors_command_writes_the_pinned_file(
    story: Story, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from omnieval.cli import main
    from omnieval.stages import validate

    anchors = _anchors(story)
    suite = _suite_file(story, _panel(tmp_path), anchors)
    # The synthetic story has no dataset folder: hand the command its instances.
    monkeypatch.setattr(validate, "load_instances", lambda _config: tuple(story.transitions))
    assert main(["judge", "pin-anchors", str(suite)]) == 0
    out = capsys.readouterr().out
    assert out.strip() == f"pinned 2 anchor verdicts of panel drift-test to {anchors / 'pinned.json'}"
    pinned = json.loads((anchors / "pinned.json").read_text(encoding="utf-8"))
    assert pinned["format"] == 1 and set(pinned["anchors"]) == {"good", "bad"}
    assert pinned["judges"]["drift-judge"]["model"] == "scripted/drift"
    # What the command pinned is what the nightly check compares with.
    doc = run_drift_check(_suite(story, _panel(tmp_path)), story.transitions, today=DAY2)
    assert doc["status"] == "ok" and doc["pinned"]["pinned_on"] == pinned["pinned_on"]


def test_pin_anchors_command_help(capsys: pytest.CaptureFixture[str]) -> None:
    from omnieval.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["judge", "pin-anchors", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: omnieval judge pin-anchors [-h] SUITE")
    assert "pinned.json" in out and "drift block" in out


def test_pin_anchors_command_errors_exit_2_without_writing(
    story: Story, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from omnieval.cli import main
    from omnieval.stages import validate

    monkeypatch.setattr(validate, "load_instances", lambda _config: tuple(story.transitions))

    assert main(["judge", "pin-anchors", str(tmp_path / "absent.yaml")]) == 2
    assert capsys.readouterr().err.strip() == f"error: SUITE: {tmp_path / 'absent.yaml'} does not exist"
    # A suite whose anchor folder has no manifest: a data error, and nothing pinned.
    empty = tmp_path / "no-anchors"
    empty.mkdir()
    suite = _suite_file(story, _panel(tmp_path), empty)
    assert main(["judge", "pin-anchors", str(suite)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "anchor manifest not found" in err and "Traceback" not in err
    assert not (empty / "pinned.json").exists()


def _multi_track_manifest(folder: Path, entry: dict) -> Path:  # type: ignore[type-arg]
    (folder / "clip" / "video" / "3").mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"anchors": [entry]}))
    return folder


def test_an_entry_with_several_tracks_is_one_judged_clip_scored_per_track(tmp_path: Path) -> None:
    entry = {"id": "a", "instance_id": "x", "index": 3, "tracks": ["t1", "t2"], "candidate": "clip"}
    tracks = {"t1": ("video",), "t2": ("video",)}
    anchors = load_anchors(_multi_track_manifest(tmp_path, entry), tracks)
    assert [(a.id, a.track, a.judged_as) for a in anchors] == [("a.t1", "t1", "a"), ("a.t2", "t2", "a")]
    # Without the benchmark's tracks, the registered judge tracks are the only ones known.
    with pytest.raises(DataError, match=r"anchors\[0\]\.track: unknown judge track 't1' \(known: "):
        load_anchors(tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"track": "t1"}, r"give either 'track' or a list 'tracks'"),
        ({"tracks": []}, r"expected a non-empty list of distinct track names"),
        ({"tracks": ["t1", "t1"]}, r"expected a non-empty list of distinct track names"),
        ({"index": 4}, r"video/4 not found"),
    ],
)
def test_a_bad_multi_track_entry_names_the_entry(tmp_path: Path, change: dict, message: str) -> None:  # type: ignore[type-arg]
    entry = {"id": "a", "instance_id": "x", "index": 3, "tracks": ["t1"], "candidate": "clip", **change}
    with pytest.raises(DataError, match=rf"anchors\[0\].*{message}"):
        load_anchors(_multi_track_manifest(tmp_path, entry), {"t1": ("video",)})


def test_a_benchmark_track_scores_the_mean_of_the_values_it_has() -> None:
    ident = {
        "j": {
            "model": "m",
            "revision": "r",
            "weights_sha256": {},
            "settings_sha256": "s",
            "prompt_sha256": {},
        }
    }

    def doc(cells: dict[str, float]) -> dict:  # type: ignore[type-arg]
        return {
            "judges": ident,
            "tracks": {"a.dim": "dim"},
            "anchors": {"a.dim": {"j": {"status": "ok", "scores": cells, "expected": {}}}},
        }

    out = compare_runs(doc({"speech": 8.0, "music": 4.0}), doc({"speech": 8.0, "music": 2.0}), threshold=0.5)
    assert out["by_track"]["dim"]["mean_shift"] == pytest.approx(1.0)  # 6 now, 5 pinned
    assert out["status"] == "drift" and out["reasons"] == [
        "track dim: mean absolute shift 1.000 > threshold 0.5"
    ]
    empty = compare_runs(doc({}), doc({"speech": 8.0}), threshold=0.5)
    assert empty["status"] == "unavailable" and "no valid verdict tonight" in empty["reasons"][0]


def test_a_subset_of_anchors_is_compared_on_its_own_tracks_only() -> None:
    """Pins over three tracks, an anchor of one: a judge identity that differs only on the other
    tracks (another prompt there) is not a change for this anchor; one on its own track is."""

    def identity(image: str) -> dict[str, object]:
        return {
            "model": "m",
            "settings_sha256": f"all-{image}",
            "settings_sha256_by_track": {"tone": "t", "speech": "s", "image": image},
            "prompt_sha256": {"tone": "pt", "speech": "ps", "image": f"p-{image}"},
        }

    # "tone" is no registered track: its anchor mean is the mean of the values given.
    anchors = {"a1": {"j": {"scores": {"fluency": 8}}}}
    pinned = {"judges": {"j": identity("old")}, "anchors": anchors, "tracks": {"a1": "tone"}}
    current = {"judges": {"j": identity("new")}, "anchors": anchors, "tracks": {"a1": "tone"}}
    result = compare_runs(current, pinned, threshold=1.0)
    assert result["status"] == "ok", result["reasons"]
    moved = {**identity("old"), "settings_sha256_by_track": {"tone": "t2", "speech": "s", "image": "old"}}
    changed = compare_runs({**current, "judges": {"j": moved}}, pinned, threshold=1.0)
    assert changed["status"] == "identity_changed" and "on track tone" in changed["reasons"][0], changed
