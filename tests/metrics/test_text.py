"""WER against jiwer, BERTScore against the bert-score package with the same encoder."""

from __future__ import annotations

import random
from pathlib import Path

import jiwer
import pytest

from omnieval.metrics.functional.text import (
    corpus_wer,
    edit_counts,
    error_rate,
    greedy_match_prf,
    normalize_words,
    word_errors,
)

VOCAB = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "ran",
    "far",
    "away",
    "home",
    "quickly",
    "slowly",
    "red",
    "blue",
    "big",
]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def test_wer_equals_jiwer_on_random_pairs() -> None:
    rng = random.Random(0)
    refs, hyps = [], []
    for _ in range(200):
        ref = _sentence(rng, rng.randint(1, 12))
        hyp = _sentence(rng, rng.randint(0, 14))
        refs.append(ref)
        hyps.append(hyp)
        ours = error_rate(ref.split(), hyp.split())
        assert ours == pytest.approx(jiwer.wer(ref, hyp) if hyp else 1.0)
        out = jiwer.process_words(ref, hyp) if hyp else None
        if out is not None:
            counts = edit_counts(ref.split(), hyp.split())
            assert counts.errors == out.substitutions + out.deletions + out.insertions
            assert counts.reference_length == len(ref.split())
    assert corpus_wer(refs, hyps) == pytest.approx(jiwer.wer(refs, [h or "<empty>" for h in hyps]), abs=0.02)


def test_corpus_wer_matches_jiwer_exactly_without_empty_hypotheses() -> None:
    rng = random.Random(1)
    refs = [_sentence(rng, rng.randint(2, 10)) for _ in range(50)]
    hyps = [_sentence(rng, rng.randint(1, 10)) for _ in range(50)]
    assert corpus_wer(refs, hyps) == pytest.approx(jiwer.wer(refs, hyps))


def test_normalization() -> None:
    assert normalize_words("Well-known, isn't it?  YES!") == ["well", "known", "isn't", "it", "yes"]
    assert normalize_words("“Quoted” text…") == ["quoted", "text"]
    assert normalize_words("") == []
    result = word_errors("Come back here, you rascal!", "come back here you rascal")
    assert result.wer == 0.0
    assert word_errors("", "anything").wer is None


def test_greedy_matching_by_hand() -> None:
    import numpy as np

    cand = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    ref = np.array([[1.0, 0.0], [1.0, 0.1]])
    prf = greedy_match_prf(cand, np.array([1.0, 1.0, 0.0]), ref, np.array([1.0, 1.0]))
    # The zero-weight third candidate token is not averaged but stays a match target.
    assert prf.precision == pytest.approx(np.mean([1.0, 0.1 / np.hypot(1, 0.1)]))
    assert prf.recall == pytest.approx(np.mean([1.0, 1.0 / np.hypot(1, 0.1)]))
    assert prf.f1 == pytest.approx(2 * prf.precision * prf.recall / (prf.precision + prf.recall))


def test_greedy_matching_refuses_a_side_without_weighted_tokens() -> None:
    import numpy as np

    vecs = np.eye(2)
    # What an empty text encodes to: special tokens only, all of weight 0.
    with pytest.raises(ValueError, match="the reference has no token of positive weight"):
        greedy_match_prf(vecs, np.ones(2), vecs, np.zeros(2))
    with pytest.raises(ValueError, match="the candidate has no token of positive weight"):
        greedy_match_prf(vecs, np.zeros(2), vecs, np.ones(2))


@pytest.mark.parametrize(
    ("cands", "refs", "side", "index", "reason"),
    [
        (["a cat", "a dog"], ["the cat", ""], "reference", 1, "is empty"),
        (["a cat"], [" \n\t"], "reference", 0, "is whitespace only"),
        (["", "a dog"], ["the cat", "the dog"], "candidate", 0, "is empty"),
    ],
)
def test_bertscore_has_no_score_for_an_empty_text(
    cands: list[str], refs: list[str], side: str, index: int, reason: str
) -> None:
    from omnieval.metrics import BertScorer, bertscore
    from omnieval.metrics._cache import MetricCache
    from omnieval.metrics._text_image import EmptyTextError

    # Checked before the encoder loads: this test needs no model.
    with pytest.raises(EmptyTextError, match=f"^{side} {index} {reason}") as info:
        bertscore(cands, refs)
    assert isinstance(info.value, ValueError) and (info.value.side, info.value.index) == (side, index)
    with pytest.raises(EmptyTextError, match=f"^{side} {index} {reason}"):
        BertScorer().score_cached(cands, refs, MetricCache(None))


PAIRS = [
    ("A cat sat on a mat.", "The cat sat on the mat."),
    ("The dragon circled the sleeping village twice.", "Above the village, a dragon flew slowly in circles."),
    ("Hello", "Goodbye, my friend, and thank you for all the fish."),
    ("She opened the door.", "She opened the door."),
    ("Numbers like 42 and 3.14 appear here!", "There are numbers here: forty-two and pi."),
]


@pytest.mark.slow
def test_bertscore_matches_bert_score_package() -> None:
    import bert_score

    from omnieval.backends.assets import minilm_path
    from omnieval.metrics import MetricsConfig, bertscore

    cands = [c for c, _ in PAIRS]
    refs = [r for _, r in PAIRS]
    ours = bertscore(cands, refs, config=MetricsConfig(batch_size=2))
    scorer = bert_score.BERTScorer(model_type=str(minilm_path()), num_layers=6)
    p, r, f = scorer.score(cands, refs)
    for i, prf in enumerate(ours):
        assert prf.precision == pytest.approx(float(p[i]), abs=1e-4)
        assert prf.recall == pytest.approx(float(r[i]), abs=1e-4)
        assert prf.f1 == pytest.approx(float(f[i]), abs=1e-4)
    assert ours[3].f1 == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_bertscore_refuses_text_the_tokenizer_drops(tmp_path: Path) -> None:
    from omnieval.metrics import BertScorer
    from omnieval.metrics._cache import MetricCache
    from omnieval.metrics._text_image import EmptyTextError

    scorer = BertScorer()
    cache = MetricCache(tmp_path)
    # Pair 0 gets cached first, so pair 1 is the only uncached one; the error still names pair 1.
    scorer.score_cached(["The cat sat."], ["A cat sat."], cache)
    with pytest.raises(EmptyTextError, match=r"^reference 1 has no token the encoder keeps"):
        scorer.score_cached(["The cat sat.", "A dog ran."], ["A cat sat.", "\u200b"], cache)
