"""The page skeleton every ``report.html`` shares: head, CSS, table of contents, sections, atomic write.

Pages are self-contained (no external CSS, scripts or images) so a run folder can be mailed or
opened from an artifact store as one file. The markup and the CSS are the templates
``templates/page.html.j2`` and ``templates/page.css.j2``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from markupsafe import escape

from omnieval.reporting._templates import render, trusted


@dataclass(frozen=True)
class Section:
    """One ``<section>`` of a page: its anchor, heading (also its table-of-contents entry) and body.

    Attributes:
        anchor: the ``id`` the table of contents links to (letters, digits and dashes).
        title: the ``<h2>`` text (plain text; escaped when rendered).
        body: trusted HTML of the section body.
        in_toc: whether the table of contents lists it.
    """

    anchor: str
    title: str
    body: str
    in_toc: bool = True


def esc(value: object) -> str:
    """``value`` as HTML-escaped text, for code that still builds HTML in Python.

    The same escaping the templates' autoescape applies (markupsafe), so a value reads the same
    whether a template or this function put it on the page.
    """
    return str(escape(str(value)))


def table(
    head: Sequence[str], rows: Iterable[Sequence[str]], *, left: int = 1, left_cols: Iterable[int] = ()
) -> str:
    """An HTML table from already-escaped cell HTML.

    The first ``left`` columns, and those whose index is in ``left_cols`` (text), are left-aligned;
    the others (numbers) right-aligned.
    """
    text = set(left_cols)
    body = [[trusted(c) for c in row] for row in rows]
    width = max([len(head), *(len(row) for row in body)])
    # Cells past the header's width get no alignment class, as the header says nothing about them.
    flags = [k < len(head) and (k < left or k in text) for k in range(width)]
    return render("table.html.j2", head=[trusted(h) for h in head], rows=body, left=flags)


def render_page(
    *, title: str, heading: str, facts: str, sections: Sequence[Section], footer: str = ""
) -> str:
    """The whole document: ``<h1>``, a facts paragraph, a short table of contents, the sections.

    Args:
        title: ``<title>`` text (plain).
        heading: ``<h1>`` text (plain).
        facts: trusted HTML under the heading (dataset, digest, run id).
        sections: rendered in order; those with ``in_toc`` are listed in the contents.
        footer: trusted HTML at the end.
    """
    return render(
        "page.html.j2",
        title=title,
        heading=heading,
        facts=trusted(facts),
        sections=[
            {"anchor": x.anchor, "title": x.title, "body": trusted(x.body), "in_toc": x.in_toc}
            for x in sections
        ],
        footer=trusted(footer),
    )


#: The footer of a run's report: where its numbers come from.
RUN_FOOTER = "Written by omnieval's report stage; numbers come from the linked JSON files."


def write_run_page(
    path: Path,
    *,
    suite: str,
    benchmark: str,
    facts: str,
    sections: Sequence[Section],
    footer: str = RUN_FOOTER,
) -> None:
    """Write a run's ``report.html``: every benchmark's page is titled by its suite, and the heading
    names the benchmark after it, so runs of several benchmarks read alike side by side."""
    page = render_page(
        title=f"omnieval {suite}",
        heading=f"omnieval — suite {suite} ({benchmark})",
        facts=facts,
        sections=sections,
        footer=footer,
    )
    write_page(path, page)


def write_page(path: Path, document: str) -> None:
    """Write ``document`` to ``path`` atomically (a reader never sees half a page)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(document, encoding="utf-8")
    tmp.replace(path)
