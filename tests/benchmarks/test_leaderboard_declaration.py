"""``leaderboard.yaml``: the typed document and per-instance component sources as data.

A declaration the framework cannot build, or whose component sources disagree with
``benchmark.yaml``'s headline, fails by file and field (at the benchmark's import, as a bad
``benchmark.yaml`` does); the sources give what the aggregate computes.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from pydantic import ValidationError

from omnieval.benchmarks import BENCHMARKS
from omnieval.benchmarks._leaderboard import (
    LEADERBOARD_FILE,
    LeaderboardDeclaration,
    build_blocks,
    components_frame,
    declared_blocks,
    declared_document,
    leaderboard_declaration,
)
from omnieval.benchmarks._spec import SPEC_FILE
from omnieval.errors import ConfigError
from omnieval.metrics.functional.acoustic import WHISPER_VFR_THRESHOLD


def _package_dir(name: str) -> Path:
    return Path(sys.modules[type(BENCHMARKS.get(name)).__module__].__file__ or "").parent


def _copy(name: str, folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The package's two declarations as mappings (to alter and write into ``folder``)."""
    spec = yaml.safe_load((_package_dir(name) / SPEC_FILE).read_text(encoding="utf-8"))
    spec.get("judge", {}).pop("criteria_file", None)
    board = yaml.safe_load((_package_dir(name) / LEADERBOARD_FILE).read_text(encoding="utf-8"))
    return spec, board


def _load(folder: Path, spec: dict[str, Any], board: dict[str, Any]) -> LeaderboardDeclaration:
    (folder / SPEC_FILE).write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    (folder / LEADERBOARD_FILE).write_text(yaml.safe_dump(board, sort_keys=False), encoding="utf-8")
    return leaderboard_declaration(str(folder / "hooks.py"))


def test_each_benchmark_declares_its_document() -> None:
    names = {
        "storybench": "StorybenchLeaderboard",
        "prism": "PrismLeaderboard",
        "acbench": "AcbenchLeaderboard",
    }
    for name, title in names.items():
        model = BENCHMARKS.get(name).leaderboard_model()
        assert model is declared_document(str(_package_dir(name) / "__init__.py"))  # built once
        assert model.__name__ == title


def test_the_shipped_copies_load(tmp_path: Path) -> None:
    spec, board = _copy("acbench", tmp_path)
    assert list(_load(tmp_path, spec, board).instance_components) == spec["headline"]["components"]


def test_the_vfr_source_is_the_papers_threshold() -> None:
    """``vfr_at_0_3`` counts what ``is_whisper_like`` counts (the aggregate's VFR@0.3)."""
    declared = leaderboard_declaration(str(_package_dir("acbench") / "__init__.py"))
    assert declared.instance_components["vfr_at_0_3"].at_most == WHISPER_VFR_THRESHOLD


def _missing_component(spec: dict[str, Any], board: dict[str, Any]) -> None:
    spec["headline"]["components"] = ["wer", "per", "mos"]
    spec["headline"]["lower_is_better"] = ["wer", "per"]
    spec["headline"]["scales"] = {k: v for k, v in spec["headline"]["scales"].items() if k in ("wer", "per")}


def _not_per_condition(spec: dict[str, Any], board: dict[str, Any]) -> None:
    spec["headline"]["per_condition"] = False


def _unknown_block(spec: dict[str, Any], board: dict[str, Any]) -> None:
    board["document"]["AcbenchSystem"]["fields"]["conditions"]["type"] = "dict[str, Metrics]"


def _cycle(spec: dict[str, Any], board: dict[str, Any]) -> None:
    board["document"]["ConditionMetrics"]["fields"]["n"] = "AcbenchSystem"


def _bad_type(spec: dict[str, Any], board: dict[str, Any]) -> None:
    board["document"]["ConditionMetrics"]["fields"]["n"] = "tuple[int, int]"


def _unknown_standard(spec: dict[str, Any], board: dict[str, Any]) -> None:
    board["document"]["AcbenchSystem"]["fields"]["timing"] = "standard"


def _restated_standard(spec: dict[str, Any], board: dict[str, Any]) -> None:
    board["document"]["AcbenchSystem"]["fields"]["generation"] = {"type": "standard", "doc": "mine"}


def _bad_key(spec: dict[str, Any], board: dict[str, Any]) -> None:
    board["document"]["ConditionMetrics"]["fields"]["Wer"] = "float"


BAD: dict[str, tuple[Any, str, str]] = {
    # case: (change, field named, what the error says)
    "a headline component without a source": (
        _missing_component,
        "instance_components",
        "got wer, per, vfr_at_0_3",
    ),
    "sources without per_condition": (
        _not_per_condition,
        "instance_components",
        "per_condition must be true",
    ),
    "an unknown block": (_unknown_block, "document", "unknown block 'Metrics'"),
    "blocks that hold each other": (_cycle, "document", "AcbenchSystem -> ConditionMetrics -> AcbenchSystem"),
    "a type that is not declarable": (_bad_type, "document", "not a declarable type: tuple[int, int]"),
    "an unknown standard field": (
        _unknown_standard,
        "document.AcbenchSystem.fields",
        "no standard field timing",
    ),
    "a standard field given a doc": (
        _restated_standard,
        "document.AcbenchSystem.fields",
        "a standard field takes no doc or optional: generation",
    ),
    "a key that is no JSON name": (_bad_key, "document.ConditionMetrics.fields", "keys must match"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_declaration_fails_naming_file_and_field(case: str, tmp_path: Path) -> None:
    change, field, detail = BAD[case]
    spec, board = _copy("acbench", tmp_path)
    change(spec, board)
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, spec, board)
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / LEADERBOARD_FILE}: invalid leaderboard declaration"), message
    assert f"  - {field}" in message and detail in message, message


def test_a_missing_declaration_is_named(tmp_path: Path) -> None:
    shutil.copy(_package_dir("acbench") / SPEC_FILE, tmp_path / SPEC_FILE)
    with pytest.raises(ConfigError, match="leaderboard declaration not found"):
        leaderboard_declaration(str(tmp_path / "hooks.py"))


def test_declared_blocks_are_frozen_and_closed() -> None:
    blocks = declared_blocks(str(_package_dir("acbench") / "__init__.py"))
    assert next(iter(blocks)) == "AcbenchLeaderboard"
    metrics = blocks["ConditionMetrics"]
    row = {k: None for k in ("wer", "delta_wpm", "per", "vfr_at_0_3", "emotion_accuracy")}
    row |= {"accent_accuracy": None, "timbre_accuracy": 1.5, "n": 2, "not_computed": []}
    model = metrics.model_validate(row)
    with pytest.raises(ValidationError):
        metrics.model_validate({**row, "cer": 1.0})
    with pytest.raises(ValidationError):
        model.n = 3  # type: ignore[attr-defined]


def test_a_dotted_key_gets_an_underscore_name() -> None:
    declaration = LeaderboardDeclaration.model_validate(
        {"document": {"Doc": {"doc": "A document.", "fields": {"judge.text": "float | None"}}}}
    )
    model = build_blocks(declaration)["Doc"]
    assert model.model_validate({"judge.text": 1.0}).judge_text == 1.0  # type: ignore[attr-defined]
    assert "judge.text" in model.model_json_schema(by_alias=True)["properties"]


def test_components_frame_refuses_an_undeclared_component() -> None:
    spec = BENCHMARKS.get("storybench").spec
    assert spec is not None
    parts = pd.DataFrame(
        {"system": ["s"], "instance_id": ["a"], "component": ["mos"], "value": [1.0], "index": [0]}
    )
    with pytest.raises(ConfigError, match="does not declare: mos"):
        components_frame(parts, spec)
