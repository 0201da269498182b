"""Blind side-by-side composition: order, ID cards, durations, silence, sidecar."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from omnieval.benchmarks.prism._compose import (
    ID_SECONDS,
    PairOrder,
    compose_clips,
    compose_pair,
    digit_mask,
    pair_order,
    probe_clip,
    read_sidecar,
    sidecar_path,
)
from omnieval.benchmarks.prism._media import decode_audio, extract_frames

from ._clips import make_clip, make_silent_video, tone


@pytest.fixture(scope="module")
def two_clips(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compose")
    # Different sizes, rates and lengths: both must be brought to one format.
    cand = make_clip(root / "cand.mp4", duration=1.2, fps=25, size=(64, 48), audio=tone(440, 1.2))
    ref = make_clip(root / "ref.mp4", duration=0.8, fps=30, size=(96, 54), audio=tone(660, 0.8))
    return cand, ref


def test_pair_order_is_seeded_reproducible_and_balanced() -> None:
    firsts = [pair_order(3, "sys", f"id-{i}").first for i in range(400)]
    assert firsts == [pair_order(3, "sys", f"id-{i}").first for i in range(400)]
    share = firsts.count("candidate") / len(firsts)
    assert 0.4 < share < 0.6
    # Another seed gives another order for some pairs, and the order depends on the system too.
    assert firsts != [pair_order(4, "sys", f"id-{i}").first for i in range(400)]
    assert firsts != [pair_order(3, "other", f"id-{i}").first for i in range(400)]


def test_order_mapping_and_swap() -> None:
    order = PairOrder("reference", "sysA", "x", 5)
    assert (order.role(1), order.role(2)) == ("reference", "candidate")
    assert (order.slot("candidate"), order.slot("reference")) == (2, 1)
    swapped = order.swapped()
    assert (swapped.role(1), swapped.slot("candidate")) == ("candidate", 1)
    assert order.sidecar() == {
        "1": {"role": "reference"},
        "2": {"role": "candidate", "system": "sysA"},
        "seed": 5,
        "instance_id": "x",
    }
    assert PairOrder.from_sidecar(order.sidecar()) == order
    with pytest.raises(ValueError):
        PairOrder.from_sidecar({"1": {"role": "candidate"}, "2": {"role": "candidate"}})


def _white_share(frame: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """Share of mask pixels that are white, and of non-mask pixels that are dark."""
    grey = frame.astype(float).mean(axis=2)
    return float((grey[mask] > 180).mean()), float((grey[~mask] < 60).mean())


def test_compose_pair_layout(two_clips: tuple[Path, Path], tmp_path: Path) -> None:
    cand, ref = two_clips
    order = PairOrder("candidate", "sysA", "inst-1", 0)
    out = compose_pair(cand, ref, order, tmp_path / "pair.mp4")
    info = probe_clip(out)
    d1, d2 = probe_clip(cand).duration_s, probe_clip(ref).duration_s
    assert info.has_audio
    assert info.duration_s == pytest.approx(ID_SECONDS + d1 + ID_SECONDS + d2, abs=0.08)
    # The larger clip's size and the higher frame rate, for both clips alike.
    assert (info.width, info.height) == (96, 54)
    assert info.fps == pytest.approx(30, abs=0.01)

    mask1, mask2 = digit_mask(1, 96, 54), digit_mask(2, 96, 54)
    f_first, f_second = extract_frames(out, times_s=[0.25, ID_SECONDS + d1 + 0.25])
    # The first card is black with a white "1": it matches the 1 mask and not the 2 mask.
    white1, dark1 = _white_share(f_first, mask1)
    assert white1 > 0.9 and dark1 > 0.97
    assert _white_share(f_first, mask2)[0] < white1 - 0.2
    white2, dark2 = _white_share(f_second, mask2)
    assert white2 > 0.9 and dark2 > 0.97
    assert _white_share(f_second, mask1)[0] < white2 - 0.2

    # Audio: silent during both cards, the clips' tones in between.
    y = decode_audio(out, sr=16_000)

    def rms(a: float, b: float) -> float:
        seg = y[int(a * 16_000) : int(b * 16_000)]
        return float(np.sqrt(np.mean(seg.astype(float) ** 2)))

    edge = 0.03  # AAC frames smear a few ms across the joins
    assert rms(edge, ID_SECONDS - edge) < 1e-3
    assert rms(ID_SECONDS + d1 + edge, 2 * ID_SECONDS + d1 - edge) < 1e-3
    assert rms(ID_SECONDS + 0.1, ID_SECONDS + d1 - 0.1) > 0.1
    assert rms(2 * ID_SECONDS + d1 + 0.1, 2 * ID_SECONDS + d1 + d2 - 0.1) > 0.1

    assert read_sidecar(sidecar_path(out)) == order
    data = json.loads(sidecar_path(out).read_text())
    assert data["1"] == {"role": "candidate", "system": "sysA"} and data["2"] == {"role": "reference"}


def test_the_order_decides_which_clip_comes_first(two_clips: tuple[Path, Path], tmp_path: Path) -> None:
    cand, ref = two_clips
    out = compose_pair(cand, ref, PairOrder("reference", "s", "i"), tmp_path / "pair.mp4")
    d_ref = probe_clip(ref).duration_s
    y = decode_audio(out, sr=16_000)
    seg = y[int((ID_SECONDS + 0.1) * 16_000) : int((ID_SECONDS + d_ref - 0.1) * 16_000)]
    spectrum = np.abs(np.fft.rfft(seg))
    peak_hz = np.argmax(spectrum) * 16_000 / seg.size
    assert peak_hz == pytest.approx(660, abs=15)  # the reference's tone plays first


def test_compose_clips_writes_two_playable_files(two_clips: tuple[Path, Path], tmp_path: Path) -> None:
    cand, ref = two_clips
    order = PairOrder("reference", "s", "i", 1)
    made = compose_clips(cand, ref, order, tmp_path / "sep")
    i1, i2 = probe_clip(made.clip1), probe_clip(made.clip2)
    assert i1.duration_s == pytest.approx(ID_SECONDS + probe_clip(ref).duration_s, abs=0.08)
    assert i2.duration_s == pytest.approx(ID_SECONDS + probe_clip(cand).duration_s, abs=0.08)
    assert (i1.width, i1.height, i1.fps) == (i2.width, i2.height, i2.fps)
    (card2,) = extract_frames(made.clip2, times_s=[0.2])
    assert _white_share(card2, digit_mask(2, i2.width, i2.height))[0] > 0.9
    assert read_sidecar(made.sidecar) == order


def test_a_clip_without_audio_gets_silence(two_clips: tuple[Path, Path], tmp_path: Path) -> None:
    silent = make_silent_video(tmp_path / "silent.mp4", duration=1.0)
    out = compose_pair(silent, two_clips[1], PairOrder("candidate", "s", "i"), tmp_path / "p.mp4")
    info = probe_clip(out)
    assert info.has_audio
    y = decode_audio(out, sr=16_000)
    assert float(np.abs(y[: int((ID_SECONDS + 1.0 - 0.03) * 16_000)]).max()) < 1e-3
