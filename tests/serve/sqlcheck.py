"""An independent check of a ledger after a load of served turns: plain SQL and exact Fractions,
no dpmem code (the chain alone is verified by the ledger's own verifier). `tally` reads the rows
of either store (SQLite here, PostgreSQL in test_serve_replicas) and the agent file's scopes.

- 0 overruns: every ledger row is an application scope (user, "e0:app:APP") whose stored cap
  is APP's precommitted share (from the agent file, read with tomllib); in every scope the
  admitted charges, summed in commit order, never pass the share, and the stored ledger equals
  that sum; per user, the charges of all application scopes, summed in commit order, never pass
  the per-user cap U_a;
- 0 uncharged releases: every view a client received as a charged release ("released" in the
  control) has an admitted, charged release row of that view in that client's scope; every
  view received as a fallback is the slot's generic view.
"""

from __future__ import annotations

import json
import re
import sqlite3
import tomllib
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.serve.live import AGENT, scopes_of

APP_SCOPE = re.compile(r"e0:app:([A-Za-z0-9][A-Za-z0-9._-]*)")


def _interface() -> dict[str, Any]:
    return tomllib.loads((AGENT.parent / "interface.toml").read_text())


def charged_slot(slot: str) -> bool:
    data = _interface()
    positions = {i + 1 for i, s in enumerate(data["positions"]) if s == slot}
    return any(positions & set(spec["group"]) for spec in data["attributes"].values())


def tally(
    ledgers: Sequence[tuple[Any, ...]],
    rows: Sequence[tuple[Any, ...]],
    received: list[tuple[str, str, dict[str, Any]]],
    agent: Path,
) -> dict[str, int]:
    """ledgers: (user, interaction, attribute, spent, cap); rows: (user, interaction, slot, view,
    admitted, charge_set, epsilon) in commit order; received: (user, app, the turn's JSON answer
    with `control` and `views`); agent: the agent file the server ran with."""
    user_caps, shares = scopes_of(agent)
    spent = {(u, i, a): Fraction(s) for u, i, a, s, _ in ledgers}
    caps = {(u, i, a): Fraction(c) for u, i, a, _, c in ledgers}
    for (user, interaction, attribute), cap in caps.items():
        found = APP_SCOPE.fullmatch(interaction)
        assert found is not None, f"a ledger row outside the application scopes: {(user, interaction)}"
        assert cap == shares[found.group(1)][attribute], f"the cap of {(user, interaction, attribute)} is not its share"
    running: Counter[tuple[str, str, str]] = Counter()
    per_user: Counter[tuple[str, str]] = Counter()
    overruns = 0
    admitted: Counter[tuple[str, str, str, str]] = Counter()
    for user, interaction, slot, view, was_admitted, charge_set, epsilon in rows:
        if not was_admitted:
            continue
        charged = json.loads(charge_set)
        if charged:
            admitted[(user, interaction, slot, view)] += 1
        for attribute in charged:
            running[(user, interaction, attribute)] += Fraction(epsilon)
            overruns += running[(user, interaction, attribute)] > caps[(user, interaction, attribute)]
            per_user[(user, attribute)] += Fraction(epsilon)  # sequential composition over applications
            overruns += per_user[(user, attribute)] > user_caps[attribute]
    for key, value in spent.items():
        overruns += value > caps[key]
        assert value == running.get(key, Fraction(0)), f"stored ledger {key} is not the sum of its committed charges"
    generic = {slot: str(spec["generic"]) for slot, spec in _interface()["slots"].items()}
    got: Counter[tuple[str, str, str, str]] = Counter()
    uncharged = 0
    for user, app, answer in received:
        if answer["control"] is None:  # no match: generic views of every slot, nothing read
            continue
        views = {v["slot"]: v["view"] for v in answer["views"]}
        for slot, status in answer["control"]:
            if status == "released" and charged_slot(slot):
                got[(user, f"e0:app:{app}", slot, views[slot])] += 1
            elif status == "fallback":
                uncharged += views[slot] != generic[slot]
    uncharged += sum(max(0, count - admitted[key]) for key, count in got.items())
    return {"overruns": overruns, "uncharged": uncharged, "charged_received": sum(got.values()), "rows": len(rows)}


def sqlite_check(path: Path, received: list[tuple[str, str, dict[str, Any]]], agent: Path) -> dict[str, int]:
    """`tally` over a SQLite ledger file (opened read-only)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        ledgers = connection.execute("SELECT user, interaction, attribute, spent, cap FROM ledgers").fetchall()
        rows = connection.execute(
            "SELECT user, interaction, slot, view, admitted, charge_set, epsilon FROM releases ORDER BY seq"
        ).fetchall()
    return tally(ledgers, rows, received, agent)


def chain_verifies(path: Path) -> bool:
    from dpmem_ref.ledger.backup import verify_sqlite

    report = verify_sqlite(path)
    return bool(report.ok)
