"""Text metrics: edit distance, word error rate, and BERTScore's greedy matching (pure functions)."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt


class EditCounts(NamedTuple):
    """Alignment counts of a hypothesis against a reference."""

    substitutions: int
    deletions: int
    insertions: int
    hits: int

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def reference_length(self) -> int:
        return self.substitutions + self.deletions + self.hits


def edit_counts(reference: Sequence[str], hypothesis: Sequence[str]) -> EditCounts:
    """Levenshtein alignment counts (unit costs) between two token sequences.

    Among alignments with the fewest errors, the one with most hits is kept, so the counts are
    well defined.

    Example:
        >>> edit_counts("a b c d".split(), "a x c".split())
        EditCounts(substitutions=1, deletions=1, insertions=0, hits=2)
    """
    n, m = len(reference), len(hypothesis)
    # cost[j] = (errors, -hits, subs, dels, ins) for the current row, compared lexicographically.
    prev = [(j, 0, 0, 0, j) for j in range(m + 1)]
    for i in range(1, n + 1):
        cur = [(i, 0, 0, i, 0)]
        ri = reference[i - 1]
        for j in range(1, m + 1):
            e, h, s, d, ins = prev[j - 1]
            diag = (e, h - 1, s, d, ins) if ri == hypothesis[j - 1] else (e + 1, h, s + 1, d, ins)
            e, h, s, d, ins = prev[j]
            up = (e + 1, h, s, d + 1, ins)
            e, h, s, d, ins = cur[j - 1]
            left = (e + 1, h, s, d, ins + 1)
            cur.append(min(diag, up, left))
        prev = cur
    _errors, neg_hits, subs, dels, ins = prev[m]
    return EditCounts(subs, dels, ins, -neg_hits)


def error_rate(reference: Sequence[str], hypothesis: Sequence[str]) -> float:
    """(S + D + I) / len(reference); ``inf`` for an empty reference with a non-empty hypothesis.

    Example:
        >>> error_rate(["a", "b"], ["a", "c", "d"])
        1.0
    """
    counts = edit_counts(reference, hypothesis)
    if not reference:
        return 0.0 if not hypothesis else math.inf
    return counts.errors / len(reference)


_PUNCT_KEEP = {"'"}


def normalize_words(text: str) -> list[str]:
    """Words for WER: NFKC, lower case, punctuation removed (inner apostrophes kept), split on space.

    Hyphens and slashes separate words ("well-known" -> "well known").

    Example:
        >>> normalize_words("Well-known, isn't it?  YES!")
        ['well', 'known', "isn't", 'it', 'yes']
    """
    import jiwer

    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    chars = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-/\u2013\u2014":
            chars.append(" ")
        elif cat.startswith("P") and ch not in _PUNCT_KEEP:
            chars.append("")
        else:
            chars.append(ch)
    transform = jiwer.Compose(
        [jiwer.ToLowerCase(), jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()]
    )
    words: list[list[str]] = transform("".join(chars))
    return [w.strip("'") for w in words[0] if w.strip("'")] if words else []


@dataclass(frozen=True)
class WordErrors:
    """WER of one utterance (``wer`` is None when the reference has no words)."""

    wer: float | None
    counts: EditCounts
    reference_words: int


def word_errors(reference: str, hypothesis: str) -> WordErrors:
    """Normalized word error rate of a transcript against its script."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    counts = edit_counts(ref, hyp)
    return WordErrors(counts.errors / len(ref) if ref else None, counts, len(ref))


def corpus_wer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Total errors / total reference words over utterances (what ``jiwer.wer`` does for lists)."""
    errors = 0
    words = 0
    for r, h in zip(references, hypotheses, strict=True):
        result = word_errors(r, h)
        errors += result.counts.errors
        words += result.reference_words
    if words == 0:
        raise ValueError("no reference words")
    return errors / words


class PRF(NamedTuple):
    precision: float
    recall: float
    f1: float


def greedy_match_prf(
    candidate: npt.NDArray[np.floating[Any]],
    candidate_weights: npt.NDArray[np.floating[Any]],
    reference: npt.NDArray[np.floating[Any]],
    reference_weights: npt.NDArray[np.floating[Any]],
) -> PRF:
    """BERTScore precision/recall/F1 from token embeddings (no idf, no baseline rescaling).

    Each token is matched to its most similar token (cosine) on the other side; precision averages
    the candidate tokens' best similarities with ``candidate_weights`` (zero for special tokens,
    which stay available as match targets, as in the bert-score package), recall likewise for the
    reference. F1 is their harmonic mean (0 when both are 0).

    Args:
        candidate: Token embeddings, shape ``(n_c, d)``.
        candidate_weights: Shape ``(n_c,)``, non-negative.
        reference: Shape ``(n_r, d)``.
        reference_weights: Shape ``(n_r,)``.

    Raises:
        ValueError: when a side has no token of positive weight (an empty text encodes to special
            tokens only). The bert-score package scores that side 0 with a warning; here it is an
            error, because a 0 would be averaged as if the text had been generated and were bad.

    Example:
        >>> import numpy as np
        >>> greedy_match_prf(np.eye(2), np.ones(2), np.eye(2), np.ones(2))
        PRF(precision=1.0, recall=1.0, f1=1.0)
    """
    wc = np.asarray(candidate_weights, dtype=np.float64)
    wr = np.asarray(reference_weights, dtype=np.float64)
    for side, weights in (("candidate", wc), ("reference", wr)):
        if not weights.sum() > 0:
            raise ValueError(f"the {side} has no token of positive weight (BERTScore of an empty text)")
    c = np.asarray(candidate, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    # Cosines of unit vectors can overshoot +-1 by float rounding (identical texts gave 1.0000000000000002).
    sim = np.clip(c @ r.T, -1.0, 1.0)
    precision = float((sim.max(axis=1) * wc).sum() / wc.sum())
    recall = float((sim.max(axis=0) * wr).sum() / wr.sum())
    denom = precision + recall
    f1 = 2 * precision * recall / denom if denom != 0 else 0.0
    return PRF(precision, recall, f1)
