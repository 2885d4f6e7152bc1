"""Transfer track (paper, Appendix C.3) and the LLM realizer hook (C.2 S2)."""

from __future__ import annotations

from collections import Counter

import pytest

from dpmem_eval.data.corpora import current_state_reason, minimal_edit
from dpmem_eval.data.corpus_files import resolve_corpora
from dpmem_eval.data.pairedmem import build_pairedmem
from dpmem_eval.data.realizer import llm_rewrite_pair

CORPORA = resolve_corpora(None)
needs_corpora = pytest.mark.skipif(not (CORPORA / "locomo" / "locomo10.json").is_file(),
                                   reason=f"public corpora not found at {CORPORA}")


@pytest.fixture(scope="module")
def pairedmem():
    return build_pairedmem(0)


@needs_corpora
def test_transfer_track_counts_and_validation(pairedmem):
    from dpmem_eval.data.transfer import build_transfer

    pairs, stats = build_transfer(pairedmem, CORPORA, 0)
    assert len(pairs) == 80
    assert Counter(p.attribute for p in pairs) == {"debt": 20, "diabetes": 20, "job_loss": 20, "pregnancy": 20}
    assert len({p.history_id for p in pairs}) == 20
    assert [p.pair_id for p in pairs if p.validation] == []
    by_id = {p.pair_id: p for p in pairedmem}
    for p in pairs:
        base = by_id[p.matched_pair]
        assert base.selected and p.groups == base.groups and p.target_positions == base.target_positions
        assert [q.text for q in p.queries] == [q.text for q in base.queries]
        assert all(item.source for item in p.store_m + p.store_m_prime)
    corpus_sources = {i.source for p in pairs for i in p.store_m if not i.source.startswith("tpl:")}
    assert any(s.startswith("locomo10:") for s in corpus_sources)
    assert any(s.startswith("ed-hypemo:") for s in corpus_sources)
    assert any(s.startswith("chatdoctor5k:") for s in corpus_sources)


@pytest.mark.parametrize("sentence,reason", [
    ("I'm unemployed and struggling right now.", None),
    ("I am pregnant and feel sick in the mornings.", None),
    ("My sister was fired from her job.", "other-people"),
    ("I used to have so much debt.", "past-or-resolved"),
    ("I finally paid off my credit card debt.", "past-or-resolved"),
    ("What if I get laid off next month?", "hypothetical"),
    ("I might be pregnant.", "hypothetical"),
    ("My debt feels like a mountain on my back.", "metaphor"),
    ("The economy is bad.", "not-first-person"),
])
def test_current_state_filter(sentence, reason):
    assert current_state_reason(sentence) == reason


def test_minimal_edit_removes_only_the_target_signal():
    assert minimal_edit("I just lost my job, and I've got too many bills.", "job_loss") == \
        "I just started a new project, and I've got too many bills."
    assert minimal_edit("My credit card debt is ridiculous.", "debt") == "My spending is ridiculous."


class FakeGenerator:
    """A deterministic fake of the generation interface `generate(prompts) -> list[str]`,
    used only to test the hook's plumbing; it says nothing about any real LLM."""

    def __init__(self, transform):
        self.transform = transform
        self.calls = 0

    def generate(self, prompts):
        self.calls += 1
        return [self.transform(p.rsplit("Sentence: ", 1)[1]) for p in prompts]


def test_llm_realizer_rewrites_wording_only(pairedmem):
    pair = pairedmem[0]
    fake = FakeGenerator(lambda s: "Honestly, " + s[0].lower() + s[1:])
    out = llm_rewrite_pair(pair, fake)
    assert fake.calls == 1 and out.validation == ()
    assert all(a.text.startswith("Honestly, ") for a in out.store_m)
    assert [i.tags for i in out.store_m] == [i.tags for i in pair.store_m]
    assert out.queries == pair.queries and out.groups == pair.groups and out.gold == pair.gold


def test_llm_realizer_rewrite_that_leaks_is_reported(pairedmem):
    pair = next(p for p in pairedmem if p.attribute == "pregnancy")
    out = llm_rewrite_pair(pair, FakeGenerator(lambda s: s + " I am pregnant."))
    assert any(f.startswith("target-left-in-m-prime") for f in out.validation)
