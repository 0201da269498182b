"""PRISM-Bench reference systems: ground truth, muted, swapped audio and a 0.5 s offset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omnieval.benchmarks.prism._media import decode_audio, probe
from omnieval.benchmarks.prism._record import PrismDataset, PrismInstance, candidate_video, load_prism
from omnieval.benchmarks.prism._systems import (
    GroundTruth,
    Muted,
    Offset,
    SwappedAudio,
    delay,
    swap_partners,
)
from omnieval.systems import GenerationRequest
from omnieval.systems._import import ImportSystem

SR = 24000


@pytest.fixture(scope="module")
def small(prism_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> PrismDataset:
    from benchmarks.prism.conftest import SMALL_IDS, copy_subset

    return load_prism(copy_subset(prism_sample, SMALL_IDS, tmp_path_factory.mktemp("sys") / "prism"))


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def _check_layout(inst: PrismInstance, out: Path) -> None:
    ref, got = probe(inst.reference_video), probe(out)
    assert got.has_audio and got.audio_rate == ref.audio_rate
    assert got.duration_s == pytest.approx(ref.duration_s, abs=0.03)
    assert (got.width, got.height, got.fps, got.n_frames) == (ref.width, ref.height, ref.fps, ref.n_frames)


def test_registered_kinds() -> None:
    from omnieval.systems import SYSTEMS

    classes = (GroundTruth, Muted, SwappedAudio, Offset)
    assert [SYSTEMS.get(k) for k in ("ground-truth", "muted", "swapped-audio", "offset")] == list(classes)
    assert isinstance(GroundTruth(), GroundTruth) and isinstance(Muted(), Muted)
    assert SwappedAudio(seed=3).seed == 3 and Offset(offset_s=0.25).offset_s == 0.25
    assert [c().kind for c in classes] == ["ground-truth", "muted", "swapped-audio", "offset"]
    assert all(c().uses_ground_truth for c in classes)
    with pytest.raises(ValueError):
        Offset(offset_s=0)


def test_ground_truth_is_the_reference(small: PrismDataset, tmp_path: Path) -> None:
    ticks: list[tuple[int, int]] = []
    summary = GroundTruth().generate(
        GenerationRequest(small.instances, tmp_path, progress=lambda d, t: ticks.append((d, t)))
    )
    assert summary.written == 4 and not summary.missing and ticks[-1] == (4, 4)
    assert (summary.system, summary.kind) == ("ground-truth", "ground-truth")
    for inst in small:
        assert candidate_video(tmp_path, inst.index).read_bytes() == inst.reference_video.read_bytes()
    copied = GroundTruth(link=False).generate(GenerationRequest(small.instances[:1], tmp_path / "copy"))
    out = candidate_video(tmp_path / "copy", 0)
    assert copied.written == 1 and out.stat().st_ino != small[0].reference_video.stat().st_ino


def test_muted_is_silent(small: PrismDataset, tmp_path: Path) -> None:
    summary = Muted().generate(GenerationRequest(small.instances, tmp_path))
    assert summary.written == 4
    for inst in small:
        out = candidate_video(tmp_path, inst.index)
        _check_layout(inst, out)
        assert _rms(decode_audio(inst.reference_video, sr=SR)) > 0.01
        assert _rms(decode_audio(out, sr=SR)) < 1e-5


def _lag_s(reference: np.ndarray, shifted: np.ndarray, max_lag: int) -> float:
    """The delay of ``shifted`` behind ``reference`` by brute-force correlation over integer lags."""
    n = reference.shape[0]
    best, best_lag = -np.inf, 0
    for lag in range(0, max_lag, 24):  # 1 ms steps
        score = float(np.dot(reference[: n - lag], shifted[lag:n]))
        if score > best:
            best, best_lag = score, lag
    return best_lag / SR


def test_offset_delays_the_audio_by_half_a_second(small: PrismDataset, tmp_path: Path) -> None:
    Offset().generate(GenerationRequest(small.instances, tmp_path))
    for inst in small:
        out = candidate_video(tmp_path, inst.index)
        _check_layout(inst, out)
        ref, got = decode_audio(inst.reference_video, sr=SR), decode_audio(out, sr=SR)
        assert _lag_s(ref, got, int(1.0 * SR)) == pytest.approx(0.5, abs=1 / 15)
        assert _rms(got[: int(0.45 * SR)]) < 1e-3  # silence in front


def test_swapped_audio_comes_from_another_instance(small: PrismDataset, tmp_path: Path) -> None:
    system = SwappedAudio(seed=0)
    summary = system.generate(GenerationRequest(small.instances, tmp_path))
    donors = summary.lineage["donors"]
    assert set(donors) == set(small.ids) and all(k != v for k, v in donors.items())
    assert sorted(donors.values()) == sorted(small.ids)  # every clip gives its audio once
    assert summary.lineage["same_tag_set_pairs"] == 0
    for inst in small:
        out = candidate_video(tmp_path, inst.index)
        _check_layout(inst, out)
        got = decode_audio(out, sr=SR)
        own = decode_audio(inst.reference_video, sr=SR)
        donor = decode_audio(small.by_id(donors[inst.id]).reference_video, sr=SR)
        n = min(got.shape[0], own.shape[0], donor.shape[0])
        assert float(np.corrcoef(got[:n], donor[:n])[0, 1]) > 0.95
        assert abs(float(np.corrcoef(got[:n], own[:n])[0, 1])) < 0.5


def test_swapped_audio_needs_two_instances(small: PrismDataset, tmp_path: Path) -> None:
    summary = SwappedAudio().generate(GenerationRequest(small.instances[:1], tmp_path))
    assert summary.written == 0 and summary.missing == {"video": 1}
    reason = (tmp_path / "video" / "0" / "missing.txt").read_text(encoding="utf-8")
    assert "at least two" in reason


def test_reruns_write_identical_bytes(small: PrismDataset, tmp_path: Path) -> None:
    for system in (Muted(), Offset(), SwappedAudio()):
        system.generate(GenerationRequest(small.instances[:2], tmp_path / "a"))
        system.generate(GenerationRequest(small.instances[:2], tmp_path / "b"))
        for i in (0, 1):
            assert (
                candidate_video(tmp_path / "a", i).read_bytes()
                == candidate_video(tmp_path / "b", i).read_bytes()
            )


def test_missing_reference_is_recorded(small: PrismDataset, tmp_path: Path) -> None:
    import dataclasses

    gone = dataclasses.replace(small[0], reference_video=tmp_path / "gone.mp4")
    summary = Muted().generate(GenerationRequest([gone], tmp_path / "out"))
    assert summary.missing == {"video": 1}
    assert "muted:" in (tmp_path / "out" / "video" / "0" / "missing.txt").read_text(encoding="utf-8")


def _inst(i: int, tags: tuple[str, ...]) -> PrismInstance:
    return PrismInstance(f"x{i}", i, "on_screen", tags, "c", Path("v.mp4"), i + 1)


def test_swap_partners_is_a_derangement_preferring_other_tags() -> None:
    tags = [("SPEECH_A",), ("SPEECH_A",), ("SPEECH_A",), ("MUSIC_A",), ("MUSIC_A",), ("SOUND_A",)]
    instances = [_inst(i, t) for i, t in enumerate(tags)]
    for seed in range(5):
        pairs = swap_partners(instances, seed)
        assert sorted(pairs) == list(range(6)) and sorted(pairs.values()) == list(range(6))
        assert all(k != v for k, v in pairs.items())
        # a shift that pairs nobody with the same tag set always exists here; it must be found
        assert all(tags[k] != tags[v] for k, v in pairs.items()), (seed, pairs)
    assert swap_partners(instances, 1) == swap_partners(instances, 1)
    assert swap_partners(instances[:1]) == {}
    same = [_inst(i, ("SPEECH_A",)) for i in range(3)]
    forced = swap_partners(same)
    assert sorted(forced) == [0, 1, 2]
    assert all(k != v for k, v in forced.items())  # no choice: still a derangement


def test_delay() -> None:
    x = np.arange(1.0, 6.0)
    assert delay(x, 0).tolist() == x.tolist()
    assert delay(x, 2).tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    assert delay(x, 9).tolist() == [0.0] * 5


def test_import_system_reads_the_video_layout(small: PrismDataset, tmp_path: Path) -> None:
    made = tmp_path / "elsewhere"
    GroundTruth(link=False).generate(GenerationRequest(small.instances[:3], made))
    (made / "video" / "1" / "generated.mp4").write_bytes(b"broken")
    summary = ImportSystem(made, modalities=("video",)).generate(
        GenerationRequest(small.instances, tmp_path / "run")
    )
    assert summary.missing == {"video": 2}  # index 1 undecodable, index 3 absent
    assert summary.candidates_root == made.resolve()
