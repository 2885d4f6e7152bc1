"""Interface description files (TOML) -> kernel objects.

The format is documented in docs/config-format.md with the paper's Figure 2 example
(examples/figure2.toml). Every error names the field, what was expected and what was
found; numbers are integers or exact rational strings ("2/3").
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from dpmem_ref.config.fields import NOTHING, as_list, found, string, strings, unknown_keys
from dpmem_ref.config.fields import stores as read_stores
from dpmem_ref.config.fields import table as read_table
from dpmem_ref.config.registry import (
    BUDGET_RULES,
    CAP_RULE_BY_ENFORCE,
    CAP_RULES,
    CONTROLS,
    SCORERS,
    SELECTORS,
    Context,
)
from dpmem_ref.config.toml_bounds import load_toml
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import MAX_CONFIG_BYTES, read_bounded
from dpmem_ref.core.policy import Attribute, Layout, Policy, Store
from dpmem_ref.core.rational import positive_fraction, unit_interval_fraction
from dpmem_ref.core.transcript import Query, SlotRead
from dpmem_ref.core.views import MAX_VIEWS_PER_SLOT, View, Vocabulary
from dpmem_ref.interface import Interface, check_ledger_size
from dpmem_ref.parts.budget import BudgetRule
from dpmem_ref.parts.period import BudgetPeriod
from dpmem_ref.parts.protocols import CapRule, ControlRule, Selector
from dpmem_ref.parts.reuse import ReusePolicy, ReuseRule
from dpmem_ref.parts.scoring import Scorer

TOP_LEVEL_KEYS = {
    "name",
    "description",
    "positions",
    "attributes",
    "budget",
    "scorer",
    "slots",
    "slot_order",
    "queries",
    "stores",
    "deployment",
    "reuse",
}
MAX_QUERIES = 10_000


@attrs.frozen
class InterfaceFile:
    """A loaded description: the interface and its named stores."""

    interface: Interface
    stores: Mapping[str, Store]
    description: str = ""
    path: str = ""

    def store(self, name: str) -> Store:
        if name not in self.stores:
            raise InputError("store", f"one of the stores {sorted(self.stores)}", name)
        return self.stores[name]


def _positions(value: object, layout: Layout, field: str) -> frozenset[int]:
    items = as_list(value, field)
    if not items:
        raise InputError(field, "a non-empty list of positions", "[]")
    return frozenset(layout.check_position(p, f"{field}[{i}]") for i, p in enumerate(items))


def _attributes(data: dict[str, Any], layout: Layout) -> tuple[Attribute, ...]:
    table = read_table(data.get("attributes"), "attributes")
    if not table:
        raise InputError("attributes", "at least one protected attribute", "none")
    attributes = []
    for name, spec in table.items():
        field = f"attributes.{name}"
        spec = read_table(spec, field)
        unknown_keys(spec, {"group", "cap", "description"}, field)
        if "cap" not in spec:
            raise InputError(f"{field}.cap", "a positive cap", NOTHING)
        attributes.append(
            Attribute(
                name=name,
                group=_positions(spec.get("group"), layout, f"{field}.group"),
                cap=positive_fraction(spec["cap"], f"{field}.cap"),
            )
        )
    return tuple(attributes)


def _budget(data: dict[str, Any], attribute_names: tuple[str, ...]) -> BudgetRule:
    """The budget rule `[budget] rule = ...` (dpmem_ref.config.registry.BUDGET_RULES): the rule
    is looked up first, then the table's keys are checked against that rule's own."""
    spec = read_table(data.get("budget"), "budget")
    row = BUDGET_RULES.row(spec.get("rule"))
    BUDGET_RULES.check_keys(spec, row, "budget")
    return row.build(spec, "budget", Context(attribute_names=attribute_names))


def _scorer(data: dict[str, Any]) -> Scorer:
    """The scorer `[scorer] kind = ...` (registry.SCORERS): the table's keys are checked against
    every scorer's first, then the kind is looked up."""
    spec = read_table(data.get("scorer", {"kind": SCORERS.default}), "scorer")
    unknown_keys(spec, set(SCORERS.all_keys()), "scorer")
    row = SCORERS.row(spec.get("kind", SCORERS.default))
    SCORERS.check_keys(spec, row, "scorer")
    return row.build(spec, "scorer")


def _vocabularies(data: dict[str, Any], layout: Layout) -> tuple[Vocabulary, ...]:
    table = read_table(data.get("slots"), "slots")
    known = set(layout.slots)
    order = data.get("slot_order")
    names = list(table) if order is None else [string(s, "slot_order[]") for s in as_list(order, "slot_order")]
    vocabularies = []
    for slot in names:
        if slot not in table:
            raise InputError("slot_order", f"slots declared under [slots] {sorted(table)}", slot)
        if slot not in known:
            raise InputError(f"slots.{slot}", f"a slot used by some position {sorted(known)}", slot)
        spec = read_table(table[slot], f"slots.{slot}")
        unknown_keys(spec, {"generic", "views"}, f"slots.{slot}")
        views_spec = read_table(spec.get("views", {}), f"slots.{slot}.views")
        if not views_spec:
            raise InputError(f"slots.{slot}.views", "a non-empty vocabulary", "an empty table")
        if len(views_spec) > MAX_VIEWS_PER_SLOT:
            raise InputError(f"slots.{slot}.views", f"at most {MAX_VIEWS_PER_SLOT} views", len(views_spec))
        views = []
        for view_name, view_spec in views_spec.items():
            field = f"slots.{slot}.views.{view_name}"
            view_spec = read_table(view_spec, field)
            unknown_keys(view_spec, {"text", "compatible", "specific"}, field)
            text = view_spec.get("text", "")
            if not isinstance(text, str):
                raise InputError(f"{field}.text", "a string", text)
            views.append(
                View(
                    name=view_name,
                    text=text,
                    compatible=strings(view_spec.get("compatible", []), f"{field}.compatible"),
                    specific=strings(view_spec.get("specific", []), f"{field}.specific"),
                )
            )
        generic = spec.get("generic")
        if not isinstance(generic, str) or generic not in views_spec:
            raise InputError(
                f"slots.{slot}.generic", f"the name of one of its views {sorted(views_spec)}", found(generic)
            )
        vocabularies.append(Vocabulary(slot=slot, views=tuple(views), generic=generic))
    missing = sorted(known - set(names))
    if missing:
        raise InputError("slots", f"a vocabulary for every slot {sorted(known)}", f"none for {missing}")
    return tuple(vocabularies)


def _queries(
    data: dict[str, Any], layout: Layout, vocabularies: tuple[Vocabulary, ...], attribute_names: tuple[str, ...]
) -> tuple[Query, ...]:
    entries = as_list(data.get("queries"), "queries")
    if not entries:
        raise InputError("queries", "at least one query", "none")
    if len(entries) > MAX_QUERIES:
        raise InputError("queries", f"at most {MAX_QUERIES} queries", len(entries))
    by_slot = {v.slot: v for v in vocabularies}
    queries = []
    for index, entry in enumerate(entries):
        entry = read_table(entry, f"queries[{index}]")
        name = string(entry.get("name"), f"queries[{index}].name")
        field = f"queries.{name}"
        unknown_keys(entry, {"name", "text", "reads", "kind", "intent"}, field)
        text = entry.get("text", name)
        if not isinstance(text, str):
            raise InputError(f"{field}.text", "a string", text)
        reads_spec = as_list(entry.get("reads"), f"{field}.reads")
        if not reads_spec:
            raise InputError(f"{field}.reads", "at least one slot read", "[]")
        reads = []
        for j, read_spec in enumerate(reads_spec):
            rfield = f"{field}.reads[{j}]"
            read_spec = read_table(read_spec, rfield)
            unknown_keys(read_spec, {"slot", "positions", "relevance", "charge"}, rfield)
            slot = string(read_spec.get("slot"), f"{rfield}.slot")
            if slot not in by_slot:
                raise InputError(f"{rfield}.slot", f"a declared slot {sorted(by_slot)}", slot)
            positions = _positions(read_spec.get("positions"), layout, f"{rfield}.positions")
            relevance_spec = read_table(read_spec.get("relevance", {}), f"{rfield}.relevance")
            relevance = {}
            for view_name, value in relevance_spec.items():
                if view_name not in by_slot[slot].names:
                    raise InputError(
                        f"{rfield}.relevance.{view_name}",
                        f"a view of slot {slot} {list(by_slot[slot].names)}",
                        view_name,
                    )
                relevance[view_name] = unit_interval_fraction(value, f"{rfield}.relevance.{view_name}")
            charge = None
            if "charge" in read_spec:
                charge = strings(read_spec["charge"], f"{rfield}.charge")
                unknown = sorted(charge - set(attribute_names))
                if unknown:
                    raise InputError(f"{rfield}.charge", f"attributes among {list(attribute_names)}", unknown[0])
            reads.append(SlotRead(slot=slot, positions=positions, relevance=relevance, charge=charge))
        if len({r.slot for r in reads}) != len(reads):
            raise InputError(f"{field}.reads", "each slot at most once per query", [r.slot for r in reads])
        queries.append(Query(name=name, text=text, reads=tuple(reads)))
    return tuple(queries)


def _deployment(data: dict[str, Any]) -> tuple[Selector, CapRule, ControlRule]:
    """The selector, the cap rule (named by the flag `enforce_cap`) and the control, from the
    registry's tables (dpmem_ref.config.registry)."""
    spec = read_table(data.get("deployment", {}), "deployment")
    unknown_keys(spec, {"selector", "enforce_cap", "control"}, "deployment")
    selector = SELECTORS.row(spec.get("selector", SELECTORS.default))
    enforce = spec.get("enforce_cap", True)
    if not isinstance(enforce, bool):
        raise InputError(CAP_RULES.field, "true or false", enforce)
    control = CONTROLS.row(spec.get("control", CONTROLS.default))
    cap_rule = CAP_RULES.row(CAP_RULE_BY_ENFORCE[enforce])
    return selector.build(spec, "deployment"), cap_rule.build(spec, "deployment"), control.build(spec, "deployment")


REUSE_KEYS = {
    "slot",
    "queries",
    "refresh_after",
    "refresh_on",
    "reuse_when_exhausted",
    "memory_change",
    "memory_change_public",
}


def _reuse(data: dict[str, Any], queries: tuple[Query, ...], slots: tuple[str, ...]) -> ReusePolicy:
    """`[[reuse]]` tables (docs/reuse.md): one per slot; `queries` defaults to every query
    that reads the slot. Names are checked here, against the catalogue; the rule checks the
    rest (dpmem_ref.parts.reuse)."""
    entries = as_list(data.get("reuse", []), "reuse")
    names = [q.name for q in queries]
    rules = []
    for index, entry in enumerate(entries):
        entry = read_table(entry, f"reuse[{index}]")
        slot = string(entry.get("slot"), f"reuse[{index}].slot")
        field = f"reuse.{slot}"
        unknown_keys(entry, REUSE_KEYS, field)
        if slot not in slots:
            raise InputError(f"{field}.slot", f"a slot with a vocabulary {sorted(slots)}", slot)
        if "refresh_after" not in entry:
            raise InputError(f"{field}.refresh_after", "a number of turns a released view serves", NOTHING)
        family = entry.get("queries")
        chosen = (
            frozenset(q.name for q in queries if any(r.slot == slot for r in q.reads))
            if family is None
            else strings(family, f"{field}.queries")
        )
        events = strings(entry.get("refresh_on", []), f"{field}.refresh_on")
        for key, group in (("queries", chosen), ("refresh_on", events)):
            unknown = sorted(group - set(names))
            if unknown:
                raise InputError(f"{field}.{key}", f"queries of the catalogue {names}", unknown[0])
        rules.append(
            ReuseRule(
                slot=slot,
                queries=chosen,
                refresh_after=entry["refresh_after"],
                refresh_on=events,
                memory_change=entry.get("memory_change", False),
                memory_change_public=entry.get("memory_change_public", False),
                reuse_when_exhausted=entry.get("reuse_when_exhausted", True),
            )
        )
    return ReusePolicy(tuple(rules))


def _period(data: dict[str, Any]) -> BudgetPeriod | None:
    """`[budget] period = "30 days"`: the caps are renewed per period (docs/reuse.md)."""
    value = read_table(data.get("budget"), "budget").get("period")
    return None if value is None else BudgetPeriod.parse(value, "budget.period")


def interface_from_dict(data: Mapping[str, Any], path: str = "") -> InterfaceFile:
    """Build the interface and named stores from a parsed description."""
    data = dict(data)
    unknown_keys(data, TOP_LEVEL_KEYS, "top level")
    slots = as_list(data.get("positions"), "positions")
    layout = Layout(position_slots=tuple(string(s, f"positions[{i + 1}]") for i, s in enumerate(slots)))
    policy = Policy(layout=layout, attributes=_attributes(data, layout))
    vocabularies = _vocabularies(data, layout)
    selector, cap_rule, control = _deployment(data)
    queries = _queries(data, layout, vocabularies, policy.attribute_names)
    interface = Interface(
        policy=policy,
        vocabularies=vocabularies,
        queries=queries,
        scorer=_scorer(data),
        budget=_budget(data, policy.attribute_names),
        # eps of a selection with an empty charge set (docs/config-format.md, "Uncharged reads").
        uncharged_epsilon=positive_fraction(
            read_table(data.get("budget"), "budget").get("uncharged_epsilon", 1), "budget.uncharged_epsilon"
        ),
        selector=selector,
        cap_rule=cap_rule,
        control=control,
        name=string(data.get("name", Path(path).stem or "interface"), "name"),
        reuse=_reuse(data, queries, tuple(v.slot for v in vocabularies)),
        period=_period(data),
    )
    check_ledger_size(interface)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise InputError("description", "a string", type(description).__name__)
    return InterfaceFile(
        interface=interface,
        stores=read_stores(data, layout),
        description=description if isinstance(description, str) else "",
        path=path,
    )


def load_interface_file(path: str | Path) -> InterfaceFile:
    """Read and validate a TOML interface description (a regular file of at most
    MAX_CONFIG_BYTES, pre-scanned before parsing; see docs/config-format.md, "Limits")."""
    raw = read_bounded(path, MAX_CONFIG_BYTES, "file", "TOML file")
    shown = Path(path)
    data = load_toml(raw, f"file {shown}")  # pre-scanned: bounded work before parsing
    return interface_from_dict(data, path=str(shown))
