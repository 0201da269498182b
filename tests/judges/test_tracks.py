"""Judge tracks belong to their benchmark: several benchmarks' tracks live in one process.

Also pins what the registry feeds into bytes (verdict and repair schemas, the ledger's readings):
the digests below were recorded from the code before the tracks were kept per benchmark, and a
change of any of them changes prompts, cache keys or parse results.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from omnieval.benchmarks import BENCHMARKS
from omnieval.benchmarks.prism._tags import AUDIO_TYPES, DIMENSIONS
from omnieval.benchmarks.storybench._tracks import page_turn_inputs
from omnieval.candidates import Modality
from omnieval.errors import ConfigError
from omnieval.judges import (
    TRACKS,
    TrackSpec,
    _rubrics,
    _tracks,
    load_panel,
    parse_verdict,
    register_tracks,
    repair_schema,
    track_benchmarks,
    track_names,
    tracks_of,
    verdict_schema,
)
from omnieval.judges._drift import _anchor_mean

TONE = TrackSpec("tone", ("clarity", "warmth"), (Modality.TEXT,))
PICTURE = TrackSpec("picture", ("fit",), (Modality.IMAGE,))
STORYBENCH_TRACKS = ("text", "image", "speech", "integrated")


@pytest.fixture
def unregistered(monkeypatch: pytest.MonkeyPatch) -> None:
    """No benchmark's tracks or rubrics registered, for this test only (the real ones come back after)."""
    monkeypatch.setattr(_rubrics, "_registered", None)
    monkeypatch.setattr(_tracks, "_registry", {})


# -- the registry --------------------------------------------------------------------------------


@pytest.mark.usefixtures("unregistered")
def test_each_benchmark_keeps_its_own_tracks() -> None:
    assert dict(TRACKS) == {} and track_names() == () and track_benchmarks() == ()
    with pytest.raises(ValueError, match=r"unknown judge track 'tone'; known: none registered"):
        _tracks.track("tone")

    def inputs(row: object) -> object:
        return row

    one = register_tracks([TONE], benchmark="one", reference=inputs)
    register_tracks([PICTURE, dataclasses.replace(TONE, name="voice")], benchmark="two")
    assert track_benchmarks() == ("one", "two")
    assert tracks_of("one") is one and one.names() == ("tone",) and one.reference is inputs
    assert track_names("two") == ("picture", "voice") and tracks_of("two").reference is None
    # Readers that name no benchmark see every benchmark's tracks, benchmark by benchmark.
    assert list(TRACKS) == ["tone", "picture", "voice"] and len(TRACKS) == 3
    assert track_names() == ("tone", "picture", "voice") and TRACKS["picture"] is PICTURE
    assert verdict_schema("voice")["required"] == ["clarity", "warmth"]
    assert verdict_schema("picture", benchmark="two") == verdict_schema("picture")
    # Registering a benchmark again (a module reload) replaces its own tracks and nobody else's.
    register_tracks([dataclasses.replace(TONE, criteria=("clarity",))], benchmark="one")
    assert TRACKS["tone"].criteria == ("clarity",) and tracks_of("one").reference is None
    assert track_names("two") == ("picture", "voice") and track_benchmarks() == ("one", "two")


@pytest.mark.usefixtures("unregistered")
def test_a_name_two_benchmarks_register_differently_needs_its_benchmark() -> None:
    register_tracks([TONE], benchmark="one")
    register_tracks([dataclasses.replace(TONE, criteria=("pace",))], benchmark="two")
    with pytest.raises(
        ValueError, match=r"'tone' is registered by one, two with different .*name the benchmark"
    ):
        _tracks.track("tone")
    with pytest.raises(ValueError, match="name the benchmark"):
        parse_verdict('{"pace": {"score": 3, "rationale": "slow"}}', "tone")
    assert _tracks.track("tone", "two").criteria == ("pace",) and list(TRACKS) == ["tone"]
    reading = parse_verdict('{"pace": {"score": 3, "rationale": "slow"}}', "tone", benchmark="two")
    assert reading.ok and reading.scores == {"pace": 3}
    assert repair_schema("tone", benchmark="one")["anyOf"][0]["required"] == ["clarity", "warmth"]
    # The same facts under one name are one track, whoever registered it.
    register_tracks([TONE], benchmark="two")
    assert _tracks.track("tone") == TONE


@pytest.mark.usefixtures("unregistered")
def test_unknown_benchmarks_and_tracks_are_named() -> None:
    register_tracks([TONE], benchmark="one")
    with pytest.raises(ConfigError, match=r"benchmark 'two' registered no judge tracks; registered: one"):
        tracks_of("two")
    with pytest.raises(ValueError, match=r"benchmark 'one' has no judge track 'voice'; known: tone"):
        _tracks.track("voice", "one")
    with pytest.raises(ValueError, match=r"unknown judge track 'voice'; known: tone"):
        verdict_schema("voice")


@pytest.mark.usefixtures("unregistered")
def test_inconsistent_tracks_are_refused() -> None:
    cases = {
        "no judge tracks": [],
        "registered twice: tone": [TONE, TONE],
        "needs distinct criterion keys": [dataclasses.replace(TONE, criteria=("a", "a"))],
        "names no candidate output": [dataclasses.replace(TONE, needs=())],
    }
    for message, specs in cases.items():
        with pytest.raises(ConfigError, match=message):
            register_tracks(specs, benchmark="one")
    assert track_benchmarks() == ()


# -- the shipped benchmarks ---------------------------------------------------------------------------


def test_storybench_and_prism_tracks_are_registered_side_by_side() -> None:
    assert {"storybench", "prism"} <= set(track_benchmarks())
    story, prism = tracks_of("storybench"), tracks_of("prism")
    assert story.names() == STORYBENCH_TRACKS and story.reference is page_turn_inputs
    assert story.tracks
    assert all(spec.every_criterion for spec in story.tracks.values())
    assert prism.names() == DIMENSIONS and prism.reference is None
    for spec in prism.tracks.values():
        assert spec.criteria == AUDIO_TYPES and spec.needs == (Modality.VIDEO,) and not spec.every_criterion
    for name in ("storybench", "prism"):
        assert tracks_of(name).names() == BENCHMARKS.get(name).judge_tracks
    # No name is shared, so every track reads by name alone too, in both benchmarks' order.
    assert set(track_names()) == {*STORYBENCH_TRACKS, *DIMENSIONS}
    assert [t for t in track_names() if t in STORYBENCH_TRACKS] == list(STORYBENCH_TRACKS)


def test_a_benchmark_reads_its_own_tracks() -> None:
    story = BENCHMARKS.get("storybench")
    assert story.anchor_tracks() == {
        "text": ("text",),
        "image": ("image",),
        "speech": ("speech",),
        "integrated": ("text", "image", "speech"),
    }
    assert BENCHMARKS.get("acbench").anchor_tracks() is None  # it registered no judge tracks
    answer = json.dumps(
        {k: {"score": 5, "rationale": "ok"} for k in tracks_of("storybench").track("text").criteria}
    )
    assert story.read_judge_answer(answer, "text").scores == dict.fromkeys(
        tracks_of("storybench").track("text").criteria, 5
    )
    with pytest.raises(ConfigError, match="storybench has no judge answer reader for track 'av_coherence'"):
        story.read_judge_answer(answer, "av_coherence")


def test_an_anchor_mean_follows_the_tracks_facts() -> None:
    """A storybench verdict needs every criterion; a PRISM dimension's holds its active cells only."""
    text = tracks_of("storybench").track("text").criteria
    assert _anchor_mean(dict.fromkeys(text, 6.0), "text") == 6.0
    assert _anchor_mean(dict.fromkeys(text[:3], 6.0), "text") is None
    assert _anchor_mean({"speech": 7.0, "sound": 4.0}, "av_coherence") == 5.5
    assert _anchor_mean({}, "av_coherence") is None and _anchor_mean({"x": 2.0}, "unregistered") == 2.0


def test_a_panel_cannot_judge_another_benchmarks_track(tmp_path: Path) -> None:
    """Prism's dimensions are registered tracks, but the registered rubrics have no prompt for them."""
    judge = {"id": "j", "model": "m", "backend": {"kind": "scripted", "script": "json:dumps"}}
    path = tmp_path / "panel.yaml"
    path.write_text(yaml.safe_dump({"name": "mixed", "tracks": {"av_coherence": {"judges": [judge]}}}))
    with pytest.raises(ConfigError, match="track av_coherence: the registered rubrics have no native prompt"):
        load_panel(str(path))
    path.write_text(yaml.safe_dump({"name": "mixed", "tracks": {"txt": {"unavailable": "no"}}}))
    with pytest.raises(ConfigError, match=r"unknown track\(s\) txt; known: av_coherence"):
        load_panel(str(path))


def test_a_fresh_process_holds_both_benchmarks_tracks(tmp_path: Path) -> None:
    """The console script, as a user runs it: importing the benchmarks registers both sets of
    tracks, and ``judge parse`` reads a storybench verdict and a PRISM stage answer in one process
    each, on their own benchmark's tracks."""
    omnieval = Path(sys.executable).with_name("omnieval")
    criteria = tracks_of("storybench").track("speech").criteria
    verdict = tmp_path / "verdict.txt"
    verdict.write_text(
        "```json\n" + json.dumps({k: {"score": "7/10", "rationale": "clear"} for k in criteria}) + "\n```"
    )
    stage = tmp_path / "stage.txt"
    stage.write_text(
        json.dumps(
            {f"candidate_{s}": {"audio_quality": {"music": {"score": 0, "evidence": "hiss"}}} for s in (1, 2)}
        )
    )
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import omnieval.benchmarks, omnieval.judges as j; print(*j.track_benchmarks())",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert set(listed.stdout.split()) == {"prism", "storybench"}, listed.stderr[-3000:]
    for track_name, path, scores in (
        ("speech", verdict, dict.fromkeys(criteria, 7)),
        ("audio_quality", stage, {f"candidate_{s}.audio_quality.music": 0 for s in (1, 2)}),
    ):
        done = subprocess.run(
            [str(omnieval), "judge", "parse", "--track", track_name, str(path), "--json"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
        reading = json.loads(done.stdout)
        assert reading["status"] == "ok" and reading["scores"] == scores, reading


# -- pins: what the tracks feed into bytes ------------------------------------------------------------


def _sha(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def schema_digests() -> dict[str, str]:
    """Per storybench track: its verdict schemas (plain, and bounded with the reason first) and
    its repair schema, read by name as the panel runner reads them."""
    return {
        t: _sha(
            [
                verdict_schema(t),
                verdict_schema(t, rationale_max_chars=300, rationale_first=True),
                repair_schema(t),
            ]
        )
        for t in STORYBENCH_TRACKS
    }


def answers(criteria: tuple[str, ...]) -> list[str | None]:
    """Raw answers over ``criteria``: clean, each format slip, and each content problem."""
    out: list[str | None] = [None, "", "  ", "<think>x</think>", "<think>unclosed", '{"a": 1}']
    for score in (8, "8/10", " 7 ", 7.0, 7.5, 0, 11, True, "x", None, "10", "\u00a09\u2003", 1e300):
        body = {k: {"score": score, "rationale": "fine"} for k in criteria}
        out.append(json.dumps(body))
        out.append("```json\n" + json.dumps(body) + ",\n```")
        out.append("Sure " + json.dumps(body).replace('"fine"', "'fine'") + " done")
    out.append(json.dumps({k: {"score": 5, "reason": "r"} for k in criteria})[:-3])
    out.append(json.dumps({k: {"score": 5, "rationale": ""} for k in criteria}))
    return out


def reading_digests() -> dict[str, str]:
    """Per storybench track: every field of the ledger's reading of :func:`answers`."""
    out: dict[str, str] = {}
    for t in STORYBENCH_TRACKS:
        readings = []
        for raw in answers(TRACKS[t].criteria):
            r = parse_verdict(raw, t)
            readings.append([r.status, r.scores, r.rationales, r.error, r.normalizations, r.partial_scores])
        out[t] = _sha(readings)
    return out


# Recorded before the tracks were kept per benchmark (and unchanged since: same schemas, same readings).
SCHEMA_SHA256 = {
    "text": "2d863a28668c8bc0feeb4cf92fd282f4b0af90aca9499d1ffef7baea88731b31",
    "image": "fa9d73652754a4f95eda292d59f592a774e14c08c97befe38e732b47c12ee5c7",
    "speech": "b9a9c3b0e58fa517ba7eaa0ba3890e8430b8fdf3842af3cf3c1233cd443e5b0b",
    "integrated": "7194613b2c48b596f6e0afbae41ea9293556273e14ede7b4e837f11828bf2a06",
}
READING_SHA256 = {
    "text": "2c5636618ddb6d53af1bd4b22f6e14099a29880ec96df4e394bb75060b9a2ee7",
    "image": "7aabe4ef2baae03837ddb7d12b0312d07d1a0a8dd687f09e22a2f8bac0d18a0b",
    "speech": "bc639ff98288825519bbe3f57f5cc44b64dc187dc5f2e3f407048cc3c37f852d",
    "integrated": "b19b6828a65c934ab01d1420652cbd76bce9ff4b6abce9477239e5dc8acc87c4",
}


def test_storybench_schemas_and_readings_are_unchanged() -> None:
    assert schema_digests() == SCHEMA_SHA256
    assert reading_digests() == READING_SHA256
