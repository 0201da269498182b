"""The ``cascade`` generating kind (OmniACBench): ASR -> planner -> controllable TTS (espeak-ng)."""

from omnieval.systems._base import SYSTEMS
from omnieval.systems.cascade._system import IMAGE_NOT_SEEN, CascadeConfig, CascadeSystem

SYSTEMS.register("cascade")(CascadeSystem)

__all__ = ["IMAGE_NOT_SEEN", "CascadeConfig", "CascadeSystem"]
