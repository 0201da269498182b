"""Judge calls of the packaged CPU judge: seconds per verdict before and after batched decoding.

`python -m bench judge` builds real verdict requests the way the runner does (the `cpu` panel's
text judge and speech cascade on the bundled sample, three systems), then answers them twice in
this process, back to back, on one loaded model: BEFORE = the one-request-at-a-time skeleton
decoder (``LlamaCppConfig.parallel_sequences: 1``, the default) in the runner's order, AFTER = the
lockstep path (requests in :func:`prefix_order`, ``BENCH_JUDGE_PARALLEL`` sequences decoded per
llama.cpp batch). It prints prompt-processing and generation seconds per verdict (a lockstep step
mixes both; its time is split by their token counts), the ratio, and how many answers are
byte-identical with value probabilities within :data:`PROB_TOLERANCE`.

Environment: ``BENCH_JUDGE_ROWS`` (transitions, default 2 -> 2 x 3 systems x 2 tracks = 12
verdicts), ``BENCH_JUDGE_PARALLEL`` (default 8), ``BENCH_JUDGE_REORDERED=1`` (also answer one at a
time in another order: every answer should be identical, since each prompt is evaluated in the same
fixed chunks whatever came before it; the old prefix reuse changed 4 of 12),
``BENCH_JUDGE_THREADS`` (llama.cpp threads; default: the panel's setting, which picks the idle cores),
``BENCH_JUDGE_THREAD_SCALING=1`` (also answer one at a time on 1 thread and on every usable core, each
with a fresh model: the seconds per verdict a thread count costs, and whether the answers change).

Last, the floor: prompt tokens per verdict that no order or prefix cache can avoid (the token trie of
all prompts, plus the skeleton text after each value), at the measured prompt speed, and the ceiling
on the ratio that follows for answers that must stay identical.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "storybench-sample"
SYSTEMS: tuple[tuple[str, dict[str, int]], ...] = (
    ("oracle", {}),
    ("copy-current", {}),
    ("shuffled", {"seed": 0}),
)
PROB_TOLERANCE = 1e-4
"""Largest difference between two value probabilities that still counts as the same."""


@dataclass(frozen=True)
class Sample:
    """Verdict requests as the runner sends them, in the runner's order (track, row, judge, system)."""

    requests: list[Any]
    """:class:`~omnieval.backends.llm.ChatRequest`, one per verdict."""
    labels: list[str]
    """``track/row/system`` of each request."""
    judge: Any
    """The panel's :class:`~omnieval.judges.JudgeConfig` (its backend config and batch size)."""


def _stand_in_describer(candidates: Mapping[str, Path]) -> Any:
    """Speech-cascade analysis without ASR: the candidate's own narration as the transcript.

    The bench measures decoding, not listening; the prompt has the real cascade's shape and length.
    """

    def describe(audio: Path) -> dict[str, object]:
        system_root, index = audio.parents[2], int(audio.parent.name)
        text_file = system_root / "text" / str(index) / "generated.txt"
        words = text_file.read_text(encoding="utf-8").split() if text_file.is_file() else []
        spoken = " ".join(words[:14])
        return {
            "status": "ok",
            "transcript": spoken,
            "duration_s": 0.4 * max(len(words[:14]), 1),
            "f0_median_hz": 150.0 + 7.0 * (index % 9),
            "pitch": ("low", "normal", "high")[index % 3],
            "words_per_second": 2.5,
            "speed": "normal",
            "gender": None,
            "emotion": None,
        }

    return describe


def sample_requests(rows: int = 4, *, workdir: Path | None = None) -> Sample:
    """The nightly's verdict requests for the first ``rows`` transitions (both tracks, three systems)."""
    import omnieval.benchmarks  # noqa: F401  (registers the storybench rubrics and systems)
    from omnieval.benchmarks.storybench._record import load_storybench
    from omnieval.benchmarks.storybench._tracks import page_turn_inputs
    from omnieval.judges import load_panel
    from omnieval.judges._run import _Runner
    from omnieval.systems import SYSTEMS as REGISTRY

    transitions = load_storybench(SAMPLE).transitions
    root = Path(workdir or tempfile.mkdtemp(prefix="bench-judge-"))
    candidates: dict[str, Path] = {}
    for name, kwargs in SYSTEMS:
        candidates[name] = root / name
        REGISTRY.get(name)(**kwargs).generate(transitions, candidates[name])
    panel = load_panel("cpu")
    runner = _Runner(panel, root / "cache", _stand_in_describer(candidates), None, page_turn_inputs)
    records = runner.build_records(list(transitions[:rows]), candidates)
    runner.prepare(records, candidates)
    ready = sorted((r for r in records if r.request is not None), key=lambda r: r.order)
    if not ready:
        raise RuntimeError("no verdict request could be built (is the packaged judge model installed?)")
    judges = {r.judge.id: r.judge for r in ready if r.judge is not None}
    if len(judges) != 1:
        raise RuntimeError(f"expected one cpu judge, found {sorted(judges)}")
    return Sample(
        requests=[r.request for r in ready],
        labels=[f"{r.track}/{r.item.index}/{r.system}" for r in ready],
        judge=next(iter(judges.values())),
    )


@dataclass(frozen=True)
class Pass:
    """One way of answering the sample: its answers and where the time went."""

    name: str
    completions: list[Any]
    wall_s: float
    stats: Any
    """:class:`~omnieval.backends.llm._llamacpp.DecodeStats` of the pass."""

    def per_verdict(self) -> dict[str, float]:
        n = len(self.completions)
        s = self.stats
        return {
            "total_s": self.wall_s / n,
            "pp_s": s.prompt_s / n,
            "gen_s": s.generated_s / n,
            "pp_tokens": s.prompt_tokens / n,
            "gen_tokens": s.generated_tokens / n,
            "reused_share": s.reused_tokens / max(s.reused_tokens + s.prompt_tokens, 1),
        }


def answer(backend: Any, requests: Sequence[Any], batch_size: int, name: str) -> Pass:
    """Send ``requests`` through ``backend.chat_many`` in runner-sized batches; time it."""
    backend.stats.reset()
    started = time.perf_counter()
    completions: list[Any] = []
    for start in range(0, len(requests), batch_size):
        completions.extend(backend.chat_many(list(requests[start : start + batch_size])))
    wall = time.perf_counter() - started
    failed = [c for c in completions if isinstance(c, Exception)]
    if failed:
        raise RuntimeError(f"{name}: {len(failed)} requests failed, first: {failed[0]}")
    return Pass(name, completions, wall, _copy_stats(backend.stats))


def _copy_stats(stats: Any) -> Any:
    import dataclasses

    return dataclasses.replace(stats)


def same_answer(a: Any, b: Any, tolerance: float = PROB_TOLERANCE) -> bool:
    """Byte-identical text and every value probability within ``tolerance``."""
    if a.text != b.text or set(a.value_probs) != set(b.value_probs):
        return False
    for path, dist in a.value_probs.items():
        other = b.value_probs[path]
        if set(dist) != set(other) or any(abs(dist[k] - other[k]) > tolerance for k in dist):
            return False
    return True


def max_prob_difference(a: Any, b: Any) -> float:
    worst = 0.0
    for path, dist in a.value_probs.items():
        for k, p in dist.items():
            q = b.value_probs.get(path, {}).get(k)
            if q is not None:
                worst = max(worst, abs(p - q))
    return worst


@dataclass(frozen=True)
class PromptFloor:
    """Prompt tokens per verdict that any prefix cache must evaluate, and what the runner's order costs."""

    tokens: float
    """Mean prompt length in tokens."""
    runner_order: float
    """Mean tokens not shared with the previous prompt, in the runner's order (one KV sequence)."""
    trie: float
    """Mean tokens of the prompts' token trie: every common prefix evaluated once, in any order."""


def prompt_floor(token_lists: Sequence[Sequence[int]]) -> PromptFloor:
    """Prefix sharing's limits over ``token_lists`` (the prompts in the order they are sent).

    The trie size is ``sum(len(t_i) - lcp(t_i, t_{i-1}))`` over the lists in sorted order.

    Example:
        >>> prompt_floor([[1, 2, 3], [1, 2, 4], [1, 5]])
        PromptFloor(tokens=2.6666666666666665, runner_order=1.6666666666666667, trie=1.6666666666666667)
    """

    def shared(a: Sequence[int], b: Sequence[int]) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    def unshared(lists: Sequence[Sequence[int]]) -> int:
        return sum(len(t) - (shared(t, lists[i - 1]) if i else 0) for i, t in enumerate(lists))

    n = max(len(token_lists), 1)
    ordered = sorted(list(t) for t in token_lists)
    return PromptFloor(
        tokens=sum(len(t) for t in token_lists) / n,
        runner_order=unshared(token_lists) / n,
        trie=unshared(ordered) / n,
    )


def run() -> dict[str, object]:
    from omnieval.backends.llm._llamacpp import LlamaCppChatBackend, prefix_order

    rows = int(os.environ.get("BENCH_JUDGE_ROWS", "2"))
    parallel = int(os.environ.get("BENCH_JUDGE_PARALLEL", "8"))
    sample = sample_requests(rows)
    judge = sample.judge
    update: dict[str, int] = {"parallel_sequences": parallel}
    if os.environ.get("BENCH_JUDGE_THREADS"):
        update["n_threads"] = int(os.environ["BENCH_JUDGE_THREADS"])
    config = judge.backend.model_copy(update=update)
    print(f"  {len(sample.requests)} verdict requests ({rows} rows x 3 systems x text + speech cascade)")
    backend = LlamaCppChatBackend(config, model=judge.model, revision=judge.revision)
    try:
        print(f"  model loaded in {backend.load_s:.1f} s, {backend.threads} threads")
        # BEFORE: parallel 1 is the one-at-a-time path (the Llama's own context and KV cache), in
        # the runner's order; the same loaded model, so both passes share weights and threads.
        backend.parallel = 1
        before = answer(backend, sample.requests, 1, "before")
        order = prefix_order([backend.prompt_text(r) for r in sample.requests])
        reordered: Pass | None = None
        if os.environ.get("BENCH_JUDGE_REORDERED") == "1":
            # The noise floor: the same one-at-a-time path, only in another order.
            run_re = answer(backend, [sample.requests[i] for i in reversed(order)], 1, "reordered")
            back = list(reversed(order))
            re_completions: list[Any] = [None] * len(order)
            for slot, i in enumerate(back):
                re_completions[i] = run_re.completions[slot]
            reordered = Pass("reordered", re_completions, run_re.wall_s, run_re.stats)
        floor = prompt_floor(
            [
                backend._llm.tokenize(backend.prompt_text(r).encode("utf-8"), add_bos=True, special=True)
                for r in sample.requests
            ]
        )
        backend.parallel = parallel
        run_after = answer(backend, [sample.requests[i] for i in order], parallel, "after")
        completions: list[Any] = [None] * len(order)
        for slot, i in enumerate(order):
            completions[i] = run_after.completions[slot]
        after = Pass("after", completions, run_after.wall_s, run_after.stats)
    finally:
        backend.close()
    identical = sum(same_answer(a, b) for a, b in zip(before.completions, after.completions, strict=True))
    same_text = sum(a.text == b.text for a, b in zip(before.completions, after.completions, strict=True))
    worst = max(max_prob_difference(a, b) for a, b in zip(before.completions, after.completions, strict=True))
    figures: dict[str, object] = {"verdicts": len(sample.requests), "parallel": parallel}
    for p in (before, after):
        f = p.per_verdict()
        figures[p.name] = f
        print(
            f"  {p.name:6s}: {f['total_s']:.2f} s/verdict (pp {f['pp_s']:.2f} s for {f['pp_tokens']:.0f} tok,"
            f" gen {f['gen_s']:.2f} s for {f['gen_tokens']:.0f} tok; {100 * f['reused_share']:.0f} % of"
            " prompt tokens reused from the KV cache)"
        )
    if reordered is not None:
        moved = sum(same_answer(a, b) for a, b in zip(before.completions, reordered.completions, strict=True))
        figures["reordered_identical"] = moved
        print(
            f"  one at a time in reverse prefix order: {moved}/{len(sample.requests)} answers identical to before"
        )
    # The floor: prompt tokens the verdicts' own content forces, at the measured prompt speed, plus
    # the skeleton text and the generated tokens (each one forward pass, at batch 1) as measured.
    b = before.per_verdict()
    first_prime = floor.runner_order
    skeleton_pp = max(b["pp_tokens"] - first_prime, 0.0)
    pp_rate = b["pp_tokens"] / b["pp_s"] if b["pp_s"] > 0 else float("inf")
    floor_pp_s = (floor.trie + skeleton_pp) / pp_rate
    floor_s = floor_pp_s + b["gen_s"]
    figures["prompt_floor"] = {
        "prompt_tokens": floor.tokens,
        "unshared_runner_order": floor.runner_order,
        "unshared_trie": floor.trie,
        "floor_s_per_verdict": floor_s,
        "floor_without_generation_s": floor_pp_s,
    }
    print(
        f"  prompts: {floor.tokens:.0f} tokens per verdict, {floor.runner_order:.0f} not shared with the"
        f" previous prompt in the runner's order, {floor.trie:.0f} in the best order (token trie); with"
        f" the skeleton text ({skeleton_pp:.0f} tok) at {pp_rate:.0f} tok/s that is {floor_pp_s:.2f} s of"
        f" prompt work per verdict no ordering or caching removes; the same output needs"
        f" >= {floor_s:.2f} s/verdict at batch-1 generation, a ceiling of {b['total_s'] / floor_s:.2f}x"
        f" (and {b['total_s'] / floor_pp_s:.2f}x if generation cost nothing)"
    )
    if os.environ.get("BENCH_JUDGE_THREAD_SCALING") == "1":
        figures["thread_scaling"] = thread_scaling(sample)
    ratio = before.wall_s / after.wall_s
    figures.update(ratio=ratio, identical=identical, same_text=same_text, max_prob_difference=worst)
    print(f"  ratio before/after: {ratio:.2f}x per verdict")
    print(
        f"  identical answers: {identical}/{len(sample.requests)} (text: {same_text}; largest value"
        f" probability difference {worst:.1e}, tolerance {PROB_TOLERANCE:g})"
    )
    return figures


def thread_scaling(sample: Sample) -> dict[str, object]:
    """One at a time, in the runner's order, on 1 thread and on every usable core (fresh model each).

    llama.cpp computes each output of a matrix product on one thread, so the thread count should not
    change an answer; this checks it, and prints what one thread (what the flow used to pick on an
    idle machine right after its own metrics stage) costs per verdict.
    """
    from omnieval.backends.llm._cores import usable_cores
    from omnieval.backends.llm._llamacpp import LlamaCppChatBackend

    passes: dict[int, Pass] = {}
    for threads in sorted({1, min(usable_cores(), 4)}, reverse=True):
        config = sample.judge.backend.model_copy(update={"n_threads": threads, "parallel_sequences": 1})
        backend = LlamaCppChatBackend(config, model=sample.judge.model, revision=sample.judge.revision)
        try:
            passes[threads] = answer(backend, sample.requests, 1, f"{threads} threads")
        finally:
            backend.close()
        f = passes[threads].per_verdict()
        print(
            f"  {threads} thread(s): {f['total_s']:.2f} s/verdict (pp {f['pp_s']:.2f} s, gen {f['gen_s']:.2f} s)"
        )
    most, one = max(passes), passes[1]
    identical = sum(same_answer(a, b) for a, b in zip(one.completions, passes[most].completions, strict=True))
    ratio = one.wall_s / passes[most].wall_s
    print(
        f"  {most} threads vs 1: {ratio:.2f}x per verdict, {identical}/{len(sample.requests)} answers identical"
    )
    return {
        "threads": most,
        "one_thread_s": one.wall_s / len(one.completions),
        "all_threads_s": passes[most].wall_s / len(one.completions),
        "ratio": ratio,
        "identical": identical,
    }
