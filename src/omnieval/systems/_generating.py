"""Systems that generate: the per-example driver every generating kind shares.

A generating kind (``orchestration``, ``semi-orchestration``, ``cascade``, ``command``,
``openai-omni``; FORMATS.md section 9) subclasses :class:`GeneratingSystem` and implements
:meth:`GeneratingSystem.run_example`: it receives one :class:`Task` (the benchmark's *visible*
inputs: never a target) and a scratch folder, and returns an :class:`ExampleResult` naming the files
it wrote, the modalities it could not produce and why, its planning failure (if any) and the seconds
each step took.

The driver (:meth:`GeneratingSystem.generate`) does the rest, the same way for every kind:

- **content-keyed reuse**: each example's result is stored under
  ``<cache>/<example key>/`` where the key hashes the system's config, its identity (model files),
  the systems code and the task's visible inputs (media by content). A rerun with nothing changed
  copies stored results and makes no planner, image or TTS call;
- **kill -9 safe**: an example is built in a scratch folder and renamed into the cache in one step,
  so a killed run leaves either a whole example or nothing;
- **candidate layout**: outputs go to ``<out_root>/<modality>/<index>/generated.*``; a modality the
  example could not produce gets ``missing.txt`` with its cause; the planner's raw output and errors
  go to ``<out_root>/raw/<index>/generated_raw.json``;
- **accounting**: planning failures by cause, missing outputs per modality and seconds per modality
  or step, returned in the :class:`~omnieval.systems.GenerationSummary` lineage under
  ``generation`` (the shape of ``leaderboard.json``'s ``systems.<name>.generation``);
- **budget**: with a :class:`~omnieval.systems.GenerationLimit`, examples that would have to be
  generated once the budget is used are withheld: missing, with the budget's reason.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Self

from omnieval.candidates import OUTPUT_FILES, Modality, output_path, read_candidate, write_missing
from omnieval.hashing import sha256_file
from omnieval.systems._base import (
    GenerationRequest,
    GenerationSummary,
    System,
    clear_index,
)
from omnieval.systems._spec import SystemSpec
from omnieval.systems._task import Task, _walk, describe

#: Bump when the stored example format changes (old entries are then ignored, not misread).
CACHE_FORMAT = "generate-example-v1"


class PlanningFailure(StrEnum):
    """Why a planner gave no usable plan for an example (FORMATS.md section 9)."""

    UNPARSEABLE_JSON = "unparseable_json"
    MISSING_FIELD = "missing_field"
    UNUSABLE_PROMPT = "unusable_prompt"
    REFUSAL = "refusal"
    TIMEOUT = "timeout"


#: File names a generating example writes in its scratch folder, per modality (FORMATS.md section 9).
EXAMPLE_FILES: dict[Modality, str] = {
    Modality.TEXT: "text.txt",
    Modality.IMAGE: "image.png",
    Modality.SPEECH: "speech.wav",
    Modality.VIDEO: "video.mp4",
}


def _by_content(path: Path) -> dict[str, str]:
    # Read every time (no memo by path): a long-running ``serve`` must see a media file edited
    # between nights as a new input.
    return {"sha256": sha256_file(path)} if path.is_file() else {"absent": path.name}


def _content_fields(value: Any) -> Any:
    """Like :func:`describe` but media by content (SHA-256), so a moved dataset keeps its cache."""
    return _walk(value, _by_content)


#: Code every generating kind's examples depend on (paths relative to the ``omnieval`` package).
SHARED_CODE: tuple[str, ...] = (
    "systems/_generating.py",
    "systems/_base.py",
    "systems/_task.py",
    "candidates.py",
)

#: Code of the planning kinds' shared parts: planner, experts and model backends. An expert
#: registered from elsewhere (storybench's ``drawn``, which paints with that benchmark's sample
#: drawing code) adds its own module to the key: see :func:`~omnieval.systems.experts.expert_code`.
PLANNING_CODE: tuple[str, ...] = (
    "systems/_planner.py",
    "systems/experts",
    "backends",
)

#: Shared modules of the ``command`` protocol (its config, ``task.json`` and the process runner):
#: part of the code key of every kind that runs a program with it.
COMMAND_CODE: tuple[str, ...] = ("systems/_command_config.py", "systems/_protocol.py", "systems/_process.py")

#: Shared modules of the planning kinds: the plan's schema and rules, the expert pair and writers.
PLAN_CODE: tuple[str, ...] = ("systems/_plan.py", "systems/_page.py")

#: The shared omni model client (its config, requests and answers).
OMNI_CODE: tuple[str, ...] = ("systems/_omni_client.py",)

#: The folder whose presence in :attr:`GeneratingSystem.depends_on` means "uses experts".
_EXPERTS_CODE = "systems/experts"


@lru_cache(maxsize=64)
def code_digest_of(paths: tuple[str, ...]) -> str:
    """SHA-256 over the Python files at ``paths`` (files or folders, relative to the package).

    A kind's examples are keyed by the digest of its own package plus what it declares in
    :attr:`GeneratingSystem.depends_on`, so editing one kind never invalidates another's examples.
    """
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(CACHE_FORMAT.encode())
    files: set[Path] = set()
    for rel in paths:
        target = root / rel
        files.update(target.rglob("*.py") if target.is_dir() else [target] if target.is_file() else [])
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass
class ExampleResult:
    """What :meth:`GeneratingSystem.run_example` produced for one task.

    Attributes:
        written: Modality -> file in the scratch folder (``text.txt``, ``image.png``...).
        missing: Modality -> why it was not produced (becomes ``missing.txt``).
        planning_failure: The planner's failure cause, when the plan itself failed (every modality
            the plan feeds is then missing with the same cause).
        seconds: Step or modality -> wall seconds (``plan``, ``image``, ``speech``...).
        raw: The planner's raw output, parsed plan, errors and any facts worth keeping
            (written to ``raw/<index>/generated_raw.json``).
    """

    written: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    planning_failure: PlanningFailure | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "missing": self.missing,
            "planning_failure": self.planning_failure.value if self.planning_failure else None,
            "seconds": self.seconds,
            "raw": self.raw,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExampleResult:
        failure = data.get("planning_failure")
        return cls(
            written=dict(data.get("written") or {}),
            missing=dict(data.get("missing") or {}),
            planning_failure=PlanningFailure(failure) if failure else None,
            seconds={str(k): float(v) for k, v in (data.get("seconds") or {}).items()},
            raw=dict(data.get("raw") or {}),
        )


@contextmanager
def timed(seconds: dict[str, float], step: str) -> Iterator[None]:
    """Add the wall time of the ``with`` body to ``seconds[step]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        seconds[step] = seconds.get(step, 0.0) + time.perf_counter() - start


@dataclass(frozen=True)
class GenerationTotals:
    """Totals over one ``generate`` call, the shape of ``systems.<name>.generation``.

    ``seconds`` sums every example's step seconds, reused ones included (what producing the
    candidates cost); ``seconds_generated`` only those of the examples generated by this call
    (what this run spent). ``withheld`` examples were not generated because the budget was used.
    """

    planning_failures: dict[str, int]
    seconds: dict[str, float]
    missing: dict[str, int]
    examples: int
    reused: int
    generated: int
    seconds_generated: dict[str, float] = field(default_factory=dict)
    withheld: int = 0
    withheld_reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "planning_failures": self.planning_failures,
            "seconds": {k: round(v, 3) for k, v in sorted(self.seconds.items())},
            "completeness": {
                "examples": self.examples,
                "missing": self.missing,
            },
            "examples_generated": self.generated,
            "examples_reused": self.reused,
            "seconds_generated": {k: round(v, 3) for k, v in sorted(self.seconds_generated.items())},
            "examples_withheld": self.withheld,
        }
        if self.withheld:
            out["withheld_reason"] = self.withheld_reason
        return out


class GeneratingSystem(System):
    """Base of every generating kind: a :class:`~omnieval.systems.System` that runs models or
    programs per example. Subclasses set the class attributes and ``run_example``.

    Class attributes:
        kind: The registered name (``systems.<id>.kind`` in a suite).
        config_model: The kind's typed config (frozen, no extra keys), validated when the suite loads.

    Which benchmarks a kind serves is the benchmark's to say (``system_kinds`` in its
    ``benchmark.yaml``); what to write for an example comes from the :class:`Task` (its inputs and
    the modalities the benchmark asks for).
    """

    runs_models: ClassVar[bool] = True
    depends_on: ClassVar[tuple[str, ...]] = PLANNING_CODE
    """Code outside the kind's own package that its outputs depend on (see :func:`code_digest_of`);
    kinds that run no model of ours (``command``) declare less."""

    def __init__(self, config: SystemSpec, *, system_id: str = "", cache_dir: Path | None = None) -> None:
        self.config = config
        self.system_id = system_id or config.kind
        self.cache_dir = cache_dir
        self._opened = False

    @classmethod
    def from_spec(
        cls, spec: SystemSpec, *, system_id: str, condition: str, modalities: Sequence[str], cache_dir: Path
    ) -> Self:
        """One system for every input condition: the typed entry, the suite's id for it and the
        example cache's folder (``condition`` and ``modalities`` come with each request)."""
        del condition, modalities
        return cls(spec, system_id=system_id, cache_dir=cache_dir)

    def shutdown(self) -> None:
        """Close the models if :meth:`generate` opened them (idempotent)."""
        if self._opened:
            self._opened = False
            self.close()

    # -- what subclasses implement ------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """What identifies the models behind this system without loading them (cache key, lineage).

        Default: the config. Kinds with model files add their identities (weights hashes)."""
        return {}

    def open(self) -> None:
        """Load models once before the first example that needs them (optional)."""

    def close(self) -> None:
        """Release models (and GPU memory) after the last example (optional)."""

    @abstractmethod
    def run_example(self, task: Task, workdir: Path) -> ExampleResult:
        """Generate one example into ``workdir`` (files named as :data:`EXAMPLE_FILES`)."""

    def lineage(self) -> dict[str, Any]:
        """What the run's lineage and report say about this system (experts, models, deviations)."""
        return {}

    # -- the shared driver --------------------------------------------------------------------
    def code_digest(self) -> str:
        """Digest of the kind's own package, :data:`SHARED_CODE` and :attr:`depends_on`; a kind that
        depends on the experts also gets the module of every registered expert, wherever it lives."""
        from omnieval.systems.experts import expert_code

        package = type(self).__module__.split(".")
        own = "/".join(package[1:3]) if len(package) >= 3 and package[1] == "systems" else ""
        experts = expert_code() if _EXPERTS_CODE in self.depends_on else ()
        paths = {*SHARED_CODE, *self.depends_on, *experts, *([own] if own else [])}
        return code_digest_of(tuple(sorted(paths)))

    def example_key(self, task: Task) -> str:
        blob = json.dumps(
            {
                "format": CACHE_FORMAT,
                "kind": self.kind,
                "config": self.config.model_dump(mode="json", exclude={"diagnostic"}),
                "identity": self.identity(),
                "code": self.code_digest(),
                "task": {
                    "benchmark": task.benchmark,
                    "id": task.id,
                    "condition": task.condition,
                    "inputs": _content_fields(task.inputs),
                    "brief": task.brief.digest() if task.brief is not None else None,
                },
            },
            sort_keys=True,
            default=str,
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """Write the candidate layout for ``request.instances`` (see the module docstring).

        ``request.keep_open`` leaves models loaded after the last example (the caller closes the
        system): the generate stage runs every input condition of a system on one load.
        ``request.limit``: the system's budget (shared by its conditions); once used, examples not
        in the cache are withheld (missing, with the budget's reason), and no model is loaded for
        them.

        Raises:
            ConfigError: the request carries no ``visible`` (a generating kind sees an instance
                only as its benchmark shows it).
        """
        if request.visible is None:
            from omnieval.errors import ConfigError

            raise ConfigError(f"{self.kind}: a generating system needs the benchmark's visible task")
        instances, out_root, visible, condition = (
            request.instances,
            request.out_root,
            request.visible,
            request.condition,
        )
        limit, progress = request.limit, request.progress
        wanted = tuple(Modality(m) for m in request.modalities)
        failures: dict[str, int] = {}
        seconds: dict[str, float] = {}
        seconds_generated: dict[str, float] = {}
        missing: dict[str, int] = {}
        reused = generated = withheld = 0
        reason = ""
        opened = self._opened
        asked = tuple(m.value for m in wanted)
        try:
            for done, instance in enumerate(instances, start=1):
                task = dataclasses.replace(visible(instance, condition), modalities=asked)
                key = self.example_key(task)
                stored = self._load(key)
                if stored is None and limit is not None and not limit.allows():
                    reason = limit.reason
                    limit.withhold()
                    withheld += 1
                    self._withhold(out_root, task, wanted, missing, reason)
                    if progress:
                        progress(done, len(instances))
                    continue
                if stored is None:
                    if not opened:
                        self.open()
                        opened = self._opened = True
                    started = limit.clock() if limit is not None else 0.0
                    result, folder = self._run_and_store(task, key)
                    if limit is not None:
                        limit.spend(seconds=limit.clock() - started)
                    generated += 1
                    for step, s in result.seconds.items():
                        seconds_generated[step] = seconds_generated.get(step, 0.0) + s
                else:
                    result, folder = stored
                    reused += 1
                self._place(out_root, task, result, folder, wanted, missing)
                if result.planning_failure is not None:
                    cause = result.planning_failure.value
                    failures[cause] = failures.get(cause, 0) + 1
                for step, s in result.seconds.items():
                    seconds[step] = seconds.get(step, 0.0) + s
                if progress:
                    progress(done, len(instances))
        finally:
            if opened and not request.keep_open:
                self.shutdown()
        totals = GenerationTotals(
            failures,
            seconds,
            missing,
            len(instances),
            reused,
            generated,
            seconds_generated,
            withheld,
            reason,
        )
        lineage = {**self.lineage(), "generation": totals.as_dict(), "identity": self.identity()}
        return GenerationSummary(self.system_id, self.kind, out_root, len(instances), missing, lineage)

    # -- storage ------------------------------------------------------------------------------
    def _cache_root(self) -> Path:
        return (self.cache_dir or Path(".cache/omnieval/generate")) / self.kind

    def _load(self, key: str) -> tuple[ExampleResult, Path] | None:
        folder = self._cache_root() / key[:2] / key
        meta = folder / "result.json"
        if not meta.is_file():
            return None
        try:
            result = ExampleResult.from_json(json.loads(meta.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError):
            return None
        if not all((folder / name).is_file() for name in result.written.values()):
            return None
        return result, folder

    def _run_and_store(self, task: Task, key: str) -> tuple[ExampleResult, Path]:
        final = self._cache_root() / key[:2] / key
        final.parent.mkdir(parents=True, exist_ok=True)
        scratch = final.parent / f".{key}.{os.getpid()}.partial"
        if scratch.exists():
            shutil.rmtree(scratch)
        scratch.mkdir()
        try:
            result = self.run_example(task, scratch)
            # Only files that exist count as written; a kind that named a file it did not write
            # gets the modality reported missing instead of a crash later.
            for modality, name in list(result.written.items()):
                if not (scratch / name).is_file():
                    del result.written[modality]
                    result.missing.setdefault(modality, f"not written: {name}")
            (scratch / "result.json").write_text(
                json.dumps(result.to_json(), indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
            )
            if final.exists():
                shutil.rmtree(final)
            scratch.rename(final)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        return result, final

    def _withhold(
        self, out_root: Path, task: Task, wanted: tuple[Modality, ...], missing: dict[str, int], reason: str
    ) -> None:
        """An example the budget left ungenerated: every modality missing with ``reason``."""
        clear_index(out_root, task.index)
        for modality in wanted:
            write_missing(out_root, modality, task.index, reason)
            missing[modality.value] = missing.get(modality.value, 0) + 1
        self._write_raw(
            out_root,
            task,
            {
                "id": task.id,
                "condition": task.condition,
                "system": self.system_id,
                "kind": self.kind,
                "planning_failure": None,
                "missing": {m.value: reason for m in wanted},
                "seconds": {},
                "withheld": reason,
            },
        )

    def _place(
        self,
        out_root: Path,
        task: Task,
        result: ExampleResult,
        folder: Path,
        wanted: tuple[Modality, ...],
        missing: dict[str, int],
    ) -> None:
        clear_index(out_root, task.index)
        for modality in wanted:
            name = result.written.get(modality.value)
            reason = result.missing.get(modality.value, "not written")
            if name is not None:
                target = output_path(out_root, modality, task.index)
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".partial{target.suffix}")
                if modality is Modality.TEXT:
                    text = (folder / name).read_text(encoding="utf-8", errors="replace").strip()
                    tmp.write_text(text + "\n" if text else "", encoding="utf-8")
                else:
                    shutil.copyfile(folder / name, tmp)
                tmp.replace(target)
                found = read_candidate(out_root, modality, task.index)
                if found.present:
                    continue
                target.unlink(missing_ok=True)
                reason = f"undecodable: {found.problem}"
            write_missing(out_root, modality, task.index, reason)
            missing[modality.value] = missing.get(modality.value, 0) + 1
        payload = {
            "id": task.id,
            "condition": task.condition,
            "system": self.system_id,
            "kind": self.kind,
            "planning_failure": result.planning_failure.value if result.planning_failure else None,
            "missing": {m.value: result.missing[m.value] for m in wanted if m.value in result.missing},
            "seconds": result.seconds,
            **result.raw,
        }
        self._write_raw(out_root, task, payload)

    @staticmethod
    def _write_raw(out_root: Path, task: Task, payload: Mapping[str, Any]) -> None:
        raw_dir = out_root / "raw" / str(task.index)
        raw_dir.mkdir(parents=True, exist_ok=True)
        tmp_raw = raw_dir / ".generated_raw.partial"
        tmp_raw.write_text(
            json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
        )
        tmp_raw.replace(raw_dir / "generated_raw.json")


__all__ = [
    "EXAMPLE_FILES",
    "OUTPUT_FILES",
    "ExampleResult",
    "GeneratingSystem",
    "GenerationTotals",
    "PlanningFailure",
    "Task",
    "code_digest_of",
    "describe",
    "timed",
]
