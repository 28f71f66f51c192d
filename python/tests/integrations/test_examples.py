"""The examples run, offline, against the real engine, and recall what they were told."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _core_imports() -> bool:
    try:
        import membank
    except ImportError:
        return False
    return hasattr(membank, "Memory")


@pytest.mark.skipif(not _core_imports(), reason="membank (the core package) does not import")
@pytest.mark.parametrize("example", ["langgraph_store.py", "langchain_chat.py", "openai_agents_session.py"])
def test_example_runs(example: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / example), str(tmp_path / "example.db")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    answer = next(line for line in reversed(lines) if line.startswith("  "))
    assert "Miso" in answer, out.stdout
