"""The README's quick start, run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "the quick start has no python block"
    return match.group(1)


def test_the_quick_start_has_five_lines_and_runs_as_written(tmp_path: Path) -> None:
    code = quick_start()
    assert len(code.strip().splitlines()) == 5
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "User: My cat is Miso"
    assert (tmp_path / "memories.db").is_file()


def test_the_repository_readme_shows_the_same_quick_start() -> None:
    root = (README.parents[1] / "README.md").read_text(encoding="utf-8")
    section = root.split("### Python", 1)[1].split("\n### ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "the repository README's Python section has no python block"
    assert match.group(1) == quick_start()
