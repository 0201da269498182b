"""Scripted stand-in judge and repair models for fault suites (``kind: scripted`` backends).

Fast, deterministic and honest about what they were asked: the judge scores each criterion from a
hash of the request (so systems and rows differ), the repair model re-formats only what the broken
answer still holds. Both append ``(role, request digest)`` to :data:`CALLS`, the call log the fault
suites read to prove that no request was answered twice. Used by ``tests/judges/test_fault_suite.py``
(reduced) and ``python -m bench faults`` (full size); not a judge for real runs.
"""

from __future__ import annotations

import hashlib
import json
import re

from omnieval.backends.llm import ChatRequest
from omnieval.judges import REPAIR_SYSTEM, TRACKS, registered_templates
from omnieval_testkit import request_digest

CALLS: list[tuple[str, str]] = []
"""(role, request digest) of every request the scripted models answered, in order."""

_PAIR = re.compile(r"(\w+): score: (\d+), rationale: ([^,]*)")
"""A criterion as a broken answer still shows it once quotes and braces are dropped."""


def request_track(request: ChatRequest) -> str:
    """The track a judge or repair request is about, read from the registered tracks and rubrics.

    A repair request quotes the track's verdict schema, so it names the track's criterion keys; a
    judge request carries its template's rubric word for word (the longest match wins, should one
    rubric contain another).
    """
    text = request.messages[-1].text
    if request.messages[0].text == REPAIR_SYSTEM:
        return next(name for name, spec in TRACKS.items() if spec.criteria[1] in text)
    whole = "\n".join(m.text for m in request.messages)
    matches = [tpl for tpl in registered_templates().values() if tpl.rubric in whole]
    if not matches:
        raise ValueError("the request carries none of the registered rubrics")
    return max(matches, key=lambda tpl: len(tpl.rubric)).track


def hash_judge(request: ChatRequest) -> str:
    """A valid verdict whose 1-10 scores come from a hash of the request."""
    CALLS.append(("judge", request_digest(request)))
    seed = hashlib.sha256(request.messages[-1].text.encode()).digest()
    return json.dumps(
        {
            criterion: {"score": 1 + seed[i] % 10, "rationale": f"the page reads well on {criterion}"}
            for i, criterion in enumerate(TRACKS[request_track(request)].criteria)
        }
    )


def faithful_repair(request: ChatRequest) -> str:
    """Re-formats the criteria the broken answer still holds in full, else gives up (unrecoverable)."""
    CALLS.append(("repair", request_digest(request)))
    criteria = TRACKS[request_track(request)].criteria
    answer = request.messages[-1].text.split("<judge_answer>")[-1].replace('"', "").replace("{", "")
    found = {m[0]: (int(m[1]), m[2].strip()) for m in _PAIR.findall(answer)}
    if not all(c in found and found[c][1] for c in criteria):
        return '{"unrecoverable": true}'
    return json.dumps({c: {"score": found[c][0], "rationale": found[c][1]} for c in criteria})
