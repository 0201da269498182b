"""Reading a judge's raw answer into four criterion scores: the local half of the validity ledger.

The reading is deliberately forgiving about *format* and strict about *content*:

- format slips are normalized: reasoning blocks (``<think>...</think>``), Markdown code fences, prose
  around the JSON, smart quotes, trailing commas, Python literals and single quotes, unescaped quotes
  inside strings, raw newlines inside strings, an object cut off after a complete value, criterion
  keys in another case or with spaces/dashes, and scores written as ``8``, ``8.0``, ``"8"``,
  ``"8.0"`` or ``"8/10"``;
- content problems are never patched: a missing criterion, a score outside the benchmark's range
  (1-10 here, 0-10 for a PRISM stage answer) or not integral, a missing or empty rationale, or two
  different verdicts in one answer make the record a parse error (values are never clamped or
  guessed). Such non-empty answers are what the repair stage sees.

Every benchmark's judges read answers here: :func:`read_answer` (format fixes, one complete
reading) with the benchmark's answer shape, and :func:`parse_score` for each score.

Only the judge's own answer is read here; nothing from the candidate under evaluation reaches this
module, so a candidate that tries to instruct the judge cannot change how the answer is read.

Example:
    >>> raw = '''Sure! ```json
    ... {"Alignment With Metadata": {"score": "8/10", "rationale": "fits"},
    ...  "natural_flow_from_current_narration": {"score": 7, "rationale": "smooth",},
    ...  "satisfaction_of_generation_conditions": {"score": 9.0, "rationale": "all met"},
    ...  "semantic_consistency_with_ground_truth": {"score": "6", "rationale": "close"}}
    ... ```'''
    >>> result = parse_verdict(raw, "text")
    >>> result.status, list(result.scores.values())
    ('ok', [8, 7, 9, 6])
    >>> parse_verdict('{"alignment_with_metadata": {"score": 11, "rationale": "x"}}', "text").status
    'parse_error'
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from omnieval.judges._tracks import SCORE_MAX, SCORE_MIN, track

OK = "ok"
PARSE_ERROR = "parse_error"

# Longer inputs are not worth the quadratic candidate search; real verdicts are a few kB.
_MAX_CHARS = 200_000
_MAX_CANDIDATES = 400
_RATIONALE_KEYS = frozenset({"rationale", "reason", "reasoning", "explanation", "justification"})
_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_UNCLOSED_THINK = re.compile(r"^\s*<(think|thinking|reasoning)>", re.I)
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)```", re.S)
_SCORE_TEXT = re.compile(r"([0-9]+)(?:\.0+)?(?:\s*/\s*10)?")
_SMART = str.maketrans({"“": '"', "”": '"', "„": '"', "‟": '"', "″": '"', "‘": "'", "’": "'", "‚": "'"})


@dataclass(frozen=True)
class ParseResult:
    """How one raw answer was read.

    Attributes:
        status: ``ok`` (all four criteria valid) or ``parse_error``.
        scores: criterion -> integer 1-10; all four when ok, empty otherwise.
        rationales: criterion -> non-empty text; all four when ok, empty otherwise.
        error: why the answer is not a valid verdict ('' when ok).
        normalizations: format fixes that were needed, in order (e.g. ``code_fence``, ``trailing_commas``).
        partial_scores: valid criteria found in the best failing candidate (diagnostics only, never scored).
    """

    status: str
    scores: dict[str, int] = field(default_factory=dict)
    rationales: dict[str, str] = field(default_factory=dict)
    error: str = ""
    normalizations: tuple[str, ...] = ()
    partial_scores: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == OK

    def as_dict(self) -> dict[str, Any]:
        """The public reading: ``{"status", "scores", "rationales"}``, plus ``error`` when not ok."""
        out: dict[str, Any] = {
            "status": self.status,
            "scores": dict(self.scores),
            "rationales": dict(self.rationales),
        }
        if not self.ok:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class _Candidate:
    text: str
    steps: tuple[str, ...]


@dataclass(frozen=True)
class _Extraction:
    scores: dict[str, int]
    rationales: dict[str, str]
    problems: tuple[str, ...]


def normalize_key(key: str) -> str:
    """Case- and punctuation-insensitive form of a key: ``"Natural Flow-From"`` -> ``"naturalflowfrom"``."""
    return re.sub(r"[^a-z0-9]", "", key.lower())


def parse_score(value: object, *, low: int = SCORE_MIN, high: int = SCORE_MAX) -> int | str:
    """Read one score; return the integer, or a message saying why it is not a valid ``low``-``high`` score.

    The one score reader of every benchmark's judges: ``8``, ``8.0``, ``"8"``, ``"8.0"`` and
    ``"8/10"`` (whitespace around) are 8; a fraction, a boolean or anything else is a problem, and
    a value outside the range is never clamped. The range is the benchmark's: a storybench verdict
    scores 1-10 (the default), a PRISM stage answer 0-10.

    Example:
        >>> parse_score("8/10"), parse_score(7.0), parse_score(7.5), parse_score(0)
        (8, 7, 'score 7.5 is not an integer', 'score 0 is outside 1-10')
        >>> parse_score(" 0 ", low=0), parse_score(11, low=0), parse_score("x", low=0)
        (0, 'score 11 is outside 0-10', "score 'x' is not an integer 0-10")
    """
    number: int | None = None
    if isinstance(value, bool):
        return f"score {value!r} is not a number"
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not value.is_integer():
            return f"score {value!r} is not an integer"
        number = int(value)
    elif isinstance(value, str):
        match = _SCORE_TEXT.fullmatch(value.strip())
        if match is None:
            return f"score {value!r} is not an integer {low}-{high}"
        number = int(match.group(1))
    else:
        return f"score {value!r} is not a number"
    if not low <= number <= high:
        return f"score {number} is outside {low}-{high}"
    return number


Extract = Callable[[Any], tuple[dict[str, int], dict[str, str], Sequence[str]]]
"""One loaded JSON value -> (scores, texts, problems): what a benchmark's answer shape holds."""


@dataclass(frozen=True)
class AnswerReading:
    """What :func:`read_answer` made of one raw answer, in the shape-free form both readers share.

    Attributes:
        status: ``ok`` (exactly one complete reading) or ``parse_error``.
        scores: field -> integer score; complete when ok, empty otherwise.
        texts: field -> non-empty rationale or evidence text; likewise.
        error: why the answer is not valid ('' when ok).
        normalizations: format fixes that were needed, in order.
        partial_scores: valid scores of the best failing candidate (diagnostics only, never scored).
    """

    status: str
    scores: dict[str, int] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    error: str = ""
    normalizations: tuple[str, ...] = ()
    partial_scores: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == OK


def read_answer(raw: str | None, extract: Extract, *, max_problems: int | None = None) -> AnswerReading:
    """Read a judge's raw answer with ``extract``: format slips normalized, content never patched.

    Every JSON candidate of the text (:func:`_candidates`, each loaded with the format fixes of
    :func:`_load`) goes through ``extract``; the answer is ``ok`` when exactly one distinct complete
    reading exists. Otherwise the error lists the problems of the candidate with the most valid
    scores (at most ``max_problems`` of them). The answer's shape (flat criteria, nested per clip
    and cell, ...) is entirely the ``extract`` function's, so every benchmark shares this reader.
    """
    if raw is None or not raw.strip():
        return AnswerReading(PARSE_ERROR, error="empty response")
    text, pre_steps = _strip_reasoning(raw[:_MAX_CHARS])
    if not text.strip():
        return AnswerReading(
            PARSE_ERROR, error="no answer after the reasoning block", normalizations=pre_steps
        )

    complete: list[tuple[dict[str, int], dict[str, str], tuple[str, ...]]] = []
    best: tuple[dict[str, int], Sequence[str]] | None = None
    for candidate in _candidates(text):
        loaded = _load(candidate.text)
        if loaded is None:
            continue
        obj, load_steps = loaded
        scores, texts, problems = extract(obj)
        steps = pre_steps + candidate.steps + load_steps
        if not problems:
            if all(scores != seen_scores or texts != seen_texts for seen_scores, seen_texts, _ in complete):
                complete.append((scores, texts, steps))
        elif best is None or len(scores) > len(best[0]):
            best = (scores, problems)

    if len(complete) == 1:
        scores, texts, steps = complete[0]
        return AnswerReading(OK, scores, texts, normalizations=_dedupe(steps))
    if len(complete) > 1:
        return AnswerReading(PARSE_ERROR, error=f"{len(complete)} different verdicts in one answer")
    if best is None:
        return AnswerReading(PARSE_ERROR, error="no JSON object found", normalizations=pre_steps)
    partial, problems = best
    shown = list(problems) if max_problems is None else list(problems)[:max_problems]
    return AnswerReading(
        PARSE_ERROR, error="; ".join(shown), normalizations=pre_steps, partial_scores=partial
    )


def parse_verdict(raw: str | None, track_name: str, *, benchmark: str | None = None) -> ParseResult:
    """Read a judge's raw answer for ``track_name``: ``benchmark``'s track when given, else the
    registered track of that name (:func:`~omnieval.judges._tracks.track`)."""
    criteria = track(track_name, benchmark).criteria

    def extract(obj: Any) -> tuple[dict[str, int], dict[str, str], tuple[str, ...]]:
        found = _extract(obj, criteria)
        return found.scores, found.rationales, found.problems

    reading = read_answer(raw, extract)
    return ParseResult(
        reading.status,
        reading.scores,
        reading.texts,
        error=reading.error,
        normalizations=reading.normalizations,
        partial_scores=reading.partial_scores,
    )


def _dedupe(steps: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(steps))


def _strip_reasoning(text: str) -> tuple[str, tuple[str, ...]]:
    """Drop reasoning blocks; an unclosed opening block means the model never reached its answer."""
    steps: tuple[str, ...] = ()
    stripped = _THINK_BLOCK.sub("", text)
    if stripped != text:
        steps = ("reasoning_block",)
    if _UNCLOSED_THINK.match(stripped):
        return "", (*steps, "unclosed_reasoning_block")
    return stripped.lstrip("\ufeff"), steps


def _candidates(text: str) -> Iterator[_Candidate]:
    """The whole text, each fenced block, then every balanced ``{...}`` (and a truncated tail)."""
    yield _Candidate(text.strip(), ())
    count = 1
    for match in _FENCE.finditer(text):
        yield _Candidate(match.group(1).strip(), ("code_fence",))
        count += 1
    for start, end, closed in _braced_spans(text):
        if count >= _MAX_CANDIDATES:
            return
        count += 1
        steps: tuple[str, ...] = ("surrounding_prose",) if (start, end) != (0, len(text)) else ()
        yield _Candidate(text[start:end], steps if closed else (*steps, "truncated_object"))


def _outside_strings(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(position, char) of every character outside JSON string literals, quotes excluded.

    When the text ends inside a string literal, a final ``(len(text), '"')`` says so.
    """
    in_string = False
    escaped = False
    for pos in range(start, len(text)):
        char = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        else:
            yield pos, char
    if in_string:
        yield len(text), '"'


def _braced_spans(text: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, closed) for every ``{`` that opens a balanced object, string-aware.

    An object still open at the end of the text is yielded once (closed=False) for the outermost
    opening brace, so a truncated answer can be closed by :func:`_close_truncated`.
    """
    truncated_reported = False
    for start in (i for i, c in enumerate(text) if c == "{"):
        depth = 0
        end = -1
        for pos, char in _outside_strings(text, start):
            if char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
                if depth == 0:
                    end = pos + 1
                    break
        if end > 0:
            yield start, end, True
        elif not truncated_reported:
            truncated_reported = True
            yield start, len(text), False


def _load(text: str) -> tuple[Any, tuple[str, ...]] | None:
    """Parse a candidate as JSON, applying format fixes one after another until one works."""
    if not text:
        return None
    try:
        return json.loads(text), ()
    except ValueError:
        pass
    steps: list[str] = []
    current = text
    # Cheap, meaning-preserving fixes first; the Python-literal reading sits between them and the
    # two guessing fixes (stray quotes, truncation) so that it is only used when JSON fixes fail.
    fixes: tuple[tuple[str, Callable[[str], str | None] | None], ...] = (
        ("", None),
        ("smart_quotes", lambda s: s.translate(_SMART)),
        ("trailing_commas", _remove_trailing_commas),
        ("python_literals", None),
        ("unescaped_quotes", _escape_stray_quotes),
        ("truncated_object", _close_truncated),
    )
    for name, fix in fixes:
        if name == "python_literals":
            literal = _python_literal(current)
            if literal is not None:
                return literal, (*steps, name)
            continue
        if fix is not None:
            fixed = fix(current)
            if fixed is None or fixed == current:
                continue
            current = fixed
            steps.append(name)
        try:
            # strict=False accepts raw newlines and tabs inside strings.
            value = json.loads(current, strict=False)
        except ValueError:
            continue
        if value is not None:
            return value, tuple(steps) if steps else ("control_characters",)
    return None


def _scan_outside_strings(text: str, quotes: str = '"') -> Iterator[tuple[bool, str]]:
    """Split text into (is_string, chunk) pieces; strings keep their quotes."""
    buf: list[str] = []
    quote = ""
    escaped = False
    for char in text:
        if quote:
            buf.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                yield True, "".join(buf)
                buf, quote = [], ""
            continue
        if char in quotes:
            if buf:
                yield False, "".join(buf)
            buf, quote = [char], char
        else:
            buf.append(char)
    if buf:
        yield bool(quote), "".join(buf)


def _remove_trailing_commas(text: str) -> str:
    return "".join(
        chunk if is_str else re.sub(r",(\s*[}\]])", r"\1", chunk)
        for is_str, chunk in _scan_outside_strings(text)
    )


_PY_FROM_JSON = {"true": "True", "false": "False", "null": "None"}


def _python_literal(text: str) -> Any:
    """Read a Python-style dict (single quotes, True/None); JSON literals outside strings are mapped."""
    if len(text) > 50_000:
        return None
    converted = "".join(
        chunk if is_str else re.sub(r"\b(true|false|null)\b", lambda m: _PY_FROM_JSON[m.group(1)], chunk)
        for is_str, chunk in _scan_outside_strings(text, quotes="\"'")
    )
    try:
        value = ast.literal_eval(converted)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def _escape_stray_quotes(text: str) -> str:
    """Escape quotes inside strings that do not end the string (next char is not , : } ] or end)."""
    out: list[str] = []
    in_string = False
    i = 0
    while i < len(text):
        char = text[i]
        if not in_string:
            in_string = char == '"'
            out.append(char)
        elif char == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        elif char == '"':
            j = i + 1
            while j < len(text) and text[j] in " \t\r\n":
                j += 1
            if j == len(text) or text[j] in ",:}]":
                in_string = False
                out.append(char)
            else:
                out.append('\\"')
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _close_truncated(text: str) -> str | None:
    """Close an object cut off right after a complete value; None when it stops mid-value."""
    stack: list[str] = []
    for _pos, char in _outside_strings(text):
        if char == '"':  # the text ends inside a string literal: mid-value
            return None
        if char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if not stack:
                return None
            stack.pop()
    if not stack:
        return None
    body = text.rstrip()
    if body.endswith(","):
        body = body[:-1].rstrip()
    if body.endswith((":", "[", "{")) and not body.endswith(("{}", "[]")):
        return None
    return body + "".join(reversed(stack))


def find_keys(obj: Any, wanted: dict[str, str]) -> dict[str, Any]:
    """Breadth-first search for each wanted (normalized) key anywhere in a JSON value."""
    found: dict[str, Any] = {}
    queue: list[Any] = [obj]
    while queue and len(found) < len(wanted):
        node = queue.pop(0)
        if isinstance(node, dict):
            for key, value in node.items():
                name = wanted.get(normalize_key(str(key)))
                if name is not None and name not in found:
                    found[name] = value
            queue.extend(node.values())
        elif isinstance(node, list):
            queue.extend(node)
    return found


def read_scored_leaf(
    leaf: Mapping[Any, Any],
    where: str,
    parse: Callable[[object], int | str],
    text_keys: Collection[str],
    text_name: str,
) -> tuple[int, str] | str:
    """``(score, text)`` of one ``{"score": ..., "<text key>": ...}`` object, or what is wrong with it.

    Keys are compared normalized (:func:`normalize_key`); ``parse`` turns the score into an int or a
    problem; the text is the first field named in ``text_keys`` and must not be blank. Problems
    read ``"<where>: no score"``, ``"<where>: <parse problem>"`` or ``"<where>: no <text_name>"``.

    Example:
        >>> read_scored_leaf({"Score": "7", "rationale": " ok "}, "tone", parse_score, {"rationale"}, "rationale")
        (7, 'ok')
        >>> read_scored_leaf({"score": 7}, "tone", parse_score, {"rationale"}, "rationale")
        'tone: no rationale'
    """
    fields = {normalize_key(str(k)): v for k, v in leaf.items()}
    if "score" not in fields:
        return f"{where}: no score"
    score = parse(fields["score"])
    text = next((fields[k] for k in fields if k in text_keys), None)
    if isinstance(score, str):
        return f"{where}: {score}"
    if not isinstance(text, str) or not text.strip():
        return f"{where}: no {text_name}"
    return score, text.strip()


def expand_dotted(obj: Any) -> Any:
    """Nest dotted keys: ``{"candidate_1.quality.speech.score": 7}`` -> ``{"candidate_1": {...: {"score": 7}}}``.

    Example:
        >>> expand_dotted({"a.b": 1, "a.c": [{"d.e": 2}]})
        {'a': {'b': 1, 'c': [{'d': {'e': 2}}]}}
    """
    if isinstance(obj, list):
        return [expand_dotted(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out: dict[str, Any] = {}
    for key, value in obj.items():
        parts = [p for p in str(key).split(".") if p]
        node = out
        for part in parts[:-1] or ():
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1] if parts else str(key)] = expand_dotted(value)
    return out


def find_alias(obj: Any, aliases: Sequence[str]) -> Any:
    """The value under the first key (breadth-first, anywhere in ``obj``) matching one of ``aliases``."""
    return find_keys(obj, dict.fromkeys((normalize_key(a) for a in aliases), "found")).get("found")


def read_per_candidate(
    obj: Any,
    candidates: Sequence[tuple[str, Sequence[str]]],
    fields: Sequence[tuple[str, Sequence[Sequence[str]]]],
    parse: Callable[[object], int | str],
    text_keys: Collection[str],
    text_name: str,
) -> tuple[dict[str, int], dict[str, str], list[str]]:
    """(scores, texts, problems) of an answer that scores several candidates in one breath (a blind pair).

    Under each candidate's key (``(name, aliases)``), each field (``(name, alias chain)``: one
    tuple of key aliases per nesting level) must hold a scored leaf (:func:`read_scored_leaf`); the
    values are named ``<candidate>.<field>``. Dotted keys are nested first (:func:`expand_dotted`).
    Problems read ``"<candidate>: missing"`` once for a candidate not found, ``"<candidate>.<field>:
    missing"`` for a leaf not found, else the leaf's own.

    Example:
        >>> answer = {"Clip 1": {"quality": {"score": "7/10", "evidence": "clean"}}}
        >>> read_per_candidate(answer, [("c1", ["clip_1"]), ("c2", ["clip_2"])], [("q", [["quality"]])],
        ...                    parse_score, {"evidence"}, "evidence")
        ({'c1.q': 7}, {'c1.q': 'clean'}, ['c2: missing'])
    """
    obj = expand_dotted(obj)
    scores: dict[str, int] = {}
    texts: dict[str, str] = {}
    problems: list[str] = []
    for candidate, aliases in candidates:
        node = find_alias(obj, aliases)
        if not isinstance(node, dict):
            problems.append(f"{candidate}: missing")
            continue
        for name, chain in fields:
            path = f"{candidate}.{name}"
            leaf: Any = node
            for level in chain:
                leaf = find_alias(leaf, level) if isinstance(leaf, dict) else None
            if not isinstance(leaf, dict):
                problems.append(f"{path}: missing")
                continue
            read = read_scored_leaf(leaf, path, parse, text_keys, text_name)
            if isinstance(read, str):
                problems.append(read)
            else:
                scores[path], texts[path] = read
    return scores, texts, problems


def _extract(obj: Any, criteria: tuple[str, ...]) -> _Extraction:
    wanted = {normalize_key(c): c for c in criteria}
    found = find_keys(obj, wanted)
    scores: dict[str, int] = {}
    rationales: dict[str, str] = {}
    problems: list[str] = []
    for criterion in criteria:
        if criterion not in found:
            problems.append(f"{criterion}: missing")
            continue
        value = found[criterion]
        if not isinstance(value, dict):
            problems.append(f"{criterion}: expected an object with score and rationale")
            continue
        read = read_scored_leaf(value, criterion, parse_score, _RATIONALE_KEYS, "rationale")
        if isinstance(read, str):
            problems.append(read)
        else:
            scores[criterion], rationales[criterion] = read
    return _Extraction(scores, rationales, tuple(problems))


def expected_score(probs: Mapping[int, float]) -> float | None:
    """Probability-weighted score: sum of k * p(k) over the valid scores 1-10, renormalized over them.

    ``probs`` is the judge decoder's distribution over the allowed integers at one score position
    (:attr:`omnieval.backends.llm.Completion.value_probs`). Values outside 1-10 are ignored; None
    when no valid score has any probability (nothing to weigh, so no number is made up).

    Example:
        >>> expected_score({10: 0.5, 7: 0.25, 1: 0.25})
        7.0
        >>> expected_score({0: 1.0}) is None
        True
    """
    valid = {k: float(p) for k, p in probs.items() if SCORE_MIN <= int(k) <= SCORE_MAX and p > 0}
    total = sum(valid.values())
    if not valid or not total > 0:
        return None
    return sum(k * p for k, p in valid.items()) / total
