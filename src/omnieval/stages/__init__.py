from omnieval.stages._common import state_paths
from omnieval.stages._instances import compared_run, write_run_instances

__all__ = [
    "compared_run",
    "state_paths",
    "write_run_instances",
]
