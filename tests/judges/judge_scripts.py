"""Scripted judges (``kind: scripted`` backends) used by the judge tests. Each maps a request to an answer."""

from __future__ import annotations

import json
import re

from omnieval.backends.llm import BackendError, ChatRequest, Completion, TransientBackendError
from omnieval.benchmarks.storybench._tracks import TRACKS
from omnieval.judges._rubrics import REPAIR_SYSTEM

SEEN: set[str] = set()


def _user(request: ChatRequest) -> str:
    return request.messages[-1].text


def _between(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    assert match, f"no <{tag}> block"
    return match.group(1)


def _track(request: ChatRequest) -> str:
    text = _user(request)
    if request.messages[0].text == REPAIR_SYSTEM:
        for name, spec in TRACKS.items():
            if spec.criteria[1] in text:
                return name
    return "speech" if "<candidate_speech_analysis>" in text else "text"


def verdict(track: str, scores: tuple[int, int, int, int], reason: str = "looks fine") -> str:
    return json.dumps(
        {
            k: {"score": s, "rationale": f"{reason} ({k})"}
            for k, s in zip(TRACKS[track].criteria, scores, strict=True)
        }
    )


def by_reference(request: ChatRequest) -> str:
    """Text: 9s when the candidate equals the reference narration, else 2s. Speech: 6s."""
    track = _track(request)
    if track == "speech":
        return verdict("speech", (6, 6, 6, 6))
    user = _user(request)
    same = _between(user, "reference_next_narration") == _between(user, "candidate_next_narration")
    return verdict("text", (9, 9, 9, 9) if same else (2, 2, 2, 2))


def fixed_low(request: ChatRequest) -> str:
    return verdict(_track(request), (3, 3, 3, 3))


def echo_candidate(request: ChatRequest) -> str:
    """A judge that quotes the candidate (which may carry a fake verdict) before its own verdict."""
    track = _track(request)
    quoted = _between(_user(request), "candidate_next_narration") if track == "text" else ""
    return f"The candidate says: {quoted}\n\nMy verdict:\n" + verdict(track, (3, 3, 3, 3))


MESSY_SCORES = (8, 7, 6, 5)


def messy(request: ChatRequest) -> str:
    """Readable to a person, not to the ledger: scores in prose, no JSON."""
    track = _track(request)
    parts = [
        f"{k}: {s} out of ten because the story fits"
        for k, s in zip(TRACKS[track].criteria, MESSY_SCORES, strict=True)
    ]
    return "My assessment. " + "; ".join(parts)


def repair_faithful(request: ChatRequest) -> str:
    """Re-formats the messy answer's own numbers and words."""
    return verdict(_track(request), MESSY_SCORES, reason="because the story fits")


def repair_inventive(request: ChatRequest) -> str:
    """Supplies scores the original answer never gave."""
    return verdict(_track(request), (10, 10, 10, 10), reason="because the story fits")


def repair_gives_up(request: ChatRequest) -> str:
    return '{"unrecoverable": true}'


def empty(request: ChatRequest) -> str:
    return ""


def broken(request: ChatRequest) -> str:
    raise BackendError("the model crashed")


def flaky(request: ChatRequest) -> str:
    """Fails transiently on the first attempt at each request, then answers like by_reference."""
    key = _user(request)
    if key not in SEEN:
        SEEN.add(key)
        raise TransientBackendError("HTTP 503: overloaded")
    return by_reference(request)


def _probs_for(score: int) -> dict[int, float]:
    """A fixed distribution with its mode at ``score``: 0.5 there, 0.25 on each neighbour (clipped)."""
    lo, hi = max(1, score - 1), min(10, score + 1)
    dist = {score: 0.5}
    dist[lo] = dist.get(lo, 0.0) + 0.25
    dist[hi] = dist.get(hi, 0.0) + 0.25
    return dist


PROBS_SCORES = (9, 6, 1, 10)


def with_probs(request: ChatRequest) -> Completion:
    """A judge that reports value probabilities: scores 9, 6, 1, 10 with neighbours at 0.25 each."""
    track = _track(request)
    probs = {f"{k}/score": _probs_for(s) for k, s in zip(TRACKS[track].criteria, PROBS_SCORES, strict=True)}
    return Completion(text=verdict(track, PROBS_SCORES), finish_reason="stop", value_probs=probs)


DRIFT_SHIFT = 0
"""Added to every score of :func:`drift_judge` (tests set it to simulate a judge that drifted)."""


def drift_judge(request: ChatRequest) -> str:
    """Text: 7s for the reference narration, else 3s, each plus ``DRIFT_SHIFT``. Speech: 5s."""
    track = _track(request)
    if track == "speech":
        return verdict("speech", (5, 5, 5, 5))
    user = _user(request)
    base = (
        7 if _between(user, "reference_next_narration") == _between(user, "candidate_next_narration") else 3
    )
    s = min(10, base + DRIFT_SHIFT)
    return verdict("text", (s, s, s, s))


def by_facts(request: ChatRequest) -> str:
    """The low end of each criterion's suggested range in the ``<measured_facts>`` block (the cpu
    panel's prompts), for whichever track the facts' criteria name."""
    lows = dict(
        (line.split(": ", 1)[0], int(m.group(1)))
        for line in _between(_user(request), "measured_facts").splitlines()
        if (m := re.search(r"suggested score (\d+) to \d+", line))
    )
    for name, spec in TRACKS.items():
        if set(spec.criteria) == set(lows):
            return verdict(name, tuple(lows[k] for k in spec.criteria))  # type: ignore[arg-type]
    raise AssertionError(f"no track has the criteria {sorted(lows)}")
