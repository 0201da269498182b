"""The ``command`` kind: a script run by another venv's interpreter, evaluated like any other system.

The generator (tests/systems/conftest.py) is stdlib-only; it crashes on one chosen example and hangs
on another, and the run must lose exactly those two, each with its cause (FORMATS.md section 9).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from omnieval.candidates import Modality, read_candidate
from omnieval.config import load_suite
from omnieval.errors import ConfigError
from omnieval.stages import generate, validate
from omnieval.systems import SYSTEMS, GenerationRequest, config_model
from omnieval.systems._process import run_command
from omnieval.systems._protocol import launch_argv, program_files, resolve_env
from omnieval.systems.command import CommandConfig, CommandSystem, ContainerConfig

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tok-4f1c9a27e35b"  # a value from the caller's environment that must never be recorded


def _entry(python: Path, script: Path, log: Path, seen: Path, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "command",
        "argv": [str(python), str(script), "{input_dir}", "{output_dir}"],
        "timeout_s": 2,
        "env": {
            "GEN_LOG": str(log),
            "GEN_SEEN": str(seen),
            "GEN_CRASH": "1",
            "GEN_HANG": "2",
            "GEN_TOKEN": "${OMNIEVAL_TEST_GEN_TOKEN}",
            **extra,
        },
    }


def _nightly_suite(tmp_path: Path, entry: dict[str, Any], limit: int) -> Path:
    """pipelines/nightly.yaml with the command system instead of the references and a short dataset."""
    suite = yaml.safe_load((ROOT / "pipelines" / "nightly.yaml").read_text())
    suite["systems"] = {"ext": entry}
    suite["dataset"] = {**suite["dataset"], "path": str(ROOT / "data" / "storybench-sample"), "limit": limit}
    suite["state_dir"] = str(tmp_path / "state")
    suite["runs_dir"] = str(tmp_path / "runs")
    suite["drift"] = {"enabled": False}
    path = tmp_path / f"suite-{limit}.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def _calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _missing(root: Path, modality: str, index: int) -> str:
    return (root / modality / str(index) / "missing.txt").read_text(encoding="utf-8").strip()


def test_registered_with_typed_config() -> None:
    assert SYSTEMS.get("command") is CommandSystem
    assert config_model("command") is CommandConfig
    # The benchmarks list the kind; it writes what each one asks for (every modality when a task
    # run by hand names none).
    from omnieval.benchmarks import get_benchmark
    from omnieval.systems import Task

    system = CommandSystem(CommandConfig(argv=("true",)), system_id="c")
    for name, asked in [
        ("storybench", ("text", "image", "speech")),
        ("acbench", ("speech",)),
        ("prism", ("video",)),
    ]:
        bench = get_benchmark(name)
        assert "command" in bench.system_kinds
        assert tuple(bench.modalities) == asked
        assert system.wanted(Task(name, 0, "x", "", None, modalities=asked)) == asked
    assert system.wanted(Task("any", 0, "x", "", None)) == tuple(m.value for m in Modality)
    with pytest.raises(ValueError, match="argv"):
        CommandConfig(argv=())
    with pytest.raises(ValueError, match="extra"):
        CommandConfig.model_validate({"argv": ["x"], "time_out": 3})
    with pytest.raises(ValueError, match="not both"):
        CommandConfig(argv=("x",), conda_env="a", container=ContainerConfig(image="img"))
    with pytest.raises(ValueError, match="environment variable names"):
        CommandConfig(argv=("x",), env={"BAD-NAME": "1"})


@pytest.mark.parametrize("benchmark", ["storybench", "acbench", "prism"])
def test_every_benchmark_suite_accepts_a_command_entry(tmp_path: Path, benchmark: str) -> None:
    path = tmp_path / "suite.yaml"
    entry = {"kind": "command", "argv": ["gen", "{input_dir}", "{output_dir}"], "timeout_s": 5}
    path.write_text(yaml.safe_dump({"suite": "s", "benchmark": benchmark, "systems": {"ext": entry}}))
    assert isinstance(load_suite(path).systems["ext"], CommandConfig)
    entry["timeout"] = 5  # a typo fails when the suite loads, naming the key
    path.write_text(yaml.safe_dump({"suite": "s", "benchmark": benchmark, "systems": {"ext": entry}}))
    with pytest.raises(ConfigError, match=r"systems\.ext.*timeout"):
        load_suite(path)


def test_nightly_suite_loses_only_the_crashed_and_the_hung_example(
    tmp_path: Path, foreign_python: Path, generator_script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNIEVAL_TEST_GEN_TOKEN", TOKEN)
    log, seen = tmp_path / "calls.log", tmp_path / "seen"
    entry = _entry(foreign_python, generator_script, log, seen)
    config = load_suite(_nightly_suite(tmp_path, entry, limit=3))
    assert isinstance(config.systems["ext"], CommandConfig)
    state = validate.run(config)
    outcome = generate.run(config, "ext", state.instances, state.digest)
    root = outcome.candidates_root
    assert _calls(log) == ["storybench-0-", "storybench-1-", "storybench-2-"]

    # The script ran under the other venv's interpreter and got the ${VAR} value.
    first = json.loads((seen / "storybench-0-.json").read_text())
    assert Path(first["python"]).parent == foreign_python.parent
    assert first["token"] == TOKEN

    for modality in Modality.TEXT, Modality.IMAGE, Modality.SPEECH:
        assert read_candidate(root, modality, 0).present, modality
        assert _missing(root, modality.value, 1) == "crash: exit 3: RuntimeError: out of memory on example 1"
        assert _missing(root, modality.value, 2) == "timeout after 2s"
    assert (root / "text" / "0" / "generated.txt").read_text().startswith("The next page follows: ")

    raw = json.loads((root / "raw" / "1" / "generated_raw.json").read_text())
    assert raw["command"]["exit_status"] == 3
    assert raw["command"]["stderr_tail"] == [
        "loading checkpoint",
        "token was ***",
        "RuntimeError: out of memory on example 1",
    ]
    hung = json.loads((root / "raw" / "2" / "generated_raw.json").read_text())
    assert hung["command"]["timed_out"] and hung["command"]["exit_status"] is None
    ok = json.loads((root / "raw" / "0" / "generated_raw.json").read_text())
    assert ok["command"]["exit_status"] == 0 and ok["command"]["ignored_outputs"] == ["notes.log"]
    assert ok["seconds"]["command"] > 0

    summary_path = root.parent / "ext.summary.json"
    summary = json.loads(summary_path.read_text())
    generation = summary["lineage"]["generation"]
    assert generation["completeness"] == {"examples": 3, "missing": {"text": 2, "image": 2, "speech": 2}}
    assert generation["planning_failures"] == {}
    assert generation["seconds"]["command"] >= 2.0  # the hung example alone waited its 2 s
    assert summary["lineage"]["env_from_caller"] == ["GEN_TOKEN"]
    # The value from the environment is nowhere in what the run keeps.
    for path in (tmp_path / "state").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".txt", ".yaml"):
            assert TOKEN not in path.read_text(errors="replace"), path

    # Nothing changed: the stage is reused, the command does not run.
    again = generate.run(config, "ext", state.instances, state.digest)
    assert again.skipped and len(_calls(log)) == 3

    # One more example: only that one runs; the crashed and hung ones are reused with their causes.
    # Same dataset and state folder, so its validated digest holds; only the row prefix grows.
    config4 = load_suite(_nightly_suite(tmp_path, entry, limit=4))
    generate.run(config4, "ext", validate.load_instances(config4), state.digest)
    assert _calls(log)[3:] == ["storybench-3-"]
    assert _missing(root, "speech", 2) == "timeout after 2s"
    assert read_candidate(root, Modality.SPEECH, 3).present


def _system(entry: dict[str, Any], tmp_path: Path, system_id: str = "ext") -> CommandSystem:
    return CommandSystem(
        CommandConfig.model_validate(entry), system_id=system_id, cache_dir=tmp_path / "cache"
    )


def test_acbench_task_has_the_condition_and_its_media(
    tmp_path: Path,
    foreign_python: Path,
    generator_script: Path,
    acbench_instances: tuple[Any, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from omnieval.benchmarks import get_benchmark

    monkeypatch.setenv("OMNIEVAL_TEST_GEN_TOKEN", TOKEN)
    log, seen = tmp_path / "calls.log", tmp_path / "seen"
    entry = _entry(foreign_python, generator_script, log, seen, GEN_CRASH="", GEN_HANG="")
    system = _system(entry, tmp_path)
    bench = get_benchmark("acbench")
    for condition in ("original", "all_to_t"):
        out = tmp_path / "cand" / condition
        summary = system.generate(
            GenerationRequest(
                acbench_instances[:2],
                out,
                visible=bench.visible_task,
                modalities=bench.modalities,
                condition=condition,
            )
        )
        assert summary.missing == {}
        assert read_candidate(out, Modality.SPEECH, 1).present
    spoken = json.loads((seen / "acbench-0-original.json").read_text())
    assert spoken["task"]["condition"] == "original"
    assert spoken["task"]["instruction_audio"] == "instruction_audio.wav"
    assert spoken["task"]["instruction_text"] is None
    assert spoken["task"]["outputs"] == {"speech": "speech.wav"}
    assert spoken["files"] == ["image.png", "instruction_audio.wav", "task.json"]
    written = json.loads((seen / "acbench-0-all_to_t.json").read_text())
    assert written["task"]["instruction_audio"] is None and written["task"]["image"] is None
    assert written["task"]["instruction_text"] and written["task"]["image_keywords"]
    assert written["files"] == ["task.json"]
    assert sorted(_calls(log)) == sorted(
        ["acbench-0-original", "acbench-1-original", "acbench-0-all_to_t", "acbench-1-all_to_t"]
    )


def test_prism_video_is_collected_and_probed(
    tmp_path: Path,
    foreign_python: Path,
    generator_script: Path,
    prism_instances: tuple[Any, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from omnieval.benchmarks import get_benchmark

    monkeypatch.setenv("OMNIEVAL_TEST_GEN_TOKEN", TOKEN)
    log, seen = tmp_path / "calls.log", tmp_path / "seen"
    entry = _entry(foreign_python, generator_script, log, seen, GEN_CRASH="", GEN_HANG="", GEN_SKIP="")
    entry["timeout_s"] = 60
    bench = get_benchmark("prism")
    out = tmp_path / "cand"
    summary = _system(entry, tmp_path).generate(
        GenerationRequest(prism_instances[:1], out, visible=bench.visible_task, modalities=bench.modalities)
    )
    assert summary.missing == {}
    assert read_candidate(out, Modality.VIDEO, 0).present
    task = json.loads((seen / "prism-0-.json").read_text())["task"]
    assert task["caption"] == prism_instances[0].caption
    assert task["outputs"] == {"video": "video.mp4"}


def test_not_written_undecodable_and_unstartable(
    tmp_path: Path,
    foreign_python: Path,
    generator_script: Path,
    storybench_instances: tuple[Any, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from omnieval.benchmarks import get_benchmark

    monkeypatch.setenv("OMNIEVAL_TEST_GEN_TOKEN", TOKEN)
    bench = get_benchmark("storybench")
    log, seen = tmp_path / "calls.log", tmp_path / "seen"
    entry = _entry(
        foreign_python,
        generator_script,
        log,
        seen,
        GEN_CRASH="",
        GEN_HANG="",
        GEN_SKIP="speech",
        GEN_BROKEN_IMAGE="1",
    )
    out = tmp_path / "cand"
    _system(entry, tmp_path).generate(
        GenerationRequest(
            storybench_instances[:1], out, visible=bench.visible_task, modalities=bench.modalities
        )
    )
    assert read_candidate(out, Modality.TEXT, 0).present
    assert _missing(out, "speech", 0) == "not written"
    assert _missing(out, "image", 0).startswith("undecodable: ")

    entry["argv"] = [str(tmp_path / "no-such-interpreter"), "{input_dir}"]
    out2 = tmp_path / "cand2"
    _system(entry, tmp_path).generate(
        GenerationRequest(
            storybench_instances[:1], out2, visible=bench.visible_task, modalities=bench.modalities
        )
    )
    assert _missing(out2, "text", 0).startswith("crash: exit 127: cannot start ")


def test_rerun_is_free_and_editing_the_script_regenerates(
    tmp_path: Path,
    foreign_python: Path,
    generator_script: Path,
    storybench_instances: tuple[Any, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from omnieval.benchmarks import get_benchmark

    monkeypatch.setenv("OMNIEVAL_TEST_GEN_TOKEN", TOKEN)
    bench = get_benchmark("storybench")
    log, seen = tmp_path / "calls.log", tmp_path / "seen"
    entry = _entry(foreign_python, generator_script, log, seen, GEN_CRASH="0", GEN_HANG="")
    rows = storybench_instances[:2]

    def run() -> dict[str, Any]:
        summary = _system(entry, tmp_path).generate(
            GenerationRequest(
                rows, tmp_path / "cand", visible=bench.visible_task, modalities=bench.modalities
            )
        )
        generation: dict[str, Any] = summary.lineage["generation"]
        return generation

    first = run()
    assert (first["examples_generated"], first["examples_reused"]) == (2, 0)
    second = run()
    assert (second["examples_generated"], second["examples_reused"]) == (0, 2)
    assert len(_calls(log)) == 2  # the crash is reused too: nothing changed, nothing runs
    assert _missing(tmp_path / "cand", "text", 0).startswith("crash: exit 3: ")

    before = _system(entry, tmp_path).identity()
    generator_script.write_text(generator_script.read_text() + "\n# tuned\n")
    after = _system(entry, tmp_path).identity()
    assert before["files"][str(generator_script)] != after["files"][str(generator_script)]
    assert str(foreign_python) in after["files"]  # the interpreter is part of the identity too
    third = run()
    assert third["examples_generated"] == 2 and len(_calls(log)) == 4


def test_env_reference_must_be_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMNIEVAL_TEST_UNSET", raising=False)
    config = CommandConfig(argv=("true",), env={"KEY": "${OMNIEVAL_TEST_UNSET}"})
    with pytest.raises(ConfigError, match=r"system 'x': env.KEY refers to \$\{OMNIEVAL_TEST_UNSET\}"):
        resolve_env(config, os.environ, system_id="x")
    assert config.model_dump()["env"] == {"KEY": "${OMNIEVAL_TEST_UNSET}"}  # recorded unexpanded


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    # The command starts a grandchild that would outlive a kill of the command alone.
    script = f"sleep 300 & echo $! > {pid_file}; wait"
    outcome = run_command(
        ["sh", "-c", script],
        env=dict(os.environ),
        cwd=tmp_path,
        timeout_s=1,
        stdout=tmp_path / "out",
        stderr=tmp_path / "err",
    )
    assert outcome.timed_out and outcome.returncode is None
    grandchild = int(pid_file.read_text())
    deadline = time.time() + 5
    while time.time() < deadline and _alive(grandchild):
        time.sleep(0.1)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (killed, not yet reaped by its parent) counts as gone.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def test_launchers_and_program_identity(tmp_path: Path) -> None:
    box = CommandConfig(
        argv=("python", "gen.py", "{input_dir}", "{output_dir}"),
        env={"HF_TOKEN": "${HF_TOKEN}"},
        container=ContainerConfig(
            image="ghcr.io/lab/t2av@sha256:abc", gpus="all", mounts=("/models:/models:ro",)
        ),
    )
    argv = launch_argv(
        box, ["python", "gen.py", "/in", "/out"], Path("/in"), Path("/out"), container_name="c1"
    )
    assert argv[:6] == ["docker", "run", "--rm", "--init", "--name", "c1"]
    assert argv[6:8] == ["-v", "/in:/in:ro"] and argv[argv.index("-e") : argv.index("-e") + 2] == [
        "-e",
        "HF_TOKEN",
    ]
    assert argv[-5:] == ["ghcr.io/lab/t2av@sha256:abc", "python", "gen.py", "/in", "/out"]
    assert all("${" not in a for a in argv)

    script = tmp_path / "gen.py"
    script.write_text("print(1)\n")
    files = program_files(["sh", "gen.py", "{input_dir}", "--flag"], tmp_path)
    assert set(files) == {"sh", "gen.py"}
