"""The page skeleton every ``report.html`` shares: head, CSS, table of contents, sections, atomic write.

Pages are self-contained (no external CSS, scripts or images) so a run folder can be mailed or
opened from an artifact store as one file.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

CSS = """
:root{--fg:#1d2430;--muted:#5b6472;--line:#d9dde3;--bg2:#f5f7fa;--go:#1e7b34;--nogo:#b3261e;--warn:#9a6700}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);margin:0;padding:0 1.5em 3em}
header,main,nav,footer{max-width:1180px;margin:0 auto}
h1{font-size:1.5em;margin:.8em 0 .2em}h2{font-size:1.25em;margin:1.6em 0 .4em;padding-top:.4em;border-top:1px solid var(--line)}
h3{font-size:1.05em;margin:1.1em 0 .3em}
.facts{color:var(--muted);margin:.2em 0 .8em}
nav.toc{background:var(--bg2);border:1px solid var(--line);border-radius:6px;padding:.4em 1em;margin:.6em auto}
nav.toc ol{margin:.2em 0;padding-left:1.4em;columns:2}nav.toc li{margin:.1em 0}
a{color:#0b57d0}
table{border-collapse:collapse;margin:.4em 0 .8em;font-size:.92em}
td,th{border:1px solid var(--line);padding:3px 7px;text-align:right;vertical-align:top}
th{background:var(--bg2)}td.l,th.l{text-align:left}
.z{color:#777}.na{color:#999}
figure{margin:.8em 0 1.2em;padding:.6em;border:1px solid var(--line);border-radius:6px;background:#fff}
figure img{max-width:100%;height:auto;display:block;margin:.2em 0}
figcaption{margin-top:.4em;color:var(--fg)}figcaption b{color:var(--muted);font-weight:600}
.card{border:1px solid var(--line);border-radius:6px;padding:.6em .8em;margin:.6em 0}
.card h3{margin-top:0}
.banner{border-radius:8px;padding:.8em 1.1em;margin:1em 0;border:2px solid}
.banner .verdict{font-size:1.6em;font-weight:700;letter-spacing:.02em}
.banner ul{margin:.3em 0 .1em}
.v-go{background:#e7f4ea;border-color:var(--go)}.v-go .verdict{color:var(--go)}
.v-nogo{background:#fbe9e7;border-color:var(--nogo)}.v-nogo .verdict{color:var(--nogo)}
.v-inconclusive{background:#fff4d6;border-color:var(--warn)}.v-inconclusive .verdict{color:var(--warn)}
.v-none{background:var(--bg2);border-color:var(--line)}.v-none .verdict{color:var(--muted)}
.flag{display:inline-block;background:var(--nogo);color:#fff;border-radius:4px;padding:0 .45em;font-size:.85em;font-weight:600}
.ok{display:inline-block;background:var(--go);color:#fff;border-radius:4px;padding:0 .45em;font-size:.85em}
.bad{background:#fbe9e7}
.glance li{margin:.15em 0}
.note{color:var(--muted)}
details{margin:.5em 0}summary{cursor:pointer;color:var(--muted)}
code{background:var(--bg2);padding:0 .25em;border-radius:3px}
ul.links{columns:3;padding-left:1.2em}
footer{color:var(--muted);font-size:.85em;margin-top:2em}
"""


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
    """``html.escape(str(value))``: every string from data goes through this."""
    return html.escape(str(value))


def table(
    head: Sequence[str], rows: Iterable[Sequence[str]], *, left: int = 1, left_cols: Iterable[int] = ()
) -> str:
    """An HTML table from already-escaped cell HTML.

    The first ``left`` columns, and those whose index is in ``left_cols`` (text), are left-aligned;
    the others (numbers) right-aligned.
    """
    text = set(left_cols)
    cls = [' class="l"' if k < left or k in text else "" for k in range(len(head))]
    top = "".join(f"<th{cls[k]}>{h}</th>" for k, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f"<td{cls[k] if k < len(cls) else ''}>{c}</td>" for k, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{top}</tr>{body}</table>"


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
    toc = "".join(f'<li><a href="#{esc(s.anchor)}">{esc(s.title)}</a></li>' for s in sections if s.in_toc)
    body = "".join(
        f'<section id="{esc(s.anchor)}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{esc(heading)}</h1><p class="facts">{facts}</p></header>'
        f'<nav class="toc"><b>Contents</b><ol>{toc}</ol></nav>'
        f"<main>{body}</main><footer>{footer}</footer></body></html>"
    )


def write_page(path: Path, document: str) -> None:
    """Write ``document`` to ``path`` atomically (a reader never sees half a page)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(document, encoding="utf-8")
    tmp.replace(path)
