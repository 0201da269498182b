"""The heteronym's phone error rate (``reading_per``) over a constrained pronunciation decision."""

from __future__ import annotations

import numpy as np
import pytest

from omnieval.backends.phones import DECISION_METHOD, PronunciationDecision
from omnieval.metrics.functional import reading_per

LEAD = {"leash": ("L", "IY", "D"), "metal": ("L", "EH", "D")}


def test_reading_per_under_the_constrained_decision() -> None:
    chose_metal = PronunciationDecision(
        "metal", {"leash": -8.0, "metal": -6.5}, LEAD["metal"], DECISION_METHOD, 1.5
    )
    assert reading_per(chose_metal, "metal", LEAD) == 0.0
    assert reading_per(chose_metal, "leash", LEAD) == pytest.approx(1 / 3)
    # Nothing aligned: every reference phone counts as deleted.
    nothing = PronunciationDecision(None, {"leash": -np.inf, "metal": -np.inf}, (), DECISION_METHOD, 0.0)
    assert reading_per(nothing, "leash", LEAD) == 1.0
    with pytest.raises(KeyError):
        reading_per(chose_metal, "copper", LEAD)
