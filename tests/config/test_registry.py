"""The registry of parts (dpmem_ref.config.registry): every row is reachable from an interface
file, an absent name means the table's default, and an unknown name's error names the field and
lists every valid name."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.config.registry import (
    BUDGET_RULES,
    CAP_RULE_BY_ENFORCE,
    CAP_RULES,
    CONTROLS,
    REGISTRY,
    SCORERS,
    SELECTORS,
    Context,
    PartTable,
)
from dpmem_ref.core.errors import InputError
from dpmem_ref.interface import Interface

ROOT = Path(__file__).resolve().parents[2]
FIGURE2: dict[str, Any] = tomllib.loads((ROOT / "examples" / "figure2.toml").read_text(encoding="utf-8"))
ATTRIBUTES = tuple(FIGURE2["attributes"])

# The spec of the part's own table that selects each budget rule and scorer in an interface file.
BUDGET_SPECS: dict[str, dict[str, Any]] = {
    "online": {"rule": "online", "K": 3},
    "preallocated": {"rule": "preallocated", "plan": {a: 2 for a in ATTRIBUTES}},
}
SCORER_SPECS: dict[str, dict[str, Any]] = {"linear": {"kind": "linear", "sensitivity": "3/5"}}


def _with(edit: Callable[[dict[str, Any]], None]) -> Interface:
    data = copy.deepcopy(FIGURE2)
    edit(data)
    return interface_from_dict(data).interface


def _deployment(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.setdefault("deployment", {}).update({key: value})


def _select(table: PartTable[Any], name: str) -> tuple[Callable[[dict[str, Any]], None], Any]:
    """The edit of figure2.toml that names `name` in `table`, and the part it must give."""
    if table is BUDGET_RULES:
        spec = BUDGET_SPECS[name]
        return (lambda data: data.update(budget=spec)), table.row(name).build(spec, "budget", Context(ATTRIBUTES))
    if table is SCORERS:
        scorer = SCORER_SPECS[name]
        return (lambda data: data.update(scorer=scorer)), table.row(name).build(scorer, "scorer")
    if table is CAP_RULES:
        (flag,) = [f for f, n in CAP_RULE_BY_ENFORCE.items() if n == name]
        return _deployment("enforce_cap", flag), table.make(name)
    key = {SELECTORS.field: "selector", CONTROLS.field: "control"}[table.field]
    return _deployment(key, name), table.make(name)


def _part(interface: Interface, table: PartTable[Any]) -> Any:
    attribute = {
        BUDGET_RULES.field: "budget",
        SCORERS.field: "scorer",
        SELECTORS.field: "selector",
        CAP_RULES.field: "cap_rule",
        CONTROLS.field: "control",
    }[table.field]
    return getattr(interface, attribute)


ROWS = [(table, name) for table in REGISTRY for name in table.names]


@pytest.mark.parametrize(("table", "name"), ROWS, ids=[f"{t.field}={n}" for t, n in ROWS])
def test_every_registry_row_is_reachable_from_an_interface_file(table: PartTable[Any], name: str) -> None:
    edit, expected = _select(table, name)
    part = _part(_with(edit), table)
    assert part == expected
    assert type(part) is type(expected)


def test_the_tables_cover_every_kind_an_interface_file_names() -> None:
    assert [t.field for t in REGISTRY] == [
        "budget.rule",
        "scorer.kind",
        "deployment.selector",
        "deployment.enforce_cap",
        "deployment.control",
    ]
    assert set(CAP_RULE_BY_ENFORCE.values()) == set(CAP_RULES.names)
    assert set(BUDGET_SPECS) == set(BUDGET_RULES.names)
    assert set(SCORER_SPECS) == set(SCORERS.names)


@pytest.mark.parametrize("table", [t for t in REGISTRY if t.default is not None], ids=lambda t: t.field)
def test_an_absent_name_means_the_tables_default(table: PartTable[Any]) -> None:
    def drop(data: dict[str, Any]) -> None:
        section, _, key = table.field.partition(".")
        if table is CAP_RULES:
            key = "enforce_cap"
        data.get(section, {}).pop(key, None)

    _, expected = _select(table, str(table.default))
    assert _part(_with(drop), table) == _part(_with(lambda data: None), table) == expected


UNKNOWN = "no-such-part"


@pytest.mark.parametrize("table", [t for t in REGISTRY if t is not CAP_RULES], ids=lambda t: t.field)
def test_an_unknown_name_in_a_file_names_the_field_and_lists_every_valid_name(table: PartTable[Any]) -> None:
    section, _, key = table.field.partition(".")
    with pytest.raises(InputError) as caught:
        _with(lambda data: data.setdefault(section, {}).update({key: UNKNOWN}))
    error = caught.value
    assert (error.field, error.expected, error.found) == (table.field, table.expected, UNKNOWN)
    for name in table.names:
        assert f"{name}" in error.expected
    assert str(error).endswith(f"found {UNKNOWN!r}")


@pytest.mark.parametrize("table", REGISTRY, ids=lambda t: t.field)
@pytest.mark.parametrize("found", [UNKNOWN, None, 3, ["em"]])
def test_an_unknown_name_lists_every_valid_name(table: PartTable[Any], found: object) -> None:
    with pytest.raises(InputError) as caught:
        table.make(found, "method x.part")
    assert caught.value.field == "method x.part"
    assert all(name in caught.value.expected for name in table.names)
    with pytest.raises(InputError, match=f"^{table.field}: "):
        table.row(found)


def test_a_non_flag_enforce_cap_is_refused_with_the_earlier_text() -> None:
    with pytest.raises(InputError) as caught:
        _with(_deployment("enforce_cap", "no"))
    assert str(caught.value) == "deployment.enforce_cap: expected true or false, found 'no'"


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (BUDGET_RULES, '"online" or "preallocated"'),
        (SCORERS, '"linear"'),
        (SELECTORS, "one of ['argmax', 'em']"),
        (CAP_RULES, "one of ['none', 'prospective']"),
        (CONTROLS, "one of ['fallback', 'none', 'raw-evidence', 'top-score']"),
    ],
    ids=lambda v: v.field if isinstance(v, PartTable) else "",
)
def test_the_listing_of_valid_names_is_the_loaders_earlier_text(table: PartTable[Any], expected: str) -> None:
    assert table.expected == expected


def test_a_part_refuses_a_key_of_another_row() -> None:
    with pytest.raises(InputError) as caught:
        _with(lambda data: data.update(budget={"rule": "online", "K": 3, "plan": {}}))
    assert str(caught.value) == (
        "budget: expected only the keys ['K', 'period', 'rule', 'uncharged_epsilon'], found \"unknown key 'plan'\""
    )
