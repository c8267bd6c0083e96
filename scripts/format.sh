#!/usr/bin/env bash
# Format the whole tree (`make format`): drop the `# fmt: skip` markers that ruff's formatter makes unnecessary,
# run the formatter ([tool.ruff.format] in pyproject.toml), then the fixes `ruff check --fix` makes safely.
# Only the marker goes; a comment after it stays (`x  # fmt: skip  # why` -> `x  # why`).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}

"$BIN/python" - <<'PY'
"""Strip the trailing `# fmt: skip` from every line of the repository's Python files."""
import re
import subprocess

MARKER = re.compile(r"[ \t]*#[ \t]*fmt:[ \t]*skip[ \t]*(?=(#|$))")
names = subprocess.run(["git", "ls-files", "-z", "--", "*.py"], check=True, capture_output=True, text=True).stdout
changed = 0
for name in filter(None, names.split("\0")):
    with open(name, encoding="utf-8", newline="") as file:
        lines = file.read().splitlines(keepends=True)
    stripped = []
    for line in lines:
        body = line.rstrip("\r\n")
        if "fmt:" in body:
            body = MARKER.sub(lambda m: "  " if m.group(1) == "#" else "", body).rstrip()
        stripped.append(body + line[len(line.rstrip("\r\n")) :])
    if stripped != lines:
        changed += 1
        with open(name, "w", encoding="utf-8", newline="") as file:
            file.write("".join(stripped))
print(f"fmt: skip markers removed from {changed} files")
PY
"$BIN/ruff" format .
"$BIN/ruff" check --fix .
