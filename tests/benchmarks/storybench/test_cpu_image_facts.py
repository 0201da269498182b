"""The cpu panel's image and integrated cascades: picture statistics, the image describer and the
facts written from them (images synthesized here; the values are hand-checked)."""

from __future__ import annotations

import doctest
from pathlib import Path

import numpy as np
import pytest

from omnieval.benchmarks.storybench import _facts
from omnieval.benchmarks.storybench._facts import (
    ImageDescriber,
    image_findings,
    integrated_facts,
    integrated_findings,
    picture_statistics,
    speech_findings,
    text_findings,
)
from omnieval.judges import JudgeInputs, load_panel
from omnieval.judges._rubrics import template_facts
from omnieval.metrics import MetricsConfig


def _save(array: np.ndarray, path: Path) -> Path:
    from PIL import Image

    Image.fromarray(array.astype(np.uint8)).save(path)
    return path


def _scene(path: Path, shift: int = 0) -> Path:
    """A smooth drawn-like picture: a sky gradient, a green hill and an orange disc."""
    y, x = np.mgrid[0:64, 0:64]
    img = np.zeros((64, 64, 3))
    img[..., 2] = 255 - 2 * y
    img[..., 1] = np.where(y > 40 + (x - 32) ** 2 / 80, 160, 90)
    disc = (x - 20 - shift) ** 2 + (y - 20) ** 2 < 60
    img[disc] = (240, 140, 30)
    return _save(img, path)


def _inputs(analysis: dict[str, object], **extra: object) -> JudgeInputs:
    return JudgeInputs(
        metadata={"characters": [{"name": "Pip"}]},
        condition={"text content": "Describe Pip finding a lantern."},
        current_text="Pip woke under the oak.",
        reference_text="Pip found a lantern near the oak.",
        reference_speech={"line": "Whose lantern is this?", "pitch": "high"},
        candidate_image_analysis=analysis,
        **extra,  # type: ignore[arg-type]
    )


def _picture(to_ref: float, to_cur: float, ref_cur: float = 0.8) -> dict[str, object]:
    return {
        "kind": "picture",
        "similarity_to_reference": to_ref,
        "similarity_to_current": to_cur,
        "reference_similarity_to_current": ref_cur,
    }


def _spans(analysis: dict[str, object]) -> list[tuple[int, int]]:
    return [f.span for f in image_findings(_inputs(analysis))]


def test_picture_statistics_tell_blank_noise_and_pictures(tmp_path: Path) -> None:
    blank = _save(np.full((48, 64, 3), 200), tmp_path / "blank.png")
    noise = _save(np.random.default_rng(0).integers(0, 256, (48, 64, 3)), tmp_path / "noise.png")
    scene = _scene(tmp_path / "scene.png")
    assert picture_statistics(blank) == {
        "size": [64, 48],
        "brightness": pytest.approx(200 / 255, abs=1e-4),
        "contrast": 0.0,
        "neighbour_correlation": 1.0,
        "kind": "blank",
    }
    found = picture_statistics(noise)
    assert found["kind"] == "noise" and abs(float(found["neighbour_correlation"])) < 0.1  # type: ignore[arg-type]
    found = picture_statistics(scene)
    assert found["kind"] == "picture" and float(found["neighbour_correlation"]) > 0.9  # type: ignore[arg-type]


def test_image_facts_levels() -> None:
    # The reference scene itself (the oracle), as like the current scene as the reference is.
    assert _spans(_picture(1.0, 0.8)) == [(8, 10), (8, 10), (8, 10), (9, 10)]
    # The current scene unchanged (copy-current): this book's look, no step forward.
    assert _spans(_picture(0.87, 1.0, 0.87)) == [(8, 10), (2, 4), (2, 4), (6, 8)]
    assert _spans(_picture(0.75, 1.0, 0.75)) == [(8, 10), (2, 4), (2, 4), (3, 5)]
    # Another book's page: unlike both.
    assert _spans(_picture(0.45, 0.5)) == [(2, 4), (1, 3), (1, 3), (1, 2)]
    # Partly like the reference, loosely following the current scene.
    assert _spans(_picture(0.7, 0.55)) == [(5, 7), (4, 6), (3, 5), (3, 5)]
    # When the reference itself is far from the current scene, a close candidate still follows on.
    assert _spans(_picture(0.9, 0.52, 0.53))[1] == (8, 10)
    for kind in ("blank", "noise"):
        findings = image_findings(_inputs({**_picture(0.3, 0.3), "kind": kind}))
        assert [f.span for f in findings] == [(1, 2)] * 4
        assert all(f.finding.startswith("the image is") for f in findings)


def test_image_facts_lines_name_the_finding_range_and_counts() -> None:
    line = image_findings(_inputs(_picture(0.45, 0.5)))[3].line()
    assert line == (
        "semantic_consistency_with_ground_truth: it is unlike the reference next scene (suggested score 1 to 2); "
        "counts: similarity to the reference next-scene image: 0.45; to the current scene image: 0.50; "
        "the reference's own similarity to the current scene image: 0.80"
    )


def test_integrated_facts_average_the_three_tracks_ranges() -> None:
    inputs = _inputs(
        _picture(1.0, 0.8),
        candidate_text="Pip found a lantern near the oak.",
        candidate_audio_analysis={"transcript": "Whose lantern is this?", "pitch": "high"},
    )
    per_track = list(zip(text_findings(inputs), image_findings(inputs), speech_findings(inputs), strict=True))
    combined = integrated_findings(inputs)
    for found, parts in zip(combined, per_track, strict=True):
        assert found.span[0] == round(sum(p.span[0] for p in parts) / 3)
        assert found.finding == "; ".join(
            f"{name}: {p.finding}" for name, p in zip(("narration", "image", "speech"), parts, strict=True)
        )
    first = integrated_facts(inputs).splitlines()[0]
    assert first.startswith("alignment_with_metadata: narration: it keeps to the book's characters")
    assert first.endswith("(suggested score 8 to 10)")
    # Another book's page in every part scores low on every criterion.
    other = _inputs(
        _picture(0.45, 0.5),
        candidate_text="Bolt raced the tram through Brick City.",
        candidate_audio_analysis={"transcript": "Hold on tight, Nia!", "pitch": "low"},
    )
    findings = integrated_findings(other)
    assert findings and all(f.span[1] <= 4 for f in findings)


def test_image_describer_measures_with_the_metric_backbone(tmp_path: Path) -> None:
    cur, ref = _scene(tmp_path / "cur.png"), _scene(tmp_path / "ref.png", shift=20)
    blank = _save(np.full((64, 64, 3), 128), tmp_path / "blank.png")
    describer = ImageDescriber(MetricsConfig(image_backbone="efficientnet-lite0"), tmp_path / "metrics")
    assert describer.version == "storybench-cpu-image-facts/1:image_similarity/1:efficientnet-lite0"
    oracle = describer(ref, cur, ref)
    assert oracle["similarity_to_reference"] == pytest.approx(1.0, abs=1e-4)
    assert oracle["similarity_to_current"] == oracle["reference_similarity_to_current"]
    assert oracle["backbone"] == "efficientnet-lite0" and oracle["kind"] == "picture"
    copy = describer(cur, cur, ref)
    assert copy["similarity_to_current"] == pytest.approx(1.0, abs=1e-4)
    assert float(copy["similarity_to_reference"]) < 1.0  # type: ignore[arg-type]
    assert describer(blank, cur, ref)["kind"] == "blank"
    # The embeddings went to the metric cache the image_similarity metric reads.
    assert list((tmp_path / "metrics" / "image_embedding").rglob("*.json"))


def test_the_cpu_panel_judges_every_track() -> None:
    cpu = load_panel("cpu")
    assert {t: (c.input, c.variant) for t, c in cpu.tracks.items()} == {
        "text": ("native", "cpu"),
        "speech": ("cascade", "cpu-cascade"),
        "image": ("cascade", "cpu-cascade"),
        "integrated": ("cascade", "cpu-cascade"),
    }
    assert template_facts("image", "cpu-cascade") is _facts.image_facts
    assert template_facts("integrated", "cpu-cascade") is _facts.integrated_facts


def test_doctests() -> None:
    failures, tried = doctest.testmod(_facts)
    assert tried >= 8 and failures == 0
