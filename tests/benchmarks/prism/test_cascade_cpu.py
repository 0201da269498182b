"""The ``cpu-t2av`` cascade (NOT a generative model) and the global ground-truth mean taking only
the pairings with systems under test (FORMATS.md section 7)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.prism._tables import frame, row
from omnieval.benchmarks import BENCHMARKS, RunFacts, prism
from omnieval.benchmarks._leaderboard import declared_document
from omnieval.benchmarks.prism._aggregate import aggregate_prism, leaderboard_text
from omnieval.benchmarks.prism._cascade import CpuT2av, CpuT2avConfig, audio_plan, cpu_t2av
from omnieval.benchmarks.prism._media import decode_audio, probe
from omnieval.benchmarks.prism._record import candidate_video, load_prism
from omnieval.scores import write_scores
from omnieval.systems import SYSTEMS, GenerationRequest, config_model

PrismLeaderboard = declared_document(prism.__file__)  # prism/leaderboard.yaml

GT = "ground_truth"
ROOT = Path(__file__).resolve().parents[3]
IDS = ("on-01", "off-03", "mix-01")


def _missing_tools() -> str | None:
    from omnieval.backends.tts import espeak_binary

    if shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None:
        return "ffmpeg/ffprobe not installed"
    try:
        espeak_binary()
    except Exception as exc:
        return f"espeak-ng not installed ({exc})"
    return None


def test_cascade_writes_valid_candidates(prism_sample: Path, tmp_path: Path) -> None:
    reason = _missing_tools()
    if reason:
        pytest.skip(reason)
    from benchmarks.prism.conftest import copy_subset

    data = load_prism(copy_subset(prism_sample, IDS, tmp_path / "prism"))
    spec = config_model("cpu-t2av").model_validate({"kind": "cpu-t2av", "seed": 3})
    assert isinstance(spec, CpuT2avConfig)
    system = SYSTEMS.get("cpu-t2av")(spec)
    assert isinstance(system, CpuT2av) and system.uses_ground_truth is False
    summary = system.generate(GenerationRequest(data.instances, tmp_path / "a"))
    assert summary.written == len(IDS) and not summary.missing
    assert "NOT a generative model" in summary.lineage["what"]
    for inst in data:
        out = candidate_video(tmp_path / "a", inst.index)
        got, ref = probe(out, decode_s=None), probe(inst.reference_video)
        assert got.has_audio and got.audio_rate == ref.audio_rate == 24000
        assert (got.width, got.height, got.fps) == (ref.width, ref.height, ref.fps)
        assert got.duration_s == pytest.approx(ref.duration_s, abs=0.1)
        audio = decode_audio(out, sr=16000)
        assert float(abs(audio).max()) > 0.01, inst.id  # something is heard
    # Deterministic: the same seed writes the same bytes; the reference is never read.
    again = cpu_t2av(spec).generate(GenerationRequest(data.instances[:1], tmp_path / "b"))
    assert again.written == 1
    assert candidate_video(tmp_path / "b", 0).read_bytes() == candidate_video(tmp_path / "a", 0).read_bytes()


def test_audio_plan_follows_the_prompt() -> None:
    assert audio_plan('A woman says "good morning" on screen.')["speech"] == ["good morning"]
    assert audio_plan("Soft organ music plays off screen.")["music"] is True
    assert audio_plan("Rain falls on a roof.")["sound"] is True
    with pytest.raises(ValueError):
        CpuT2avConfig(kind="cpu-t2av", width=191)


def test_pipeline_has_the_system_under_test() -> None:
    from omnieval.config import load_suite

    config = load_suite(ROOT / "pipelines" / "prism.yaml", check=False)
    assert config.systems["cascade-cpu"].kind == "cpu-t2av"
    bench = config.bench
    under_test = set(config.systems) - bench.diagnostic_systems(config.systems)
    under_test -= bench.reference_systems(config.systems)
    assert under_test == {"cascade-cpu"}
    assert bench.reference_systems(config.systems) == {"ground-truth"}


def _table() -> pd.DataFrame:
    """One off-screen cell on three items: SUT ``casc``, reference system, diagnostic ``muted``."""
    rows = []
    values = {
        # system: (own cells, ground truth beside it)
        "casc": ((4.0, 5.0, 6.0), (8.0, 7.0, 9.0)),
        "ground-truth": ((9.0, 9.0, 10.0), (10.0, 9.0, 10.0)),
        "muted": ((0.0, 1.0, 0.0), (3.0, 4.0, 5.0)),
    }
    for system, (own, beside) in values.items():
        for k, (v, g) in enumerate(zip(own, beside, strict=True)):
            rows.append(row(system, f"i{k}", "audio_quality", "speech", v, index=k))
            rows.append(row(GT, f"i{k}", "audio_quality", "speech", g, paired_with=system, index=k))
    return frame(rows)


GLOBAL = (8.0 + 7.0 + 9.0) / 3  # the SUT pairings only


def _check(doc: dict) -> None:
    cells = doc["systems"]
    assert doc["ground_truth"]["subsets"]["off_screen"]["final"] == pytest.approx(GLOBAL)
    assert cells["casc"]["subsets"]["off_screen"]["final"] == pytest.approx(5.0 / 8.0 * GLOBAL)
    assert cells["ground-truth"]["subsets"]["off_screen"]["final"] == pytest.approx(28 / 29 * GLOBAL)
    assert cells["muted"]["subsets"]["off_screen"]["final"] == pytest.approx(1 / 3 / 4.0 * GLOBAL)
    source = doc["calibration"]["subsets"]["off_screen"]
    assert source["source"] == "systems_under_test"
    assert source["pairings"] == {"casc": {"instances": 3, "cells": 3}}
    assert source["left_out"] == {"diagnostic": ["muted"], "reference": ["ground-truth"]}


def test_global_mean_takes_only_pairings_with_systems_under_test() -> None:
    doc = aggregate_prism(_table())
    _check(doc)
    assert (
        doc["systems"]["muted"]["diagnostic"] is True and "diagnostic" not in doc["systems"]["ground-truth"]
    )
    text = leaderboard_text(doc)
    assert "global GT mean: beside casc (3 instances, 3 cells)" in text
    assert "muted (diagnostic), ground-truth (reference)" in text
    # The report stage's facts name the reference system by kind; the leaderboard model keeps it.
    board = BENCHMARKS.get("prism").leaderboard(
        _table(), RunFacts(diagnostic=frozenset({"muted"}), reference=frozenset({"ground-truth"}))
    )
    assert isinstance(board.model, PrismLeaderboard) and board.model.calibration is not None
    _check(board.document)


def test_without_a_system_under_test_the_reference_pairing_is_the_fallback() -> None:
    table = _table()
    table = table[(table["system"] != "casc") & (table["paired_with"] != "casc")]
    doc = aggregate_prism(table.reset_index(drop=True))
    source = doc["calibration"]["subsets"]["off_screen"]
    assert source["source"] == "reference_beside_itself" and list(source["pairings"]) == ["ground-truth"]
    assert "no system under test" in source["note"]
    fallback = (10.0 + 9.0 + 10.0) / 3
    assert doc["ground_truth"]["subsets"]["off_screen"]["final"] == pytest.approx(fallback)
    assert "NO system under test" in leaderboard_text(doc)


def test_cli_aggregate_gives_the_section_7_numbers(tmp_path: Path) -> None:
    table = tmp_path / "scores.parquet"
    write_scores(_table(), table)
    exe = Path(sys.executable).with_name("omnieval")
    done = subprocess.run(
        [str(exe), "aggregate", str(table), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    _check(json.loads(done.stdout))
