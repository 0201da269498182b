"""A scripted judge whose value probabilities come from a softmax over a whole vocabulary's logits.

The llama.cpp backend turns the model's float32 logits into value probabilities with NumPy in
float64 (``_log_softmax``, ``_logsumexp``, ``_normalized``): exp, log and sums over ~150,000 entries,
whose last bits follow the CPU's SIMD kernels. This judge runs the same functions over seeded logits
(one draw per prompt and criterion), so the canonical-output test sees the same kind of last-bit
noise as a real judge, without a model.
"""

from __future__ import annotations

import hashlib

import numpy as np
from judge_scripts import _track, _user, verdict

from omnieval.backends.llm import ChatRequest, Completion
from omnieval.backends.llm._llamacpp import _log_softmax, _logsumexp, _normalized
from omnieval.benchmarks.storybench._tracks import TRACKS

VOCAB = 151_936
"""Qwen2.5's vocabulary size: the length of the logit vector the real judge normalizes."""
DIGITS = tuple(range(1, 11))


def _value_probs(seed: bytes) -> dict[int, float]:
    """P(score) for 1-10 from seeded float32 logits, as the backend computes one score position."""
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(seed).digest()[:8], "little"))
    logits = rng.standard_normal(VOCAB, dtype=np.float32) * np.float32(2.0)
    ids = rng.choice(VOCAB, size=len(DIGITS), replace=False)
    logits[ids] = rng.uniform(11.0, 15.0, size=len(DIGITS)).astype(np.float32)
    logp = _log_softmax(logits)
    rest = np.ones(VOCAB, dtype=bool)
    rest[ids] = False
    shares = _normalized([*(float(logp[i]) for i in ids), _logsumexp(logp[rest])])
    return dict(zip(DIGITS, shares[:-1], strict=True))


def softmax_judge(request: ChatRequest) -> Completion:
    """Greedy scores at each criterion's most probable value; probabilities from the softmax."""
    track = _track(request)
    prompt = _user(request).encode()
    probs = {c: _value_probs(prompt + c.encode()) for c in TRACKS[track].criteria}
    scores = tuple(max(p, key=p.__getitem__) for p in probs.values())
    assert len(scores) == 4
    return Completion(
        text=verdict(track, (scores[0], scores[1], scores[2], scores[3])),
        finish_reason="stop",
        value_probs={f"{c}/score": p for c, p in probs.items()},
    )
