from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from omnieval.benchmarks.storybench._record import load_storybench
from omnieval.benchmarks.storybench._systems import derangement
from omnieval.candidates import Modality, output_path, read_candidate
from omnieval.systems import SYSTEMS, GenerationRequest, resolve_candidates_root


@pytest.fixture(scope="module")
def transitions(sample_root: Path):  # type: ignore[no-untyped-def]
    return load_storybench(sample_root).transitions


def test_registry_names_are_the_config_keys() -> None:
    assert {"oracle", "copy-current", "shuffled", "import"} <= set(SYSTEMS.names())


def test_oracle_writes_ground_truth_and_controlled_speech(transitions, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rows = transitions[:2]
    summary = SYSTEMS.get("oracle")().generate(GenerationRequest(rows, tmp_path))
    assert summary.missing == {}
    for tr in rows:
        text = output_path(tmp_path, Modality.TEXT, tr.index).read_text(encoding="utf-8").strip()
        assert text == tr.next_text.strip()
        assert output_path(tmp_path, Modality.IMAGE, tr.index).read_bytes() == tr.next_image.read_bytes()
        assert read_candidate(tmp_path, Modality.SPEECH, tr.index).present


def test_copy_current_sees_only_task_inputs(transitions, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tr = transitions[0]
    SYSTEMS.get("copy-current")().generate(GenerationRequest([tr], tmp_path))
    assert (
        output_path(tmp_path, Modality.TEXT, tr.index).read_text(encoding="utf-8").strip()
        == tr.current_text.strip()
    )
    assert output_path(tmp_path, Modality.IMAGE, tr.index).read_bytes() == tr.current_image.read_bytes()


def test_shuffled_takes_another_books_ground_truth_deterministically(transitions, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = derangement(transitions, seed=0)
    again = derangement(transitions, seed=0)
    assert {k: v.id for k, v in first.items()} == {k: v.id for k, v in again.items()}
    for tr in transitions:
        assert first[tr.index].book != tr.book
    rows = transitions[:6]
    SYSTEMS.get("shuffled")(seed=0).generate(GenerationRequest(rows, tmp_path))
    donors = derangement(rows, seed=0)
    for tr in rows:
        written = output_path(tmp_path, Modality.TEXT, tr.index).read_text(encoding="utf-8").strip()
        assert written == donors[tr.index].next_text.strip() != tr.next_text.strip()


def test_import_counts_missing_and_undecodable_outputs(transitions, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "outside"
    rows = transitions[:3]
    SYSTEMS.get("oracle")().generate(GenerationRequest(rows, outside))
    shutil.rmtree(outside / "speech" / "1")  # absent index folder = missing
    output_path(outside, Modality.IMAGE, 2).write_bytes(b"\x89PNG\r\n\x1a\n broken")  # corrupt PNG
    output_path(outside, Modality.TEXT, 0).write_text("   \n", encoding="utf-8")  # empty narration
    out = tmp_path / "state"
    summary = SYSTEMS.get("import")(path=outside).generate(GenerationRequest(rows, out))
    assert summary.missing == {"speech": 1, "image": 1, "text": 1}
    pointer = json.loads((out / "IMPORTED.json").read_text())
    assert any("row 2" in p and "image" in p for p in pointer["problems"])
    assert resolve_candidates_root(out) == outside.resolve()


@pytest.mark.parametrize("kind", ["oracle", "copy-current", "shuffled"])
def test_a_reference_entry_with_seed_and_path_builds_its_system(kind: str, tmp_path: Path) -> None:
    """``seed`` and ``path`` are accepted on every reference entry; a kind that uses neither is built
    without them (an oracle with a seed once failed: ``OracleSystem() takes no arguments``)."""
    from omnieval.systems import config_model, system_kind

    cls = system_kind(kind)
    spec = config_model(kind).model_validate({"kind": kind, "seed": 7, "path": str(tmp_path)})
    system = cls.from_spec(spec, system_id=kind, condition="", modalities=("text",), cache_dir=tmp_path)
    assert isinstance(system, cls)
    assert getattr(system, "seed", 7) == 7  # shuffled takes its seed; the others have none
