"""PairedMem counts, S3 validation and defect injection (paper, Appendix C.2 S1-S4)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from dpmem_eval.data.pairedmem import build_pairedmem
from dpmem_eval.data.records import MemoryItem
from dpmem_eval.data.scaffold import ATTRIBUTES, LAYOUT, OVERLAP_PARTNER, SLOTS
from dpmem_eval.data.validation import validate_pair


@pytest.fixture(scope="module")
def pairs():
    return build_pairedmem(0)


def test_counts_match_the_paper(pairs):
    assert len(pairs) == 384
    assert Counter(p.attribute for p in pairs) == {a: 96 for a in ATTRIBUTES}
    assert len(LAYOUT) == 28 and len(SLOTS) == 6 and set(LAYOUT) == set(SLOTS)
    assert sum(p.overlapping for p in pairs) == 96  # exactly 25%
    for p in pairs:
        assert all(4 <= len(g) <= 6 for _, g in p.groups)
        assert len(p.store_m) == len(p.store_m_prime) == 28
    selected = [p for p in pairs if p.selected]
    assert len(selected) == 320
    assert Counter(p.attribute for p in selected) == {a: 80 for a in ATTRIBUTES}
    assert Counter((p.attribute, p.template_id) for p in selected) == {(a, t): 20 for a in ATTRIBUTES for t in range(4)}
    assert sum(p.overlapping for p in selected) == 80
    assert Counter(p.split for p in pairs) == {"train": 192, "validation": 64, "test": 64, "reserve": 64}


def test_every_pair_passes_s3_and_has_the_block_structure(pairs):
    assert [p.pair_id for p in pairs if p.validation] == []
    for p in pairs:
        assert len(p.queries) == 32 and len({q.text for q in p.queries}) == 32
        for block in (1, 2):
            kinds = Counter(q.kind for q in p.queries if q.block == block)
            assert kinds == {"target": 8, "neutral": 4, "distractor": 4}


def test_m_and_m_prime_differ_only_inside_the_target_group(pairs):
    for p in pairs:
        differing = {i for i in range(1, 29) if p.item("M", i) != p.item("M'", i)}
        assert differing <= set(p.target_positions) and differing


def test_gold_lists_target_behaviours_only_for_target_queries(pairs):
    p = pairs[0]
    kinds = {q.query_id: q.kind for q in p.queries}
    for g in p.gold:
        assert bool(g.target_required) == (kinds[g.query_id] == "target")
        assert g.target_required == g.unsupported_target_specific


def _one(pairs, overlapping):
    return next(p for p in pairs if p.overlapping == overlapping)


def test_defect_evidence_left_in_m_prime_is_rejected(pairs):
    p = _one(pairs, False)
    t = p.target_positions[0]
    store = list(p.store_m_prime)
    store[t - 1] = p.store_m[t - 1]
    failures = validate_pair(replace(p, store_m_prime=tuple(store)))
    assert any(f.startswith("target-left-in-m-prime") for f in failures)


def test_defect_text_only_evidence_in_m_prime_is_rejected(pairs):
    p = _one(pairs, False)
    t = p.target_positions[0]
    store = list(p.store_m_prime)
    store[t - 1] = MemoryItem((), p.store_m[t - 1].text, "injected")  # tags removed, text kept
    assert any(f.startswith("target-left-in-m-prime") for f in validate_pair(replace(p, store_m_prime=tuple(store))))


def test_defect_change_outside_the_group_is_rejected(pairs):
    p = _one(pairs, False)
    outside = next(i for i in range(1, 29) if i not in p.target_positions)
    store = list(p.store_m_prime)
    store[outside - 1] = MemoryItem((), "I moved to a new city.", "injected")
    failures = validate_pair(replace(p, store_m_prime=tuple(store)))
    assert any(f.startswith(f"outside-group: position {outside}") for f in failures)


@pytest.mark.parametrize("word", ["diabetic", "pregnant", "debt", "laid off"])
def test_defect_synonym_in_a_query_is_rejected(pairs, word):
    p = pairs[0]
    bad = replace(p.queries[3], text=f"What should someone {word} eat?")
    failures = validate_pair(replace(p, queries=p.queries[:3] + (bad,) + p.queries[4:]))
    assert any(f.startswith(f"query-leak: query {bad.query_id}") for f in failures)


def test_defect_lost_non_target_evidence_at_overlap_is_rejected(pairs):
    p = _one(pairs, True)
    shared = OVERLAP_PARTNER[p.attribute][1]
    store = list(p.store_m_prime)
    store[shared - 1] = MemoryItem((), "I like browsing the market.", "injected")
    failures = validate_pair(replace(p, store_m_prime=tuple(store)))
    assert any(f.startswith("non-target-lost") for f in failures)


def test_defect_target_evidence_outside_the_group_is_rejected(pairs):
    p = _one(pairs, False)
    outside = next(i for i in range(1, 29) if all(i not in g for _, g in p.groups))
    item = p.store_m[p.target_positions[0] - 1]
    m, mp = list(p.store_m), list(p.store_m_prime)
    m[outside - 1] = mp[outside - 1] = item
    failures = validate_pair(replace(p, store_m=tuple(m), store_m_prime=tuple(mp)))
    assert any(f.startswith("target-outside-group") for f in failures)


def test_queries_never_name_an_attribute(pairs):
    from dpmem_eval.data.queries import ALL_FAMILIES
    from dpmem_eval.data.validation import names

    for family in ALL_FAMILIES:
        for text in family.phrasings:
            assert not any(names(text, a) for a in ATTRIBUTES), text
