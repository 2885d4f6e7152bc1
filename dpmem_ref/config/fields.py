"""Field readers shared by the interface-description loader (dpmem_ref.config.load).

Each names the field, what was expected and what was found. Values found under
`[stores]` are memory contents: `stores()` reports only where and what kind of value it
found there, never the value or the key (docs/config-format.md, "Limits").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import MAX_KEY_CHARS
from dpmem_ref.core.policy import Layout, MemoryItem, Store

MAX_TAGS = 1_000
WITHHELD = "<value withheld: memory is private>"


class _Nothing:
    """Stands for an absent field in error messages ("found nothing")."""

    def __repr__(self) -> str:
        return "nothing"


NOTHING = _Nothing()


def found(value: object) -> object:
    """What an error message reports as found: the value, or its type for containers."""
    if value is None:
        return NOTHING
    if isinstance(value, dict | list):
        return type(value).__name__
    return value


def table(value: object, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(field, "a table", found(value))
    for key in value:
        key_name(key, field)
    return value


def key_name(key: str, field: str) -> str:
    if not isinstance(key, str):  # a dict built in code (interface_from_dict), not parsed TOML
        raise InputError(field, "string keys", f"a key of type {type(key).__name__}")
    if len(key) > MAX_KEY_CHARS:
        raise InputError(field, f"keys of at most {MAX_KEY_CHARS} characters", f"a key of {len(key)} characters")
    return key


def as_list(value: object, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(field, "a list", found(value))
    return value


def string(value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(field, "a non-empty string", found(value))
    return value


def strings(value: object, field: str) -> frozenset[str]:
    items = as_list(value, field)
    if len(items) > MAX_TAGS:
        raise InputError(field, f"at most {MAX_TAGS} entries", len(items))
    return frozenset(string(v, f"{field}[{i}]") for i, v in enumerate(items))


def unknown_keys(spec: Mapping[str, Any], allowed: set[str], field: str) -> None:
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise InputError(field, f"only the keys {sorted(allowed)}", f"unknown key {unknown[0]!r}")


def _kind(value: object) -> str:
    """The TOML type of a withheld value (never the value)."""
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array"}
    return "a table" if isinstance(value, dict) else names.get(type(value), "a date or time")


def _private(field: str, expected: str, value: object) -> InputError:
    return InputError(field, expected, f"{_kind(value)} (withheld: memory is private)")


def _item(item: object, field: str) -> MemoryItem:
    if isinstance(item, list):
        return MemoryItem(tags=strings(item, field))
    if not isinstance(item, dict):
        raise _private(field, "a list of tags or a table with tags and text", item)
    unknown = sorted(set(item) - {"tags", "text"})
    if unknown:
        raise InputError(field, "only the keys ['tags', 'text']", f"another key ({len(unknown)} unknown, withheld)")
    text = item.get("text", "")
    if not isinstance(text, str):
        raise _private(f"{field}.text", "a string", text)
    return MemoryItem(tags=strings(item.get("tags", []), f"{field}.tags"), text=text)


def stores(data: Mapping[str, Any], layout: Layout) -> dict[str, Store]:
    """The named stores. Errors name the store and the position (or the key's index when
    the key is not a position number), never a value or key found there."""
    spec_all = data.get("stores", {})
    if not isinstance(spec_all, dict):
        raise _private("stores", "a table of named stores", spec_all)
    result = {}
    for name, spec in spec_all.items():
        key_name(name, "stores")
        field = f"stores.{name}"
        if not isinstance(spec, dict):
            raise _private(field, "a table of position -> memory item", spec)
        contents: dict[int, MemoryItem] = {}
        for index, (key, item) in enumerate(spec.items()):
            if not (isinstance(key, str) and len(key) <= 6 and key.isascii() and key.isdigit()):
                raise InputError(field, "position numbers as keys", f"key #{index + 1} (withheld: memory is private)")
            position = layout.check_position(int(key), f"{field}.{key}")
            if position in contents:
                raise InputError(f"{field}.{key}", "each position once", "a duplicate (leading zeros)")
            try:
                contents[position] = _item(item, f"{field}.{key}")
            except InputError as error:
                raise InputError(error.field, error.expected, WITHHELD) from None
        result[name] = Store.from_mapping(layout, contents, name=name)
    return result
