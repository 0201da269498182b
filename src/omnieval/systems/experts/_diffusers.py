"""``diffusers``: text-to-image and image+prompt pipelines from a local folder (GPU).

The paper's image experts are of the FLUX.1-dev (text-to-image), FLUX.1-Kontext (image+prompt:
the current page's picture edited towards the planned scene) and Nitro-T class; any diffusers
pipeline saved with ``save_pretrained`` (a ``model_index.json`` folder) loads here:

- ``mode: text``: the pipeline named in ``model_index.json`` (or ``pipeline_class``) is called with
  the prompt;
- ``mode: image_prompt``: the current page's picture is passed as ``image``; a text-to-image
  checkpoint whose pipeline takes no image is switched to its image-to-image sibling
  (``AutoPipelineForImage2Image.from_pipe``, same weights).

Arguments a pipeline does not accept (``guidance_scale`` on a distilled model, ``strength`` on
Kontext) are left out rather than failing. diffusers and torch are imported when the expert opens.
On CPU the test suite runs both modes with a tiny randomly initialised two-block pipeline built in
the test (noise pictures, real files through the real code path).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from omnieval.systems.experts._base import (
    IMAGE_EXPERTS,
    ExpertConfig,
    ExpertError,
    ImageExpert,
    ImageRequest,
    folder_weights,
    release_accelerator_memory,
)


class DiffusersConfig(ExpertConfig):
    """``diffusers`` image expert."""

    name: Literal["diffusers"] = "diffusers"
    model_path: str
    """Local pipeline folder (``model_index.json``)."""
    mode: Literal["text", "image_prompt"] = "text"
    pipeline_class: str | None = None
    """A diffusers pipeline class name (``FluxKontextPipeline``...); None = the folder's own."""
    device: str = "cuda"
    dtype: Literal["float32", "float16", "bfloat16"] = "bfloat16"
    steps: int = Field(default=28, ge=1)
    guidance_scale: float | None = 3.5
    height: int = Field(default=512, ge=8)
    width: int = Field(default=512, ge=8)
    strength: float | None = Field(default=None, gt=0, le=1)
    """How far an image-to-image pipeline may move from the current picture (None: its default)."""
    seed: int = Field(default=0, ge=0)


@IMAGE_EXPERTS.register("diffusers")
class DiffusersImageExpert(ImageExpert[DiffusersConfig]):
    name: ClassVar[str] = "diffusers"
    config_model: ClassVar[type[ExpertConfig]] = DiffusersConfig
    runs_on: ClassVar[str] = "gpu"

    def __init__(self, config: DiffusersConfig) -> None:
        super().__init__(config)
        self._pipe: Any = None
        self._weights: dict[str, str] | None = None

    def describe(self) -> str:
        what = (
            "image+prompt (edits the current page's picture)"
            if self.config.mode == "image_prompt"
            else "text-to-image"
        )
        return f"diffusers {what} pipeline from {self.config.model_path}"

    def identity(self) -> dict[str, Any]:
        if self._weights is None:
            self._weights = folder_weights(self.config.model_path)
        return {**super().identity(), "weights_sha256": self._weights}

    def open(self) -> None:
        if self._pipe is not None:
            return
        import diffusers
        import torch

        if not (Path(self.config.model_path) / "model_index.json").is_file():
            raise ExpertError(
                f"diffusers: {self.config.model_path} has no model_index.json (not a pipeline folder)"
            )
        cls = (
            getattr(diffusers, self.config.pipeline_class)
            if self.config.pipeline_class
            else diffusers.DiffusionPipeline
        )
        pipe = cls.from_pretrained(self.config.model_path, dtype=getattr(torch, self.config.dtype))
        if self.config.mode == "image_prompt" and "image" not in inspect.signature(pipe.__call__).parameters:
            pipe = diffusers.AutoPipelineForImage2Image.from_pipe(pipe)
        pipe.set_progress_bar_config(disable=True)
        self._pipe = pipe.to(self.config.device)

    def close(self) -> None:
        self._pipe = None
        release_accelerator_memory()

    def pipeline_name(self) -> str:
        return type(self._pipe).__name__ if self._pipe is not None else ""

    def render(self, request: ImageRequest, out: Path) -> dict[str, Any]:
        import torch
        from PIL import Image

        self.open()
        pipe = self._pipe
        accepted = inspect.signature(pipe.__call__).parameters
        generator = torch.Generator(device="cpu").manual_seed(self.config.seed + request.seed)
        wanted: dict[str, Any] = {
            "prompt": request.prompt,
            "num_inference_steps": self.config.steps,
            "guidance_scale": self.config.guidance_scale,
            "height": self.config.height,
            "width": self.config.width,
            "strength": self.config.strength,
            "generator": generator,
            "output_type": "pil",
        }
        if self.config.mode == "image_prompt":
            if request.reference is None or not request.reference.is_file():
                raise ExpertError("diffusers: image_prompt mode needs the current page's picture")
            with Image.open(request.reference) as img:
                wanted["image"] = img.convert("RGB").resize((self.config.width, self.config.height))
        kwargs = {k: v for k, v in wanted.items() if v is not None and k in accepted}
        with torch.inference_mode():
            result = pipe(**kwargs)
        images = getattr(result, "images", None)
        if not images:
            raise ExpertError(f"diffusers: {type(pipe).__name__} returned no image")
        out.parent.mkdir(parents=True, exist_ok=True)
        images[0].convert("RGB").save(out, format="PNG")
        return {"pipeline": type(pipe).__name__, "ignored_arguments": sorted(set(wanted) - set(kwargs))}
