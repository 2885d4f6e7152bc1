"""An independent check of a SQLite ledger after a load of served turns: plain `sqlite3` and
exact Fractions, no dpmem code (the chain alone is verified by the ledger's own verifier).

- 0 overruns: in every scope the admitted charges, summed in commit order, never pass the cap,
  and the stored ledger equals that sum (per-user scopes: the sum over the user's app scopes);
- 0 uncharged releases: every view a client received as a charged release ("released" in the
  control) has an admitted, charged release row of that view in that client's scope; every
  view received as a fallback is the slot's generic view.
"""

from __future__ import annotations

import json
import sqlite3
import tomllib
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.serve.live import AGENT


def _interface() -> dict[str, Any]:
    return tomllib.loads((AGENT.parent / "interface.toml").read_text())


def charged_slot(slot: str) -> bool:
    data = _interface()
    positions = {i + 1 for i, s in enumerate(data["positions"]) if s == slot}
    return any(positions & set(spec["group"]) for spec in data["attributes"].values())


def sqlite_check(path: Path, received: list[tuple[str, str, dict[str, Any]]]) -> dict[str, int]:
    """received: (user, app, the turn's JSON answer with `control` and `views`)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        ledgers = connection.execute("SELECT user, interaction, attribute, spent, cap FROM ledgers").fetchall()
        rows = connection.execute(
            "SELECT user, interaction, slot, view, admitted, charge_set, epsilon FROM releases ORDER BY seq"
        ).fetchall()
    spent = {(u, i, a): Fraction(s) for u, i, a, s, _ in ledgers}
    caps = {(u, i, a): Fraction(c) for u, i, a, _, c in ledgers}
    running: Counter[tuple[str, str, str]] = Counter()
    overruns = 0
    admitted: Counter[tuple[str, str, str, str]] = Counter()
    for user, interaction, slot, view, was_admitted, charge_set, epsilon in rows:
        if not was_admitted:
            continue
        charged = json.loads(charge_set)
        if charged:
            admitted[(user, interaction, slot, view)] += 1
        for attribute in charged:
            for scope in (interaction, interaction.split(":app:")[0] + ":user"):
                if (user, scope, attribute) in caps:
                    running[(user, scope, attribute)] += Fraction(epsilon)
                    overruns += running[(user, scope, attribute)] > caps[(user, scope, attribute)]
    for key, value in spent.items():
        overruns += value > caps[key]
        assert value == running.get(key, Fraction(0)), f"stored ledger {key} is not the sum of its committed charges"
    generic = {slot: str(spec["generic"]) for slot, spec in _interface()["slots"].items()}
    got: Counter[tuple[str, str, str, str]] = Counter()
    uncharged = 0
    for user, app, answer in received:
        if answer["control"] is None:
            continue
        views = {v["slot"]: v["view"] for v in answer["views"]}
        for slot, status in answer["control"]:
            if status == "released" and charged_slot(slot):
                got[(user, f"e0:app:{app}", slot, views[slot])] += 1
            elif status == "fallback":
                uncharged += views[slot] != generic[slot]
    uncharged += sum(max(0, count - admitted[key]) for key, count in got.items())
    return {"overruns": overruns, "uncharged": uncharged, "charged_received": sum(got.values()), "rows": len(rows)}


def chain_verifies(path: Path) -> bool:
    from dpmem_ref.ledger.backup import verify_sqlite

    report = verify_sqlite(path)
    return bool(report.ok)
