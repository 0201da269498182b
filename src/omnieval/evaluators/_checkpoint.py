"""The plain-file evaluator checkpoint: ``<folder>/weights.safetensors`` + ``<folder>/card.json``.

The card says everything needed to rebuild and to trust the model: labels in output order, the
backbone and head settings (for WavLM also the full model config, so loading never needs the
original pre-trained weights), the frontend's identity, the corpus version, the code version, the
selected learning rates, and the held-out test figures with chance levels beside them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnieval.errors import DataError
from omnieval.jsonio import write_json_atomic

CARD_FILE = "card.json"
WEIGHTS_FILE = "weights.safetensors"
CARD_FORMAT = "omnieval-evaluator/1"


class EvaluatorCard(BaseModel):
    """Contents of ``card.json``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = CARD_FORMAT
    name: str
    """Registered name (``omnieval-standin-gender-espeak``)."""
    feature: str
    description: str
    labels: tuple[str, ...]
    backbone: dict[str, Any]
    """The backbone config it was trained with (``kind`` ``whisper-ct2`` or ``wavlm``)."""
    wavlm_config: dict[str, Any] | None = None
    """``WavLMConfig`` of the trained model (WavLM backbones only)."""
    head: dict[str, Any]
    frontend: dict[str, Any]
    """``identity`` of the frozen frontend and its ``dim``; inputs must come from the same frontend."""
    corpus: dict[str, Any]
    """``name``, ``version``, ``digest``, ``synthetic``, ``description``, clip counts per split."""
    code: dict[str, Any]
    """``git_sha``, ``dirty``, ``omnieval`` version."""
    selection: dict[str, Any]
    """Selected ``head_lr``, ``backbone_lr``, ``best_epoch``, ``dev_accuracy`` and every grid point's result."""
    test: dict[str, Any]
    """Held-out report: accuracy, balanced accuracy, chance levels, per-class recall, confusion matrix."""
    optim: dict[str, Any]
    seed: int
    weights_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


def save_checkpoint(folder: Path, state: dict[str, Any], card_fields: dict[str, Any]) -> EvaluatorCard:
    """Write weights and card into ``folder`` (each via a temporary file and rename); return the card."""
    from safetensors.torch import save_file

    from omnieval.hashing import sha256_file

    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / WEIGHTS_FILE
    tmp = folder / (WEIGHTS_FILE + ".tmp")
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp), metadata={"format": CARD_FORMAT})
    os.replace(tmp, weights)
    card = EvaluatorCard(**card_fields, weights_sha256=sha256_file(weights))
    write_json_atomic(
        folder / CARD_FILE, card.model_dump(mode="json"), sort_keys=True, ensure_ascii=True, default=None
    )
    return card


def read_card(folder: Path) -> EvaluatorCard:
    """Read and validate ``card.json`` of a checkpoint folder."""
    path = folder / CARD_FILE
    if not path.is_file():
        raise DataError(f"not an evaluator checkpoint: {path} is missing")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg})") from None
    if isinstance(data, dict) and data.get("format") != CARD_FORMAT:
        raise DataError(f"{path}: unsupported card format {data.get('format')!r} (expected {CARD_FORMAT})")
    try:
        return EvaluatorCard.model_validate(data)
    except ValidationError as exc:
        lines = [f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()]
        raise DataError(f"{path}: malformed evaluator card", lines) from None


def load_weights(folder: Path, card: EvaluatorCard) -> dict[str, Any]:
    """Load the state dict, checking its bytes against the card's hash."""
    from safetensors.torch import load_file

    from omnieval.hashing import sha256_file

    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        raise DataError(f"evaluator weights missing: {weights}")
    digest = sha256_file(weights)
    if digest != card.weights_sha256:
        raise DataError(
            f"{weights}: sha256 {digest[:12]} does not match the card's {card.weights_sha256[:12]}"
        )
    return dict(load_file(str(weights)))
