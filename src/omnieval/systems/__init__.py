"""Systems under test. Importing this package registers the built-in systems."""

from omnieval.systems import _import, _reference  # noqa: F401  (registration side effect)
from omnieval.systems._base import SYSTEMS, GenerationSummary, System
from omnieval.systems._import import resolve_candidates_root

__all__ = ["SYSTEMS", "GenerationSummary", "System", "resolve_candidates_root"]
