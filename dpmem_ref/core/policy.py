"""The protection policy: memory layout, protected attributes, stores and adjacency.

Paper, "Problem Definition": a store M = (m_1..m_n) over a fixed layout of positions,
each assigned to a policy-defined slot; each protected attribute a has a group
I_a of positions (groups may overlap) and a precommitted cap B_a. Two stores are
adjacent for a (M ~_a M') when they share the layout and agree outside I_a.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from types import MappingProxyType

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import check_int

MAX_POSITIONS = 4096
MAX_ATTRIBUTES = 64


@attrs.frozen
class Layout:
    """Positions 1..n with their slots: public metadata shared by adjacent stores."""

    position_slots: tuple[str, ...]

    def __attrs_post_init__(self) -> None:
        if not self.position_slots:
            raise InputError("positions", "at least one position", "an empty list")
        if len(self.position_slots) > MAX_POSITIONS:
            raise InputError("positions", f"at most {MAX_POSITIONS} positions", len(self.position_slots))
        for index, slot in enumerate(self.position_slots, start=1):
            if not isinstance(slot, str) or not slot:
                raise InputError(f"positions[{index}]", "a slot name", slot)

    @property
    def size(self) -> int:
        return len(self.position_slots)

    @property
    def slots(self) -> tuple[str, ...]:
        """Slots in order of first appearance."""
        return tuple(dict.fromkeys(self.position_slots))

    def slot_of(self, position: int) -> str:
        self.check_position(position, "position")
        return self.position_slots[position - 1]

    def positions_of(self, slot: str) -> frozenset[int]:
        return frozenset(i for i, s in enumerate(self.position_slots, start=1) if s == slot)

    def check_position(self, position: object, field: str) -> int:
        return check_int(position, field, 1, self.size, expected=f"a position in 1..{self.size}")


@attrs.frozen
class Attribute:
    """A protected attribute a with its group I_a and precommitted cap B_a > 0 (Eq. 3)."""

    name: str
    group: frozenset[int]
    cap: Fraction

    def __attrs_post_init__(self) -> None:
        # B_a > 0: a zero cap admits no charged selection and makes eps = 0 (C3 needs eps > 0).
        if not isinstance(self.cap, Fraction) or self.cap <= 0:
            raise InputError(f"attributes.{self.name}.cap", "a positive exact rational", self.cap)
        if not self.group:
            raise InputError(f"attributes.{self.name}.group", "a non-empty list of positions", "[]")


@attrs.frozen
class Policy:
    """Layout plus protected attributes: everything Gamma* (Eq. 4) and ~_a need."""

    layout: Layout
    attributes: tuple[Attribute, ...]
    _caps: Mapping[str, Fraction] = attrs.field(init=False, repr=False, eq=False, hash=False)
    _names: tuple[str, ...] = attrs.field(init=False, repr=False, eq=False, hash=False)
    _cap_items: tuple[tuple[str, Fraction], ...] = attrs.field(init=False, repr=False, eq=False, hash=False)
    _gamma_memo: dict[frozenset[int], frozenset[str]] = attrs.field(
        init=False, repr=False, eq=False, hash=False, factory=dict
    )

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_caps", MappingProxyType({a.name: a.cap for a in self.attributes}))
        object.__setattr__(self, "_names", tuple(a.name for a in self.attributes))
        object.__setattr__(self, "_cap_items", tuple((a.name, a.cap) for a in self.attributes))
        names = [a.name for a in self.attributes]
        if len(set(names)) != len(names):
            raise InputError("attributes", "unique attribute names", names)
        if len(names) > MAX_ATTRIBUTES:
            raise InputError("attributes", f"at most {MAX_ATTRIBUTES} attributes", len(names))
        for attribute in self.attributes:
            for position in sorted(attribute.group):
                self.layout.check_position(position, f"attributes.{attribute.name}.group")

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return self._names

    def attribute(self, name: str) -> Attribute:
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        raise InputError("attribute", f"one of {list(self.attribute_names)}", name)

    @property
    def caps(self) -> Mapping[str, Fraction]:
        """B_a by attribute (read-only)."""
        return self._caps

    @property
    def cap_items(self) -> tuple[tuple[str, Fraction], ...]:
        """(a, B_a) in policy order."""
        return self._cap_items

    def gamma_star(self, read_set: Iterable[int]) -> frozenset[str]:
        """Eq. (4): every attribute whose protected group intersects the read set."""
        reads = frozenset(read_set)
        found = self._gamma_memo.get(reads)
        if found is None:
            found = frozenset(a.name for a in self.attributes if a.group & reads)
            if len(self._gamma_memo) < 100_000:  # bounded: a pure function of the frozen policy
                self._gamma_memo[reads] = found
        return found


@attrs.frozen(cache_hash=True)
class MemoryItem:
    """The content m_i at one position: evidence tags (what scorers read) and text.

    Raw memory is private: the repr shows neither tags nor text.
    """

    tags: frozenset[str] = attrs.field(factory=frozenset, repr=False)
    text: str = attrs.field(default="", repr=False)

    def __repr__(self) -> str:
        return "MemoryItem(<private>)"


EMPTY_ITEM = MemoryItem()


@attrs.frozen(repr=False)
class Store:
    """A memory store M over a layout. Trusted: only scorers read it, at the read set."""

    layout: Layout
    items: tuple[MemoryItem, ...]
    name: str = ""

    def __attrs_post_init__(self) -> None:
        if len(self.items) != self.layout.size:
            raise InputError(f"stores.{self.name or '?'}", f"{self.layout.size} items", len(self.items))

    @classmethod
    def from_mapping(cls, layout: Layout, contents: Mapping[int, MemoryItem], name: str = "") -> Store:
        for position in contents:
            layout.check_position(position, f"stores.{name or '?'}")
        items = tuple(contents.get(i, EMPTY_ITEM) for i in range(1, layout.size + 1))
        return cls(layout=layout, items=items, name=name)

    def read(self, read_set: Iterable[int]) -> tuple[MemoryItem, ...]:
        """M_R: the items at the read set, in position order."""
        return tuple(self.items[i - 1] for i in sorted(read_set))

    def replace(self, contents: Mapping[int, MemoryItem], name: str = "") -> Store:
        items = list(self.items)
        for position, item in contents.items():
            items[self.layout.check_position(position, "position") - 1] = item
        return Store(layout=self.layout, items=tuple(items), name=name)

    def __repr__(self) -> str:
        return f"Store(name={self.name!r}, positions={self.layout.size}, <private contents>)"


def differing_positions(store_a: Store, store_b: Store) -> frozenset[int]:
    """D = {i : m_i != m'_i} (Corollary 1); the stores must share the layout."""
    if store_a.layout != store_b.layout:
        raise InputError("stores", "two stores with the same layout (same scaffold)", "different layouts")
    return frozenset(i for i, (x, y) in enumerate(zip(store_a.items, store_b.items, strict=True), start=1) if x != y)


def adjacent_attributes(policy: Policy, store_a: Store, store_b: Store) -> tuple[str, ...]:
    """Every a with M ~_a M' (same layout, equal outside I_a)."""
    differing = differing_positions(store_a, store_b)
    return tuple(a.name for a in policy.attributes if differing <= a.group)


def is_adjacent(policy: Policy, attribute: str, store_a: Store, store_b: Store) -> bool:
    return differing_positions(store_a, store_b) <= policy.attribute(attribute).group


def require_adjacent(policy: Policy, attribute: str, store_a: Store, store_b: Store) -> None:
    differing = differing_positions(store_a, store_b)
    outside = sorted(differing - policy.attribute(attribute).group)
    if outside:
        raise InputError(
            f"stores {store_a.name or 'A'}/{store_b.name or 'B'}",
            f"stores equal outside I_{attribute}",
            f"differences at positions {outside}",
        )
