"""JSON Schemas of every JSON output (shipped as package data) and the envelope each opens with.

Every JSON document `dpmem check --json`, `dpmem audit --json`, `dpmem run --json` and
`python -m counterexamples --json` writes carries `schema` (which document), `schema_version`
(bumped when a key changes meaning; keys are only ever added within a version), `tool` and
`tool_version` (the installed dpmem-ref). `schema(kind)` is the JSON Schema (draft 2020-12)
of that document, `dpmem_ref/schemas/<kind>.schema.json`; the tests validate real outputs
against it.

May import: every floor up to `config/` (the JSON Schemas are data files beside it).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from fractions import Fraction
from functools import cache
from importlib import metadata, resources
from typing import Any

from dpmem_ref.core.rational import fraction_text

SCHEMA_VERSION = "1"
KINDS = ("check", "audit", "run", "counterexample", "table4")
TOOL = "dpmem-ref"


@cache
def tool_version() -> str:
    """The installed distribution's version ("unknown" when run from a bare source tree)."""
    try:
        return metadata.version(TOOL)
    except metadata.PackageNotFoundError:
        return "unknown"


def envelope(kind: str) -> dict[str, str]:
    """The keys every JSON output of `kind` opens with."""
    if kind not in KINDS:
        raise ValueError(f"unknown JSON document kind {kind!r}; expected one of {', '.join(KINDS)}")
    return {"schema": f"dpmem-{kind}", "schema_version": SCHEMA_VERSION, "tool": TOOL, "tool_version": tool_version()}


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of document `kind`, read from the package data."""
    if kind not in KINDS:
        raise ValueError(f"unknown JSON document kind {kind!r}; expected one of {', '.join(KINDS)}")
    text = resources.files(__package__).joinpath(f"{kind}.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def json_value(value: Hashable) -> Any:
    """A control (or any public value) as plain JSON: tuples and sets as lists, fractions
    as exact text, None/bool/int/str as themselves; anything else by its str()."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Fraction):
        return fraction_text(value)
    if isinstance(value, tuple | list):
        return [json_value(v) for v in value]
    if isinstance(value, frozenset | set):
        return sorted((json_value(v) for v in value), key=repr)
    return str(value)
