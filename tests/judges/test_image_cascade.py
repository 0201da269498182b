"""The image and integrated cascades through the panel runner, with a scripted judge.

A cascade track that judges an image gets the image describer's measurements instead of the image
(``candidate_image_analysis`` and the facts written from it); the integrated track also gets the
audio's analysis. The describer's answers are cached by the three images' contents.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from judge_fixtures import NARRATIONS, Story, fake_describe

from omnieval.backends.llm import ImagePart
from omnieval.benchmarks.storybench._facts import image_facts
from omnieval.judges import JudgeInputs, run_judges

_JUDGE = textwrap.dedent(
    """\
    id: scripted-judge
    model: scripted/by_facts
    backend: {kind: scripted, script: "judge_scripts:by_facts"}
    decoding: {temperature: 0.0, max_tokens: 128}
    framing: {schema_constrained: true}
    retries: 0
    batch_size: 2
    """
)


def _panel(tmp_path: Path) -> Path:
    judge = textwrap.indent(_JUDGE, "        ").lstrip()
    body = "name: scripted-cascades\ntracks:\n"
    for track in ("image", "integrated"):
        body += f"  {track}:\n    input: cascade\n    prompt: cpu-cascade\n    judges:\n      - {judge}\n"
    path = tmp_path / "panel.yaml"
    path.write_text(body, encoding="utf-8")
    return path


class _Describer:
    """A stand-in image describer: the candidate is the reference scene when their bytes match,
    the current scene when those match, else another book's picture. Counts its calls."""

    version = "test/1"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, candidate: Path, current: Path | None, reference: Path | None) -> dict[str, object]:
        self.calls += 1
        data = candidate.read_bytes()
        to_ref = 1.0 if reference is not None and data == reference.read_bytes() else 0.45
        # The reference scene is as like the current one as the reference is (0.8).
        to_cur = (
            1.0 if current is not None and data == current.read_bytes() else 0.8 if to_ref == 1.0 else 0.5
        )
        return {
            "kind": "picture",
            "size": [32, 32],
            "similarity_to_reference": to_ref,
            "similarity_to_current": to_cur,
            "reference_similarity_to_current": 0.8,
        }


def _oracle_images(story: Story, root: Path) -> None:
    """Overwrite a candidate folder's images with the reference next-scene images."""
    from omnieval.candidates import Modality, output_path

    for t in story.transitions:
        output_path(root, Modality.IMAGE, t.index).write_bytes(Path(t.next_image).read_bytes())


def test_image_and_integrated_cascades_read_measured_facts(story: Story, tmp_path: Path) -> None:
    oracle = story.candidates("oracle", [n for _, n in NARRATIONS])
    _oracle_images(story, oracle)
    other = story.candidates("other", ["Bolt ran through Brick City at night."] * 3)
    describer = _Describer()
    panel = _panel(tmp_path)
    result = run_judges(
        story.transitions,
        {"oracle": oracle, "other": other},
        panel=str(panel),
        cache_dir=tmp_path / "cache",
        describe_audio=fake_describe,
        describe_image=describer,
    )
    judged = result.judgments
    assert set(judged.status) == {"ok"}
    assert len(judged) == 2 * 2 * 3  # two tracks x two systems x three rows
    means = judged.assign(mean=judged.scores.map(lambda s: sum(json.loads(s).values()) / 4))
    by = means.groupby(["track", "system"])["mean"].mean()
    # Oracle: the reference scene itself (8, 8, 8, 9 low ends); other: another book's picture.
    assert by[("image", "oracle")] == 8.25
    assert by[("image", "other")] == (2 + 1 + 1 + 1) / 4
    assert by[("integrated", "oracle")] > by[("integrated", "other")]
    # Described once per distinct (candidate, current, reference) triple, then cached.
    assert describer.calls == 6
    again = run_judges(
        story.transitions,
        {"oracle": oracle, "other": other},
        panel=str(panel),
        cache_dir=tmp_path / "cache",
        describe_audio=fake_describe,
        describe_image=describer,
    )
    assert describer.calls == 6 and again.model_calls == 0
    assert again.judgments.scores.tolist() == judged.scores.tolist()


def test_the_judge_gets_the_analysis_and_no_image(story: Story, tmp_path: Path) -> None:
    from omnieval.judges import Framing, render_messages, template

    t = story.transitions[0]
    analysis = {
        "kind": "picture",
        "size": [32, 32],
        "brightness": 0.5,
        "contrast": 0.2,
        "similarity_to_reference": 0.87,
        "similarity_to_current": 1.0,
        "reference_similarity_to_current": 0.87,
    }
    inputs = JudgeInputs(
        t.metadata.as_dict(),
        t.condition.as_dict(),
        t.current_text,
        t.next_text,
        t.target_speech.as_dict(),
        current_image=t.current_image,
        reference_image=t.next_image,
        candidate_image=t.current_image,
        candidate_image_analysis=analysis,
    )
    _, user = render_messages(template("image", "cpu-cascade"), inputs, Framing(compact_json=True))
    assert not any(isinstance(p, ImagePart) for p in user.parts)
    text = user.text
    assert "similarity to the reference next-scene image: 0.87 (1 = the same picture)" in text
    facts = text.split("<measured_facts>\n", 1)[1].split("\n</measured_facts>", 1)[0]
    assert facts == image_facts(inputs)
    assert "it repeats the current scene unchanged instead of moving on (suggested score 2 to 4)" in facts


def test_an_image_cascade_without_a_describer_is_not_applicable(story: Story, tmp_path: Path) -> None:
    oracle = story.candidates("oracle", [n for _, n in NARRATIONS])
    result = run_judges(
        story.transitions,
        {"oracle": oracle},
        panel=str(_panel(tmp_path)),
        cache_dir=tmp_path / "c",
        describe_audio=fake_describe,
    )
    assert set(result.judgments.status) == {"not_applicable"}
    assert set(result.judgments.note) == {"the image cascade needs an image describer"}
    assert result.model_calls == 0


def test_a_failing_describer_is_an_inference_error(story: Story, tmp_path: Path) -> None:
    def broken(candidate: Path, current: Path | None, reference: Path | None) -> dict[str, object]:
        raise OSError("cannot read")

    oracle = story.candidates("oracle", [n for _, n in NARRATIONS])
    result = run_judges(
        story.transitions,
        {"oracle": oracle},
        panel=str(_panel(tmp_path)),
        cache_dir=tmp_path / "c",
        describe_audio=fake_describe,
        describe_image=broken,
    )
    assert set(result.judgments.status) == {"inference_error"}
    notes = list(result.judgments.note)
    assert notes and all("image analysis failed: OSError: cannot read" in n for n in notes)
