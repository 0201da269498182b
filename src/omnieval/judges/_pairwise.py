"""Blind pairwise judging: a candidate and a reference judged in one answer, in a seeded order.

What a pairwise benchmark (PRISM-Bench) shares with the single-candidate one goes through the same
runner (:class:`~._calls.CallRunner`: cache, model groups, batches, retries, repair); this module
holds what only pairs need:

- :class:`PairPanelConfig`: a panel of judges that all see every pair (no per-track judges), with
  the input kind its prompts are written for, and :func:`load_panel_file` / :func:`describe_pair_panel`
  to load and list a benchmark's shipped ones;
- :class:`PairedReading` and :func:`swap_summary`: when each pair is also judged in the other
  order, how often the preferred output changes (position bias).

The answer itself (both outputs' scores under ``candidate_<n>`` keys) is read with
:func:`~._parse.read_per_candidate`; which pairs, cells and rows there are stays the benchmark's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnieval.errors import ConfigError, validation_problems
from omnieval.judges._cache import canonical_json
from omnieval.judges._panels import JudgeConfig


class PairPanelConfig(BaseModel):
    """A panel of judges for pairs: every judge judges every pair; a benchmark extends it with its
    own input settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    judge_kind: Literal["native", "cascade"]
    """``native``: the judge watches and hears the outputs; ``cascade``: a text model reads measured facts."""
    requires: str = Field(min_length=1)
    """What the panel needs to run, stated when it cannot (e.g. an omni model behind an API)."""
    judges: tuple[JudgeConfig, ...] = Field(min_length=1)
    repair: JudgeConfig | None = None

    def sha256(self) -> str:
        return hashlib.sha256(canonical_json(self.model_dump(mode="json")).encode()).hexdigest()


P = TypeVar("P", bound=BaseModel)


def load_panel_file(
    model: type[P], name: str | Path, shipped: Mapping[str, str], package: str, what: str
) -> P:
    """A shipped panel by name (``shipped``: name -> file in ``package``'s ``panels`` folder), or a
    panel YAML file by path, validated as ``model``; ConfigError (naming ``what``) when invalid."""
    import yaml

    if isinstance(name, str) and name in shipped:
        source = f"{package.replace('.', '/')}/panels/{shipped[name]}"
        text = resources.files(package).joinpath("panels", shipped[name]).read_text(encoding="utf-8")
    else:
        path = Path(name)
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            raise ConfigError(
                f"unknown {what} {str(name)!r}; known: {', '.join(sorted(shipped))} "
                "(or a path to a panel YAML file)"
            )
        source, text = str(path), path.read_text(encoding="utf-8")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(validation_problems(f"{source}: invalid {what}", exc)) from None


def describe_pair_panel(name: str, panel: PairPanelConfig, tracks: Sequence[str]) -> dict[str, Any]:
    """A pair panel as ``omnieval judge panels`` lists it: every track lists the same judges."""
    judges = [
        {
            "id": j.id,
            "model": j.model,
            "backend": j.backend.kind,
            **({"unavailable": j.unavailable} if j.unavailable else {}),
        }
        for j in panel.judges
    ]
    entry = {"input": panel.judge_kind, "unavailable": None, "judges": judges}
    return {
        "name": name,
        "description": " ".join(panel.description.split()),
        "judge_kind": panel.judge_kind,
        "requires": panel.requires,
        "tracks": dict.fromkeys(tracks, entry),
        "repair": panel.repair.id if panel.repair else None,
    }


@dataclass(frozen=True)
class PairedReading:
    """One valid pair judgment, as the swap check compares it with the same pair's other order.

    Attributes:
        pair: what both orders share (judge, system, item).
        label: the group it is counted in (a stage).
        swapped: whether this is the swap-check order.
        scores: per scored cell, (score of the output shown first, of the one shown second).
        candidate_slot: where the candidate was shown (1 or 2).
    """

    pair: tuple[Hashable, ...]
    label: str
    swapped: bool
    scores: Mapping[str, tuple[int, int]]
    candidate_slot: int

    def preference(self, cell: str) -> str:
        first, second = self.scores[cell]
        cand, ref = (first, second) if self.candidate_slot == 1 else (second, first)
        return "candidate" if cand > ref else ("reference" if ref > cand else "tie")


def swap_summary(readings: Iterable[PairedReading], labels: Sequence[str]) -> dict[str, Any]:
    """Per label: cells judged validly in both orders, how often the preferred output changed.

    ``flip_rate`` counts any change of preference (candidate, reference or tie) between the two
    orders; ``strict_flip_rate`` only candidate <-> reference; ``first_slot_wins`` is the share of
    cells, over both orders, where the output shown first scored higher (0.5 x non-ties when unbiased).
    """
    pairs: dict[tuple[Hashable, ...], dict[bool, PairedReading]] = {}
    for reading in readings:
        pairs.setdefault((*reading.pair, reading.label), {})[reading.swapped] = reading
    out: dict[str, Any] = {}
    for label in labels:
        cells = flips = strict = first_wins = comparisons = 0
        for both in pairs.values():
            if len(both) != 2 or both[False].label != label:
                continue
            for cell in both[False].scores:
                a, b = both[False].preference(cell), both[True].preference(cell)
                cells += 1
                flips += a != b
                strict += {a, b} == {"candidate", "reference"}
                for reading in both.values():
                    first, second = reading.scores[cell]
                    comparisons += 1
                    first_wins += first > second
        out[label] = {
            "cells": cells,
            "flips": flips,
            "flip_rate": flips / cells if cells else None,
            "strict_flips": strict,
            "strict_flip_rate": strict / cells if cells else None,
            "first_slot_wins": first_wins / comparisons if comparisons else None,
        }
    return out


__all__ = [
    "PairPanelConfig",
    "PairedReading",
    "describe_pair_panel",
    "load_panel_file",
    "swap_summary",
]
