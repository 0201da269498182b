"""Streaming, sharded judging: same rows as run_judges, crash-safe restarts, bounded shards; the
runner's fast paths (verdict reading, cache keys, group commit) against their reference forms."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from judge_fixtures import NARRATIONS, Story, fake_describe

from omnieval.backends.llm import ChatRequest, Completion, Decoding, ImagePart, Message, TextPart
from omnieval.benchmarks.storybench._tracks import TRACKS, page_turn_inputs
from omnieval.candidates import Modality, output_path
from omnieval.judges import parse_verdict, run_judges, verdict_schema
from omnieval.judges._cache import (
    DiskCache,
    MediaHasher,
    ResponseCache,
    cache_key,
    request_material,
)
from omnieval.judges._run import _Runner, read_verdict
from omnieval.judges._stream import StreamResult, read_stream, stream_judges

REFERENCES = [n for _, n in NARRATIONS]
SIM = "{kind: simulated, latency_median_s: 1.0, latency_p99_s: 4.0, failure_rate: 0.0, concurrency: 4}"


def _panel(tmp_path: Path, failure_rate: float = 0.0) -> Path:
    backend = SIM.replace("failure_rate: 0.0", f"failure_rate: {failure_rate}")
    judge = (
        "      - id: sim-{n}\n        model: simulated/{n}\n        backend: "
        + backend.replace("{", "{{").replace("}", "}}")
        + "\n"
        "        framing: {{schema_constrained: {c}}}\n        batch_size: 3\n        retries: {r}\n"
        "        retry_backoff_s: 0.0\n"
    )
    retries = 0 if failure_rate else 2
    body = "name: sim\ntracks:\n  text:\n    judges:\n"
    body += judge.format(n="a", c="true", r=retries) + judge.format(n="b", c="false", r=retries)
    body += "  speech:\n    input: cascade\n    judges:\n" + judge.format(n="c", c="true", r=retries)
    body += "  image:\n    unavailable: no vision judge here\n"
    path = tmp_path / f"panel-{failure_rate}.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def _systems(story: Story) -> dict[str, Path]:
    return {
        "oracle": story.candidates("oracle", list(REFERENCES)),
        "gappy": story.candidates("gappy", [REFERENCES[0], None, "A river song."], speech=False),
    }


def _stream(
    story: Story, panel: Path, systems: dict[str, Path], tmp: Path, cache: str = "cache", **kw: Any
) -> StreamResult:
    kw.setdefault("shard_size", 2)
    return stream_judges(
        story.transitions,
        systems,
        panel=str(panel),
        cache_dir=tmp / cache,
        out_dir=tmp / "out",
        describe_audio=fake_describe,
        **kw,
    )


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return frame.sort_values(keys).reset_index(drop=True)


def test_stream_equals_run_judges(story: Story, tmp_path: Path) -> None:
    panel, systems = _panel(tmp_path), _systems(story)
    whole = run_judges(
        story.transitions, systems, panel=str(panel), cache_dir=tmp_path / "c1", describe_audio=fake_describe
    )
    streamed = _stream(story, panel, systems, tmp_path, cache="c2")
    scores, judgments = read_stream(tmp_path / "out")
    key = ["system", "index", "track", "judge", "component", "criterion"]
    pd.testing.assert_frame_equal(_sorted(scores, key), _sorted(whole.scores, key))
    same = [c for c in judgments.columns if c not in ("latency_s", "cache_hit")]
    jkey = ["system", "index", "track", "judge"]
    pd.testing.assert_frame_equal(_sorted(judgments[same], jkey), _sorted(whole.judgments[same], jkey))
    # 2 systems x (ceil(3 / 2) = 2 shards); 3 tracks x judges (2 text + 1 speech + 1 unavailable image).
    assert len(streamed.shards) == 4 and streamed.shards_run == 4
    assert streamed.records == len(whole.judgments) == 2 * 3 * 4
    # gappy's first narration equals oracle's: one request, answered from the cache in a later shard.
    assert streamed.model_calls + streamed.cache_hits == whole.model_calls == 13
    assert streamed.cache_hits == 2
    assert streamed.statuses == whole.judgments["status"].value_counts().to_dict()
    assert streamed.lineage["statuses"] == whole.lineage["statuses"]
    assert streamed.max_shard_records == 2 * 4  # one shard's records at most, never the run's
    assert set(judgments["status"]) == {"ok", "missing_output", "not_applicable"}
    for part in (tmp_path / "out" / "parts").glob("*.judgments.parquet"):
        assert len(pd.read_parquet(part)) <= 2 * 4


def test_restart_redoes_only_unfinished_shards(story: Story, tmp_path: Path) -> None:
    panel, systems = _panel(tmp_path), _systems(story)
    first = _stream(story, panel, systems, tmp_path)
    before, _ = read_stream(tmp_path / "out")
    again = _stream(story, panel, systems, tmp_path)
    assert again.shards_run == 0 and again.model_calls == 0 and again.cache_hits == 0

    parts = tmp_path / "out" / "parts"
    damaged, lost = first.shards[1], first.shards[2]
    # A shard killed while writing: its part is cut short, its manifest never written, a tmp left.
    scores_part = parts / f"{damaged.key}.scores.parquet"
    scores_part.write_bytes(scores_part.read_bytes()[:40])
    (parts / f"{damaged.key}.json").unlink()
    (parts / f".{damaged.key}.judgments.parquet.999.tmp").write_bytes(b"half")
    (parts / f"{lost.key}.json").unlink()
    # A fresh answer cache: every call the restart makes is one the redone shards need.
    resumed = _stream(story, panel, systems, tmp_path, cache="fresh-cache")
    assert resumed.shards_run == 2
    expected_calls = sum(
        1
        for shard in (damaged, lost)
        for t in story.transitions[shard.start : shard.stop]
        for track in ("text", "speech")
        for _ in range(2 if track == "text" else 1)
        if not (shard.system == "gappy" and (track == "speech" or t.index == 1))
    )
    assert resumed.model_calls == expected_calls
    assert not list(parts.glob(".*.tmp"))
    after, _ = read_stream(tmp_path / "out")
    key = ["system", "index", "track", "judge", "component", "criterion"]
    pd.testing.assert_frame_equal(_sorted(after, key), _sorted(before, key))
    # With the original cache, redoing a shard requests nothing: its answers were committed.
    (parts / f"{lost.key}.json").unlink()
    cached = _stream(story, panel, systems, tmp_path)
    assert cached.shards_run == 1 and cached.model_calls == 0 and cached.cache_hits > 0


def test_changed_candidate_redoes_its_shard(story: Story, tmp_path: Path) -> None:
    panel, systems = _panel(tmp_path), _systems(story)
    first = _stream(story, panel, systems, tmp_path)
    output_path(systems["oracle"], Modality.TEXT, 2).write_text("Pip went home.", encoding="utf-8")
    second = _stream(story, panel, systems, tmp_path)
    changed = [s for s, t in zip(first.shards, second.shards, strict=True) if s.key != t.key]
    assert [(s.system, s.start) for s in changed] == [("oracle", 2)]
    assert second.shards_run == 1 and second.model_calls == 2  # two text judges, one new narration


def test_inference_errors_are_retried_on_restart(story: Story, tmp_path: Path) -> None:
    panel, systems = _panel(tmp_path, failure_rate=0.5), _systems(story)
    first = _stream(story, panel, systems, tmp_path)
    assert first.statuses.get("inference_error", 0) > 0
    second = _stream(story, panel, systems, tmp_path, redo_errors=False)
    assert second.shards_run == 0
    manifests = [json.loads((tmp_path / "out" / "parts" / f"{s.key}.json").read_text()) for s in first.shards]
    errored = [m["statuses"] for m in manifests if m["statuses"].get("inference_error")]
    third = _stream(story, panel, systems, tmp_path)
    assert third.shards_run == len(errored)
    # Each judged record of a redone shard is asked again only if it failed; ok answers are cached.
    failed = sum(m["inference_error"] for m in errored)
    assert third.model_calls + third.cache_hits == sum(m.get("ok", 0) + m["inference_error"] for m in errored)
    assert 0 < third.model_calls <= failed


# -- the runner's fast paths against their reference forms -------------------------------------------


def _verdict(track: str, rng: random.Random) -> dict[str, dict[str, object]]:
    return {
        c: {"score": rng.randint(1, 10), "rationale": f"reason {rng.random():.3f}"}
        for c in TRACKS[track].criteria
    }


def test_read_verdict_equals_the_ledger() -> None:
    rng = random.Random(5)
    texts: list[tuple[str, str]] = []
    for track in TRACKS:
        for _ in range(30):
            v = _verdict(track, rng)
            texts.append((track, json.dumps(v)))
            texts.append((track, "  " + json.dumps(v, indent=2) + "\n"))
            first = next(iter(v))
            variants = [
                {**v, first: {"rationale": v[first]["rationale"], "score": v[first]["score"]}},
                {**v, first: {"score": True, "rationale": "x"}},
                {**v, first: {"score": 7.0, "rationale": "x"}},
                {**v, first: {"score": "7", "rationale": "x"}},
                {**v, first: {"score": 11, "rationale": "x"}},
                {**v, first: {"score": 3, "rationale": "   "}},
                {**v, first: {"score": 3, "rationale": " padded "}},
                {**v, first: {"score": 3, "rationale": "with {braces} and [brackets]"}},
                {**v, first: {"score": 3, "rationale": "a <think>x</think> tag"}},
                {**v, first: {"score": 3, "rationale": "```json {} ```"}},
                {**v, first: {"score": 3, "reason": "other key"}},
                {**v, first: {"score": 3, "rationale": "x", "extra": 1}},
                {**v, "extra": {"score": 3, "rationale": "x"}},
                {k: val for k, val in v.items() if k != first},
                {**v, first: {"score": 3, "rationale": "inner " + json.dumps(_verdict(track, rng))}},
            ]
            texts += [(track, json.dumps(x, ensure_ascii=False)) for x in variants]
            texts.append((track, "Sure: " + json.dumps(v)))
            texts.append((track, json.dumps(v)[:-1]))
            texts.append((track, "\ufeff" + json.dumps(v)))
            texts.append(
                (track, json.dumps({first.upper(): v[first], **{k: x for k, x in v.items() if k != first}}))
            )
    texts.append(("text", ""))
    for track, text in texts:
        assert read_verdict(text, track) == parse_verdict(text, track), text


def test_runner_keys_equal_cache_key(story: Story, tmp_path: Path) -> None:
    from omnieval.backends.llm import ModelIdentity
    from omnieval.judges import load_panel

    panel = load_panel(str(_panel(tmp_path)))
    runner = _Runner(panel, tmp_path / "cache", None, None, page_turn_inputs)
    judge = panel.tracks["text"].judges[0]
    identity = ModelIdentity("simulated/a", "rev1", {"w.gguf": "ab" * 32})
    image = story.transitions[0].current_image
    for i, schema in enumerate([verdict_schema("text"), None, runner._schema("text", 40, True)]):
        request = ChatRequest(
            messages=(
                Message.text_only("system", f"rubric {i} é"),
                Message("user", (TextPart("see"), ImagePart(image), TextPart("and judge"))),
            ),
            decoding=judge.decoding if i != 1 else Decoding(temperature=0.3, max_tokens=9),
            json_schema=schema,
            chat_template_kwargs={"enable_thinking": False} if i == 2 else {},
        )
        for _ in range(2):  # the second time from the memoized fragments
            expected = cache_key(
                model=identity.model,
                revision=identity.revision,
                weights=identity.weights_digest,
                backend={"kind": "simulated"},
                prompt_sha256="p" * 64,
                request=request_material(request, MediaHasher()),
            )
            assert runner._key(identity, judge, "p" * 64, request) == expected


def test_group_commit_is_all_or_nothing(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.group_commit = 3
    answer = Completion(text="{}", finish_reason="stop", latency_s=0.5)
    cache.put("a" * 64, answer, {"judge": "j"})
    cache.put("b" * 64, answer, {"judge": "j"})
    assert cache.get("a" * 64) == answer  # the writer sees its staged entries
    other = ResponseCache(tmp_path)  # a restarted run sees none before the commit
    assert other.get("a" * 64) is None and "b" * 64 not in other
    assert len(list((tmp_path / "responses").rglob(".*.tmp"))) == 2
    cache.put("c" * 64, answer, {"judge": "j"})  # the third put commits the group
    assert all(other.get(k * 64) == answer for k in "abc")
    assert not list((tmp_path / "responses").rglob(".*.tmp"))
    cache.put("d" * 64, answer, {})
    cache.commit()
    assert other.get("d" * 64) == answer
    # Entries read back equal to the reference serialization.
    plain = DiskCache(tmp_path / "plain", "responses")
    plain.put_json("a" * 64, {"meta": {"judge": "j"}, "completion": json.loads(answer.to_json())})
    assert json.loads(
        (tmp_path / "plain" / "responses" / "aa" / f"{'a' * 64}.json").read_text()
    ) == json.loads((tmp_path / "responses" / "aa" / f"{'a' * 64}.json").read_text())


def test_bad_shard_size(story: Story, tmp_path: Path) -> None:
    from omnieval.errors import ConfigError

    with pytest.raises(ConfigError, match="shard_size"):
        _stream(story, _panel(tmp_path), _systems(story), tmp_path, shard_size=0)
