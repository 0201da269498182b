"""The 10 % fault suite: the real judge runner (cache, ledger, repair) over a few hundred records with
injected timeouts, 5xx, 429, dropped connections, malformed and truncated JSON and slow tails.

Every record must end in exactly one status, none lost or duplicated, no request answered twice by
the model, no model call for a cached record on a rerun, and the rerun must reproduce the run.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pandas as pd
from bench.scripted import CALLS, faithful_repair, hash_judge
from judge_fixtures import Story, _tone, fake_describe

from omnieval.candidates import Modality, output_path
from omnieval.judges import run_judges
from omnieval.scores import ALL_STATUSES

SYSTEMS = 40
FAULT_RATE = 0.1
RETRIES = 1
# The scripted inner models (``<this module>:judge`` / ``:repair`` in the panel) and their call log.
judge = hash_judge
repair = faithful_repair


# -- the suite ------------------------------------------------------------------------------------


def _describe(path: Path) -> dict[str, object]:
    """The test describer, with a transcript naming the system and row so every request differs."""
    return {**fake_describe(path), "transcript": f"{path.parents[2].name} line {path.parent.name}"}


def _panel(tmp_path: Path, rate: float) -> Path:
    def judge_yaml(role: str, script: str, seed: int) -> str:
        inner = f'{{kind: scripted, script: "{__name__}:{script}"}}'
        backend = (
            f"{{kind: faults, rate: {rate}, seed: {seed}, timeout_s: 0.001, slow_tail_s: 0.001, inner: {inner}}}"
            if rate
            else inner
        )
        return textwrap.dedent(
            f"""\
            id: fault-suite-{role}
            model: scripted/fault-suite-{role}
            backend: {backend}
            decoding: {{temperature: 0.0, max_tokens: 256}}
            framing: {{schema_constrained: true}}
            retries: {RETRIES}
            retry_backoff_s: 0.0
            batch_size: 16
            """
        )

    judge_block = textwrap.indent(judge_yaml("judge", "judge", 7), "        ").lstrip()
    body = f"name: fault-suite\ntracks:\n  text:\n    judges:\n      - {judge_block}"
    body += f"  speech:\n    input: cascade\n    judges:\n      - {judge_block}"
    body += "  image:\n    unavailable: no vision judge in the fault suite\n"
    body += "repair:\n" + textwrap.indent(judge_yaml("repair", "repair", 8), "  ")
    path = tmp_path / f"panel-{rate}.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def _run(story: Story, systems: dict[str, Path], panel: Path, cache: Path):  # type: ignore[no-untyped-def]
    CALLS.clear()
    result = run_judges(
        story.transitions, systems, panel=str(panel), cache_dir=cache, describe_audio=_describe
    )
    return result, list(CALLS)


def _stable(judgments: pd.DataFrame) -> pd.DataFrame:
    """Judgment rows without what legitimately differs between a run and its rerun."""
    drop = ["cache_hit", "latency_s", "repair_history"]
    out = judgments.drop(columns=drop).copy()
    out["repair_outcomes"] = [
        json.dumps([(e.get("outcome"), e.get("detail")) for e in json.loads(h)])
        for h in judgments["repair_history"]
    ]
    return out.reset_index(drop=True)


def _systems(story: Story) -> dict[str, Path]:
    """``SYSTEMS`` systems with their own narrations and voices, plus one with two missing texts."""
    systems: dict[str, Path] = {}
    for i in range(SYSTEMS):
        name = f"sys{i:02d}"
        texts = [f"{name} tells how the lantern reached page {t.index}." for t in story.transitions]
        systems[name] = story.candidates(name, list(texts), image=False)
        for t in story.transitions:
            # Distinct audio per system (the describer's cache is keyed by the audio's content),
            # above the fixture's own tones (180-220 Hz).
            _tone(output_path(systems[name], Modality.SPEECH, t.index), 300.0 + 7 * i + t.index)
    systems["gappy"] = story.candidates("gappy", [None, "gappy goes on.", None], image=False)
    return systems


def test_ten_percent_faults_lose_and_duplicate_nothing(story: Story, tmp_path: Path) -> None:
    systems = _systems(story)
    n_records = len(systems) * len(story.transitions) * 3  # text, speech, image tracks
    criteria = 4
    cache = tmp_path / "cache"
    panel = _panel(tmp_path, FAULT_RATE)

    first, calls = _run(story, systems, panel, cache)
    scores, judgments = first.scores, first.judgments

    # Exactly one status per record, none lost, none duplicated.
    keys = ["system", "instance_id", "track", "judge"]
    assert len(judgments) == n_records
    assert not judgments.duplicated(keys).any()
    assert set(judgments["status"]) <= ALL_STATUSES
    assert len(scores) == n_records * criteria
    assert not scores.duplicated([*keys, "criterion"]).any()
    per_record = scores.groupby(keys)["status"].agg(["nunique", "size"])
    assert (per_record["nunique"] == 1).all() and (per_record["size"] == criteria).all()
    statuses = Counter(judgments["status"])
    assert statuses["missing_output"] == 2 and statuses["not_applicable"] == len(systems) * 3

    # No record's request answered twice: in the model's call log each judge request appears once,
    # and every judged record that got an answer (whatever the ledger made of it) cost exactly one.
    judge_calls = Counter(d for role, d in calls if role == "judge")
    answered = judgments[judgments.status.isin(["ok", "parse_error", "repaired", "unrecoverable"])]
    assert max(judge_calls.values()) == 1 and sum(judge_calls.values()) == len(answered)
    # Each repair request is answered once per record that needs it (two records whose answers were
    # cut to the same prefix send the same repair request, once each).
    repairs = [e for h in judgments["repair_history"] for e in json.loads(h)]
    repaired_records = Counter(
        (row.track, row.raw_response)
        for row in judgments.itertuples()
        if any(e.get("outcome") in ("repaired", "unrecoverable") for e in json.loads(row.repair_history))
    )
    repair_calls = Counter(d for role, d in calls if role == "repair")
    assert sorted(repair_calls.values()) == sorted(repaired_records.values())
    # The faults reached the ledger's repair path and the runner's retries.
    assert any(json.loads(h) for h in judgments["repair_history"])
    assert first.model_calls > len(calls)

    # A clean run of the same panel (no faults, its own cache entries) gives the same scores for
    # every record the faulty run read without help: a fault never alters a clean answer.
    clean, _ = _run(story, systems, _panel(tmp_path, 0.0), cache)
    assert set(clean.judgments["status"]) == {"ok", "missing_output", "not_applicable"}
    assert clean.cache_hits == 0, "a faulty suite shared cache entries with a clean one"
    ok = scores[scores.status == "ok"].set_index([*keys, "criterion"])["value"]
    clean_values = clean.scores.set_index([*keys, "criterion"])["value"]
    pd.testing.assert_series_equal(ok, clean_values.loc[ok.index])

    # Rerun: nothing cached is requested again, and the outcome is the same.
    second, rerun_calls = _run(story, systems, panel, cache)
    assert rerun_calls == []
    failed_judging = int((judgments.status == "inference_error").sum())
    failed_repairs = sum(e.get("outcome") == "inference_error" for e in repairs)
    assert second.model_calls == (failed_judging + failed_repairs) * (RETRIES + 1)
    pd.testing.assert_frame_equal(second.scores, scores)
    pd.testing.assert_frame_equal(_stable(second.judgments), _stable(judgments))
