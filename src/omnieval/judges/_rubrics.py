"""Judge prompt templates: the data model, its hashes, the repair prompt and the template registry.

A template is pure data (:class:`PromptTemplate`); its SHA-256 covers every string and the order of
its sections, so any wording change changes the hash that goes into lineage and the cache key.
Two input variants exist: ``native`` (the judge sees/hears the media) and ``cascade`` (speech track
only: the judge reads an ASR transcript and measured delivery attributes instead of the audio).

The rubric wording belongs to the benchmark that the judges score: its package registers its
tracks (:func:`~omnieval.judges.register_tracks`), then calls :func:`register_templates` when
imported (a ``_rubrics.py`` beside its hooks), and :func:`template`, :func:`template_catalog`,
:func:`repair_prompt_sha256` and :func:`section_tags` read what it registered. A benchmark keeps
its wording in Jinja2 files under its package's ``templates/`` and reads it with
:func:`prompt_text`. Only the repair prompt, which is the same for every track, is worded here.

Example:
    >>> print(criteria_example(("clarity", "warmth")))
    {"clarity": {"score": <integer 1-10>, "rationale": "<short reason>"}, "warmth": {"score": <integer 1-10>, "rationale": "<short reason>"}}
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from jinja2 import Environment, PackageLoader, StrictUndefined, TemplateError

from omnieval.errors import ConfigError
from omnieval.judges._tracks import track, track_benchmarks

FactsFn = Callable[[Any], str]
"""What a ``facts`` block says about one (row, candidate) pair: measured, not judged (e.g. word
overlap with the reference); registered by the benchmark per ``(track, variant)``. It receives the
pair's ``omnieval.judges.JudgeInputs`` (typed ``Any`` here: ``_render`` imports this module, and
naming it back would make an import cycle)."""

BASE_VARIANTS = frozenset({"native", "cascade"})
"""The input variants every panel may name; any other variant is a named prompt (``prompt:``)."""

Source = Literal[
    "metadata",
    "condition",
    "current_text",
    "reference_text",
    "candidate_text",
    "reference_speech",
    "current_image",
    "reference_image",
    "candidate_image",
    "candidate_audio",
    "candidate_audio_analysis",
    "candidate_image_analysis",
    "facts",
]
MEDIA_SOURCES = frozenset({"current_image", "reference_image", "candidate_image", "candidate_audio"})


@dataclass(frozen=True)
class Section:
    """One tagged block of the user message.

    Attributes:
        tag: the XML-like tag wrapping the block.
        source: which input fills it.
        description: for media blocks, what the attachment is (shown next to it).
    """

    tag: str
    source: Source
    description: str = ""

    @property
    def is_media(self) -> bool:
        return self.source in MEDIA_SOURCES

    @property
    def is_image(self) -> bool:
        return self.source.endswith("_image")


@dataclass(frozen=True)
class PromptTemplate:
    """A track's prompt: rubric, the ordered input sections and the closing instruction.

    Attributes:
        track: judge track.
        variant: ``native`` or ``cascade``.
        version: template version string (bumped with any wording change).
        rubric: the evaluator instructions, ending with the answer schema.
        rubric_in_user: put the rubric at the top of the user message instead of a system message
            (the speech judges take a single user turn).
        opening: the first line of the user message's input part.
        sections: the inputs, in protocol order.
        closing: the last instruction.
    """

    track: str
    variant: str
    version: str
    rubric: str
    rubric_in_user: bool
    opening: str
    sections: tuple[Section, ...]
    closing: str

    def sha256(self) -> str:
        """Hash of every string of the template, its section order and its answer keys."""
        payload = {"template": asdict(self), "criteria": list(track(self.track).criteria)}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def criteria_example(criteria: Sequence[str], reason: str = "short reason") -> str:
    """The answer shape over ``criteria`` shown to a judge: each key with a score and a reason."""
    items = ", ".join(f'"{k}": {{"score": <integer 1-10>, "rationale": "<{reason}>"}}' for k in criteria)
    return "{" + items + "}"


def schema_example(track_name: str, reason: str = "short reason") -> str:
    """The answer shape of a registered track (:func:`criteria_example` over its keys)."""
    return criteria_example(track(track_name).criteria, reason)


def criteria_list(track_name: str, meanings: Sequence[str]) -> str:
    """The track's criterion keys as a numbered list, each followed by what it means.

    ``meanings`` has one sentence per criterion, in the track's order (a count mismatch raises).
    """
    keys = track(track_name).criteria
    return "\n".join(
        f"{i}. {key}: {meaning}" for i, (key, meaning) in enumerate(zip(keys, meanings, strict=True), 1)
    )


class PromptText(NamedTuple):
    """A prompt's wording, rendered from its template file (see :func:`prompt_text`)."""

    rubric: str
    """The file's body: the evaluator instructions (:attr:`PromptTemplate.rubric`)."""
    opening: str
    """The file's ``opening`` macro, '' when it has none (:attr:`PromptTemplate.opening`)."""
    closing: str
    """The file's ``closing`` macro, '' when it has none (:attr:`PromptTemplate.closing`)."""


@functools.cache
def _prompt_environment(package: str) -> Environment:
    # Prompts are plain text sent to a model, not HTML: nothing may be escaped (the answer shape
    # shows "<integer 1-10>"), a misspelt name must fail, and a file's final newline is not wording.
    environment = Environment(
        loader=PackageLoader(package, "templates"),
        autoescape=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    environment.globals.update(criteria_list=criteria_list, schema_example=schema_example)
    return environment


def prompt_text(package: str, name: str) -> PromptText:
    """Render a benchmark's judge prompt from ``templates/<name>`` of ``package`` (Jinja2, as text).

    The file's body is the rubric; the macros ``opening()`` and ``closing()``, where defined, are
    the user message's first and last instruction. Templates may call :func:`criteria_list` and
    :func:`schema_example` over the registered tracks and import shared blocks from sibling files.
    Rendered bytes feed :meth:`PromptTemplate.sha256`, hence lineage and the judge cache keys.

    Raises:
        ConfigError: the file is missing or does not render (naming the package and file).
    """
    try:
        tpl = _prompt_environment(package).get_template(name)
        module = tpl.module
        opening, closing = (getattr(module, macro, None) for macro in ("opening", "closing"))
        return PromptText(
            rubric=tpl.render(),
            opening=str(opening()) if opening is not None else "",
            closing=str(closing()) if closing is not None else "",
        )
    except (TemplateError, ValueError) as exc:
        raise ConfigError(f"{package}: judge prompt templates/{name}: {type(exc).__name__}: {exc}") from None


REPAIR_SYSTEM = (
    "You fix the format of a judge's malformed answer. You never create a score or a reason that the "
    "answer does not contain, and you keep its meaning exactly."
)

REPAIR_USER = "\n".join(
    [
        "Rewrite the judge answer below into exactly the JSON schema given.",
        "Rules:",
        "- Never add a score or a rationale that the answer does not contain.",
        "- Fix only formatting, key spelling, nesting and plain JSON or type mistakes.",
        '- If any required score or rationale cannot be recovered, return exactly {{"unrecoverable": true}}.',
        "- Return JSON only, without Markdown or any other text.",
        "",
        "Required schema: {schema}",
        "",
        "Why the answer could not be read: {parse_error}",
        "",
        "<judge_answer>",
        "{raw_response}",
        "</judge_answer>",
    ]
)


@dataclass(frozen=True)
class _Registration:
    """What a benchmark registered: its name, the ids of its prompts and its templates."""

    benchmark: str
    prompt_version: str
    repair_version: str
    templates: Mapping[tuple[str, str], PromptTemplate]
    section_tags: frozenset[str]
    facts: Mapping[tuple[str, str], FactsFn]


_registered: _Registration | None = None


def register_templates(
    templates: Mapping[tuple[str, str], PromptTemplate],
    *,
    benchmark: str,
    prompt_version: str,
    repair_version: str,
    facts: Mapping[tuple[str, str], FactsFn] | None = None,
) -> None:
    """Make ``templates`` the judges' prompts; a benchmark's package calls this when imported.

    Args:
        templates: ``(track, variant)`` -> template; every ``native`` and ``cascade`` template
            carries ``prompt_version``; a named prompt variant (any other variant, chosen by a
            panel's ``prompt:``) carries its own version id.
        benchmark: the benchmark these rubrics score (the scores rows' ``benchmark`` column).
        prompt_version: the templates' version id (part of every template hash).
        repair_version: the repair prompt's version id (part of :func:`repair_prompt_sha256`).
        facts: ``(track, variant)`` -> the function that writes a template's ``facts`` block; a
            template with a ``facts`` section needs one.

    Raises:
        ConfigError: a key does not match its template, a track is unknown, a version differs, the
            registered tracks are another benchmark's, or another benchmark registered its rubrics
            already (the judges score one at a time).
    """
    global _registered
    if not templates:
        raise ConfigError(f"{benchmark}: no judge prompt templates to register")
    if _registered is not None and _registered.benchmark != benchmark:
        raise ConfigError(
            f"judge rubrics of {_registered.benchmark!r} are registered; {benchmark!r} cannot add its own"
        )
    if benchmark not in track_benchmarks():
        raise ConfigError(f"{benchmark}: register the benchmark's judge tracks before its rubrics")
    for key, tpl in templates.items():
        if key != (tpl.track, tpl.variant):
            raise ConfigError(f"{benchmark}: template key {key} holds the {tpl.track}/{tpl.variant} template")
        try:
            track(tpl.track, benchmark)
        except ValueError as exc:
            raise ConfigError(f"{benchmark}: {exc}") from None
        if tpl.variant in BASE_VARIANTS and tpl.version != prompt_version:
            raise ConfigError(
                f"{benchmark}: template {tpl.track}/{tpl.variant} has version {tpl.version!r}, "
                f"not {prompt_version!r}"
            )
        if any(sec.source == "facts" for sec in tpl.sections) and key not in (facts or {}):
            raise ConfigError(
                f"{benchmark}: template {tpl.track}/{tpl.variant} has a facts block but no facts"
            )
    snapshot = dict(templates)
    _registered = _Registration(
        benchmark=benchmark,
        prompt_version=prompt_version,
        repair_version=repair_version,
        templates=MappingProxyType(snapshot),
        section_tags=frozenset(s.tag for t in snapshot.values() for s in t.sections),
        facts=MappingProxyType(dict(facts or {})),
    )


def _registration() -> _Registration:
    if _registered is None:
        raise ConfigError("no judge rubrics registered; import the benchmark package")
    return _registered


def registered_benchmark() -> str:
    """The benchmark whose rubrics are registered (the default ``benchmark`` of the judges' rows)."""
    return _registration().benchmark


def section_tags() -> frozenset[str]:
    """Every block tag of the registered templates (defused when found inside user content)."""
    return _registration().section_tags


def registered_templates() -> Mapping[tuple[str, str], PromptTemplate]:
    """The registered rubrics' templates, ``(track, variant)`` -> template (read-only)."""
    return _registration().templates


def has_template(track_name: str, variant: str) -> bool:
    """Whether the registered rubrics hold a ``track_name``/``variant`` template (False before any)."""
    return _registered is not None and (track_name, variant) in _registered.templates


def template(track_name: str, variant: str = "native") -> PromptTemplate:
    """The template for a track and input variant; raise ``ValueError`` for an unknown pair."""
    templates = _registration().templates
    try:
        return templates[(track_name, variant)]
    except KeyError:
        known = ", ".join(f"{t}/{v}" for t, v in templates)
        raise ValueError(f"no prompt template {track_name}/{variant}; known: {known}") from None


def template_facts(track_name: str, variant: str) -> FactsFn:
    """The registered function that writes the ``facts`` block of a track/variant's template."""
    try:
        return _registration().facts[(track_name, variant)]
    except KeyError:
        raise ValueError(f"no facts registered for the prompt template {track_name}/{variant}") from None


def repair_prompt_sha256() -> str:
    """Hash of the repair prompt (its registered version, system and user template)."""
    payload = {"version": _registration().repair_version, "system": REPAIR_SYSTEM, "user": REPAIR_USER}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def template_catalog() -> list[dict[str, Any]]:
    """Every template with its version and hash (for ``omnieval judge prompts``)."""
    registration = _registration()
    rows: list[dict[str, Any]] = [
        {"track": t.track, "variant": t.variant, "version": t.version, "sha256": t.sha256()}
        for t in registration.templates.values()
    ]
    rows.append(
        {
            "track": "repair",
            "variant": "native",
            "version": registration.repair_version,
            "sha256": repair_prompt_sha256(),
        }
    )
    return rows
