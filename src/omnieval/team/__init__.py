"""Team mode: one command starts a shared PostgreSQL, MLflow (with accounts), Prefect and Dask.

``omnieval team up`` (docs/team.md) starts them on loopback by default and prints the environment
variables a client exports; ``omnieval run``, ``serve``, ``compare``, ``night`` and ``trend`` then
use the servers through ``MLFLOW_TRACKING_URI``, ``PREFECT_API_URL`` and ``DASK_SCHEDULER_ADDRESS``.
Without those variables nothing changes: the embedded SQLite stores stay the default.
"""

from omnieval.team._team import DEFAULT_DIR, TeamConfig, down, read_state, status, up, urls

__all__ = ["DEFAULT_DIR", "TeamConfig", "down", "read_state", "status", "up", "urls"]
