"""Controlled corpus-sourced transfer track (paper, Appendix C.3, T1-T4).

T1: 80 pairs = 20 LoCoMo background histories x 4 attributes; each copies the scaffold,
groups, target positions, queries and gold of a matching selected PairedMem pair.
T2: background positions get the history's own first-person sentences of the same slot;
target positions get corpus evidence in M and its minimal edit in M'. Where a corpus runs
out (no sentence of that slot in the history, or fewer evidence sentences than target
positions), the matching PairedMem item is kept and its `tpl:` source id says so; the
datacard counts both. T3: the same S3 checks as PairedMem. T4: queries and gold unchanged.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from dpmem_eval.data.corpora import BackgroundSentence, EvidenceSentence, History, evidence_pools, locomo_histories
from dpmem_eval.data.corpus_files import corpora_origin
from dpmem_eval.data.records import GoldRecord, MemoryItem, PairRecord, QueryRecord
from dpmem_eval.data.scaffold import ATTRIBUTES, BASE_GROUPS, LAYOUT, N_POSITIONS, OVERLAP_PARTNER
from dpmem_eval.data.validation import validate_pair

HISTORIES = 20


def _matching_pairs(pairedmem: list[PairRecord], attribute: str, seed: int) -> list[PairRecord]:
    chosen = sorted((p for p in pairedmem if p.selected and p.attribute == attribute), key=lambda p: p.pair_id)
    random.Random(f"{seed}:transfer-match:{attribute}").shuffle(chosen)
    return chosen[:HISTORIES]


def _transfer_pair(pair_id: str, base: PairRecord, history: History, pool: list[EvidenceSentence],
                   seed: int) -> PairRecord:
    rng = random.Random(f"{seed}:{pair_id}")
    i_target = set(base.target_positions)
    partner_positions = set(BASE_GROUPS[base.overlap_partner]) if base.overlap_partner else set()
    shared = OVERLAP_PARTNER[base.attribute][1] if base.overlap_partner else None
    evidence = rng.sample(pool, min(len(pool), len(i_target)))
    by_slot: dict[str, list[BackgroundSentence]] = {}
    for sentence in history.sentences:
        by_slot.setdefault(sentence.slot, []).append(sentence)
    for sentences in by_slot.values():
        rng.shuffle(sentences)
    m, mp = [], []
    for pos in range(1, N_POSITIONS + 1):
        base_m, base_mp = base.store_m[pos - 1], base.store_m_prime[pos - 1]
        if pos in i_target:
            if evidence:
                e = evidence.pop()
                if pos == shared:  # keep the partner's (non-target) evidence beside the edit
                    m.append(MemoryItem(base_m.tags, f"{e.text} {base_mp.text}", f"{e.source}+{base_mp.source}"))
                    mp.append(MemoryItem(base_mp.tags, f"{e.edited} {base_mp.text}",
                                         f"{e.source}:minimal-edit+{base_mp.source}"))
                else:
                    m.append(MemoryItem(base_m.tags, e.text, e.source))
                    mp.append(MemoryItem(base_mp.tags, e.edited, f"{e.source}:minimal-edit"))
            else:
                m.append(base_m)
                mp.append(base_mp)
        elif pos in partner_positions or not by_slot.get(LAYOUT[pos - 1]):
            m.append(base_m)  # partner evidence, or no LoCoMo sentence left for this slot
            mp.append(base_m)
        else:
            s = by_slot[LAYOUT[pos - 1]].pop()
            item = MemoryItem((), s.text, s.source)
            m.append(item)
            mp.append(item)
    queries = tuple(QueryRecord(q.query_id.replace(base.pair_id, pair_id), q.block, q.kind, q.family,
                                q.slot, q.read_positions, q.text) for q in base.queries)
    gold = tuple(GoldRecord(g.query_id.replace(base.pair_id, pair_id), g.target_required,
                            g.unsupported_target_specific) for g in base.gold)
    pair = PairRecord(pair_id, "transfer", base.attribute, "transfer", True, base.template_id,
                      base.overlap_partner, base.groups, base.target_positions, tuple(m), tuple(mp),
                      queries, gold, matched_pair=base.pair_id, history_id=history.history_id)
    return replace(pair, validation=validate_pair(pair))


def build_transfer(pairedmem: list[PairRecord], corpora: Path, seed: int) -> tuple[list[PairRecord], dict[str, object]]:
    """The 80 transfer pairs and corpus statistics for the datacard."""
    histories = locomo_histories(corpora)
    if len(histories) < HISTORIES:
        raise ValueError(f"LoCoMo gives {len(histories)} histories, expected {HISTORIES}")
    pools, rejected = evidence_pools(corpora)
    pairs = []
    for attribute in ATTRIBUTES:
        for h, base in enumerate(_matching_pairs(pairedmem, attribute, seed)):
            pairs.append(_transfer_pair(f"tr-{attribute}-{h:02d}", base, histories[h], pools[attribute], seed))
    stats: dict[str, object] = {
        "corpora": corpora_origin(corpora),  # "excerpt": the records shipped in the package (excerpt.py)
        "evidence_pool_sizes": {a: len(pools[a]) for a in ATTRIBUTES},
        "evidence_rejected": rejected,
        "history_sentences": {h.history_id: len(h.sentences) for h in histories[:HISTORIES]},
    }
    return pairs, stats
