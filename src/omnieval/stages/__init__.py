from omnieval.stages._common import state_paths
from omnieval.stages._instances import write_run_instances

__all__ = [
    "state_paths",
    "write_run_instances",
]
