"""A rule-based stand-in for a two-modality backbone, for CPU runs of the plumbing: **not a
generative model**. It speaks the ``command`` protocol of a ``semi-orchestration`` backbone::

    python -m omnieval.benchmarks.storybench.rule_backbone INPUT_DIR OUTPUT_DIR

From ``task.json`` (storybench's visible inputs) it writes the text (the next page's scene and the
first character's action, in the past tense only by accident), the backbone's second modality
(``speech``: the first character's intent spoken by espeak-ng; ``image``: the current page's
picture, unchanged) and ``intermediate.json`` for the third modality's expert (``image_prompt``
from the scene and characters, or ``speech`` with the line and neutral delivery). Standard library
and the ``espeak-ng`` program only, so any interpreter can run it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any


def _first(characters: list[dict[str, Any]]) -> dict[str, Any]:
    return characters[0] if characters else {"name": "Someone", "action": "looks around"}


def page(task: dict[str, Any]) -> dict[str, str]:
    """The text, the spoken line and the image prompt this stand-in derives from the conditions.

    >>> page({"condition": {"scene": "a clearing", "characters": [{"name": "Pip", "action": "runs",
    ...       "speech_intent": "calls for help"}]}, "metadata": {"characters": []}})["image_prompt"]
    'Pip runs in a clearing, picture-book illustration'
    """
    cond = task.get("condition") or {}
    who = _first(list(cond.get("characters") or []))
    scene = str(cond.get("scene") or "the same place").strip().rstrip(".")
    name, action = str(who.get("name", "Someone")), str(who.get("action", "looks around")).rstrip(".")
    intent = str(who.get("speech_intent") or "says hello").rstrip(".")
    return {
        "text": f"{scene[0].upper()}{scene[1:]}. {name} {action}. {name} {intent}.",
        "line": f"{name} {intent}.",
        "image_prompt": f"{name} {action} in {scene}, picture-book illustration",
    }


def main(argv: list[str]) -> int:
    input_dir, output_dir = Path(argv[0]), Path(argv[1])
    task = json.loads((input_dir / "task.json").read_text(encoding="utf-8"))
    outputs: dict[str, str] = task["outputs"]
    wrote = page(task)
    (output_dir / outputs["text"]).write_text(wrote["text"] + "\n", encoding="utf-8")
    if "speech" in outputs:
        espeak = shutil.which("espeak-ng") or shutil.which("espeak")
        if espeak is None:
            print("espeak-ng not found", file=sys.stderr)
            return 3
        subprocess.run([espeak, "-w", str(output_dir / outputs["speech"]), wrote["line"]], check=True)
    if "image" in outputs:
        shutil.copyfile(input_dir / task["current_image"], output_dir / outputs["image"])
    intermediate = task["intermediate"]
    if intermediate["for"] == "image":
        fields: dict[str, Any] = {"image_prompt": wrote["image_prompt"]}
    else:
        labels = {"emotion": "neutral", "gender": "female", "speed": "normal", "pitch": "normal"}
        fields = {"speech": {"text": wrote["line"], **labels}}
    (output_dir / intermediate["file"]).write_text(json.dumps(fields) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
