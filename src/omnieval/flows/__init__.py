"""The Prefect flows (scheduling, retries, concurrency only; every piece of work is a stage function).

``omnieval run`` / ``serve`` / ``train`` import them from here; the top-level ``flows/*.py`` files are
thin entry points for ``python flows/<name>.py`` and Prefect deployments. Importing a flow module
imports Prefect, so nothing else in the library imports this package at module level.
"""

from omnieval.flows._env import prepare_prefect_env

__all__ = ["prepare_prefect_env"]
