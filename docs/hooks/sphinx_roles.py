"""MkDocs hook: the docstrings' Sphinx roles (``:mod:`x```, ``:class:`~a.B```) shown as plain code, not as role text.

mkdocstrings renders docstrings as Markdown, so a role arrives in the HTML as ``:class:<code>~a.B</code>``;
this drops the role and, as Sphinx does for ``~``, keeps only the last part of the name.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:mod|class|func|meth|attr|data|exc|obj):<code>(~?)([^<]*)</code>")


def _plain(match: re.Match[str]) -> str:
    tilde, name = match.groups()
    return f"<code>{name.rsplit('.', 1)[-1] if tilde else name}</code>"


def on_page_content(html: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs' hook signature)
    return ROLE.sub(_plain, html)
