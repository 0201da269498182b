"""A tiny synthetic storybench (three transitions, drawn images, synthesized audio) and candidate folders.

Imported by ``conftest.py`` (fixtures), by tests that need the helpers directly and by child
processes; importing it registers the storybench judge rubrics, which the judges read.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import omnieval.benchmarks  # noqa: F401  (registers the storybench judge rubrics)
from omnieval.benchmarks.storybench._records import (
    BookMetadata,
    Character,
    NextPageCondition,
    TargetSpeech,
    Transition,
)
from omnieval.candidates import Modality, output_path, write_missing

NARRATIONS = [
    ("Pip found a lantern glowing in the moss.", "Pip lifted the lantern and wondered who had lost it."),
    (
        "Hazel the owl watched from the oak.",
        "Hazel hooted softly and told Pip the lantern belonged to the river mice.",
    ),
    (
        "The river mice waited by the reeds.",
        "Pip carried the lantern to the river before its flame went out.",
    ),
]


def _image(path: Path, seed: int) -> Path:
    from PIL import Image

    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(path)
    return path


def _tone(path: Path, freq: float, seconds: float = 0.5, sr: int = 16000) -> Path:
    import soundfile as sf

    t = np.arange(int(seconds * sr)) / sr
    sf.write(path, 0.3 * np.sin(2 * np.pi * freq * t).astype(np.float32), sr)
    return path


@dataclass
class Story:
    root: Path
    transitions: list[Transition]

    def candidates(
        self, name: str, texts: list[str | None], *, speech: bool = True, image: bool = True
    ) -> Path:
        """Write a candidate folder; a None text means that output is missing (with a reason file)."""
        root = self.root / "candidates" / name
        for t, text in zip(self.transitions, texts, strict=True):
            if text is None:
                write_missing(root, Modality.TEXT, t.index, "the planner produced no narration")
            else:
                path = output_path(root, Modality.TEXT, t.index)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            if speech:
                path = output_path(root, Modality.SPEECH, t.index)
                path.parent.mkdir(parents=True, exist_ok=True)
                _tone(path, 180.0 + 20 * t.index)
            if image:
                path = output_path(root, Modality.IMAGE, t.index)
                path.parent.mkdir(parents=True, exist_ok=True)
                _image(path, 100 + t.index)
        return root


@pytest.fixture()
def story(tmp_path: Path) -> Story:
    return make_story(tmp_path)


def make_story(tmp_path: Path) -> Story:
    """Three transitions of one small book, with drawn images, under ``tmp_path``."""
    media = tmp_path / "media"
    media.mkdir()
    pip = Character("Pip", "a small orange fox")
    hazel = Character("Hazel", "an old owl")
    metadata = BookMetadata(
        "fairy tale", "a lost lantern", "picture book", "past", "third person", (pip, hazel)
    )
    transitions = []
    for i, (current, nxt) in enumerate(NARRATIONS):
        transitions.append(
            Transition(
                index=i,
                id=f"test/lantern/p{i:02d}__p{i + 1:02d}",
                source="test",
                book="lantern",
                from_key=f"p{i:02d}",
                to_key=f"p{i + 1:02d}",
                current_image=_image(media / f"cur{i}.png", i),
                current_text=current,
                next_image=_image(media / f"next{i}.png", 50 + i),
                next_text=nxt,
                metadata=metadata,
                condition=NextPageCondition(
                    (pip,), "a forest clearing", f"Describe step {i} of the walk", "birdsong"
                ),
                target_speech=TargetSpeech(
                    "Pip", "Whose lantern is this?", "happy", "normal", "high", "male"
                ),
                sample_path=media / "sample.json",
                metadata_path=media / "meta.json",
            )
        )
    return Story(tmp_path, transitions)


def fake_describe(path: Path) -> dict[str, object]:
    """A stand-in for omnieval.metrics.describe_audio: deterministic attributes from the file size."""
    size = path.stat().st_size
    return {
        "path": str(path),
        "status": "ok",
        "transcript": "whose lantern is this",
        "f0_median_hz": 180.0 + size % 7,
        "pitch": "normal",
        "speed": "normal",
        "words_per_second": 3.1,
        "gender": "male",
        "emotion": None,
        "duration_s": 0.5,
    }


@pytest.fixture()
def write_panel(tmp_path: Path) -> Callable[..., Path]:
    """Write a panel YAML using the scripted backend (``judge_scripts.<script>``)."""

    def write(script: str, *, repair: str | None = None, delay_s: float = 0.0, retries: int = 0) -> Path:
        judge = textwrap.dedent(
            f"""\
            id: scripted-judge
            model: scripted/{script}
            backend: {{kind: scripted, script: "judge_scripts:{script}", delay_s: {delay_s}}}
            decoding: {{temperature: 0.0, max_tokens: 128}}
            framing: {{schema_constrained: true}}
            retries: {retries}
            retry_backoff_s: 0.0
            batch_size: 2
            """
        )
        indented = textwrap.indent(judge, "        ")
        body = "name: scripted\ntracks:\n"
        body += "  text:\n    judges:\n      - " + indented.lstrip() + "\n"
        body += "  speech:\n    input: cascade\n    judges:\n      - " + indented.lstrip() + "\n"
        body += "  image:\n    unavailable: no vision model in tests\n"
        if repair:
            repair_judge = judge.replace("scripted-judge", "scripted-repair").replace(script, repair)
            body += "repair:\n" + textwrap.indent(repair_judge, "  ")
        path = tmp_path / f"panel-{script}-{repair}.yaml"
        path.write_text(body, encoding="utf-8")
        return path

    return write
