"""Interface evolution: every change of an interface file is classified safe or unsafe.

A ledger database remembers the canonical description of the interface it serves
(`dpmem_ref.ledger.fingerprint.interface_description`, plus the per-user caps). When the
runtime opens it with a different interface, `classify(old, new)` lists the changes:

- safe: the ledgers carry over (`LedgerStore.rebind` with the new caps, C5 re-checked);
  Theorem 1's bound per scope still holds over the whole concatenated transcript;
- unsafe: refused (one line naming the first unsafe change) unless the operator starts a
  new budget epoch (`new_epoch="reason"`, recorded with the changes in the database): the
  scopes of the new epoch start at zero ledgers, the old ones stay as evidence, and the
  guarantee across epochs is the sum of their caps (basic composition).

The argument for each rule is in docs/agent.md ("Interface evolution"); `RULES` names
them. The argument shared by the safe ones: Theorem 1 bounds the loss of a transcript by
its pathwise ledger (every charged selection eps-DP for each attribute it charges, C2),
so a change that keeps every past charge counted on the same attributes and keeps each
future selection eps-DP (re-checked by the static check at open) leaves the bound B_a.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import attrs

RULES: dict[str, tuple[bool, str]] = {
    # kind: (safe, one-line reason)
    "position-appended": (True, "a new position was never read, and it joins every group its slot's positions are in"),
    "position-outside-slot-groups": (
        False,
        "a position appended to a slot inside a group must join that group, else the next sensitive item lands unprotected",
    ),
    "position-changed": (False, "an existing position moved, changed slot or vanished: past charges name it"),
    "position-joined-group": (True, "a new position joins I_a: no past release read it, future reads charge a"),
    "existing-position-joined-group": (False, "past releases read that position without charging a"),
    "position-left-group": (False, "withdraws protection from content the ledger's promise covered"),
    "attribute-added": (True, "its group holds only new positions: a fresh ledger at 0 counts every read of them"),
    "attribute-added-over-read-positions": (False, "its group holds positions past releases read uncharged"),
    "attribute-removed": (False, "its ledger and its promise would vanish"),
    "cap-lowered": (True, "L_a <= B'_a < B_a still holds (refused where L_a > B'_a, C5)"),
    "cap-raised": (False, "spends beyond the precommitted cap B_a promised to the user"),
    "route-added": (True, "the worst case is over every strategy over the catalogue; C2 is re-checked"),
    "route-removed": (True, "fewer strategies; past charges stay counted"),
    "route-changed": (True, "read sets and charge sets are public per release; C2 is re-checked at open"),
    "budget-parameter-changed": (True, "eps only sizes future charges; the exact ledger bounds the loss"),
    "budget-rule-changed": (False, "a precommitted plan (C_a) cannot be swapped mid-lifetime"),
    "uncharged-epsilon-changed": (True, "uncharged reads touch no group: adjacency-invariant (Lemma 1)"),
    "part-changed": (False, "the cap rule or the kernel router is part of the contract the ledgers assume"),
    "vocabulary-added": (True, "a new slot's selections are charged like any other"),
    "vocabulary-removed": (False, "the released history holds views of a slot that no longer exists"),
    "view-added": (True, "the EM over a larger fixed vocabulary is still eps-DP with Delta re-proved (C1, C3)"),
    "view-removed": (False, "the released history holds a view that no longer exists"),
    "generic-changed": (False, "the fallback of past refusals would no longer be the generic view (C1)"),
    "sensitivity-raised": (True, "a larger Delta only flattens the EM: still eps-DP"),
    "sensitivity-lowered": (False, "a smaller Delta makes each selection spend more than its eps"),
    "user-cap-lowered": (True, "as cap-lowered, for the per-user scope"),
    "user-cap-raised": (False, "as cap-raised, for the per-user scope"),
    "user-scope-added": (False, "the new per-user ledger would miss the charges already made"),
    "user-scope-removed": (False, "withdraws the bound on colluding applications"),
    "shares-introduced": (False, "scopes spent under the interface's caps may exceed their new shares"),
    "shares-removed": (False, "each application would get B_a again: the per-user bound no longer holds"),
    "share-added": (True, "a new application's scope starts at 0; the shares still sum to at most U_a"),
    "share-removed": (False, "its spending still counts towards U_a, which later shares would not leave room for"),
    "share-lowered": (True, "as cap-lowered, for one application's share"),
    "share-raised": (False, "as cap-raised, for one application's share"),
    "budget-period-changed": (False, "a period added, changed or removed moves the budget to other scopes: each would start fresh"),
    "unknown-record": (False, "the database holds no interface record to compare with"),
}


@attrs.frozen
class Change:
    kind: str
    detail: str

    @property
    def safe(self) -> bool:
        return RULES[self.kind][0]

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "detail": self.detail, "safe": self.safe, "reason": RULES[self.kind][1]}


def _by(items: Sequence[Mapping[str, Any]], key: str) -> dict[str, Mapping[str, Any]]:
    return {str(item[key]): item for item in items}


def _q(text: str) -> Fraction:
    return Fraction(text)


def classify(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[Change]:
    """Every change from record `old` to record `new` ({"interface": ..., "user_caps": ...})."""
    if old is None or old.get("interface", {}).get("version") != new["interface"].get("version"):
        return [Change("unknown-record", "no comparable interface record")]
    a, b = old["interface"], new["interface"]
    out: list[Change] = []
    old_positions, new_positions = list(a["positions"]), list(b["positions"])
    appended: set[int] = set()
    if new_positions[: len(old_positions)] == old_positions:
        appended = set(range(len(old_positions) + 1, len(new_positions) + 1))
        out += [Change("position-appended", f"position {p} ({new_positions[p - 1]})") for p in sorted(appended)]
    else:
        out.append(Change("position-changed", "the existing positions differ"))
    out += _attributes(_by(a["attributes"], "name"), _by(b["attributes"], "name"), appended)
    out += _groups_kept_whole(old_positions, new_positions, appended, b["attributes"])
    out += _routes(_by(a["routes"], "query"), _by(b["routes"], "query"))
    if a["budget"] != b["budget"]:
        kind = a["budget"].get("type") == b["budget"].get("type")
        out.append(Change("budget-parameter-changed" if kind else "budget-rule-changed", "budget"))
    if a["uncharged_epsilon"] != b["uncharged_epsilon"]:
        out.append(Change("uncharged-epsilon-changed", "budget.uncharged_epsilon"))
    for part in ("cap_rule", "router"):
        if a[part] != b[part]:
            out.append(Change("part-changed", part))
    out += _slots(_by(a["slots"], "slot"), _by(b["slots"], "slot"))
    out += _user_caps(old.get("user_caps"), new.get("user_caps"))
    out += _shares(old.get("shares"), new.get("shares"))
    if old.get("period") != new.get("period"):
        out.append(Change("budget-period-changed", f"budget.period ({old.get('period')} -> {new.get('period')})"))
    return out


def _shares(old: Mapping[str, Mapping[str, str]] | None, new: Mapping[str, Mapping[str, str]] | None) -> list[Change]:
    if old is None and new is None:
        return []
    if old is None:
        return [Change("shares-introduced", "scopes.shares")]
    if new is None:
        return [Change("shares-removed", "scopes.shares")]
    out = [Change("share-added", f"share of {app}") for app in sorted(set(new) - set(old))]
    out += [Change("share-removed", f"share of {app}") for app in sorted(set(old) - set(new))]
    for app in sorted(set(old) & set(new)):
        for name in sorted(set(old[app]) | set(new[app])):
            before, after = old[app].get(name), new[app].get(name)
            if before is None or after is None:
                continue  # an attribute added or removed: classified with the attributes
            if _q(after) != _q(before):
                kind = "share-lowered" if _q(after) < _q(before) else "share-raised"
                out.append(Change(kind, f"share of {app}, {name}: {before} -> {after}"))
    return out


def _groups_kept_whole(
    old_positions: Sequence[str], new_positions: Sequence[str], appended: set[int], attributes: Sequence[Mapping[str, Any]]
) -> list[Change]:
    """Growth keeps groups whole: a position appended to a slot joins every group that holds
    one of the slot's existing positions (a slot's items are placed at any free position, so a
    group that covers part of a slot protects the text the slot holds only if it grows with it)."""
    out = []
    for p in sorted(appended):
        slot = new_positions[p - 1]
        existing = {i for i, name in enumerate(old_positions, start=1) if name == slot}
        for attribute in attributes:
            group = set(attribute["group"])
            if group & existing and p not in group:
                out.append(
                    Change("position-outside-slot-groups", f"position {p} of slot {slot} is outside group {attribute['name']}")
                )
    return out


def _attributes(old: Mapping[str, Any], new: Mapping[str, Any], appended: set[int]) -> list[Change]:
    out = []
    for name in sorted(set(old) - set(new)):
        out.append(Change("attribute-removed", name))
    for name in sorted(set(new) - set(old)):
        fresh = set(new[name]["group"]) <= appended
        out.append(Change("attribute-added" if fresh else "attribute-added-over-read-positions", name))
    for name in sorted(set(old) & set(new)):
        before, after = set(old[name]["group"]), set(new[name]["group"])
        for p in sorted(after - before):
            kind = "position-joined-group" if p in appended else "existing-position-joined-group"
            out.append(Change(kind, f"position {p} joins {name}"))
        for p in sorted(before - after):
            out.append(Change("position-left-group", f"position {p} leaves {name}"))
        cap_before, cap_after = _q(old[name]["cap"]), _q(new[name]["cap"])
        if cap_after != cap_before:
            kind = "cap-lowered" if cap_after < cap_before else "cap-raised"
            out.append(Change(kind, f"{name}: {old[name]['cap']} -> {new[name]['cap']}"))
    return out


def _routes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    out = [Change("route-added", name) for name in sorted(set(new) - set(old))]
    out += [Change("route-removed", name) for name in sorted(set(old) - set(new))]
    out += [Change("route-changed", name) for name in sorted(set(old) & set(new)) if old[name] != new[name]]
    return out


def _slots(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    out = [Change("vocabulary-added", name) for name in sorted(set(new) - set(old))]
    out += [Change("vocabulary-removed", name) for name in sorted(set(old) - set(new))]
    for name in sorted(set(old) & set(new)):
        before, after = old[name], new[name]
        out += [Change("view-added", f"{name}.{v}") for v in after["views"] if v not in before["views"]]
        out += [Change("view-removed", f"{name}.{v}") for v in before["views"] if v not in after["views"]]
        if before["generic"] != after["generic"]:
            out.append(Change("generic-changed", name))
        delta_before, delta_after = _q(before["sensitivity"]), _q(after["sensitivity"])
        if delta_after != delta_before:
            kind = "sensitivity-raised" if delta_after > delta_before else "sensitivity-lowered"
            out.append(Change(kind, name))
    return out


def _user_caps(old: Mapping[str, str] | None, new: Mapping[str, str] | None) -> list[Change]:
    if old is None and new is None:
        return []
    if old is None:
        return [Change("user-scope-added", "scopes.user_caps")]
    if new is None:
        return [Change("user-scope-removed", "scopes.user_caps")]
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in new or name not in old:
            out.append(Change("user-scope-added" if name not in old else "user-scope-removed", f"user cap {name}"))
        elif _q(new[name]) != _q(old[name]):
            kind = "user-cap-lowered" if _q(new[name]) < _q(old[name]) else "user-cap-raised"
            out.append(Change(kind, f"user cap {name}: {old[name]} -> {new[name]}"))
    return out
