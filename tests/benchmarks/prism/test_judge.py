"""PRISM judging end to end with an in-process fake model: rows, statuses, order, cache, swap check."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omnieval.backends.llm._types import (
    BackendError,
    ChatBackend,
    ChatRequest,
    Completion,
    ModelIdentity,
    SequentialChatMixin,
)
from omnieval.benchmarks.prism._compose import pair_order
from omnieval.benchmarks.prism._judge import (
    JUDGMENT_COLUMNS,
    PrismPanelConfig,
    judge_prism,
    load_prism_panel,
    read_stage,
)
from omnieval.benchmarks.prism._record import candidate_video
from omnieval.benchmarks.prism._tags import GROUND_TRUTH, Cell, stage_cells
from omnieval.judges._panels import JudgeConfig
from omnieval.judges._render import Framing
from omnieval.scores import ALL_STATUSES, SCORE_COLUMNS
from omnieval_testkit import ScriptedConfig

from ._clips import clicks, make_clip, tone

# -- fixtures -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Inst:
    id: str
    index: int
    subset: str
    active_tags: tuple[str, ...]
    caption: str
    reference_video: Path


def _leaves(schema: Mapping[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    props = schema.get("properties", {})
    if "score" in props:
        return [path]
    return [leaf for key, sub in props.items() for leaf in _leaves(sub, (*path, key))]


def answer(schema: Mapping[str, Any], scores: Callable[[int, str], int]) -> str:
    """A well-formed answer for ``schema``: ``scores(slot, "dimension.type")`` per leaf."""
    out: dict[str, Any] = {}
    for path in _leaves(schema):
        slot = int(path[0].split("_")[1])
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = {"score": scores(slot, ".".join(path[1:])), "evidence": f"clip {slot} fact"}
    return json.dumps(out)


class FakeModel(SequentialChatMixin):
    """An in-process chat model: ``script(request)`` answers; counts calls."""

    def __init__(self, script: Callable[[ChatRequest], str], name: str = "fake") -> None:
        self.script = script
        self.calls = 0
        self.name = name

    def identity(self) -> ModelIdentity:
        return ModelIdentity(model=self.name, revision="1")

    def chat(self, request: ChatRequest) -> Completion:
        self.calls += 1
        return Completion(text=self.script(request), finish_reason="stop", latency_s=0.01)

    def close(self) -> None:
        return None


def _judge(judge_id: str = "fake-judge", **framing: Any) -> JudgeConfig:
    return JudgeConfig(
        id=judge_id,
        model=judge_id,
        revision="1",
        backend=ScriptedConfig(script="json:dumps"),
        framing=Framing(schema_constrained=True, **framing),
        retries=0,
    )


def _panel(repair: bool = True) -> PrismPanelConfig:
    return PrismPanelConfig(
        name="test-cascade",
        judge_kind="cascade",
        requires="a fake model",
        judges=(_judge(),),
        repair=_judge("fake-repair") if repair else None,
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two instances (no speech, so no ASR), references, and three systems' candidate roots."""
    root = tmp_path_factory.mktemp("prism-judge")
    events = [0.4, 1.0, 1.6]
    ref0 = make_clip(root / "ref" / "a.mp4", duration=2.0, events=events, audio=clicks(events, 2.0))
    ref1 = make_clip(root / "ref" / "b.mp4", duration=2.0, audio=tone(330, 2.0))
    instances = [
        Inst("on-x", 0, "on_screen", ("SOUND_A",), "A hammer knocks three times.", ref0),
        Inst("mix-x", 1, "mixed", ("MUSIC_A", "SOUND_B"), "A xylophone plays while rain falls.", ref1),
    ]
    systems: dict[str, Path] = {}
    for name in ("sysA", "ground-truth", "partial"):
        base = root / "cands" / name
        systems[name] = base
        for inst in instances:
            if name == "partial" and inst.index == 1:
                continue  # this system produced nothing for instance 1
            out = candidate_video(base, inst.index)
            out.parent.mkdir(parents=True, exist_ok=True)
            if name == "ground-truth":
                out.write_bytes(inst.reference_video.read_bytes())
            else:
                make_clip(out, duration=2.0, audio=tone(550, 2.0))
    return {"root": root, "instances": instances, "candidates": systems}


def _factory(model: FakeModel, repair: FakeModel | None = None) -> Callable[[JudgeConfig], ChatBackend]:
    return lambda judge: repair if (repair is not None and judge.id == "fake-repair") else model


def _constant(text: str) -> Callable[[ChatRequest], str]:
    return lambda _request: text


def _first_slot_high(request: ChatRequest) -> str:
    assert request.json_schema is not None
    return answer(request.json_schema, lambda slot, _cell: 8 if slot == 1 else 3)


# -- tests --------------------------------------------------------------------------------------------


def test_rows_shape_order_mapping_and_cache(world: dict[str, Any], tmp_path: Path) -> None:
    model = FakeModel(_first_slot_high)
    instances, candidates = world["instances"], world["candidates"]
    result = judge_prism(
        instances,
        candidates,
        panel=_panel(),
        cache_dir=tmp_path / "cache",
        seed=11,
        backend_factory=_factory(model),
    )
    scores = result.scores
    assert list(scores.columns) == list(SCORE_COLUMNS)
    assert set(scores.status) <= ALL_STATUSES
    # Cells: on-x SOUND_A -> 4 (av, quality, expr, pf); mix-x MUSIC_A+SOUND_B -> av music + 3 x 2 types = 7.
    per_system = 4 + 7
    assert len(scores) == 3 * per_system * 2  # 3 systems, a system row and a ground-truth row per cell
    assert set(scores.benchmark) == {"prism"} and set(scores.component) == {"judge"}
    assert set(scores.panel) == {"test-cascade"} and set(scores.condition) == {""}
    assert set(scores.judge) == {"fake-judge"}
    gt_rows = scores[scores.system == GROUND_TRUTH]
    assert set(gt_rows.paired_with) == {"sysA", "ground-truth", "partial"}
    assert set(scores[scores.system != GROUND_TRUTH].paired_with) == {GROUND_TRUTH}
    assert dict(scores.groupby("instance_id").subset.first()) == {"on-x": "on_screen", "mix-x": "mixed"}
    assert set(scores[scores.instance_id == "on-x"].track) == {
        "av_coherence",
        "audio_quality",
        "expressiveness",
        "prompt_following",
    }
    mix_av = scores[(scores.instance_id == "mix-x") & (scores.track == "av_coherence")]
    assert set(mix_av.criterion) == {"music"}  # the off-screen sound has no AV coherence cell

    # Order mapping: the fake gives clip 1 an 8 and clip 2 a 3; the candidate's row holds the score
    # of the slot the seeded order put it in, the ground truth the other.
    valued = scores[scores.status == "ok"]
    for row in valued.itertuples():
        system = row.system if row.system != GROUND_TRUTH else row.paired_with
        first = pair_order(11, system, row.instance_id).first
        is_candidate = row.system != GROUND_TRUTH
        shown_first = (first == "candidate") == is_candidate
        assert row.value == (8.0 if shown_first else 3.0)

    # Missing output: both rows of the pairing say so, without a value.
    missing = scores[
        (scores.instance_id == "mix-x") & ((scores.system == "partial") | (scores.paired_with == "partial"))
    ]
    assert len(missing) == 14 and set(missing.status) == {"missing_output"} and missing.value.isna().all()

    calls = 3 * 2 * 2 - 2  # systems x instances x stages, minus the missing pair's two stages
    assert result.model_calls == model.calls == calls
    assert result.cache_hits == 0
    judgments = result.judgments
    assert list(judgments.columns) == list(JUDGMENT_COLUMNS) and len(judgments) == 3 * 2 * 2
    ok = judgments[judgments.status == "ok"].iloc[0]
    assert json.loads(ok.order)["seed"] == 11 and ok.order_first in ("candidate", "reference")
    assert json.loads(ok.evidence) and len(ok.prompt_sha256) == 64
    assert result.lineage["judge_kind"] == "cascade"
    assert result.lineage["ledger"]["fake-judge"]["ok"] == calls
    assert result.lineage["criteria"]["count"] == 35
    assert (
        result.mlflow_tags["omnieval.prompt.test-cascade.stage_1.sha256"]
        == result.lineage["prompts"]["stage_1"]["sha256"]
    )
    assert result.mlflow_tags["omnieval.prism.test-cascade.judge_kind"] == "cascade"
    assert result.unavailable == [] and result.swap is None

    # A rerun answers everything from the cache.
    again = FakeModel(_first_slot_high)
    rerun = judge_prism(
        instances,
        candidates,
        panel=_panel(),
        cache_dir=tmp_path / "cache",
        seed=11,
        backend_factory=_factory(again),
    )
    assert again.calls == 0 and rerun.model_calls == 0 and rerun.cache_hits == calls
    assert rerun.scores.equals(scores)


def test_statuses_and_repair(world: dict[str, Any], tmp_path: Path) -> None:
    """One system's answers fail in four ways; the repair model may only fix the format."""
    instances = world["instances"]
    candidates = {"sysA": world["candidates"]["sysA"]}

    def script(request: ChatRequest) -> str:
        text = request.messages[-1].text
        assert request.json_schema is not None
        good = answer(request.json_schema, lambda slot, _c: 6 if slot == 1 else 4)
        if "Stage 1" in text and "xylophone" not in text and "music" not in text:  # on-x stage 1
            return "Clip one gets " + good.replace('"', "'")  # fixable: Python-style quotes in prose
        if "Stage 2" in text and "hammer" in text:  # on-x stage 2
            return ""  # empty: a parse error that repair never sees
        if "Stage 1" in text:  # mix-x stage 1
            raise BackendError("server said no")
        return "I liked both clips, roughly a seven."  # mix-x stage 2: unreadable, no JSON

    def repair_script(request: ChatRequest) -> str:
        original = request.messages[-1].text
        if "roughly a seven" in original:
            return json.dumps({"unrecoverable": True})
        raise AssertionError("only unreadable answers reach the repair model")

    model, fixer = FakeModel(script), FakeModel(repair_script, "fake-repair")
    result = judge_prism(
        instances,
        candidates,
        panel=_panel(),
        cache_dir=tmp_path / "c",
        backend_factory=_factory(model, fixer),
    )
    by = {(r.instance_id, r.stage): r for r in result.judgments.itertuples()}
    assert by[("on-x", 1)].status == "ok" and "python_literals" in by[("on-x", 1)].normalizations
    assert by[("on-x", 2)].status == "parse_error" and by[("on-x", 2)].error == "empty response"
    assert by[("mix-x", 1)].status == "inference_error" and "server said no" in by[("mix-x", 1)].note
    assert by[("mix-x", 2)].status == "unrecoverable"
    assert json.loads(by[("mix-x", 2)].repair_history)[0]["outcome"] == "unrecoverable"
    assert fixer.calls == 1
    ledger = result.lineage["ledger"]["fake-judge"]
    assert ledger == {"ok": 1, "repaired": 0, "parse_error": 1, "inference_error": 1, "unrecoverable": 1}
    rows = result.scores
    assert rows[rows.status != "ok"].value.isna().all() and rows[rows.status == "ok"].value.notna().all()


def test_a_format_repair_is_credited_and_an_invented_score_is_not(
    world: dict[str, Any], tmp_path: Path
) -> None:
    inst = world["instances"][0]
    cells = stage_cells(inst.active_tags, 1)
    raw = "clip 1: av coherence 7 (in sync), quality 6 (clean); clip 2: av coherence 2 (late), quality 5 (ok)"

    def script(request: ChatRequest) -> str:
        return (
            raw
            if "Stage 1" in request.messages[-1].text
            else answer(request.json_schema or {}, lambda s, c: 5)
        )

    def fixed(scores: dict[str, int]) -> str:
        out: dict[str, Any] = {}
        for slot in (1, 2):
            for cell in cells:
                value = scores[f"{slot}.{cell.dimension}"]
                out.setdefault(f"candidate_{slot}", {}).setdefault(cell.dimension, {})[cell.audio_type] = {
                    "score": value,
                    "evidence": {7: "in sync", 6: "clean", 2: "late", 5: "ok", 9: "superb"}[value],
                }
        return json.dumps(out)

    honest = fixed({"1.av_coherence": 7, "1.audio_quality": 6, "2.av_coherence": 2, "2.audio_quality": 5})
    invented = fixed({"1.av_coherence": 9, "1.audio_quality": 6, "2.av_coherence": 2, "2.audio_quality": 5})
    for repair_answer, expected in ((honest, "repaired"), (invented, "unrecoverable")):
        result = judge_prism(
            [inst],
            {"sysA": world["candidates"]["sysA"]},
            panel=_panel(),
            cache_dir=tmp_path / expected,
            backend_factory=_factory(FakeModel(script), FakeModel(_constant(repair_answer), "fake-repair")),
        )
        stage1 = result.judgments[result.judgments.stage == 1].iloc[0]
        assert stage1.status == expected
        rows = result.scores[result.scores.track.isin(["av_coherence", "audio_quality"])]
        assert set(rows.status) == {expected}
        if expected == "repaired":
            assert sorted(rows.value.tolist()) == [2.0, 5.0, 6.0, 7.0]
        else:
            assert "absent from the original" in json.loads(stage1.repair_history)[0]["detail"]


def test_swap_check_reports_flips(world: dict[str, Any], tmp_path: Path) -> None:
    instances = world["instances"]
    candidates = {"sysA": world["candidates"]["sysA"]}
    biased = judge_prism(
        instances,
        candidates,
        panel=_panel(),
        cache_dir=tmp_path / "a",
        swap_check=True,
        backend_factory=_factory(FakeModel(_first_slot_high)),
    )
    assert biased.swap is not None
    for stage, cells in (("stage_1", 2 + 3), ("stage_2", 2 + 4)):
        info = biased.swap[stage]
        assert info["cells"] == cells
        # Always preferring whatever is shown first flips every preference when the order flips.
        assert info["flip_rate"] == 1.0 and info["strict_flip_rate"] == 1.0 and info["first_slot_wins"] == 1.0
    # Swap-check calls are in the judgments, not in the scores.
    assert biased.judgments.swapped.sum() == len(biased.judgments) / 2
    assert len(biased.scores) == (4 + 7) * 2

    fair = judge_prism(
        instances,
        candidates,
        panel=_panel(),
        cache_dir=tmp_path / "b",
        swap_check=True,
        backend_factory=_factory(FakeModel(lambda r: answer(r.json_schema or {}, lambda s, c: 6))),
    )
    assert fair.swap is not None and fair.swap["stage_1"]["flip_rate"] == 0.0
    assert fair.swap["stage_2"]["first_slot_wins"] == 0.0


def test_omni_panel_is_unavailable_here_and_gives_no_scores(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OMNIEVAL_PRISM_OMNI_URL", raising=False)
    result = judge_prism(
        world["instances"], {"sysA": world["candidates"]["sysA"]}, panel="omni", cache_dir=tmp_path
    )
    assert result.model_calls == 0
    assert set(result.scores.status) == {"not_applicable"} and result.scores.value.isna().all()
    assert len(result.unavailable) == 1
    assert (
        "unavailable: needs an omni (video+audio) model served over an OpenAI-compatible API"
        in result.unavailable[0]
    )
    assert "OMNIEVAL_PRISM_OMNI_URL" in result.unavailable[0]
    assert result.lineage["judge_kind"] == "native"
    assert not (tmp_path / "prism_media").exists()  # nothing composed for a judge that cannot run


def test_shipped_panels_load() -> None:
    cascade, omni = load_prism_panel("cpu-cascade"), load_prism_panel("omni")
    assert cascade.judge_kind == "cascade" and "cascade" in cascade.description.lower()
    assert cascade.judges[0].backend.kind == "llamacpp" and cascade.judges[0].decoding.temperature == 0.0
    assert omni.judge_kind == "native" and omni.judges[0].backend.kind == "openai"
    assert omni.requires == "needs an omni (video+audio) model served over an OpenAI-compatible API"


def test_read_stage_is_strict_on_content() -> None:
    cells = [Cell("audio_quality", "sound")]

    def two(s1: object, s2: object, e2: str = "b") -> str:
        return json.dumps(
            {
                "candidate_1": {"audio_quality": {"sound": {"score": s1, "evidence": "a"}}},
                "candidate_2": {"audio_quality": {"sound": {"score": s2, "evidence": e2}}},
            }
        )

    assert read_stage(two(0, 10), cells).scores == {
        "candidate_1.audio_quality.sound": 0,
        "candidate_2.audio_quality.sound": 10,
    }
    assert read_stage(two(7, 11), cells).status == "parse_error"
    assert "outside 0-10" in read_stage(two(7, 11), cells).error
    assert read_stage(two(7, 6.5), cells).status == "parse_error"
    assert "no evidence" in read_stage(two(7, 6, e2=" "), cells).error
    dotted = json.dumps(
        {
            "candidate_1.audio_quality.sound.score": "7/10",
            "candidate_1.audio_quality.sound.evidence": "x",
            "candidate_2.audio_quality.sound.score": 3,
            "candidate_2.audio_quality.sound.evidence": "y",
        }
    )
    assert read_stage(dotted, cells).ok
    conflicting = two(7, 6) + "\nor rather\n" + two(5, 6)
    assert "different verdicts" in read_stage(conflicting, cells).error


# -- one score reader: PRISM's stage scores through the judges' parse_score --------------------------


def _own_score_0_10(value: object) -> int | str:
    """PRISM's own score reader, verbatim as it was before the judges' one replaced it (the reference)."""
    import math
    import re

    if isinstance(value, bool):
        return f"score {value!r} is not a number"
    number: int
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return f"score {value!r} is not an integer"
        number = int(value)
    elif isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]+)(?:\.0+)?(?:\s*/\s*10)?\s*", value)
        if match is None:
            return f"score {value!r} is not an integer 0-10"
        number = int(match.group(1))
    else:
        return f"score {value!r} is not a number"
    if not 0 <= number <= 10:
        return f"score {number} is outside 0-10"
    return number


def test_stage_scores_read_as_prisms_own_reader_did() -> None:
    from omnieval.benchmarks.prism._judge import _stage_score

    values: list[object] = [
        0,
        10,
        11,
        -1,
        7,
        7.0,
        7.5,
        -0.0,
        1e300,
        float("inf"),
        float("-inf"),
        float("nan"),
    ]
    values += [True, False, None, [7], {"score": 7}, b"7", "", " ", "x", "7/10", "7 / 10", "7/ 10", "7/100"]
    values += ["7.00", "7.", "07", "0010", "+7", "-7", "7.5", "٧", "７", "7/10/10", "10/10", "11/10", "7 7"]
    # Every character Python counts as whitespace, around the score and around the slash, plus a
    # zero-width space, which it does not count.
    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()] + ["\u200b"]
    for space in spaces:
        values += [f"{space}7{space}", f"7{space}/{space}10", f"{space}", f"7{space}.0"]
    for value in values:
        assert _stage_score(value) == _own_score_0_10(value), repr(value)


def _sha(value: object) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def stage_answers(cells: tuple[Cell, ...]) -> list[str | None]:
    """Raw stage answers for ``cells``: nested, fenced and dotted, over scores good and bad."""
    out: list[str | None] = [None, "", "nothing", "<think>a</think>{}"]

    def nested(score: object, evidence: str = "clip fact") -> dict[str, Any]:
        body: dict[str, Any] = {}
        for slot in (1, 2):
            for c in cells:
                leaf = {"score": score, "evidence": evidence}
                body.setdefault(f"candidate_{slot}", {}).setdefault(c.dimension, {})[c.audio_type] = leaf
        return body

    for score in (0, 10, 11, -1, "7/10", " 7 ", "\u00a07\u2003", "\x1c7", 7.0, 7.5, True, "x", None, 1e300):
        out += [json.dumps(nested(score)), "```json\n" + json.dumps(nested(score)) + "\n```"]
        dotted = {f"candidate_{s}.{c.dimension}.{c.audio_type}.score": score for s in (1, 2) for c in cells}
        dotted |= {f"candidate_{s}.{c.dimension}.{c.audio_type}.evidence": "e" for s in (1, 2) for c in cells}
        out.append(json.dumps(dotted))
    out += [json.dumps(nested(5, "")), json.dumps(nested(5))[:-4]]
    return out


STAGE_CELLS = (
    tuple(stage_cells(("SOUND_A",), 1)),
    tuple(stage_cells(("SPEECH_A", "MUSIC_B", "SOUND_B"), 1)),
    tuple(stage_cells(("SPEECH_B",), 2)),
)


def stage_reading_digests() -> list[str]:
    """Per cell set: every field of :func:`read_stage`'s reading of :func:`stage_answers`."""
    out = []
    for cells in STAGE_CELLS:
        readings = []
        for raw in stage_answers(cells):
            r = read_stage(raw, cells)
            readings.append([r.status, r.scores, r.evidence, r.error, r.normalizations])
        out.append(_sha(readings))
    return out


# Recorded with PRISM's own score reader, before the judges' parse_score replaced it.
STAGE_READING_SHA256 = [
    "b61fbefe5e93cda09140fc4b0ef470b0d9f5f923a687342ebc5ebf0c764d2bb7",
    "926aa0da7862c145d0fdef1ba5b5b91c32122a88ef1a8577b14dec4537db1956",
    "26730d66dddf63ef33b2ba002f77136fe5350775f156862174dcff8a0bb4cec7",
]


def test_stage_readings_are_unchanged() -> None:
    assert stage_reading_digests() == STAGE_READING_SHA256
