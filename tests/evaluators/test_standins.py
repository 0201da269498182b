"""The committed CPU stand-ins (``make train-demo``) on fresh clips of voices they never trained on."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnieval.corpora import EspeakRecipe, plan_corpus, read_manifest
from omnieval.corpora._synth import render_clip
from omnieval.evaluators import STANDIN_GENDER, STANDIN_PHONATION, load_evaluator

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("name", "recipe", "corpus"),
    [(STANDIN_GENDER, "gender", "espeak-gender"), (STANDIN_PHONATION, "phonation", "espeak-phonation")],
)
def test_standin_on_unseen_voices(name: str, recipe: str, corpus: str, tmp_path: Path) -> None:
    folder = ROOT / "models" / "evaluators" / name
    manifest = ROOT / "data" / "corpora" / corpus / "manifest.jsonl"
    assert (folder / "card.json").is_file(), (
        f"{folder}: stand-in missing (make setup pulls it; make train-demo retrains)"
    )
    assert manifest.is_file(), f"{manifest} missing: run `make setup` (it pulls data/ from the DVC remote)"
    evaluator = load_evaluator(str(folder))
    assert evaluator.card.corpus["synthetic"] is True and "synthetic" in evaluator.card.description.lower()
    assert evaluator.card.test["accuracy"] > evaluator.card.test["chance_uniform"]
    test_voices = {r.speaker for r in read_manifest(manifest) if r.split == "test"}
    # New texts, rates and pitches (another seed) from the held-out voices only.
    plans = [
        p
        for p in plan_corpus(
            EspeakRecipe(recipe=recipe, root=tmp_path, name="fresh", clips_per_label=40, seed=123)
        )
        if p.speaker in test_voices
    ][:24]
    assert len({p.label for p in plans}) == 2
    hits = sum(evaluator.predict(render_clip(p, tmp_path)) == p.label for p in plans)
    assert hits / len(plans) >= 0.75, f"{hits}/{len(plans)} correct"
