"""The documentation's checks bite: a strict build fails on a broken link, and the settings hook on an undocumented setting.

`make docs` (run by `make test`) builds the real site with --strict; these tests break a copy of it to show that
build would fail, so a green `make test` means the site has no broken link and documents every setting.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from mkdocs.exceptions import PluginError

from scheduler.settings import SchedulerSettings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "hooks"))

import settings_table  # noqa: E402  (the hook module, as MkDocs loads it)


def site_copy(tmp_path: Path) -> Path:
    """A copy of the docs and their config beside links to everything else the build reads (packages, data)."""
    for entry in ROOT.iterdir():
        if entry.name in {"docs", "mkdocs.yml"} or entry.name.startswith("."):
            continue
        (tmp_path / entry.name).symlink_to(entry)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    return tmp_path


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    page = site / "docs" / "getting-started.md"
    page.write_text(page.read_text() + "\nSee [a page that is not there](no-such-page.md).\n")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=site,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode != 0
    assert "contains a link 'no-such-page.md', but the target is not found" in built.stderr


def page(src_uri: str) -> SimpleNamespace:
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri))


def test_the_settings_hook_refuses_a_table_that_misses_or_invents_a_setting() -> None:
    text = (ROOT / "docs" / "site.md").read_text()
    assert settings_table.on_page_markdown(text, page("site.md"), None, None) == text
    rows = [line for line in text.splitlines() if settings_table.ROW.match(line)]
    assert rows, "site.md has a settings table"
    without_first = text.replace(rows[0] + "\n", "", 1)
    with pytest.raises(PluginError, match="missing: PREDICTOR_"):
        settings_table.on_page_markdown(without_first, page("site.md"), None, None)
    invented = text.replace(rows[0], rows[0] + "\n| `PREDICTOR_NO_SUCH_SETTING` | 1 | invented |", 1)
    with pytest.raises(PluginError, match="not settings: PREDICTOR_NO_SUCH_SETTING"):
        settings_table.on_page_markdown(invented, page("site.md"), None, None)
    assert settings_table.on_page_markdown("anything", page("other.md"), None, None) == "anything"


def test_the_settings_hook_refuses_a_setting_in_another_components_table_or_a_reader_left_out() -> None:
    """The tables are grouped per component (cli/settings.py): a row moved to another group's table, or a group whose
    section no longer names a command that reads it, fails the build."""
    text = (ROOT / "docs" / "site.md").read_text()
    port = next(line for line in text.splitlines() if line.startswith("| `PREDICTOR_SCHEDULER_PORT`"))
    moved = text.replace(port + "\n", "", 1).replace("| `PREDICTOR_HOME`", port + "\n| `PREDICTOR_HOME`", 1)
    with pytest.raises(PluginError, match="in another component's table: PREDICTOR_SCHEDULER_PORT"):
        settings_table.on_page_markdown(moved, page("site.md"), None, None)
    unnamed = text.replace("`predictor slurm bridge`", "the bridge")
    with pytest.raises(PluginError, match="SlurmSettings does not name predictor slurm bridge"):
        settings_table.on_page_markdown(unnamed, page("site.md"), None, None)


def _pages() -> str:
    """The text of every docs page (not the linked benchmark outputs), the README and the Makefile."""
    pages = [p for p in (ROOT / "docs").rglob("*.md") if "files" not in p.relative_to(ROOT / "docs").parts]
    return "\n".join(p.read_text() for p in [*pages, ROOT / "README.md", ROOT / "Makefile"])


def test_the_offline_site_links_pages_as_files_and_has_the_operators_page() -> None:
    """Issue 30, item 13: folder URLs (``page/``) do not open from file://, and operators had no page."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["use_directory_urls"] is False
    assert "operations.md" in str(config["nav"])
    assert "predictor models rollback ALGORITHM PLATFORM" in (ROOT / "docs" / "operations.md").read_text()


def test_the_docs_give_each_port_one_use_and_count_the_catalog() -> None:
    """Issue 30, item 13: 8001 was the scheduler's, the docs preview's and a second API's; "seven programs" of 19."""
    text = _pages()
    previews = set(re.findall(r"mkdocs serve -a [\d.]+:(\d+)", text))
    apis = set(re.findall(r"predictor serve --port (\d+)", text)) | set(
        re.findall(r"127\.0\.0\.1:(\d+)/(?:v1|readyz|docs|metrics)", text)
    )
    scheduler = str(SchedulerSettings().port)
    assert len(previews) == 1 and not previews & apis and scheduler not in previews | apis, (previews, apis)
    algorithms = yaml.safe_load((ROOT / "data" / "catalog.yaml").read_text())["algorithms"]
    assert f"lists {len(algorithms)} algorithms" in (ROOT / "docs" / "own-programs.md").read_text()
    assert "knows seven programs" not in text
