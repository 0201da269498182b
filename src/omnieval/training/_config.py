"""Configuration of evaluator training (``pipelines/train_evaluators*.yaml``), checked at load time.

Defaults are the OmniACBench recipe (appendix C): AdamW (0.9, 0.999), weight decay 1e-4, cosine
schedule with a 2-epoch linear warm-up, label smoothing 0.1, gradient clipping at norm 1.0, 30
epochs, batch 32, grid over head x backbone learning rates, best checkpoint by dev accuracy.

The network's own settings (``backbone``, ``head``) are :mod:`omnieval.evaluators` models: a checkpoint's
card records them and loading rebuilds the network from them, so they belong to the inference side.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from omnieval.corpora import CorpusConfig
from omnieval.errors import ConfigError
from omnieval.evaluators import BackboneConfig, HeadConfig, WhisperBackbone


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OptimConfig(_Strict):
    epochs: int = Field(default=30, ge=1)
    batch_size: int = Field(default=32, ge=1)
    warmup_epochs: float = Field(default=2.0, ge=0.0)
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = Field(default=1e-4, ge=0.0)
    label_smoothing: float = Field(default=0.1, ge=0.0, lt=1.0)
    grad_clip_norm: float = Field(default=1.0, gt=0.0)
    max_train_seconds: float | None = Field(default=None, gt=0.0)
    """Randomly crop longer training clips to this length (saves GPU memory); None = whole clips."""
    precision: Literal["fp32", "bf16"] = "fp32"
    """bf16 autocast on CUDA; CPU always runs fp32."""
    num_workers: int = Field(default=0, ge=0)
    """DataLoader worker processes (audio decoding on GPU machines)."""
    cpu_threads: int | None = Field(default=1, ge=1)
    """torch intra-op threads while training on CPU (None = torch's default). One thread is fastest for
    the small CPU models here: their per-batch work is too small to pay for thread synchronisation,
    which gets very slow on shared cores."""


class GridConfig(_Strict):
    head_lr: tuple[float, ...] = Field(default=(1e-5, 1e-4, 1e-3), min_length=1)
    backbone_lr: tuple[float, ...] = Field(default=(5e-7, 5e-6, 5e-5), min_length=1)

    def points(self) -> list[tuple[float, float]]:
        """(head lr, backbone lr) pairs in a fixed order: head-major."""
        return [(h, b) for h in self.head_lr for b in self.backbone_lr]


class FeatureConfig(_Strict):
    """One evaluator: what it predicts, from which corpus, with which backbone and recipe."""

    feature: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Attribute name (``gender``, ``phonation``, ``emotion``, ``accent``, ``timbre``)."""
    registered_name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Model Registry name and checkpoint folder name under ``output_dir``."""
    description: str
    """What the evaluator is and is not (shown in the registry and the model card)."""
    labels: tuple[str, ...] = Field(min_length=2)
    """Label vocabulary, in output order."""
    corpus: CorpusConfig
    backbone: BackboneConfig = WhisperBackbone()
    head: HeadConfig = HeadConfig()
    optim: OptimConfig = OptimConfig()
    grid: GridConfig = GridConfig()
    seed: int = 0
    device: Literal["auto", "cpu", "cuda"] = "auto"

    @field_validator("labels")
    @classmethod
    def _unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("labels must be unique")
        return value

    def digest(self) -> str:
        """Hash of everything that shapes training (used to key resumable grid points)."""
        payload = self.model_dump(mode="json")
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class TrainEvaluatorsConfig(_Strict):
    """Top level of ``pipelines/train_evaluators*.yaml``."""

    experiment: str = "omnieval/train-evaluators"
    """MLflow experiment: a parent run per feature, a child run per grid point."""
    output_dir: Path = Path("models/evaluators")
    """Checkpoint folders ``<output_dir>/<registered_name>/`` (DVC outputs)."""
    work_dir: Path = Path(".cache/omnieval/train")
    """Grid-point checkpoints and cached features (resumable; safe to delete)."""
    runs_dir: Path = Path("runs/train-evaluators")
    """Gate reports and plots of each execution."""
    register_model: bool = True
    """Register the selected checkpoint in the MLflow Model Registry."""
    resume: bool = True
    """Reuse a finished grid point whose inputs (config, corpus, code) are unchanged."""
    features: tuple[FeatureConfig, ...] = Field(min_length=1)

    @field_validator("features")
    @classmethod
    def _unique_names(cls, value: tuple[FeatureConfig, ...]) -> tuple[FeatureConfig, ...]:
        names = [f.feature for f in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"feature(s) listed twice: {', '.join(dupes)}")
        return value

    def select(self, names: list[str] | None) -> TrainEvaluatorsConfig:
        """The same config restricted to ``names`` (all features when None or empty)."""
        if not names:
            return self
        known = {f.feature for f in self.features}
        unknown = sorted(set(names) - known)
        if unknown:
            raise ConfigError(
                f"unknown feature(s) {', '.join(unknown)}; this config has {', '.join(sorted(known))}"
            )
        return self.model_copy(update={"features": tuple(f for f in self.features if f.feature in names)})


def load_training_config(path: Path) -> TrainEvaluatorsConfig:
    """Read and validate a training config; errors name the file and the offending key path."""
    import yaml

    if not path.is_file():
        raise ConfigError(f"config not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    try:
        return TrainEvaluatorsConfig.model_validate(data)
    except ValidationError as exc:
        lines = [f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()]
        raise ConfigError(f"{path}: invalid training config\n  " + "\n  ".join(lines)) from None
