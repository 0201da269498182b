"""compute_storybench_metrics end to end on a tiny synthetic dataset, with bad inputs and the cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from omnieval.audio import espeak_wav
from omnieval.benchmarks.storybench._records import BookMetadata, NextPageCondition, TargetSpeech, Transition
from omnieval.scores import SCORE_COLUMNS

pytestmark = pytest.mark.slow


def _transition(root: Path, index: int, image: Path, text: str, target: TargetSpeech) -> Transition:
    return Transition(
        index=index,
        id=f"src/book/p{index}__p{index + 1}",
        source="src",
        book="book",
        from_key=f"p{index}",
        to_key=f"p{index + 1}",
        current_image=image,
        current_text="Once upon a time.",
        next_image=image,
        next_text=text,
        metadata=BookMetadata("fairy tale", "friendship", "watercolor", "past", "third", ()),
        condition=NextPageCondition((), "a beach", "the fox runs", "waves"),
        target_speech=target,
        sample_path=root / "s.json",
        metadata_path=root / "m.json",
    )


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory, clips: dict[str, Path]) -> tuple[list[Transition], Path]:
    import skimage.data

    root = tmp_path_factory.mktemp("story")
    ref_img = root / "ref.png"
    Image.fromarray(skimage.data.chelsea()).save(ref_img)
    line = "Come back here, you little rascal, before the tide takes you away."
    targets = [
        TargetSpeech("Pip", line, "happy", "normal", "normal", "female"),
        TargetSpeech("Pip", line, "angry", "slow", "low", "male"),
        TargetSpeech("Pip", line, "sad", "fast", "high", "female"),
        TargetSpeech("Pip", line, "neutral", "normal", "normal", "female"),
        TargetSpeech("Pip", line, "neutral", "normal", "normal", "female"),
        TargetSpeech("Pip", line, "neutral", "normal", "normal", "female"),
    ]
    texts = ["The cat slept by the fire."] * 6
    transitions = [_transition(root, i, ref_img, texts[i], targets[i]) for i in range(6)]
    cand = root / "cand"
    for i in range(6):
        for modality in ("text", "image", "speech"):
            (cand / modality / str(i)).mkdir(parents=True)
    (cand / "text/0/generated.txt").write_text("A cat was sleeping next to the fireplace.")
    (cand / "text/1/generated.txt").write_text("The cat slept by the fire.")
    (cand / "text/2/generated.txt").write_text("  \n")  # empty narration
    Image.fromarray(skimage.data.chelsea()[:, ::-1]).save(cand / "image/0/generated.png")
    shutil.copy(ref_img, cand / "image/1/generated.png")
    (cand / "image/2/generated.png").write_bytes(b"\x89PNG\r\n\x1a\n-corrupt-")
    shutil.copy(clips["female"], cand / "speech/0/generated.wav")
    shutil.copy(clips["slow"], cand / "speech/1/generated.wav")
    shutil.copy(clips["female"], cand / "speech/2/generated.wav")  # same bytes as index 0
    (cand / "speech/3/generated.wav").write_bytes(b"")
    sf.write(str(cand / "speech/4/generated.wav"), np.zeros(16000), 16000)
    espeak_wav(line, cand / "speech/5/full.wav")
    data = (cand / "speech/5/full.wav").read_bytes()
    (cand / "speech/5/generated.wav").write_bytes(data[: len(data) // 2])
    return transitions, cand


def test_rows_statuses_and_cache(story: tuple[list[Transition], Path], tmp_path: Path) -> None:
    from omnieval.benchmarks import RunSettings
    from omnieval.benchmarks.storybench._deviations import storybench_deviations
    from omnieval.benchmarks.storybench._metrics import compute_storybench_metrics
    from omnieval.metrics import MetricsConfig

    transitions, cand = story
    seen: list[tuple[int, int]] = []
    result = compute_storybench_metrics(
        transitions,
        "sys",
        cand,
        cache_dir=tmp_path / "cache",
        config=MetricsConfig(),
        progress=lambda d, n: seen.append((d, n)),
    )
    frame = result.scores
    assert list(frame.columns) == list(SCORE_COLUMNS)
    assert set(frame["benchmark"]) == {"storybench"} and set(frame["judge"]) == {""}
    assert seen[-1] == (6, 6)

    def rows(component: str, index: int) -> dict[str, tuple[float, str]]:
        sub = frame[(frame["component"] == component) & (frame["index"] == index)]
        return {c: (v, s) for c, v, s in zip(sub["criterion"], sub["value"], sub["status"], strict=True)}

    text = {i: rows("bertscore_f1", i)["value"] for i in range(6)}
    assert text[1] == (pytest.approx(1.0, abs=1e-5), "ok")
    assert text[0][1] == "ok" and 0.3 < text[0][0] < 1.0
    assert text[2][1] == "missing_output" and np.isnan(text[2][0])
    assert text[3][1] == "missing_output"

    image = {i: rows("image_similarity", i)["value"] for i in range(6)}
    assert image[1][0] == pytest.approx(1.0, abs=1e-5)
    assert image[0][1] == "ok" and image[0][0] > 0.85
    assert image[2][1] == "missing_output"

    speech0 = rows("speech_meta", 0)
    assert speech0["emotion"][1] == "not_applicable" and speech0["gender"][1] == "not_applicable"
    assert speech0["speed"] == (1.0, "ok") and speech0["pitch"][1] == "ok"
    assert rows("speech_meta", 1)["speed"] == (1.0, "ok")  # the slow clip is heard as slow
    assert rows("speech_meta", 2)["speed"] == (0.0, "ok")  # normal speech where fast was asked
    for bad in (3, 4, 5):
        assert {s for _, s in rows("speech_meta", bad).values()} == {"missing_output"}
    assert result.speech[4].status == "silent" and result.speech[5].status == "truncated"
    assert "generated.wav" in result.speech[5].message

    summary = result.speech_summary
    assert summary is not None and summary.fields == ("speed", "pitch")
    assert summary.instances == 6 and summary.valid == 3 and summary.zero_filled.denominator == 6

    lineage = result.lineage
    assert lineage["metrics"]["speech_meta"]["fields_covered"] == ["speed", "pitch"]
    assert lineage["metrics"]["image_similarity"]["backbone"] in ("efficientnet-lite0", "clip-vit-b-32")
    assert lineage["metrics"]["bertscore_f1"]["encoder"]["sha256"]
    # The departures from the paper are the run's ledger (test_deviations.py), read from this record.
    assert "deviations" not in lineage
    recorded = RunSettings(recorded={"sys": lineage})
    image = [d for d in storybench_deviations(recorded) if d.id == "metric-backbone-image"]
    assert bool(image) == (lineage["metrics"]["image_similarity"]["backbone"] != "clip-vit-b-32")
    assert lineage["problems_total"] >= 6

    again = compute_storybench_metrics(
        transitions, "sys", cand, cache_dir=tmp_path / "cache", config=MetricsConfig()
    )
    assert again.computed == 0 and again.cache_hits > 0
    assert again.scores.equals(result.scores)
