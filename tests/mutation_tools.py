"""The mutation run's scripts (tools/mutation/*.py), loaded as modules for their hygiene tests:
they are scripts run by tools/mutation/run.sh, not a package."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_tool(name: str) -> ModuleType:
    """tools/mutation/<name>.py as a module."""
    spec = importlib.util.spec_from_file_location(f"mutation_{name}", ROOT / "tools" / "mutation" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
