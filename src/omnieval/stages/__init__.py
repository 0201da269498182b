from omnieval.stages._common import state_paths

__all__ = [
    "state_paths",
]
