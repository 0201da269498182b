"""Suite configuration (``pipelines/*.yaml``), validated strictly when loaded.

Every model is frozen and forbids unknown keys, so a typo fails at load time with the key's path,
and component names are checked against their registries before any model starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from omnieval.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatasetConfig(_Strict):
    name: str = "storybench-sample"
    """Dataset name, shown in MLflow as the dataset input's name."""
    path: Path = Path("data/storybench-sample")
    """Root of the release layout (FORMATS.md section 1), relative to the working directory."""
    limit: int | None = Field(default=None, ge=1)
    """Evaluate only the first N transitions (quick runs and tests); None = all."""


class SystemConfig(_Strict):
    kind: str
    """Registered system name (``oracle``, ``copy-current``, ``shuffled``, ``import``)."""
    seed: int | None = None
    """Seed for systems with randomness (``shuffled``)."""
    path: str | None = None
    """Candidate folder for ``import``."""


class JudgesConfig(_Strict):
    panels: tuple[str, ...] = ("cpu",)
    """Judge panels to run (``cpu``, ``paper-a``, ``paper-b``, ``paper-c``); empty = no judging."""


class AnalysesConfig(_Strict):
    enabled: bool = True
    only: tuple[str, ...] | None = None
    """Run only these analyses; None = every analysis the table supports."""
    seed: int = 0
    bootstrap_draws: int = Field(default=10_000, ge=100)


class TrackingConfig(_Strict):
    experiment: str | None = None
    """MLflow experiment; default ``omnieval/<suite>``."""
    wandb: bool = False
    """Also log to Weights & Biases (offline mode unless WANDB_MODE says otherwise)."""


class ScheduleConfig(_Strict):
    cron: str = "0 2 * * *"
    timezone: str = "UTC"


class SuiteConfig(_Strict):
    suite: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    benchmark: Literal["storybench"] = "storybench"
    dataset: DatasetConfig = DatasetConfig()
    systems: dict[str, SystemConfig]
    metrics: dict[str, Any] = Field(default_factory=dict)
    """Options of ``omnieval.metrics.MetricsConfig`` (checked at load time)."""
    judges: JudgesConfig = JudgesConfig()
    analyses: AnalysesConfig = AnalysesConfig()
    tracking: TrackingConfig = TrackingConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    state_dir: Path | None = None
    """Where stage outputs live (DVC outs); default ``state/<suite>``."""
    runs_dir: Path = Path("runs")

    @field_validator("systems")
    @classmethod
    def _non_empty(cls, value: dict[str, SystemConfig]) -> dict[str, SystemConfig]:
        if not value:
            raise ValueError("at least one system is required")
        for name in value:
            if not name or "/" in name or name.startswith("."):
                raise ValueError(f"bad system id {name!r}")
        return value

    @property
    def state(self) -> Path:
        return self.state_dir or Path("state") / self.suite

    @property
    def experiment(self) -> str:
        return self.tracking.experiment or f"omnieval/{self.suite}"


def _format_validation_error(path: Path, exc: ValidationError) -> str:
    lines = [f"{path}: invalid suite config"]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"  - {where}: {err['msg']}")
    return "\n".join(lines)


def check_components(config: SuiteConfig, source: Path | str = "config") -> None:
    """Check every named component against its registry; raise ConfigError listing all problems."""
    from omnieval.systems import SYSTEMS

    problems: list[str] = []
    for sid, system in config.systems.items():
        if system.kind not in SYSTEMS:
            problems.append(
                f"systems.{sid}.kind: unknown system {system.kind!r}; known: {', '.join(SYSTEMS.names())}"
            )
        if system.kind == "import" and not system.path:
            problems.append(f"systems.{sid}.path: the import system needs a candidate folder")
    if config.judges.panels:
        from omnieval.judges import panel_names

        known = panel_names()
        for panel in config.judges.panels:
            if panel not in known:
                problems.append(f"judges.panels: unknown panel {panel!r}; known: {', '.join(known)}")
    try:
        from omnieval.metrics import MetricsConfig

        MetricsConfig(**config.metrics)
    except ValidationError as exc:
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"])
            problems.append(f"metrics.{where}: {err['msg']}")
    if problems:
        raise ConfigError(f"{source}: invalid suite config\n" + "\n".join(f"  - {p}" for p in problems))


def load_suite(path: Path | str, *, check: bool = True) -> SuiteConfig:
    """Load and validate a suite YAML file."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"suite config {path} not found")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        config = SuiteConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(path, exc)) from None
    if check:
        check_components(config, path)
    return config
