"""The ``cascade`` kind (OmniACBench): ASR -> planner -> controllable TTS.

Per example the cascade reads exactly what the input condition gives (``Task.inputs``, acbench's
``TaskInputs``; never the target):

- the spoken instruction through ASR (packaged faster-whisper by default; transcripts cached by the
  audio's SHA-256 and the ASR's identity), or the instruction text;
- the picture only when the planner takes images (``planner.sees_images``); otherwise the picture is
  *not seen*, and ``raw/<index>/generated_raw.json`` and the lineage say ``image not seen: no vision
  backend``. The picture's keywords, where the condition gives them, are text and are seen;
- the stated target delivery under ``oracle``.

A planner (:class:`~omnieval.systems._planner.Planner`) turns that into delivery codes under a JSON
schema (:mod:`._prompt`), and espeak-ng renders them with acbench's settings. A failed plan leaves
the speech missing with the planning failure's cause (FORMATS.md section 9). Seconds per step:
``asr``, ``plan``, ``speech``.

``limit: N`` evaluates only the dataset's first N rows (a named subset, for CPU budgets); the other
rows get ``missing.txt`` starting with ``not evaluated:``, which the acbench metrics stage leaves
out of the scores instead of counting as missing outputs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from omnieval.benchmarks.acbench._cascade._prompt import (
    NOT_PLANNED,
    SYSTEM_PROMPT,
    Context,
    delivery_from_plan,
    plan_labels,
    plan_schema,
    user_prompt,
)
from omnieval.benchmarks.acbench._conditions import TaskInputs
from omnieval.benchmarks.acbench._heteronyms import find_heteronym
from omnieval.benchmarks.acbench._systems import ACBENCH_PROSODY, NOT_EVALUATED, render_delivery
from omnieval.candidates import Modality, write_missing
from omnieval.systems import (
    EXAMPLE_FILES,
    PLANNING_CODE,
    ExampleResult,
    GeneratingSystem,
    GenerationRequest,
    GenerationSummary,
    Planner,
    PlannerConfig,
    SystemSpec,
    Task,
    clear_index,
    timed,
)

#: Why the picture is not seen when the planner takes no images.
IMAGE_NOT_SEEN = "image not seen: no vision backend"

#: Bump when the stored transcript format changes.
_ASR_CACHE_FORMAT = "cascade-asr-v1"


class CascadeConfig(SystemSpec):
    """A ``cascade`` suite entry.

    Example (``pipelines/acbench.yaml``)::

        cascade-cpu:
          kind: cascade
          limit: 8
          planner:
            model: Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf
            backend: {kind: llamacpp, model_path: "packaged:qwen2.5-coder-1.5b-gguf", constrained_decoding: skeleton}
            decoding: {temperature: 0.0, max_tokens: 32}
    """

    kind: Literal["cascade"] = "cascade"
    planner: PlannerConfig
    """The planner; ``sees_images: true`` (with a backend that takes images) lets it see the picture."""
    asr_model: str = "whisper-tiny.en"
    """Packaged Whisper name or a local CTranslate2 Whisper folder (backends/asr.py)."""
    tts: Literal["espeak-ng"] = "espeak-ng"
    """The controllable TTS (espeak-ng, with acbench's rates, voices and whisper resynthesis)."""
    limit: int | None = Field(default=None, ge=1)
    """Evaluate only the dataset's first N rows (a named subset); None = every row."""


class CascadeSystem(GeneratingSystem):
    """ASR + planner + espeak-ng for OmniACBench (see the module docstring)."""

    kind: ClassVar[str] = "cascade"
    config_model: ClassVar[type[SystemSpec]] = CascadeConfig
    # The kind's own package is listed: the shared driver adds a kind's own package to its code
    # digest only for kinds under ``systems/``. The rendering (rates, voices, whisper resynthesis),
    # the heteronym list and the conditions' inputs are acbench's: editing them changes the clips,
    # so they key the examples too.
    depends_on: ClassVar[tuple[str, ...]] = (
        *PLANNING_CODE,
        "benchmarks/acbench/_cascade",
        "benchmarks/acbench/_systems.py",
        "benchmarks/acbench/_heteronyms.py",
        "benchmarks/acbench/_conditions.py",
    )

    def __init__(self, config: SystemSpec, *, system_id: str = "", cache_dir: Path | None = None) -> None:
        if not isinstance(config, CascadeConfig):
            config = CascadeConfig.model_validate(config.model_dump())
        super().__init__(config, system_id=system_id, cache_dir=cache_dir)
        self.cfg: CascadeConfig = config
        self.planner = Planner(config.planner)
        self._asr: Any = None
        self._identity: dict[str, Any] | None = None

    # -- identity and models ------------------------------------------------------------------
    def _transcriber(self) -> Any:
        if self._asr is None:
            from omnieval.backends.asr import load_transcriber

            self._asr = load_transcriber(self.cfg.asr_model)
        return self._asr

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            self._identity = {
                "planner": self.planner.identity(),
                "asr": self._transcriber().identity().as_dict(),
                "tts": {"engine": "espeak-ng", "prosody": ACBENCH_PROSODY.version},
            }
        return self._identity

    def close(self) -> None:
        self.planner.close()

    # -- one example --------------------------------------------------------------------------
    def _transcribe(self, audio: Path) -> tuple[str, bool]:
        """The instruction's transcript and whether it came from the transcript cache."""
        ident = self.identity()["asr"]
        digest = hashlib.sha256(audio.read_bytes()).hexdigest()
        key = hashlib.sha256(
            json.dumps([_ASR_CACHE_FORMAT, digest, ident], sort_keys=True).encode()
        ).hexdigest()
        path = self._cache_root() / "asr" / f"{key}.json"
        if path.is_file():
            try:
                return str(json.loads(path.read_text(encoding="utf-8"))["text"]), True
            except (ValueError, KeyError, TypeError):
                pass
        text = self._transcriber().transcribe_file(audio).text.strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".partial")
        tmp.write_text(
            json.dumps({"text": text, "audio_sha256": digest, "asr": ident}) + "\n", encoding="utf-8"
        )
        tmp.replace(path)
        return text, False

    def run_example(self, task: Task, workdir: Path) -> ExampleResult:
        from omnieval.backends.tts import SynthesisError

        inputs = task.inputs
        if not isinstance(inputs, TaskInputs):
            raise TypeError(f"cascade serves acbench only; got inputs {type(inputs).__name__} for {task.id}")
        seconds: dict[str, float] = {}
        seen: dict[str, Any] = {"script": True}
        not_seen: dict[str, str] = {}
        instruction: str | None = None
        source: str | None = None
        if inputs.instruction_audio is not None:
            with timed(seconds, "asr"):
                instruction, cached = self._transcribe(inputs.instruction_audio)
            source = "speech"
            seen["instruction_audio"] = {"transcript": instruction, "from_cache": cached}
        elif inputs.instruction_text is not None:
            instruction, source = inputs.instruction_text, "text"
            seen["instruction_text"] = True
        images: list[Path] = []
        if inputs.image is not None:
            if self.cfg.planner.sees_images:
                images.append(inputs.image)
                seen["image"] = True
            else:
                not_seen["image"] = IMAGE_NOT_SEEN
        if inputs.image_keywords is not None:
            seen["image_keywords"] = True
        if inputs.target_statement is not None:
            seen["target_statement"] = True
        ctx = Context(
            script=inputs.script,
            instruction=instruction,
            instruction_source=source,
            keywords=inputs.image_keywords,
            picture_attached=bool(images),
            target_statement=inputs.target_statement,
            heteronym=find_heteronym(inputs.script),
        )
        prompt = user_prompt(ctx)
        schema = plan_schema(ctx)
        with timed(seconds, "plan"):
            plan = self.planner.plan(SYSTEM_PROMPT, prompt, schema, images=images)
        raw: dict[str, Any] = {
            "inputs_seen": seen,
            "inputs_not_seen": not_seen,
            "planner_prompt": prompt,
            **plan.as_raw(),
        }
        if plan.failure is not None or plan.fields is None:
            cause = plan.failure.value if plan.failure else "unparseable_json"
            return ExampleResult(
                missing={"speech": f"planning failure: {cause}: {plan.error}".rstrip(": ")},
                planning_failure=plan.failure,
                seconds=seconds,
                raw=raw,
            )
        labels = plan_labels(plan.fields, ctx)
        delivery = delivery_from_plan(labels, ctx)
        raw["delivery"] = {"labels": labels, "how": delivery.note}
        name = EXAMPLE_FILES[Modality.SPEECH]
        try:
            with timed(seconds, "speech"):
                render_delivery(delivery, workdir / name)
        except SynthesisError as exc:
            return ExampleResult(missing={"speech": f"tts failed: {exc}"}, seconds=seconds, raw=raw)
        return ExampleResult(written={"speech": name}, seconds=seconds, raw=raw)

    # -- the run ------------------------------------------------------------------------------
    def lineage(self) -> dict[str, Any]:
        vision = (
            f"the planner sees the picture ({self.cfg.planner.backend.kind})"
            if self.cfg.planner.sees_images
            else f"none: {IMAGE_NOT_SEEN} (the keywords, where a condition gives them, are read)"
        )
        return {
            "pipeline": "ASR -> planner -> espeak-ng",
            "asr": self.cfg.asr_model,
            "planner": self.cfg.planner.model,
            "tts": "espeak-ng",
            "vision": vision,
            "not_planned": dict(NOT_PLANNED),
            # What the planner spent in this process (every condition so far; cache hits aside).
            "usage": {**self.planner.usage.to_json(), "model": self.cfg.planner.model},
        }

    def generate(self, request: GenerationRequest) -> GenerationSummary:
        """The shared driver on the evaluated subset, then what the cascade saw, from the raw files."""
        instances, out_root = request.instances, request.out_root
        ordered = sorted(instances, key=lambda inst: int(inst.index))
        subset = ordered if self.cfg.limit is None else ordered[: self.cfg.limit]
        chosen = {int(inst.index) for inst in subset}
        left_out = [inst for inst in ordered if int(inst.index) not in chosen]

        # The progress bar counts the planned examples only: the left-out rows cost nothing.
        summary = super().generate(dataclasses.replace(request, instances=subset))
        for inst in left_out:
            clear_index(out_root, int(inst.index))
            write_missing(
                out_root,
                Modality.SPEECH,
                int(inst.index),
                f"{NOT_EVALUATED} outside system {self.system_id!r}'s evaluated subset (limit: {self.cfg.limit})",
            )
        lineage = dict(summary.lineage)
        lineage["inputs"] = _inputs_facts(out_root, [int(inst.index) for inst in subset])
        lineage["subset"] = {
            "limit": self.cfg.limit,
            "evaluated": len(subset),
            "of": len(instances),
            "not_evaluated": [str(inst.id) for inst in left_out],
        }
        return dataclasses.replace(summary, lineage=lineage)


def _inputs_facts(out_root: Path, indexes: Sequence[int]) -> dict[str, Any]:
    """How many examples saw each input, and why inputs were not seen, from ``raw/<index>/``."""
    seen: Counter[str] = Counter()
    not_seen: dict[str, Counter[str]] = {}
    for index in indexes:
        path = out_root / "raw" / str(index) / "generated_raw.json"
        if not path.is_file():
            continue
        raw = json.loads(path.read_text(encoding="utf-8"))
        seen.update(name for name, value in (raw.get("inputs_seen") or {}).items() if value)
        for name, reason in (raw.get("inputs_not_seen") or {}).items():
            not_seen.setdefault(name, Counter())[str(reason)] += 1
    return {
        "seen": dict(sorted(seen.items())),
        "not_seen": {name: dict(reasons) for name, reasons in sorted(not_seen.items())},
    }


__all__ = ["IMAGE_NOT_SEEN", "CascadeConfig", "CascadeSystem"]
