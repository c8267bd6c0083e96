"""MkDocs hook: the settings tables of ``site.md`` name every ``PREDICTOR_*`` setting, in its component's group, and only
real ones.

The groups come from the registry of which process reads which (:data:`cli.settings.GROUPS`): each group's section
(a ``### `` heading naming its class, ``predictor.settings.Settings``, ...) must name every command that reads it and
table exactly the environment variables of its class. Adding a setting without documenting it, documenting it in
another component's table, or renaming one and leaving the old name fails ``mkdocs build``.
"""

from __future__ import annotations

import re

from mkdocs.exceptions import PluginError

PAGE = "site.md"
ROW = re.compile(r"^\|[^|]*`PREDICTOR_", re.MULTILINE)
NAME = re.compile(r"`(PREDICTOR_[A-Z0-9_]+)`")
HEADING = "### "


def sections(markdown: str) -> list[tuple[str, list[str]]]:
    """The page cut at its headings: each part's text (its heading first) and the table rows naming settings in it."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in markdown.splitlines():
        if line.startswith("#"):
            out.append(("", []))
        text, rows = out[-1]
        out[-1] = (text + line + "\n", rows + [line] if ROW.match(line) else rows)
    return out


def problems(markdown: str) -> list[str]:
    """What differs between the page's settings tables and the settings classes of :data:`cli.settings.GROUPS`."""
    from cli.settings import EVERY_COMMAND, GROUPS, env_names

    by_class = {f"`{g.settings.__module__}.{g.settings.__name__}`": g for g in GROUPS}
    missing, unknown, misplaced, said = [], [], [], []
    seen: set[str] = set()
    for text, rows in sections(markdown):
        heading = text.split("\n", 1)[0]
        group = next((g for key, g in by_class.items() if heading.startswith(HEADING) and key in heading), None)
        documented = [name for line in rows for name in NAME.findall(line.split("|")[1])]
        if group is None:
            unknown += documented
            continue
        name = f"{group.settings.__module__}.{group.settings.__name__}"
        seen.add(name)
        real = env_names(group.settings)
        missing += [n for n in real if n not in documented]
        for n in documented:
            if n not in real:
                (misplaced if any(n in env_names(g.settings) for g in GROUPS) else unknown).append(n)
        said += [f"{name} does not name {c}" for c in group.commands if c != EVERY_COMMAND and f"`{c}`" not in text]
    absent = [f"{key.strip('`')} has no section" for key in by_class if key.strip("`") not in seen]
    out = [
        f"missing: {', '.join(missing)}" if missing else "",
        f"not settings: {', '.join(unknown)}" if unknown else "",
        f"in another component's table: {', '.join(misplaced)}" if misplaced else "",
        "; ".join(absent + said),
    ]
    return [s for s in out if s]


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs' hook signature)
    if page.file.src_uri != PAGE:
        return markdown
    if found := problems(markdown):
        raise PluginError(
            f"{PAGE}'s settings tables and the settings classes (cli/settings.py) differ; " + "; ".join(found)
        )
    return markdown
