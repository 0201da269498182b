"""The Prefect flows (scheduling, retries, concurrency only; every piece of work is a stage function).

``omnieval run`` / ``serve`` / ``train`` import them from here; the top-level ``flows/*.py`` files are
thin entry points for ``python flows/<name>.py`` and Prefect deployments. Importing a flow module
imports Prefect, so nothing else in the library imports this package at module level.
"""

from omnieval.flows._dask import dask_task_runner, shared_prefect_api
from omnieval.flows._early import EarlyPrefectServer
from omnieval.flows._env import prepare_prefect_env
from omnieval.flows._server import acquire_server, server_folder
from omnieval.flows._serving import serve_night, serve_suites

__all__ = [
    "EarlyPrefectServer",
    "acquire_server",
    "dask_task_runner",
    "prepare_prefect_env",
    "serve_night",
    "serve_suites",
    "server_folder",
    "shared_prefect_api",
]
