"""Suite configuration (``pipelines/*.yaml``), validated strictly when loaded.

Every model is frozen and forbids unknown keys, so a typo fails at load time with the key's path,
and component names are checked against their registries before any model starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from omnieval.backends.llm import TokenPrice
from omnieval.errors import ConfigError, read_config_text, validation_problems
from omnieval.judges import JudgeBudget
from omnieval.systems import GenerationBudget, SystemConfig, SystemSpec

if TYPE_CHECKING:
    from omnieval.benchmarks import Benchmark

DEFAULT_BENCHMARK = "storybench"
"""The benchmark of a suite that names none (the platform's first one)."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatasetConfig(_Strict):
    name: str | None = None
    """Dataset name, shown in MLflow as the dataset input's name; default the folder's name."""
    path: Path | None = None
    """Dataset folder, relative to the working directory (to the suite file when ``benchmark:`` is a
    folder); default the benchmark's bundled sample."""
    limit: int | None = Field(default=None, ge=1)
    """Evaluate only the first N transitions (quick runs and tests); None = all."""


class MetaEvalConfig(_Strict):
    """The judges' check on their benchmark's pinned known set (ground truth vs damaged copies;
    docs/judges.md, "Judges prove themselves on a known set")."""

    enabled: bool = False
    """Run the check in the judge stage, once per judge checkpoint (cached by the judges' identity
    and the set's hash), write it into ``health.json`` and let a judge below its floor make the
    night's verdict INCONCLUSIVE."""
    floor: float = Field(default=0.7, ge=0, le=1)
    """Lowest accuracy (share of known pairs where the ground truth scored strictly above its
    damaged copy; ties count as wrong) a judge may have on a track."""
    floors: dict[str, float] = Field(default_factory=dict)
    """Overrides of ``floor`` keyed by ``<judge id>/<track>``, ``<judge id>`` or ``<track>`` (looked
    up in that order)."""

    @field_validator("floors")
    @classmethod
    def _in_range(cls, value: dict[str, float]) -> dict[str, float]:
        bad = sorted(k for k, v in value.items() if not 0 <= v <= 1)
        if bad:
            raise ValueError(f"floors must lie in [0, 1]: {', '.join(bad)}")
        return value


class JudgesConfig(_Strict):
    panels: tuple[str, ...] | None = None
    """Judge panels to run (``cpu``, ``paper-a``, ``paper-b``, ``paper-c``, or a panel YAML file's
    path); empty = no judging;
    None = the benchmark's default (storybench: ``cpu``; benchmarks without judge tracks: none)."""
    budget: JudgeBudget | None = None
    """Most model calls and/or tokens the judge stage may spend in one run (docs/judges.md, "Tokens,
    time and cost"); None = no limit. Once used, the rest are not judged and the stage stays
    incomplete, so a rerun with a larger budget finishes it from the cache."""
    meta_eval: MetaEvalConfig = MetaEvalConfig()
    """The judges' check on the benchmark's known set (off unless enabled)."""


class GenerationConfig(_Strict):
    """How the generating systems run (docs/generation.md, "A budget for generation")."""

    budget: GenerationBudget | None = None
    """Most examples and/or wall seconds each generating system may spend generating in one run;
    None = no limit. Once used, the rest are not generated (missing, with the budget's reason) and
    the stage stays incomplete, so a rerun with a larger budget finishes it from the example cache."""


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


class FileNotifierConfig(_Strict):
    """Append one JSON line per verdict to a local file (a Prefect notification block)."""

    kind: Literal["file"]
    path: Path
    """File to append to, relative to the working directory; its folder is created."""


class WebhookNotifierConfig(_Strict):
    """POST the verdict as JSON to a URL (a Prefect notification block; Slack-compatible ``text``)."""

    kind: Literal["webhook"]
    url: str | None = Field(default=None, pattern=r"^https?://")
    """The URL, written in the suite (it then appears in the resolved config); prefer ``url_env``
    for URLs that are themselves secrets (Slack's incoming webhooks)."""
    url_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable holding the URL, read when the verdict is sent and never recorded."""
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    """Extra request headers (e.g. an authorization token); masked in the resolved config."""
    timeout_s: float = Field(default=10.0, gt=0)

    @model_validator(mode="after")
    def _one_url(self) -> WebhookNotifierConfig:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("give exactly one of url or url_env")
        return self

    def resolved_url(self) -> str:
        """The URL to POST to (read from ``url_env`` now, when that is how it is given)."""
        if self.url is not None:
            return self.url
        import os

        assert self.url_env is not None
        value = os.environ.get(self.url_env, "")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"${self.url_env} does not hold an http(s) URL")
        return value

    @property
    def display_target(self) -> str:
        """Where the verdict goes, without the URL's secret path: ``$VAR`` or ``https://host/…``."""
        if self.url_env is not None:
            return f"${self.url_env}"
        from urllib.parse import urlsplit

        parts = urlsplit(self.url or "")
        return f"{parts.scheme}://{parts.hostname or ''}/…"


NotifierConfig = Annotated[FileNotifierConfig | WebhookNotifierConfig, Field(discriminator="kind")]


class RegressionConfig(_Strict):
    """How each run is compared with the suite's previous run (``regression.json``, ``omnieval compare``)."""

    tolerance: float = Field(default=0.0, ge=0)
    """Largest drop of a headline component (on its comparison scale) that is not a regression."""
    component_tolerance: dict[str, float] = Field(default_factory=dict)
    """Per-component overrides of ``tolerance``, keyed by component name (e.g. ``judge.text``,
    ``original.wer``)."""
    require_holm: bool = False
    """Also require the Holm-adjusted p-value to be below 0.05 before calling a drop a regression
    (family-wise control over all system x component tests); default: the 95 % CI alone decides."""
    coverage_share: float = Field(default=0.05, ge=0, le=1)
    """Largest relative change of a system's valid-instance count per component that still counts
    as the same coverage."""
    bootstrap_draws: int = Field(default=2000, ge=100)
    seed: int = 0
    power: float = Field(default=0.8, gt=0, lt=1)
    """Power of the minimum detectable effect each test reports (``mde`` in ``regression.json``):
    the true drop the verdict would catch with this probability, so a GO can say what it rules out."""
    baseline: str = "previous"
    """``previous`` (the newest earlier successful run of the suite), or a run folder / MLflow run id."""
    notify: tuple[NotifierConfig, ...] = ()
    """Where to send each verdict (every verdict, not only NO-GO)."""
    rejudge: bool = False
    """When a judge, judge setting or judge prompt changed since the baseline, judge the baseline's
    candidates with tonight's panels and give the verdict on the system effect (docs/nightly.md,
    "Counterfactual re-judging"); the re-judged verdicts go through the judge cache."""

    def tolerance_for(self, component: str) -> float:
        """The allowed drop of ``component``."""
        return float(self.component_tolerance.get(component, self.tolerance))


class DriftConfig(_Strict):
    """The nightly judge-drift check: re-judge a fixed anchor set and compare with pinned scores
    (``<state>/judge/drift.json``; docs/judges.md)."""

    enabled: bool = False
    anchors: Path | None = None
    """Anchor folder: ``manifest.json``, the candidates and ``pinned.json``; None = the benchmark's
    declared anchors (``judge.drift_anchors`` in its benchmark.yaml)."""
    threshold: float = Field(default=1.0, gt=0)
    """Largest mean absolute shift of the anchors' scores (1-10 scale) that is not drift."""
    panel: str | None = None
    """Panel whose judges re-judge the anchors (a shipped panel name or a panel YAML path); None =
    the benchmark's first default panel."""


class ExecutionConfig(_Strict):
    """Where the flow's per-shard tasks run (docs/scale.md).

    ``default`` runs every task in the ``omnieval run`` process (metrics one system at a time, the
    judges model-major over all systems). ``dask`` hands the per-shard tasks (generate and metrics
    per system, judging per shard) to Prefect's Dask task runner: a ``LocalCluster`` of
    ``n_workers`` processes bound to 127.0.0.1, or the scheduler at ``address``.
    """

    runner: Literal["default", "dask"] = "default"
    address: str | None = None
    """A running Dask scheduler, e.g. ``tcp://10.0.0.5:8786``; None starts a local cluster."""
    n_workers: int = Field(default=2, ge=1)
    """Worker processes of the local cluster."""
    threads_per_worker: int = Field(default=1, ge=1)
    """Threads per worker process (1: the models inside already use the cores)."""

    @field_validator("address")
    @classmethod
    def _scheduler_address(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
            raise ValueError(f"expected a Dask scheduler address like tcp://host:8786, got {value!r}")
        return value


class SuiteConfig(_Strict):
    suite: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    benchmark: str = DEFAULT_BENCHMARK
    """Registered benchmark (``omnieval benchmarks`` lists them; installed plugins included), or a
    folder holding ``benchmark.yaml`` and its hooks, relative to the suite file (FORMATS.md section
    10). Once loaded it holds the benchmark's registered name. In a suite whose benchmark is a
    folder, the relative ``dataset.path`` and the systems' relative ``path`` and ``cwd`` are read
    relative to the suite file too, so a copy of the folder runs anywhere."""
    dataset: DatasetConfig = DatasetConfig()
    systems: dict[str, SerializeAsAny[SystemSpec]]
    """System id -> its config, typed by the kind's config model (generating kinds have their own)."""
    conditions: tuple[str, ...] = ()
    """Input conditions to run, for benchmarks that have them (acbench: ``original``, ``s_to_t``,
    ``i_to_t``, ``all_to_t``, ``oracle``); empty = the benchmark's default."""
    metrics: SerializeAsAny[BaseModel] = Field(default_factory=dict, validate_default=True)
    """The benchmark's typed metrics config (validated against it when the suite loads)."""
    generation: GenerationConfig = GenerationConfig()
    """Limits on the generating systems (``budget``)."""
    judges: JudgesConfig = JudgesConfig()
    analyses: AnalysesConfig = AnalysesConfig()
    tracking: TrackingConfig = TrackingConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    state_dir: Path | None = None
    """Where stage outputs live (DVC outs); default ``state/<suite>``."""
    runs_dir: Path = Path("runs")
    regression: RegressionConfig = RegressionConfig()
    """Comparison with the previous run: tolerance, bootstrap, notifications (docs/nightly.md)."""
    drift: DriftConfig = DriftConfig()
    """Judge-drift check on a pinned anchor set (docs/judges.md)."""
    execution: ExecutionConfig = ExecutionConfig()
    """Task runner for the flow's shards: in process (default) or Dask (docs/scale.md)."""
    costs: dict[str, TokenPrice] = Field(default_factory=dict)
    """Optional price table: judge id, system id or model name -> its price per million prompt and
    completion tokens; turns the run's token totals into cost in ``usage.json``, MLflow and the
    report (docs/judges.md, "Tokens, time and cost"). Unpriced models show tokens only."""

    _benchmark_folder: Path | None = PrivateAttr(default=None)
    """The folder the benchmark was loaded from (None: a package or plugin benchmark). It travels
    with the config (pickled to Dask workers), so :attr:`bench` can load the folder again there."""

    @field_validator("benchmark")
    @classmethod
    def _registered(cls, value: str, info: ValidationInfo) -> str:
        from omnieval.benchmarks import resolve_benchmark

        try:
            return resolve_benchmark(value, _suite_folder(info)).name
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("dataset")
    @classmethod
    def _dataset_beside_suite(cls, value: DatasetConfig, info: ValidationInfo) -> DatasetConfig:
        if value.path is None or value.path.is_absolute() or not _folder_suite(info):
            return value
        return value.model_copy(update={"path": _suite_folder(info) / value.path})

    @field_validator("systems", mode="before")
    @classmethod
    def _typed_systems(cls, value: Any, info: ValidationInfo) -> Any:
        from omnieval.systems import config_model

        if not isinstance(value, dict):
            return value
        typed: dict[str, Any] = {}
        problems: list[str] = []
        for sid, entry in value.items():
            if isinstance(entry, SystemSpec):
                typed[sid] = entry
                continue
            if isinstance(entry, BaseModel):
                entry = entry.model_dump()
            if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
                problems.append(f"systems.{sid}: expected a mapping with a 'kind'")
                continue
            if _folder_suite(info):
                entry = {
                    k: str(_suite_folder(info) / v) if k in ("path", "cwd") and _relative(v) else v
                    for k, v in entry.items()
                }
            try:
                typed[sid] = config_model(entry["kind"]).model_validate(entry)
            except ValidationError as exc:
                problems.extend(
                    f"systems.{sid}.{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
                    for err in exc.errors()
                )
        if problems:
            raise ValueError("; ".join(problems))
        return typed

    @field_validator("drift")
    @classmethod
    def _drift_defaults(cls, value: DriftConfig, info: ValidationInfo) -> DriftConfig:
        """Fill the anchors and panel a suite leaves unset from its benchmark, so the check reads
        concrete values and the benchmark, not this module, says which anchors are its own."""
        from omnieval.benchmarks import BENCHMARKS

        name = info.data.get("benchmark")
        if name is None or name not in BENCHMARKS:
            return value  # the benchmark's own error is reported
        bench = BENCHMARKS.get(name)
        anchors = value.anchors if value.anchors is not None else bench.drift_anchors
        panel = value.panel if value.panel is not None else next(iter(bench.default_panels), None)
        if value.enabled and anchors is None:
            raise ValueError(f"anchors: benchmark {name!r} declares no drift anchors; name a folder")
        if value.enabled and panel is None:
            raise ValueError(f"panel: benchmark {name!r} has no default judge panel; name one")
        return value.model_copy(update={"anchors": anchors, "panel": panel})

    @field_validator("metrics", mode="before")
    @classmethod
    def _typed_metrics(cls, value: Any, info: ValidationInfo) -> Any:
        from omnieval.benchmarks import BENCHMARKS

        name = info.data.get("benchmark")
        if name is None or name not in BENCHMARKS:
            return value  # the benchmark's own error is reported
        model = BENCHMARKS.get(name).metrics_config
        if isinstance(value, model):
            return value
        if value is None:
            value = {}
        if isinstance(value, BaseModel):
            value = value.model_dump()
        if not isinstance(value, dict):
            raise ValueError(f"expected a mapping of {name} metric options")
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ValueError(problems) from None

    @model_validator(mode="after")
    def _remember_folder(self) -> SuiteConfig:
        from omnieval.benchmarks import benchmark_folder

        self._benchmark_folder = benchmark_folder(self.benchmark)
        return self

    @model_validator(mode="after")
    def _conditions_known(self) -> SuiteConfig:
        known = self.bench.conditions
        for condition in self.conditions:
            if condition not in known or condition == "":
                offered = ", ".join(c for c in known if c) or "none (this benchmark has no input conditions)"
                raise ValueError(f"conditions: unknown condition {condition!r}; known: {offered}")
        return self

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
    def bench(self) -> Benchmark:
        """The registered benchmark this suite evaluates (its folder loaded again in a process that
        has not loaded it, e.g. a Dask worker)."""
        from omnieval.benchmarks import BENCHMARKS, get_benchmark, load_folder

        if self._benchmark_folder is not None and self.benchmark not in BENCHMARKS.registered():
            return load_folder(self._benchmark_folder)
        return get_benchmark(self.benchmark)

    @property
    def dataset_path(self) -> Path:
        """The dataset folder: the configured one, else the benchmark's bundled sample."""
        return self.dataset.path if self.dataset.path is not None else self.bench.default_dataset

    @property
    def dataset_name(self) -> str:
        return self.dataset.name or self.dataset_path.name

    @property
    def run_conditions(self) -> tuple[str, ...]:
        """The input conditions this suite runs (``("",)`` for benchmarks without conditions)."""
        return self.conditions or self.bench.default_conditions

    @property
    def panels(self) -> tuple[str, ...]:
        """The judge panels this suite runs."""
        return self.judges.panels if self.judges.panels is not None else self.bench.default_panels

    @property
    def state(self) -> Path:
        return self.state_dir or Path("state") / self.suite

    @property
    def experiment(self) -> str:
        return self.tracking.experiment or f"omnieval/{self.suite}"


def _suite_folder(info: ValidationInfo) -> Path:
    """The folder of the suite file being validated (``load_suite`` passes it), else the working
    directory: relative paths of a folder benchmark's suite are read against it."""
    context = info.context if isinstance(info.context, dict) else {}
    suite_file = context.get("suite_file")
    return Path(suite_file).absolute().parent if suite_file is not None else Path.cwd()


def _folder_suite(info: ValidationInfo) -> bool:
    """Whether the suite being validated names its benchmark by folder (not by registered name)."""
    from omnieval.benchmarks import benchmark_folder

    name = info.data.get("benchmark")
    return isinstance(name, str) and benchmark_folder(name) is not None


def _relative(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and not Path(value).expanduser().is_absolute()


def check_components(config: SuiteConfig, source: Path | str = "config") -> None:
    """Check every named component against its registry; raise ConfigError listing all problems."""
    from omnieval.systems import SYSTEMS, system_kinds_for

    problems: list[str] = []
    bench = config.bench
    kinds = system_kinds_for(bench.name, bench.system_kinds)
    for sid, system in config.systems.items():
        if system.kind not in SYSTEMS or system.kind not in kinds:
            problems.append(
                f"systems.{sid}.kind: unknown system {system.kind!r} for benchmark {bench.name}; "
                f"known: {', '.join(sorted(kinds))}"
            )
        if system.kind == "import" and not getattr(system, "path", None):
            problems.append(f"systems.{sid}.path: the import system needs a candidate folder")
    if config.panels and not bench.judge_tracks:
        problems.append(f"judges.panels: benchmark {bench.name} has no judge tracks; remove the panels")
    elif config.panels:
        known = bench.panel_names()
        for panel in config.panels:
            # A panel YAML file (e.g. a scripted or fault-injecting judge) is as good as a name.
            if panel not in known and not (panel.endswith((".yaml", ".yml")) and Path(panel).is_file()):
                problems.append(f"judges.panels: unknown panel {panel!r}; known: {', '.join(known)}")
    if config.judges.meta_eval.enabled and config.panels and not bench.has_known_set():
        problems.append(
            f"judges.meta_eval.enabled: benchmark {bench.name} has no known set to check its judges on"
        )
    if problems:
        raise ConfigError(f"{source}: invalid suite config\n" + "\n".join(f"  - {p}" for p in problems))


def load_suite(path: Path | str, *, check: bool = True) -> SuiteConfig:
    """Load and validate a suite YAML file."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"suite config {path} not found")
    text = read_config_text(path, label=str(path), what="a suite (a YAML file)")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        config = SuiteConfig.model_validate(raw, context={"suite_file": path})
    except ValidationError as exc:
        raise ConfigError(validation_problems(f"{path}: invalid suite config", exc)) from None
    if check:
        check_components(config, path)
    return config
