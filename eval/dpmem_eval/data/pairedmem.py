"""PairedMem: S1 specifications, S2 template realization, S3 selection, S4 trajectories.

(Paper, Appendix C.2.) Everything is a deterministic function of the seed: each pair draws
from its own `random.Random(f"{seed}:{pair_id}")`, so pairs do not depend on build order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from dpmem_eval.data.queries import NEUTRAL_FAMILIES, TARGET_FAMILIES, QueryFamily
from dpmem_eval.data.records import GoldRecord, MemoryItem, PairRecord, QueryRecord, Store
from dpmem_eval.data.scaffold import (
    ATTRIBUTE_SLOTS,
    ATTRIBUTES,
    BASE_GROUPS,
    N_POSITIONS,
    OVERLAP_PARTNER,
    groups_for,
)
from dpmem_eval.data.templates import BACKGROUND, EVIDENCE, FILLERS, NEUTRAL
from dpmem_eval.data.validation import validate_pair

SPECS_PER_ATTRIBUTE = 96
N_TEMPLATES = 4
SELECTED_PER_ATTRIBUTE = 80
SELECTED_PER_CELL = 20  # per (attribute, template id)
SELECTED_OVERLAPPING_PER_CELL = 5  # 25% of each cell
SPLIT_FRACTIONS = (("train", 3), ("validation", 1), ("test", 1))  # 60/20/20 of selected


@dataclass(frozen=True)
class PairSpec:
    """S1 specification: target attribute, template id, overlap flag and the groups."""

    pair_id: str
    attribute: str
    index: int
    template_id: int
    overlap_partner: str | None

    @property
    def groups(self) -> dict[str, tuple[int, ...]]:
        return groups_for(self.attribute, self.overlap_partner is not None)


def make_specs() -> tuple[PairSpec, ...]:
    """384 specifications, 96 per attribute. Template id = index mod 4; a specification
    overlaps when (index // 4) mod 4 == 0, i.e. 24 per attribute, 6 per template id: 25%."""
    specs = []
    for attribute in ATTRIBUTES:
        for k in range(SPECS_PER_ATTRIBUTE):
            overlapping = (k // N_TEMPLATES) % 4 == 0
            partner = OVERLAP_PARTNER[attribute][0] if overlapping else None
            specs.append(PairSpec(f"pm-{attribute}-{k:03d}", attribute, k, k % N_TEMPLATES, partner))
    return tuple(specs)


def fill(template: str, rng: random.Random) -> str:
    """Fill `{name}` fields from FILLERS (in order of appearance) and capitalise."""
    out = template
    while "{" in out:
        start = out.index("{")
        end = out.index("}", start)
        out = out[:start] + rng.choice(FILLERS[out[start + 1:end]]) + out[end + 1:]
    return out[0].upper() + out[1:]


def _item(kind: str, key: tuple[object, ...], index: int, tags: tuple[str, ...], templates: tuple[str, ...],
          rng: random.Random) -> MemoryItem:
    key_text = ":".join(str(k) for k in key)
    return MemoryItem(tuple(sorted(tags)), fill(templates[index], rng), f"tpl:{kind}:{key_text}:{index}")


def _evidence(attribute: str, position: int, index: int | None, rng: random.Random) -> MemoryItem:
    tags, templates = EVIDENCE[(position, attribute)]
    if index is None:
        index = rng.randrange(len(templates))
    return _item("evidence", (attribute, position), index, tags, templates, rng)


def _neutral(position: int, rng: random.Random) -> MemoryItem:
    tags, templates = NEUTRAL[position]
    return _item("neutral", (position,), rng.randrange(len(templates)), tags, templates, rng)


def _background(position: int, rng: random.Random) -> MemoryItem:
    tags, templates = BACKGROUND[position]
    return _item("background", (position,), rng.randrange(len(templates)), tags, templates, rng)


def realize_stores(spec: PairSpec, rng: random.Random) -> tuple[Store, Store]:
    """S2 template realizer: M and M' for one specification.

    Positions outside I_target get one item shared by both stores; at I_target, M gets target
    evidence (template `spec.template_id`) and M' gets slot-compatible neutral content; at the
    shared overlap position M gets target + partner evidence and M' the partner's only."""
    i_target = set(spec.groups[spec.attribute])
    partner = spec.overlap_partner
    shared_pos = OVERLAP_PARTNER[spec.attribute][1] if partner else None
    partner_positions = set(BASE_GROUPS[partner]) if partner else set()
    m: list[MemoryItem] = []
    mp: list[MemoryItem] = []
    for pos in range(1, N_POSITIONS + 1):
        if pos == shared_pos and partner:
            target_item = _evidence(spec.attribute, pos, spec.template_id, rng)
            partner_item = _evidence(partner, pos, None, rng)
            m.append(MemoryItem(tuple(sorted(set(target_item.tags) | set(partner_item.tags))),
                                f"{target_item.text} {partner_item.text}",
                                f"{target_item.source}+{partner_item.source}"))
            mp.append(partner_item)
        elif pos in i_target:
            m.append(_evidence(spec.attribute, pos, spec.template_id, rng))
            mp.append(_neutral(pos, rng))
        else:
            if pos in partner_positions and partner:
                item = _evidence(partner, pos, None, rng)
            elif pos in NEUTRAL:
                item = _neutral(pos, rng)
            else:
                item = _background(pos, rng)
            m.append(item)
            mp.append(item)
    return tuple(m), tuple(mp)


def make_trajectory(pair_id: str, attribute: str, rng: random.Random
                    ) -> tuple[tuple[QueryRecord, ...], tuple[GoldRecord, ...]]:
    """S4: 32 queries in two disjoint 16-query blocks (8 target, 4 neutral, 4 distractor),
    chosen from the public families by (kind, slot, intent) only, plus deterministic gold."""
    targets = [f for f in TARGET_FAMILIES if f.attribute == attribute]
    home = set(ATTRIBUTE_SLOTS[attribute])
    neutral = [(f, i) for f in NEUTRAL_FAMILIES if f.slot in home for i in range(len(f.phrasings))]
    distract = [(f, i) for f in NEUTRAL_FAMILIES if f.slot not in home for i in range(len(f.phrasings))]
    rng.shuffle(neutral)
    rng.shuffle(distract)
    blocks: list[list[tuple[str, QueryFamily, int]]] = [[], []]
    for f in targets:
        order = rng.sample(range(len(f.phrasings)), 2)
        blocks[0].append(("target", f, order[0]))
        blocks[1].append(("target", f, order[1]))
    for b in (0, 1):
        blocks[b] += [("neutral", f, i) for f, i in neutral[4 * b:4 * b + 4]]
        blocks[b] += [("distractor", f, i) for f, i in distract[4 * b:4 * b + 4]]
        rng.shuffle(blocks[b])
    queries, gold = [], []
    for b, block in enumerate(blocks, start=1):
        for n, (kind, f, i) in enumerate(block, start=1):
            qid = f"{pair_id}-b{b}-{n:02d}"
            queries.append(QueryRecord(qid, b, kind, f.family, f.slot, f.read_positions, f.phrasings[i]))
            behaviours = (f.behaviour,) if kind == "target" else ()
            gold.append(GoldRecord(qid, behaviours, behaviours))
    return tuple(queries), tuple(gold)


def build_pair(spec: PairSpec, seed: int) -> PairRecord:
    """Realize, attach the trajectory and validate one specification (split set later)."""
    rng = random.Random(f"{seed}:{spec.pair_id}")
    store_m, store_mp = realize_stores(spec, rng)
    queries, gold = make_trajectory(spec.pair_id, spec.attribute, rng)
    groups = tuple(sorted(spec.groups.items()))
    pair = PairRecord(spec.pair_id, "pairedmem", spec.attribute, "unassigned", False,
                      spec.template_id, spec.overlap_partner, groups,
                      spec.groups[spec.attribute], store_m, store_mp, queries, gold)
    return replace(pair, validation=validate_pair(pair))


def select_and_split(pairs: list[PairRecord], seed: int) -> list[PairRecord]:
    """Selection (S3): per (attribute, template id) take 5 overlapping and 15 other passing
    pairs in a seeded order (320 in all); the rest are reserves. Pair-level split of the
    selected pairs, stratified by (attribute, overlap): 60% train, 20% validation, 20% test."""
    rng = random.Random(f"{seed}:selection")
    order = sorted(pairs, key=lambda p: p.pair_id)
    rng.shuffle(order)
    chosen: dict[str, str] = {}
    for attribute in ATTRIBUTES:
        for tid in range(N_TEMPLATES):
            cell = [p for p in order if p.attribute == attribute and p.template_id == tid and not p.validation]
            over = [p for p in cell if p.overlapping][:SELECTED_OVERLAPPING_PER_CELL]
            rest = [p for p in cell if not p.overlapping][:SELECTED_PER_CELL - SELECTED_OVERLAPPING_PER_CELL]
            for p in over + rest:
                chosen[p.pair_id] = "unassigned"
        for overlapping in (True, False):
            stratum = [p for p in order if p.pair_id in chosen and p.attribute == attribute
                       and p.overlapping == overlapping]
            total = sum(w for _, w in SPLIT_FRACTIONS)
            start = 0
            for n, (split, weight) in enumerate(SPLIT_FRACTIONS):
                stop = len(stratum) if n == len(SPLIT_FRACTIONS) - 1 else start + len(stratum) * weight // total
                for p in stratum[start:stop]:
                    chosen[p.pair_id] = split
                start = stop
    out = []
    for p in sorted(pairs, key=lambda p: p.pair_id):
        if p.pair_id in chosen:
            out.append(replace(p, split=chosen[p.pair_id], selected=True))
        else:
            out.append(replace(p, split="reserve" if not p.validation else "failed", selected=False))
    return out


def build_pairedmem(seed: int) -> list[PairRecord]:
    """All 384 PairedMem pairs, validated, selected and split."""
    return select_and_split([build_pair(spec, seed) for spec in make_specs()], seed)
