"""Import every generating kind's subpackage so each registers itself (name = config key).

A kind whose subpackage is absent is simply not offered; a kind's heavy dependencies (llama.cpp,
diffusers, transformers) are imported inside the kind when it runs, never here.
"""

from __future__ import annotations

import importlib

#: Generating kinds, each a subpackage of :mod:`omnieval.systems` named after the kind. A kind that
#: serves one benchmark only lives in that benchmark's package and is registered when the benchmark
#: is imported (acbench's ``cascade``: :mod:`omnieval.benchmarks.acbench._cascade`).
GENERATING_KINDS: tuple[str, ...] = (
    "command",
    "openai_omni",
    "orchestration",
    "semi_orchestration",
)


def load_kinds() -> None:
    for package in GENERATING_KINDS:
        try:
            importlib.import_module(f"omnieval.systems.{package}")
        except ModuleNotFoundError as exc:
            if exc.name != f"omnieval.systems.{package}":
                raise
