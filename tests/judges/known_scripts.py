"""Scripted judges (``kind: scripted`` backends) for the known-set check: they read the storybench
text prompt and answer a verdict without any model.

``prefers_ground_truth`` scores 9 when the candidate narration is the reference narration and 2
otherwise (a judge that always ranks the ground truth above its damaged copies); ``constant`` gives
5 to everything (it can tell nothing apart: every known pair is a tie).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from omnieval.backends.llm import ChatRequest
from omnieval.judges import TRACKS


def _between(text: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    return match.group(1) if match else None


def _verdict(score: int) -> str:
    return json.dumps({k: {"score": score, "rationale": "scripted"} for k in TRACKS["text"].criteria})


def prefers_ground_truth(request: ChatRequest) -> str:
    user = request.messages[-1].text
    same = _between(user, "reference_next_narration") == _between(user, "candidate_next_narration")
    return _verdict(9 if same else 2)


def constant(request: ChatRequest) -> str:
    return _verdict(5)


PANEL = """\
name: {name}
tracks:
  text:
    judges:
      - id: {judge}
        model: scripted/{judge}
        backend: {{kind: scripted, script: "known_scripts:{script}"}}
        decoding: {{temperature: 0.0, max_tokens: 128}}
        framing: {{schema_constrained: true}}
        retries: 0
"""


def write_panel(folder: Path, script: str) -> str:
    """A text-only panel YAML whose one judge is the scripted function ``script``; returns its path."""
    judge = {"prefers_ground_truth": "scripted-ground-truth", "constant": "scripted-constant"}[script]
    path = folder / f"{judge}.yaml"
    path.write_text(PANEL.format(name=f"known-{judge}", judge=judge, script=script), encoding="utf-8")
    return str(path)
