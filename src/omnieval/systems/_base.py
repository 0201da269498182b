"""Systems under test: the one protocol every kind implements, the registry and the write helpers.

Every system kind, reference kinds included (``oracle``, ``ground-truth``, ``neutral``, ``import``...),
subclasses :class:`System`: one typed entry point, :meth:`System.generate`, which takes a
:class:`GenerationRequest` and returns a :class:`GenerationSummary`, and class-level facts the
generate stage reads instead of guessing (``kind``, ``config_model``, ``uses_ground_truth``,
``runs_models``). Generating kinds subclass :class:`~omnieval.systems.GeneratingSystem`, itself a
:class:`System`.
"""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

from omnieval.candidates import Modality, output_path, write_missing
from omnieval.registry import Registry
from omnieval.systems._budget import GenerationLimit
from omnieval.systems._spec import SystemConfig, SystemSpec
from omnieval.systems._task import Task

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called after each instance (counts of instances)."""

VisibleTask = Callable[[Any, str], Task]
"""``visible(instance, condition) -> Task``: how a benchmark shows an instance to a system."""


@dataclass(frozen=True)
class GenerationSummary:
    """What a system produced; ``missing`` counts outputs it could not produce, per modality."""

    system: str
    kind: str
    candidates_root: Path
    written: int
    missing: dict[str, int] = field(default_factory=dict)
    lineage: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GenerationRequest:
    """One call of :meth:`System.generate`: write the candidate layout of ``instances`` under ``out_root``.

    Attributes:
        instances: The benchmark's instances (each has an ``index``, the candidate layout's row),
            in any order. Reference kinds read the benchmark's own instance type (that is what
            they are for); generating kinds see them only through ``visible``.
        out_root: The candidate folder (FORMATS.md section 2), created as needed.
        condition: The input condition ('' for benchmarks without conditions).
        visible: How the benchmark shows an instance to a system that must not read its targets
            (:meth:`~omnieval.benchmarks.Benchmark.visible_task`); None when no benchmark is at
            hand (a reference kind called by itself), which kinds that need it refuse.
        modalities: The outputs the benchmark asks for (its ``modalities``, e.g. ``("speech",)``).
        progress: Called with (done, total) instances after each instance.
        keep_open: Leave models loaded after the last instance (the caller calls
            :meth:`System.shutdown`): the generate stage runs every condition on one load.
        limit: The system's generation budget, shared by its conditions; only kinds that
            :attr:`~System.runs_models` spend it.
    """

    instances: Sequence[Any]
    out_root: Path
    condition: str = ""
    visible: VisibleTask | None = None
    modalities: tuple[str, ...] = ()
    progress: Progress | None = None
    keep_open: bool = False
    limit: GenerationLimit | None = None

    def tick(self, done: int) -> None:
        """Report ``done`` of ``len(instances)`` instances to :attr:`progress` (when set)."""
        if self.progress is not None:
            self.progress(done, len(self.instances))


class System(ABC):
    """A system under test: writes the candidate layout (FORMATS.md section 2) for every instance.

    The one protocol of every system kind. A kind is registered under its config key
    (``SYSTEMS.register(kind)`` on the class), sets the class facts below and implements
    :meth:`generate`; the generate stage builds it with :meth:`from_spec` and calls nothing else
    but :meth:`identity`, :meth:`generate` and :meth:`shutdown`.

    Class attributes:
        kind: The registered name (``systems.<id>.kind`` in a suite).
        config_model: The kind's typed ``systems:`` entry (:class:`SystemConfig` unless the kind
            has its own), validated when the suite loads.
        uses_ground_truth: The kind reads the evaluation targets on purpose (a ceiling or a probe).
        runs_models: The kind generates with models or programs (``GeneratingSystem``): it is built
            once for all input conditions, spends the generation budget, its :meth:`identity` keys
            the generate stage and :meth:`shutdown` releases it. False for kinds that derive their
            outputs from the dataset or a folder (reference kinds, ``import``): they are built per
            condition from their entry's keyword arguments (``path`` may differ per condition).
    """

    kind: ClassVar[str]
    config_model: ClassVar[type[SystemSpec]] = SystemConfig
    uses_ground_truth: ClassVar[bool] = False
    runs_models: ClassVar[bool] = False

    @classmethod
    def from_spec(
        cls, spec: SystemSpec, *, system_id: str, condition: str, modalities: Sequence[str], cache_dir: Path
    ) -> Self:
        """The system a suite's ``systems:`` entry describes, for one input condition.

        Default: the entry says how the class is called (:meth:`SystemSpec.build`: the typed entry
        itself, or the keyword arguments it sets); ``system_id`` and ``cache_dir`` concern kinds that
        keep per-example results (:class:`~omnieval.systems.GeneratingSystem`).
        """
        del system_id, cache_dir
        built = spec.build(cls, condition=condition, modalities=modalities)
        if not isinstance(built, cls):
            raise TypeError(f"system kind {cls.kind!r}: its entry built a {type(built).__name__}")
        return built

    @abstractmethod
    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """Write the candidate layout of ``request.instances``; report what was written and missing."""

    def identity(self) -> dict[str, Any]:
        """What identifies the models behind the system beyond its config (weights hashes, a
        command's script digest), without loading them. Default: nothing."""
        return {}

    def shutdown(self) -> None:  # noqa: B027 (optional hook: most kinds hold nothing open)
        """Release whatever :meth:`generate` left open with ``keep_open`` (idempotent)."""


SYSTEMS: Registry[type[System]] = Registry("system")
"""Kind name -> :class:`System` subclass (the name is the ``kind:`` a suite uses)."""


def write_text(root: Path, index: int, text: str) -> Path:
    path = output_path(root, Modality.TEXT, index)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    tmp.write_text(text.strip() + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def write_image(root: Path, index: int, source: Path) -> Path:
    """Copy ``source`` as the candidate PNG, converting other formats to PNG."""
    path = output_path(root, Modality.IMAGE, index)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("generated.partial.png")
    if source.suffix.lower() == ".png":
        shutil.copyfile(source, tmp)
    else:
        from PIL import Image

        with Image.open(source) as img:
            img.convert("RGB").save(tmp, format="PNG")
    tmp.replace(path)
    return path


def clear_index(root: Path, index: int) -> None:
    """Remove stale outputs of one row (a previous run may have written a missing.txt)."""
    for modality in Modality:
        folder = root / modality.value / str(index)
        if folder.exists():
            shutil.rmtree(folder)


def record_missing(root: Path, modality: Modality, index: int, reason: str, counts: dict[str, int]) -> None:
    write_missing(root, modality, index, reason)
    counts[modality.value] = counts.get(modality.value, 0) + 1
