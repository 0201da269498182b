"""A system cannot read a target: neither the task object it receives nor the task.json a command reads
holds any target field of the instance, for every benchmark and input condition.

(a) ``task.json`` (and the media copied beside it) holds no target field name, no target value and
    no copy of a target file; (b) ``Task.inputs`` has no attribute named after a target field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omnieval.benchmarks import get_benchmark
from omnieval.systems import Task
from omnieval.systems.command import TASK_FILE, write_task

#: Per benchmark: the instance fields that are evaluation targets (or the labels behind them).
TARGET_FIELDS: dict[str, tuple[str, ...]] = {
    "storybench": ("next_text", "next_image", "next_text_path", "target_speech"),
    "acbench": ("target_value", "heteronym", "feature"),
    "prism": ("reference_video", "active_tags", "subset", "visual_events", "speaker", "notes"),
}

#: Input conditions (acbench has five; the others run once with ``""``).
CONDITIONS: dict[str, tuple[str, ...]] = {
    "storybench": ("",),
    "acbench": ("original", "s_to_t", "i_to_t", "all_to_t", "oracle"),
    "prism": ("",),
}


def _tasks(benchmark: str, instances: tuple[Any, ...]) -> Iterator[tuple[Any, Task]]:
    bench = get_benchmark(benchmark)
    for condition in CONDITIONS[benchmark]:
        for instance in instances:
            yield instance, bench.visible_task(instance, condition)


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v)


def _target_values(instance: Any) -> Iterator[str]:
    """Target values that are distinctive enough to search for in text (long strings, paths)."""
    for name in ("next_text", "reference_video", "next_image"):
        value = getattr(instance, name, None)
        if value is not None:
            yield str(value)
            if isinstance(value, Path):
                yield value.name
    speech = getattr(instance, "target_speech", None)
    if speech is not None:
        yield speech.line
    heteronym = getattr(instance, "heteronym", None)
    if heteronym is not None:
        yield " ".join(heteronym.target_phones)


def _target_files(instance: Any) -> set[str]:
    files = [getattr(instance, n, None) for n in ("next_image", "reference_video")]
    return {hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in files if f is not None}


@pytest.fixture(scope="module")
def instances(
    storybench_instances: tuple[Any, ...],
    acbench_instances: tuple[Any, ...],
    prism_instances: tuple[Any, ...],
) -> dict[str, tuple[Any, ...]]:
    return {"storybench": storybench_instances, "acbench": acbench_instances, "prism": prism_instances}


@pytest.mark.parametrize("benchmark", sorted(TARGET_FIELDS))
def test_task_json_holds_no_target(
    benchmark: str, instances: dict[str, tuple[Any, ...]], tmp_path: Path
) -> None:
    checked = 0
    for n, (instance, task) in enumerate(_tasks(benchmark, instances[benchmark])):
        folder = tmp_path / str(n)
        folder.mkdir()
        write_task(task, folder, ("text",))
        text = (folder / TASK_FILE).read_text(encoding="utf-8")
        document = json.loads(text)
        assert document["benchmark"] == benchmark and document["id"] == instance.id
        leaked = set(_keys(document)) & set(TARGET_FIELDS[benchmark])
        assert not leaked, (
            f"{benchmark} {instance.id} [{task.condition}]: task.json has target fields {leaked}"
        )
        if task.condition == "oracle":
            # acbench's Oracle condition states the target in words by the protocol's design (checked
            # below); nothing else may carry it.
            text = json.dumps(
                {k: v for k, v in document.items() if k != "target_statement"}, ensure_ascii=False
            )
        for value in _target_values(instance):
            assert value not in text, (
                f"{benchmark} {instance.id} [{task.condition}]: task.json holds {value!r}"
            )
        copied = {hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.name != TASK_FILE}
        assert not copied & _target_files(instance), f"{benchmark} {instance.id}: a target file was copied"
        if benchmark == "acbench":
            # Only the Oracle condition states the target, in words, by the protocol's design.
            assert (document["target_statement"] is not None) == (task.condition == "oracle")
        checked += 1
    assert checked == len(instances[benchmark]) * len(CONDITIONS[benchmark])


@pytest.mark.parametrize("benchmark", sorted(TARGET_FIELDS))
def test_task_inputs_have_no_target_attribute(benchmark: str, instances: dict[str, tuple[Any, ...]]) -> None:
    for instance, task in _tasks(benchmark, instances[benchmark]):
        for name in TARGET_FIELDS[benchmark]:
            assert hasattr(instance, name), f"{benchmark}: the instance has no {name!r}; update TARGET_FIELDS"
            with pytest.raises(AttributeError):
                getattr(task.inputs, name)
        # The task object itself carries nothing else a system could reach the instance through.
        assert not any(v is instance for v in vars(task).values())
        assert set(vars(task)) == {
            "benchmark",
            "index",
            "id",
            "condition",
            "inputs",
            "modalities",
            "files",
            "brief",
        }
        # Media by role are visible inputs' files; the brief, where there is one, states no target.
        assert set(task.files.values()) <= set(task.media())
        if task.brief is not None:
            said = task.brief.context(10**6) + task.brief.picture + " ".join(task.brief.delivery.values())
            for ask in (*task.brief.asks(True), *task.brief.asks(False)):
                said += ask.template + " ".join(ask.values.values()) + " ".join(p.text for p in ask.parts)
                # A request shows only the task's own media.
                assert {p.media for p in ask.parts if p.media} <= set(task.files)
            for name in TARGET_FIELDS[benchmark]:
                value = getattr(instance, name)
                if isinstance(value, str) and len(value) > 20:
                    assert value not in said, f"{benchmark} {instance.id}: the brief states {name}"
        # What the benchmark asks for is not the task's to say: the generate driver fills the
        # modalities in from benchmark.yaml, so a rendered task has none yet.
        assert task.modalities == ()


@pytest.mark.parametrize("condition", ["original", "s_to_t", "i_to_t", "all_to_t", "oracle"])
def test_acbench_tasks_give_their_media_by_role_and_one_spoken_request(
    condition: str, instances: dict[str, tuple[Any, ...]]
) -> None:
    from omnieval.systems import AUDIO_ROLE, IMAGE_ROLE

    bench = get_benchmark("acbench")
    task = bench.visible_task(instances["acbench"][0], condition)
    inputs = task.inputs
    expected = {IMAGE_ROLE: inputs.image, AUDIO_ROLE: inputs.instruction_audio}
    assert dict(task.files) == {role: path for role, path in expected.items() if path is not None}
    assert task.brief is not None and task.brief.plan is None
    (ask,) = task.brief.asks(True)
    assert (ask.name, ask.answer, ask.values["script"]) == ("delivery", "speech", inputs.script)
    shown = [p.media for p in ask.parts if p.media]
    assert shown == [role for role in (AUDIO_ROLE, IMAGE_ROLE) if role in task.files]
    # A system that sends no pictures gets the request without the picture, told it is left out.
    (blind,) = task.brief.asks(False)
    assert IMAGE_ROLE not in {p.media for p in blind.parts}
    if IMAGE_ROLE in task.files:
        assert "not sent" in blind.values["context"]
