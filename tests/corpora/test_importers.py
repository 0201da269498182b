from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from omnieval.corpora import ImportRecipe, ImportSource, import_corpus, prepare_corpus
from omnieval.corpora._importers import EMOTION_LABELS
from omnieval.errors import DataError


def _tone(path: Path, *, seed: int = 0) -> Path:
    import soundfile as sf

    t = np.arange(8000) / 16000
    wave = 0.3 * np.sin(2 * np.pi * 220 * t) + 0.01 * np.random.default_rng(seed).standard_normal(t.size)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), wave.astype(np.float32), 16000)
    return path


def _layout(root: Path, names: list[str]) -> Path:
    for k, name in enumerate(names):
        _tone(root / name, seed=k)
    return root


def test_crema_d_maps_emotions_and_drops_neutral(tmp_path: Path) -> None:
    names = [
        f"AudioWAV/10{a}1_DFA_{e}_XX.wav" for a in (0, 1) for e in ("ANG", "DIS", "FEA", "HAP", "NEU", "SAD")
    ]
    rows = import_corpus("crema_d", _layout(tmp_path, names), "emotion")
    assert len(rows) == 10
    assert {r.label for r in rows} == {"angry", "disgust", "fear", "joy", "sadness"}
    assert {r.speaker for r in rows} == {"crema_d:1001", "crema_d:1011"}
    assert all(r.sha256 and r.sample_rate == 16000 and abs(r.duration_s - 0.5) < 1e-3 for r in rows)


def test_tess_ravdess_savee(tmp_path: Path) -> None:
    tess = _layout(
        tmp_path / "tess", [f"OAF_{e}/OAF_back_{e}.wav" for e in ("angry", "ps", "neutral", "happy")]
    )
    rows = import_corpus("tess", tess, "emotion")
    assert sorted(r.label for r in rows) == ["angry", "joy", "surprised"]
    assert rows[0].text == "back"

    # Speech (01) and song (02) both count; neutral (01) and calm (02) do not; video (01/02 modality) does not.
    ravdess_names = [
        "Actor_01/03-01-05-01-01-01-01.wav",
        "Actor_01/03-02-03-01-01-01-01.wav",
        "Actor_01/03-01-01-01-01-01-01.wav",
        "Actor_01/03-01-02-01-01-01-01.wav",
        "Actor_02/01-01-05-01-01-01-02.wav",
        "Actor_02/03-01-08-02-02-01-02.wav",
    ]
    rows = import_corpus("ravdess", _layout(tmp_path / "ravdess", ravdess_names), "emotion")
    assert sorted((r.speaker, r.label) for r in rows) == [
        ("ravdess:01", "angry"), ("ravdess:01", "joy"), ("ravdess:02", "surprised")
    ]  # fmt: skip

    savee = _layout(tmp_path / "savee", ["DC/a01.wav", "DC/n01.wav", "JE/sa02.wav", "KL_su03.wav"])
    rows = import_corpus("savee", savee, "emotion")
    assert sorted((r.speaker, r.label) for r in rows) == [
        ("savee:DC", "angry"), ("savee:JE", "sadness"), ("savee:KL", "surprised")
    ]  # fmt: skip


def test_bad_names_and_wrong_feature_are_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="CREMA-D names look like"):
        import_corpus("crema_d", _layout(tmp_path / "c", ["AudioWAV/oops.wav"]), "emotion")
    with pytest.raises(DataError, match="provides labels for emotion"):
        import_corpus("tess", tmp_path, "accent")
    with pytest.raises(DataError, match="corpus folder not found"):
        import_corpus("savee", tmp_path / "nope", "emotion")


def test_globe_and_edacc_tables(tmp_path: Path) -> None:
    root = tmp_path / "globe"
    meta = []
    for k, (accent, age, gender) in enumerate(
        [
            ("Australian English", "twenties", "female"),
            ("India and South Asia (India, Pakistan, Sri Lanka)", "sixties", "male"),
            ("England English", "thirties", "male"),
            ("United States English", "twenties", "female"),
            ("Scottish English", "fifties", "female"),
        ]
    ):
        _tone(root / f"clips/{k}.wav", seed=k)
        meta.append(
            {
                "path": f"clips/{k}.wav",
                "speaker_id": f"s{k}",
                "accent": accent,
                "age": age,
                "gender": gender,
                "transcript": f"line {k}",
            }
        )
    pd.DataFrame(meta).to_csv(root / "metadata.csv", index=False)
    accents = import_corpus("globe", root, "accent")
    assert [r.label for r in accents] == ["Australia", "India", "UK", "UK"]
    timbre = import_corpus("globe", root, "timbre")
    assert [r.label for r in timbre] == ["adult female", "elderly male", "adult male", "adult female"]
    assert timbre[0].text == "line 0"

    edacc = tmp_path / "edacc"
    _tone(edacc / "a.wav")
    pd.DataFrame(
        [
            {"path": "a.wav", "speaker": "EDACC-C01", "accent": "Indian English", "gender": "male"},
            {"path": "missing.wav", "speaker": "EDACC-C02", "accent": "Indian English", "gender": "male"},
        ]
    ).to_json(edacc / "metadata.jsonl", orient="records", lines=True)
    with pytest.raises(DataError) as err:
        import_corpus("edacc", edacc, "accent")
    assert "missing.wav" in str(err.value)


def test_import_recipe_combines_sources_and_splits_by_speaker(tmp_path: Path) -> None:
    root = tmp_path / "emotion"
    names = [
        f"AudioWAV/{1001 + a}_DFA_{e}_XX.wav" for a in range(12) for e in ("ANG", "DIS", "FEA", "HAP", "SAD")
    ]
    _layout(root / "sources/crema-d", names)
    _layout(
        root / "sources/tess", [f"{s}_{e}/{s}_word_{e}.wav" for s in ("OAF", "YAF") for e in ("fear", "ps")]
    )
    recipe = ImportRecipe(
        name="emotion-test",
        root=root,
        feature="emotion",
        sources=(
            ImportSource(format="crema_d", path=Path("sources/crema-d")),
            ImportSource(format="tess", path=Path("sources/tess")),
        ),
    )
    prepared = prepare_corpus(recipe)
    assert len(prepared.rows) == 64
    assert all((root / r.path).is_file() for r in prepared.rows)
    assert prepared.card.labels == EMOTION_LABELS
    speakers_per_split = Counter((r.speaker, r.split) for r in prepared.rows)
    assert len({s for s, _ in speakers_per_split}) == len(speakers_per_split)
    assert prepared.version.startswith("sha256:")
    # Unchanged recipe: the manifest is reused as is.
    assert prepare_corpus(recipe).digest == prepared.digest
    with pytest.raises(ValueError, match="relative to the corpus root"):
        ImportSource(format="tess", path=Path("/elsewhere"))
