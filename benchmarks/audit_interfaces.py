"""Deterministic larger interfaces for `bench_audit.py`: the evaluation configuration
(`examples/evaluation.toml`: 28 positions, 6 slots, 21 query families) with more protected
attributes and other K.

Attributes 5-8 (allergy, diet, travel savings, work style) protect positions the
evaluation file leaves public or share positions with its groups (diet shares 8 with
diabetes, travel 27 with pregnancy, work style 19 and 22 with job_loss and pregnancy); each
spans two or three slots. Two same-domain neutral queries (team-meeting, evening-errands)
still read only public positions, as the evaluation's catalogue design asks. Each new attribute
gets a store `M_<attribute>`: `neutral` with evidence tags at its group. Every cap is
B_a = 2; K is a parameter. Nothing is random.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

CONFIG = Path(__file__).resolve().parent.parent / "examples" / "evaluation.toml"

# name -> (group, evidence tags per position), in the order attributes are added.
EXTRA_ATTRIBUTES: tuple[tuple[str, dict[int, list[str]]], ...] = (
    ("allergy", {6: ["allergy"], 11: ["vegetarian"]}),
    ("diet", {8: ["vegetarian"], 10: ["vegetarian"], 28: ["runner"]}),
    ("travel", {16: ["saving-for-travel"], 27: ["low-impact"]}),
    ("work_style", {19: ["remote-work"], 22: ["daytime-free"]}),
    # Attributes 9-12 (round 3): more groups over the same views' tags, each sharing a
    # position with an earlier group, so every attribute is coupled to another.
    ("fitness", {28: ["runner"], 10: ["vegetarian"]}),
    ("savings", {16: ["saving-for-travel"], 19: ["remote-work"]}),
    ("schedule", {22: ["daytime-free"], 6: ["allergy"]}),
    ("mobility", {27: ["low-impact"], 11: ["vegetarian"]}),
)


def evaluation_dict() -> dict[str, Any]:
    with CONFIG.open("rb") as handle:
        return tomllib.load(handle)


def interface_dict(attributes: int = 4, K: int = 3) -> dict[str, Any]:
    """The evaluation configuration with `attributes` protected attributes (1..12) and K:
    below 4 the last of its own attributes are dropped (pregnancy, then job_loss, ...)."""
    if not 1 <= attributes <= 4 + len(EXTRA_ATTRIBUTES):
        raise ValueError(f"attributes must be in 1..{4 + len(EXTRA_ATTRIBUTES)}")
    data = copy.deepcopy(evaluation_dict())
    for name in sorted(data["attributes"])[attributes:]:
        del data["attributes"][name]
    data["name"] = f"evaluation-{attributes}a-K{K}"
    data["budget"] = {"rule": "online", "K": K}
    neutral = data["stores"]["neutral"]
    for name, evidence in EXTRA_ATTRIBUTES[: max(0, attributes - 4)]:
        data["attributes"][name] = {"description": f"synthetic attribute {name}", "group": sorted(evidence), "cap": 2}
        store = copy.deepcopy(neutral)
        for position, tags in evidence.items():
            store[str(position)] = {"tags": tags, "text": f"evidence for {name}"}
        data["stores"][f"M_{name}"] = store
    return data


BASE_ATTRIBUTE_STORES = ("M_debt", "M_diabetes", "M_job_loss", "M_pregnancy")


def all_differing_dict(attributes: int = 8, K: int = 3) -> dict[str, Any]:
    """`interface_dict` plus a store `M_all`: `neutral` with the evidence of every protected
    attribute at once (each attribute's store differs from `neutral` only inside its group),
    so `M_all` vs `neutral` differs in every group: a Corollary 1 pair."""
    data = interface_dict(attributes, K)
    stores = data["stores"]
    neutral = stores["neutral"]
    merged = copy.deepcopy(neutral)
    names = list(BASE_ATTRIBUTE_STORES[: min(attributes, 4)])
    names += [f"M_{name}" for name, _ in EXTRA_ATTRIBUTES[: max(0, attributes - 4)]]
    for name in names:
        for position, item in stores[name].items():
            if item != neutral.get(position):
                merged[position] = copy.deepcopy(item)
    stores["M_all"] = merged
    data["name"] = f"evaluation-{attributes}a-K{K}-all-differing"
    return data


def two_slot_dict(attributes: int = 8, K: int = 3) -> dict[str, Any]:
    """`all_differing_dict` whose queries are paired into two-slot turns: query 2i reads its
    own slot, then query 2i+1's (when the slots differ), so one turn charges two attributes'
    reads in two slots."""
    data = all_differing_dict(attributes, K)
    queries = data["queries"]
    paired = []
    for first, second in zip(queries[0::2], queries[1::2], strict=False):
        slots = {read["slot"] for read in first["reads"]}
        extra = [read for read in second["reads"] if read["slot"] not in slots]
        paired.append({**first, "name": f"{first['name']}+{second['name']}", "reads": first["reads"] + extra})
    if len(queries) % 2:
        paired.append(queries[-1])
    data["queries"] = paired
    data["name"] = f"evaluation-{attributes}a-K{K}-two-slot"
    return data

