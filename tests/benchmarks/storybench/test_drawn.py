"""The ``drawn`` image expert (storybench's sample painters): same prompt, same picture; named things drawn.

The expert is built the way an orchestration system builds it, through the experts' registry, so
this also checks that importing storybench registers it under ``drawn``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import omnieval.benchmarks.storybench  # noqa: F401  (registers the ``drawn`` image expert)
from omnieval.systems.experts import IMAGE_EXPERTS, DrawnConfig, ImageRequest, image_expert


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_drawn_is_registered_by_storybench() -> None:
    from omnieval.benchmarks.storybench._drawn import DrawnImageExpert

    assert IMAGE_EXPERTS.get("drawn") is DrawnImageExpert
    assert DrawnImageExpert.config_model is DrawnConfig


def test_drawn_is_deterministic_and_draws_what_the_prompt_names(tmp_path: Path) -> None:
    expert = image_expert(DrawnConfig(size=96))
    prompt = "Pip the happy fox holds a glowing lantern beside the stream at night while Hazel watches"
    a = expert.render(ImageRequest(prompt), tmp_path / "a.png")
    expert.render(ImageRequest(prompt), tmp_path / "b.png")
    assert _sha(tmp_path / "a.png") == _sha(tmp_path / "b.png")
    facts = a["drawn"]
    assert facts["painter"] == "forest" and facts["time"] == "night" and facts["mood"] == "happy"
    assert facts["characters"] == ["Pip", "Hazel"]
    assert "lantern_bright" in facts["props"] and "stream" in facts["props"]
    sea = expert.render(
        ImageRequest("Marta on the rock as a storm shakes the lighthouse"), tmp_path / "c.png"
    )
    assert (
        sea["drawn"]["painter"] == "sea"
        and sea["drawn"]["time"] == "storm"
        and "lighthouse" in sea["drawn"]["props"]
    )
    assert _sha(tmp_path / "c.png") != _sha(tmp_path / "a.png")
    # A prompt naming nothing known still gives a picture (a setting chosen by the prompt's hash).
    expert.render(ImageRequest("zzz qqq"), tmp_path / "d.png")
    from PIL import Image

    with Image.open(tmp_path / "d.png") as img:
        assert img.size == (96, 96)
    lineage = expert.lineage()
    assert lineage["generative_model"] is False and "not a generative model" in lineage["what"]
