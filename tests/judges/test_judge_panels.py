"""Panel configs, the judge registry, prompt templates and the ``judge panels`` / ``judge prompts`` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from judge_fixtures import NARRATIONS, Story, fake_describe

from omnieval.benchmarks.storybench._rubrics import TEMPLATES
from omnieval.benchmarks.storybench._tracks import TRACKS
from omnieval.errors import ConfigError
from omnieval.judges import load_panel, panel_names, run_judges, template, template_catalog
from omnieval.judges._registry import judge_registry, weights_verified

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_panels() -> None:
    assert panel_names() == ["cpu", "cpu-served", "paper", "paper-a", "paper-b", "paper-c"]
    cpu = load_panel("cpu")
    assert [j.id for j in cpu.tracks["text"].judges] == ["cpu-qwen2.5-coder-1.5b"]
    assert cpu.tracks["speech"].input == "cascade"
    # No vision or omni model runs offline: the same text judge reads measured facts (cascades).
    for track_name in ("image", "integrated"):
        assert cpu.tracks[track_name].input == "cascade" and cpu.tracks[track_name].prompt == "cpu-cascade"
        assert [j.id for j in cpu.tracks[track_name].judges] == ["cpu-qwen2.5-coder-1.5b"]
    paper = load_panel("paper")
    for track_name in TRACKS:
        assert len(paper.tracks[track_name].judges) == 3


def test_every_panel_judge_is_in_the_registry() -> None:
    registry = judge_registry()
    for name in panel_names():
        panel = load_panel(name)
        ids = {j.id for _, j in panel.judges()} | ({panel.repair.id} if panel.repair else set())
        assert ids <= set(registry), ids - set(registry)
    cpu = registry["cpu-qwen2.5-coder-1.5b"]
    assert cpu.revision and len(cpu.weights_sha256["qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"]) == 64


def test_typos_fail_with_the_key_path(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "src/omnieval/benchmarks/storybench/panels/paper-a.yaml").read_text())
    data["tracks"]["text"]["judges"][0]["decoding"]["temprature"] = 0
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"tracks\.text\.judges\.0\.decoding\.temprature"):
        load_panel(str(path))
    data = {"name": "x", "tracks": {"txt": {"unavailable": "no"}}}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="unknown track"):
        load_panel(str(path))
    with pytest.raises(ConfigError, match="unknown judge panel 'paper-d'"):
        load_panel("paper-d")


def test_panels_are_the_benchmarks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omnieval.benchmarks.storybench import _tracks
    from omnieval.judges import _panels, register_panels

    assert not (ROOT / "src/omnieval/judges/panels").exists()
    shipped = _panels.PANELS.get("paper")
    assert (shipped.benchmark, shipped.file) == ("storybench", "paper.yaml")
    # Registering the same files again (a re-imported module) changes nothing.
    register_panels(Path(_tracks.__file__).with_name("panels"), _tracks.PANELS, benchmark="storybench")
    assert panel_names() == ["cpu", "cpu-served", "paper", "paper-a", "paper-b", "paper-c"]
    with pytest.raises(ConfigError, match="judge panel 'cpu' is already registered"):
        register_panels(tmp_path, ["cpu"], benchmark="other")
    with pytest.raises(ConfigError, match="no judge panels to register"):
        register_panels(tmp_path, [], benchmark="other")
    monkeypatch.setattr(_panels, "PANELS", type(_panels.PANELS)("judge panel"))
    with pytest.raises(ConfigError, match=r"known: none registered \(import the benchmark's package\)"):
        load_panel("cpu")
    (tmp_path / "mine.yaml").write_text(
        yaml.safe_dump({"name": "mine", "tracks": {"text": {"unavailable": "no"}}})
    )
    register_panels(tmp_path, ["mine"], benchmark="other")
    assert panel_names() == ["mine"] and load_panel("mine").tracks["text"].unavailable == "no"


def test_cli_parse_tracks_come_from_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    from omnieval.benchmarks import BENCHMARKS
    from omnieval.cli import main

    # Every benchmark's tracks, in benchmark name order (prism's dimensions, then storybench's).
    every = [t for name in BENCHMARKS.names() for t in BENCHMARKS.get(name).judge_tracks]
    assert set(TRACKS) < set(every) and "av_coherence" in every
    with pytest.raises(SystemExit):
        main(["judge", "parse", "--help"])
    assert "--track {" + ",".join(every) + "}" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        main(["judge", "parse", "--track", "txt", "-"])
    choices = ", ".join(repr(t) for t in every)
    assert f"invalid choice: 'txt' (choose from {choices})" in capsys.readouterr().err


def test_templates_are_hashed_and_versioned() -> None:
    catalog = template_catalog()
    assert {(e["track"], e["variant"]) for e in catalog} == set(TEMPLATES) | {("repair", "native")}
    assert len({e["sha256"] for e in catalog}) == len(catalog)
    text = template("text")
    assert [s.source for s in text.sections] == [
        "metadata",
        "current_text",
        "condition",
        "reference_text",
        "candidate_text",
    ]
    image = template("image")
    assert [s.source for s in image.sections][-3:] == ["current_image", "reference_image", "candidate_image"]
    for tpl in TEMPLATES.values():
        for key in TRACKS[tpl.track].criteria:
            assert f'"{key}"' in tpl.rubric
        assert "10 = excellent, 5 = mixed or only partly adequate" in tpl.rubric
        assert "data" in tpl.rubric
        # The paper's wording says "no overall score"; the cpu panel's own prompts (reference-guided,
        # one measured-facts line per criterion) ask per criterion and have no overall field either.
        assert "overall score" in tpl.rubric or tpl.variant in ("cpu", "cpu-cascade")


def test_registry_pins_revisions(story: Story, write_panel, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    registry = tmp_path / "judges.yaml"
    registry.write_text(
        yaml.safe_dump({"judges": {"scripted-judge": {"revision": "pinned-r1", "weights_sha256": {}}}})
    )
    monkeypatch.setenv("OMNIEVAL_JUDGE_REGISTRY", str(registry))
    systems = {"oracle": story.candidates("oracle", [n for _, n in NARRATIONS])}
    result = run_judges(
        story.transitions,
        systems,
        panel=str(write_panel("by_reference")),
        cache_dir=tmp_path / "c",
        describe_audio=fake_describe,
    )
    assert result.mlflow_tags()["omnieval.judge.scripted-judge.revision"] == "pinned-r1"
    assert result.lineage["judges"]["scripted-judge"]["registry"]["revision"] == "pinned-r1"
    judged = result.judgments[result.judgments.judge == "scripted-judge"]
    assert set(judged["revision"]) == {"pinned-r1"}


def test_weights_verified() -> None:
    assert weights_verified({"a": "1"}, {"a": "1", "b": "2"}) is True
    assert weights_verified({"a": "1"}, {"a": "9"}) is False
    assert weights_verified({}, {"a": "1"}) is None


def test_cli_panels_and_prompts(capsys) -> None:  # type: ignore[no-untyped-def]
    from omnieval.cli import main

    assert main(["judge", "panels", "--json"]) == 0
    panels = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert panels["cpu"]["tracks"]["image"]["input"] == "cascade"
    assert panels["paper-c"]["tracks"]["integrated"]["judges"][0]["id"] == "google/gemma-4-12B-it"
    assert main(["judge", "panels"]) == 0
    assert "cpu-qwen2.5-coder-1.5b [llamacpp]" in capsys.readouterr().out
    assert main(["judge", "prompts", "--json"]) == 0
    catalog = json.loads(capsys.readouterr().out)
    assert len([e for e in catalog if e["benchmark"] == "storybench"]) == len(TEMPLATES) + 1
    # Every judging benchmark's templates: PRISM's two stages per judge kind and its repair prompt.
    prism = {(e["track"], e["variant"]) for e in catalog if e["benchmark"] == "prism"}
    assert prism == {(f"stage_{n}", k) for n in (1, 2) for k in ("native", "cascade")} | {
        ("repair", "native")
    }
