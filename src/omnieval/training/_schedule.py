"""Learning-rate schedule of the paper's recipe: linear warm-up, then cosine decay to zero."""

from __future__ import annotations

import math


def warmup_cosine_factor(step: int, *, warmup_steps: int, total_steps: int) -> float:
    """Multiplier of the base learning rate at optimizer step ``step`` (0-based).

    Rises linearly from 0 to 1 over ``warmup_steps``, then follows half a cosine down to 0 at
    ``total_steps``. Same curve as ``transformers.get_cosine_schedule_with_warmup``.

    Example:
        >>> [round(warmup_cosine_factor(s, warmup_steps=2, total_steps=6), 3) for s in range(7)]
        [0.0, 0.5, 1.0, 0.854, 0.5, 0.146, 0.0]
    """
    if total_steps <= 0:
        raise ValueError("total_steps must be positive")
    if step < warmup_steps:
        return step / max(1, warmup_steps)
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress))))
