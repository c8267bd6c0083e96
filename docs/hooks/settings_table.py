"""MkDocs hook: the settings table of ``site.md`` must name every ``PREDICTOR_*`` setting, and only real ones.

The settings are read from :class:`predictor.settings.Settings` itself, so adding a setting without
documenting it (or renaming one and leaving the old name) fails ``mkdocs build``.
"""

from __future__ import annotations

import re

from mkdocs.exceptions import PluginError

PAGE = "site.md"
ROW = re.compile(r"^\|[^|]*`PREDICTOR_", re.MULTILINE)
NAME = re.compile(r"`PREDICTOR_([A-Z0-9_]+)`")


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs' hook signature)
    if page.file.src_uri != PAGE:
        return markdown
    from predictor.settings import Settings

    rows = [line for line in markdown.splitlines() if ROW.match(line)]
    documented = {name.lower() for line in rows for name in NAME.findall(line.split("|")[1])}
    real = set(Settings.model_fields)
    missing, unknown = sorted(real - documented), sorted(documented - real)
    if missing or unknown:
        said = [
            f"missing: {', '.join('PREDICTOR_' + n.upper() for n in missing)}" if missing else "",
            f"not settings: {', '.join('PREDICTOR_' + n.upper() for n in unknown)}" if unknown else "",
        ]
        raise PluginError(
            f"{PAGE}'s settings table and predictor/settings.py differ; " + "; ".join(s for s in said if s)
        )
    return markdown
