"""Jinja2 environment for the report pages: autoescaping on, unknown names an error.

Every page and block is a template under ``templates/`` (this package's for the shared skeleton
and blocks, a benchmark package's own ``templates/`` for its sections). Autoescaping makes every
value from data safe by default; HTML that is already built and trusted (a block's output passed
into a page) is handed in as :class:`markupsafe.Markup` via :func:`trusted`. ``StrictUndefined``
turns a misspelt variable into an error instead of a silently empty cell.

Rendered text is returned as plain ``str``, not ``Markup``: callers concatenate blocks with ``+``,
and ``Markup + str`` would escape the ``str`` side.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import BaseLoader, ChoiceLoader, Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

SHARED = "omnieval.reporting"
"""The package whose ``templates/`` folder holds the page skeleton and the shared blocks."""


@cache
def environment(package: str = SHARED) -> Environment:
    """The environment for ``package``'s templates, falling back to the shared ones.

    Args:
        package: dotted name of a package with a ``templates/`` folder (a benchmark's, to render
            its own sections); its templates can include or import the shared ones by name.
    """
    loaders: list[BaseLoader] = [PackageLoader(SHARED, "templates")]
    if package != SHARED:
        loaders.insert(0, PackageLoader(package, "templates"))
    return Environment(
        loader=ChoiceLoader(loaders),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def render(name: str, /, package: str = SHARED, **context: Any) -> str:
    """Render template ``name`` (looked up in ``package``'s folder, then the shared one) to HTML."""
    return str(environment(package).get_template(name).render(**context))


def trusted(html: str) -> Markup:
    """Mark already-built HTML (a block's or a caller's output) as safe to insert unescaped."""
    return Markup(html)
