"""What an audit reads (pages, instances and their conditions) and the options it runs with.

A benchmark turns its dataset into :class:`AuditInputs` (``Benchmark.audit_inputs``): which texts
are pages a model may have seen or must produce, and which fields are the conditions a model is
given. The audit itself knows no benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class AuditPage:
    """One page of the dataset: its text and, when it has one, its picture.

    Attributes:
        id: unique page key (e.g. ``source/book/p03``); several instances may name the same page.
        text: the page's text ("" when it has none).
        image: the page's image file, or None.
        group: the unit the page belongs to (a book); pages of one group are compared with each
            other only when :attr:`AuditOptions.within_group` is set ("" = no group).
    """

    id: str
    text: str
    image: Path | None = None
    group: str = ""


@dataclass(frozen=True)
class AuditInstance:
    """One evaluation instance: the pages it consists of and the condition texts it is given.

    Attributes:
        id: the instance id (the scores table's ``instance_id``).
        pages: ids of the instance's own pages (its input and target pages); they are part of the
            instance, so a condition sharing words with them is not a leak from elsewhere.
        target: id of the page a system must produce (the longest span a condition shares with
            it is reported), or None.
        conditions: ``(field, text)`` pairs; a field may occur several times (one per character),
            and spans are formed within one text only.
    """

    id: str
    pages: tuple[str, ...]
    target: str | None
    conditions: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class AuditInputs:
    """A dataset as the audit reads it.

    Attributes:
        benchmark: the benchmark's registry name.
        dataset: the dataset folder (resolved).
        digest: the dataset's fingerprint digest (what the audit describes).
        fields: the audited condition fields, in display order.
        pages: every page once, in dataset order.
        instances: every instance, in dataset order.
    """

    benchmark: str
    dataset: Path
    digest: str
    fields: tuple[str, ...]
    pages: tuple[AuditPage, ...]
    instances: tuple[AuditInstance, ...]


class AuditOptions(BaseModel):
    """Thresholds of the audit; the defaults are the values ``omnieval audit`` documents."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ngram: int = Field(default=5, ge=1, le=20)
    """Words per text shingle for the near-duplicate check."""
    text_threshold: float = Field(default=0.5, gt=0.0, le=1.0)
    """Two pages are text near-duplicates when the Jaccard index of their shingle sets is at least this."""
    image_distance: int = Field(default=8, ge=0, le=64)
    """Two pages are image near-duplicates when their 64-bit pHashes differ in at most this many bits."""
    images: bool = True
    """Whether to hash images at all (off: text clusters only)."""
    within_group: bool = False
    """Also pair pages of the same group (book). Off by default: the pages of one picture book share
    its setting and style, so their illustrations hash alike without being republished content."""
    span_words: int = Field(default=8, ge=2, le=50)
    """Length of the word spans shared between a condition and another page that count as overlap."""
