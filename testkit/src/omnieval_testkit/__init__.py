"""Stand-ins for omnieval's tests and ``bench/``, shipped apart from the library.

LLM backend kinds registered through the ``omnieval.llm_backends`` entry points, so a suite or panel
naming them validates wherever this distribution is installed: ``scripted`` (a Python function
answers, :mod:`.scripted`), ``simulated`` (a judge server for scale runs, :mod:`.simulated`) and
``faults`` (wraps any backend and injects seeded faults, :mod:`.faults`). Synthetic storybench
score tables: :mod:`.storybench_synthetic`.
"""

from __future__ import annotations

from omnieval_testkit.faults import FAULT_KINDS, FaultsConfig, request_digest
from omnieval_testkit.scripted import ScriptedConfig
from omnieval_testkit.simulated import SimulatedConfig

__all__ = ["FAULT_KINDS", "FaultsConfig", "ScriptedConfig", "SimulatedConfig", "request_digest"]
