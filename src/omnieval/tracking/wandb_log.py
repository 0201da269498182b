"""Optional Weights & Biases mirror of a suite run (offline unless WANDB_MODE says otherwise)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def log_to_wandb(
    suite: str, config: Mapping[str, Any], metrics: Mapping[str, Mapping[str, float]], folder: Path
) -> None:
    import wandb

    os.environ.setdefault("WANDB_MODE", "offline")
    run = wandb.init(project=f"omnieval-{suite}", config=dict(config), dir=str(folder), reinit=True)
    try:
        for system, values in metrics.items():
            run.log({f"{system}/{k}": v for k, v in values.items()})
    finally:
        run.finish()
