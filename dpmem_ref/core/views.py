"""Public view vocabularies (C1): per slot, a fixed set of response-conditioning modes.

A view says *how* to answer ("favour low-glycemic meals"), never a user fact. Each
vocabulary contains its fixed generic view v_g^gen and is shared by adjacent stores.
"""

from __future__ import annotations

import attrs

from dpmem_ref.core.errors import ContractViolation, InputError

MAX_VIEWS_PER_SLOT = 256


@attrs.frozen(cache_hash=True)
class View:
    """A public view. `compatible`/`specific` are the evidence tags the linear scorer reads."""

    name: str
    text: str = ""
    compatible: frozenset[str] = frozenset()
    specific: frozenset[str] = frozenset()


@attrs.frozen(cache_hash=True)
class Vocabulary:
    """V_g: the views of one slot, including its generic view (C1)."""

    slot: str
    views: tuple[View, ...]
    generic: str
    _names: tuple[str, ...] = attrs.field(init=False, repr=False, eq=False, hash=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_names", tuple(v.name for v in self.views))
        if not self.views:
            raise InputError(f"slots.{self.slot}.views", "a non-empty vocabulary", "no views")
        if len(self.views) > MAX_VIEWS_PER_SLOT:
            raise InputError(f"slots.{self.slot}.views", f"at most {MAX_VIEWS_PER_SLOT} views", len(self.views))
        names = [v.name for v in self.views]
        if len(set(names)) != len(names):
            raise InputError(f"slots.{self.slot}.views", "unique view names", names)
        if self.generic not in names:
            raise ContractViolation("C1.generic_not_in_vocabulary", f"slot {self.slot}: generic view {self.generic!r} is not in its vocabulary")

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def view(self, name: str) -> View:
        for view in self.views:
            if view.name == name:
                return view
        raise InputError(f"slots.{self.slot}", f"one of the views {list(self.names)}", name)
