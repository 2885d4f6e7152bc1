"""Deterministic generated interfaces for cross-checking the exact engine's searches.

`interface_case(seed)` builds a small interface description (a dict for
`config.interface_from_dict`) and a pair of stores from one integer seed: 2-3 slots,
1-4 attributes with overlapping groups, online or preallocated budgets, one- and two-slot
queries, reads that are charged as Eq. (4) says, over-charged, under-charged (C2) or
uncharged, an argmax selector (C3) or no cap (C5) now and then, and store pairs that differ
in one group or several (Corollary 1 pairs). Nothing is random beyond the seed.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

TAGS = ("t1", "t2", "t3")
CAPS = (Fraction(1), Fraction(2), Fraction(3, 2), Fraction(4))


def vocabularies(rng: random.Random, slots: list[str], most_views: int) -> dict[str, Any]:
    """Per slot: its generic view and 1..most_views tagged views (the same draws, in order, as
    each generator made inline)."""
    slot_table: dict[str, Any] = {}
    for slot in slots:
        views: dict[str, Any] = {f"{slot}-generic": {}}
        for v in range(rng.randint(1, most_views)):
            views[f"{slot}-v{v}"] = {"compatible": rng.sample(TAGS, rng.randint(1, 2))}
        slot_table[slot] = {"generic": f"{slot}-generic", "views": views}
    return slot_table


def interface_case(seed: int) -> tuple[dict[str, Any], str, str]:
    rng = random.Random(seed)
    names = [f"a{i}" for i in range(rng.randint(1, 4))]
    separable = len(names) > 1 and rng.random() < 0.4
    if separable:  # one slot per attribute (its group) and a public slot: separable ledgers
        slots = [f"s{i}" for i in range(len(names) + 1)]
        positions = [slot for slot in slots for _ in range(rng.randint(1, 2))]
    else:
        slots = [f"s{i}" for i in range(rng.randint(2, 3))]
        positions = slots + [rng.choice(slots) for _ in range(rng.randint(1, 4))]  # every slot holds a position
        rng.shuffle(positions)
    size = len(positions)
    if separable:
        groups = [[p for p in range(1, size + 1) if positions[p - 1] == slots[i]] for i in range(len(names))]
    else:
        groups = [sorted(rng.sample(range(1, size + 1), rng.randint(1, max(1, size // 2)))) for _ in names]
    attributes = {name: {"group": group, "cap": rng.choice(CAPS)} for name, group in zip(names, groups, strict=True)}
    if rng.random() < 0.3:
        budget: dict[str, Any] = {"rule": "preallocated", "plan": {name: rng.randint(2, 4) for name in names}}
    else:
        budget = {"rule": "online", "K": rng.randint(2, 3)}
    slot_table = vocabularies(rng, slots, most_views=2)
    queries = []
    for q in range(rng.randint(4, 6) if separable else rng.randint(2, 4)):
        reads = []
        for slot in rng.sample(slots, 2 if rng.random() < 0.35 else 1):
            mine = [p for p in range(1, size + 1) if positions[p - 1] == slot]
            read: dict[str, Any] = {"slot": slot, "positions": sorted(rng.sample(mine, rng.randint(1, len(mine))))}
            touched = sorted(n for n in names if set(read["positions"]) & set(attributes[n]["group"]))
            style = rng.random()
            if style < 0.12 and touched:
                read["charge"] = touched[1:]  # under-charged (C2)
            elif style < 0.22:
                read["charge"] = sorted(set(touched) | {rng.choice(names)})  # over-charged
            elif style < 0.28:
                read["charge"] = []  # uncharged
            views = [v for v in slot_table[slot]["views"] if not v.endswith("generic")]
            read["relevance"] = {v: str(Fraction(rng.randint(0, 4), 4)) for v in views}
            reads.append(read)
        queries.append({"name": f"q{q}", "reads": reads})
    if rng.random() < 0.6:  # a pass query (reads one position, charged to nothing it touches)
        queries.append({"name": "pass", "reads": [{"slot": slots[0], "positions": [positions.index(slots[0]) + 1], "charge": []}]})
    store = {str(p): rng.sample(TAGS, rng.randint(0, 2)) for p in range(1, size + 1)}
    other = dict(store)
    grouped = sorted({p for name in names for p in attributes[name]["group"]})
    for p in rng.sample(grouped, rng.randint(1, len(grouped))):
        other[str(p)] = rng.sample(TAGS, rng.randint(0, 2))
    deployment: dict[str, Any] = {"control": rng.choice(["fallback", "fallback", "none"])}
    roll = rng.random()
    if roll < 0.08:
        deployment["selector"] = "argmax"
    elif roll < 0.16:
        deployment["enforce_cap"] = False
    data = {
        "name": f"generated-{seed}",
        "positions": positions,
        "attributes": attributes,
        "budget": budget,
        "scorer": {"kind": "linear", "weights": {"r": "2/5", "c": "2/5", "s": "1/5"}, "sensitivity": "3/5"},
        "slots": slot_table,
        "queries": queries,
        "stores": {"M": store, "M_prime": other},
        "deployment": deployment,
    }
    return data, "M", "M_prime"


def lattice_case(seed: int, large: bool = False) -> tuple[dict[str, Any], str, str, int]:
    """A deployment in the shape the lattice programme (analysis/lattice.py) solves, and a
    horizon: one-slot queries, a fallback or no control, a pass query, 1-3 attributes with
    overlapping groups (coupled charges), online or preallocated budgets; now and then an
    over-charged read, an uncharged differing read (a free step: the lattice must decline)
    or a query whose eps exceeds a cap. large=True: preallocated plans with C_a of 16-64
    (one attribute, or two with the second's plan small) and horizons up to 256."""
    rng = random.Random(10_000 + seed)
    names = [f"a{i}" for i in range(1 if large and rng.random() < 0.4 else rng.randint(1, 2 if large else 3))]
    slots = [f"s{i}" for i in range(rng.randint(2, 3))]
    positions = slots + [rng.choice(slots) for _ in range(rng.randint(2, 5))]
    rng.shuffle(positions)
    size = len(positions)
    groups = [sorted(rng.sample(range(1, size + 1), rng.randint(1, max(1, size // 2)))) for _ in names]
    attributes = {name: {"group": group, "cap": rng.choice(CAPS)} for name, group in zip(names, groups, strict=True)}
    if large:
        plan = {name: rng.randint(16, 64) if i == 0 else rng.randint(1, 6) for i, name in enumerate(names)}
        budget: dict[str, Any] = {"rule": "preallocated", "plan": plan}
    elif rng.random() < 0.5:
        budget = {"rule": "preallocated", "plan": {name: rng.randint(1, 4) for name in names}}
    else:
        budget = {"rule": "online", "K": rng.randint(1, 3)}
    slot_table = vocabularies(rng, slots, most_views=3)
    queries = []
    for q in range(rng.randint(2, 6)):
        slot = rng.choice(slots)
        mine = [p for p in range(1, size + 1) if positions[p - 1] == slot]
        read: dict[str, Any] = {"slot": slot, "positions": sorted(rng.sample(mine, rng.randint(1, len(mine))))}
        touched = sorted(n for n in names if set(read["positions"]) & set(attributes[n]["group"]))
        style = rng.random()
        if style < 0.1:
            read["charge"] = sorted(set(touched) | {rng.choice(names)})  # over-charged
        elif style < 0.14:
            read["charge"] = []  # uncharged
        views = [v for v in slot_table[slot]["views"] if not v.endswith("generic")]
        read["relevance"] = {v: str(Fraction(rng.randint(0, 4), 4)) for v in views}
        queries.append({"name": f"q{q}", "reads": [read]})
    # The pass: a position outside every group if there is one, else an uncharged read of a
    # position the stores agree on (chosen below).
    free = [p for p in range(1, size + 1) if not any(p in g for g in groups)]
    grouped = sorted({p for g in groups for p in g})
    differing = rng.sample(grouped, rng.randint(1, len(grouped)))
    quiet = free[0] if free else next((p for p in range(1, size + 1) if p not in differing), None)
    if quiet is None:
        differing = differing[1:] or differing
        quiet = next(p for p in range(1, size + 1) if p not in differing)
    queries.append({"name": "pass", "reads": [{"slot": positions[quiet - 1], "positions": [quiet], "charge": []}]})
    store = {str(p): rng.sample(TAGS, 1) if rng.random() < 0.3 else [] for p in range(1, size + 1)}
    other = dict(store)
    for p in differing:  # evidence under M, less or other evidence under M_prime
        store[str(p)] = rng.sample(TAGS, rng.randint(1, 2))
        changed = rng.sample(TAGS, rng.randint(0, 1))
        other[str(p)] = [] if set(changed) == set(store[str(p)]) else changed
    data = {
        "name": f"lattice-{'large-' if large else ''}{seed}",
        "positions": positions,
        "attributes": attributes,
        "budget": budget,
        "scorer": {"kind": "linear", "weights": {"r": "2/5", "c": "2/5", "s": "1/5"}, "sensitivity": "3/5"},
        "slots": slot_table,
        "queries": queries,
        "stores": {"M": store, "M_prime": other},
        "deployment": {"control": rng.choice(["fallback", "none"])},
    }
    horizon = rng.randint(64, 256) if large else rng.randint(4, 12)
    return data, "M", "M_prime", horizon


def coupled_case(attributes: int, K: int, two_slot: bool = False) -> tuple[dict[str, Any], str, str]:
    """A chain of `attributes` coupled attributes: attribute i protects positions i and
    i + 1 (so each differing read charges two neighbours), cap 1 each, online K; one query
    per chained position, read in three slots round robin, plus a pass query over a public
    position. The stores differ at every chained position (a Corollary 1 pair). The ledger
    states reachable are far fewer than the product of the levels ((K + 1)^A): a read
    raises two neighbouring ledgers at once. two_slot=True pairs the queries into two-slot
    turns (consecutive positions sit in different slots)."""
    slots = ["s0", "s1", "s2"]
    chained = attributes + 1
    positions = [slots[p % 3] for p in range(chained)] + ["s0"]  # the last position is public
    groups = {f"a{i}": [i + 1, i + 2] for i in range(attributes)}
    slot_table: dict[str, Any] = {}
    for slot in slots:
        views: dict[str, Any] = {f"{slot}-generic": {}}
        for v, tags in enumerate((["t1"], ["t2"], ["t1", "t3"])):
            views[f"{slot}-v{v}"] = {"compatible": tags}
        slot_table[slot] = {"generic": f"{slot}-generic", "views": views}
    queries: list[dict[str, Any]] = []
    for p in range(1, chained + 1):
        slot = positions[p - 1]
        relevance = {f"{slot}-v{v}": str(Fraction((p + v) % 4 + 1, 4)) for v in range(3)}
        queries.append({"name": f"q{p}", "reads": [{"slot": slot, "positions": [p], "relevance": relevance}]})
    if two_slot:
        queries = [
            {"name": f"{a['name']}+{b['name']}", "reads": a["reads"] + b["reads"]}
            for a, b in zip(queries[0::2], queries[1::2], strict=False)
        ] + ([queries[-1]] if len(queries) % 2 else [])
    public = len(positions)
    queries.append({"name": "pass", "reads": [{"slot": "s0", "positions": [public], "charge": []}]})
    store = {str(p): (["t1"] if p % 2 else ["t1", "t3"]) for p in range(1, chained + 1)}
    store[str(public)] = ["t2"]
    other = {str(p): [] for p in range(1, chained + 1)}
    other[str(public)] = ["t2"]
    data = {
        "name": f"coupled-{attributes}a-K{K}{'-two-slot' if two_slot else ''}",
        "positions": positions,
        "attributes": {name: {"group": group, "cap": 1} for name, group in groups.items()},
        "budget": {"rule": "online", "K": K},
        "scorer": {"kind": "linear", "weights": {"r": "2/5", "c": "2/5", "s": "1/5"}, "sensitivity": "3/5"},
        "slots": slot_table,
        "queries": queries,
        "stores": {"M": store, "M_prime": other},
        "deployment": {"control": "fallback"},
    }
    return data, "M", "M_prime"
