"""Without its framework, an integration's import fails with the pip package to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BLOCK = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # makes `import name` raise ImportError
try:
    import {module}
except ImportError as error:
    print(error)
else:
    print("imported")
"""


@pytest.mark.parametrize(
    ("module", "blocked", "package"),
    [
        ("membank.integrations.langgraph", ["langgraph", "langgraph.store", "langgraph.store.base"], "langgraph"),
        ("membank.integrations.langchain", ["langchain_core"], "langchain-core"),
        ("membank.integrations.openai_agents", ["agents"], "openai-agents"),
    ],
)
def test_missing_framework_names_the_package(module: str, blocked: list[str], package: str, tmp_path: Path) -> None:
    # Run away from the source tree, so the installed membank is the one imported.
    out = subprocess.run(
        [sys.executable, "-c", BLOCK.format(blocked=blocked, module=module)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"pip install {package}" in out, out
    assert module in out


def test_the_package_imports_without_frameworks(tmp_path: Path) -> None:
    code = BLOCK.format(blocked=["langgraph", "langchain_core", "agents"], module="membank.integrations")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "imported"
