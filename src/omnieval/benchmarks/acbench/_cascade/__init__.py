"""The ``cascade`` generating kind (OmniACBench): ASR -> planner -> controllable TTS (espeak-ng).

It serves acbench only and renders with acbench's delivery settings, so it lives in the benchmark's
package; importing :mod:`omnieval.benchmarks.acbench` registers it in the systems registry under
the same kind name as every other generating kind.
"""

from omnieval.benchmarks.acbench._cascade._system import IMAGE_NOT_SEEN, CascadeConfig, CascadeSystem
from omnieval.systems import SYSTEMS

SYSTEMS.register("cascade")(CascadeSystem)

__all__ = ["IMAGE_NOT_SEEN", "CascadeConfig", "CascadeSystem"]
