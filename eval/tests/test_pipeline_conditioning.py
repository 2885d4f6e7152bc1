"""What exactly the response LLM receives under each compared interface (Table 8, Eq. 2)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from conftest import STORE_M, STORE_M_PRIME
from dpmem_eval.pipeline import kernel_runs as K
from dpmem_eval.pipeline import methods as M
from dpmem_eval.pipeline.backends import DecodingConfig, EchoBackend
from dpmem_eval.pipeline.cache import ResponseCache
from dpmem_eval.pipeline.config import PRESETS
from dpmem_eval.pipeline.generation import CachedGenerator
from dpmem_eval.pipeline.runner import Transcript, generate_transcripts
from dpmem_ref.channel.prompt import SYSTEM_INSTRUCTION, TurnConditioning, build_messages, window

H = 4


def method(key: str) -> M.MethodSpec:
    return M.method_by_key(M.all_methods(), key)


def lines(key: str, pair, policy, side: str) -> list[tuple[str, ...]]:
    return [c.lines for c in M.baseline_conditioning(method(key), pair, side, policy, H)]


def test_generic_only_passes_the_slot_generic_view_under_both_stores(pair, policy):
    expected = [("Suggest balanced, everyday meals.",), ("Give general money tips.",),
                ("Give general, widely applicable health information.",), ("Suggest balanced, everyday meals.",)]
    assert lines("generic_only", pair, policy, "M") == expected
    assert lines("generic_only", pair, policy, "M'") == expected


def test_raw_read_set_passes_read_items_in_position_order(pair, policy):
    assert lines("raw_read_set", pair, policy, "M") == [
        (STORE_M[1].text, STORE_M[2].text), (STORE_M[3].text,), (STORE_M[0].text,), (STORE_M[2].text,)]
    assert lines("raw_read_set", pair, policy, "M'")[0] == (STORE_M_PRIME[1].text, STORE_M_PRIME[2].text)


def test_typed_mask_replaces_protected_items_and_is_store_independent(pair, policy):
    m = lines("typed_mask", pair, policy, "M")
    assert m == [("[food item withheld]", "[food item withheld]"), ("[finance item withheld]",),
                 ("[health item withheld]",), ("[food item withheld]",)]
    assert m == lines("typed_mask", pair, policy, "M'")


def test_task_min_passes_the_fixed_task_family_union_within_the_slot(pair, policy):
    # target + neutral families read {1, 2, 3, 4}; the distractor reads only 3.
    assert M.task_min_positions(pair) == frozenset({1, 2, 3, 4})
    got = lines("task_min", pair, policy, "M")
    assert got[0] == (STORE_M[1].text, STORE_M[2].text)
    assert got[1] == (STORE_M[3].text,)


def test_task_min_excludes_distractor_only_positions(pair, policy):
    queries = tuple(replace(q, kind="distractor") if q.read_positions == (4,) else q for q in pair.queries)
    narrowed = replace(pair, queries=queries)
    assert M.task_min_positions(narrowed) == frozenset({1, 2, 3})
    assert lines("task_min", narrowed, policy, "M")[1] == ()


def test_output_filter_generates_from_raw_and_deletes_protected_terms(pair, policy):
    assert lines("output_filter", pair, policy, "M") == lines("raw_read_set", pair, policy, "M")
    clean = M.output_filter(policy)
    assert clean("Given your diabetes, check glucose daily.") == "Given your , check daily."
    assert "debt" not in clean("Pay the debt and the credit card first.")


@pytest.mark.parametrize("key", ["dp_on", "dp_pre", "incomplete_charge", "capped_argmax", "no_cap"])
def test_dp_variants_release_only_public_view_texts(pair, policy, key):
    vocab_texts = {v.text for views in policy.views.values() for v in views}
    store_texts = {item.text for item in STORE_M + STORE_M_PRIME}
    for side in M.SIDES:
        for seed in (0, 1, 2):
            trace = K.kernel_trace(method(key), pair, side, seed, policy, H)
            for cond, query in zip(K.dp_conditioning(pair, trace), pair.queries, strict=False):
                assert cond.kind == "views" and len(cond.lines) == 1
                assert cond.lines[0] in {v.text for v in policy.views[query.slot]}
                assert cond.lines[0] in vocab_texts and cond.lines[0] not in store_texts


def test_online_budget_eps_is_cap_over_k_and_ledger_never_exceeds_cap(pair, policy):
    trace = K.kernel_trace(method("dp_on"), pair, "M", 0, policy, H)
    assert all(t.ledger_target <= Fraction(2) for t in trace.turns)
    # diabetes is charged by queries 1, 3, 4 (reads touch I_diabetes), eps = 2/3 each.
    assert trace.final_ledger == Fraction(2)


def test_preallocated_budget_uses_planned_charge_counts(pair, policy):
    assert K.planned_counts(pair, H) == {"diabetes": 3, "debt": 3}
    interface = K.kernel_interface(method("dp_pre"), pair, policy, H)
    assert interface.budget.epsilon(frozenset({"diabetes"}), interface.caps) == Fraction(2, 3)


def test_no_cap_exceeds_the_cap_and_incomplete_charge_omits_target_charges(pair, policy):
    long = replace(pair, queries=pair.queries * 3)
    long = replace(long, queries=tuple(replace(q, query_id=f"{q.query_id}-{i}") for i, q in enumerate(long.queries)))
    nocap = K.kernel_trace(method("no_cap"), long, "M", 0, policy, 12)
    assert nocap.final_reconstructed == 9 * Fraction(2, 3) > 2
    # Query 1 reads {2, 3}: Gamma* = {debt, diabetes}; the ablation charges only "debt".
    incomplete = K.kernel_trace(method("incomplete_charge"), long, "M", 0, policy, 12)
    assert incomplete.final_reconstructed > incomplete.final_ledger


def test_capped_argmax_is_deterministic_and_flagged_c3(pair, policy):
    runs = {tuple(t.views for t in K.kernel_trace(method("capped_argmax"), pair, "M", s, policy, H).turns) for s in (0, 1, 2)}
    assert len(runs) == 1
    assert K.kernel_trace(method("capped_argmax"), pair, "M", 0, policy, H).selector_violates == "C3"


def test_score_channel_exposes_the_top_internal_score(pair, policy):
    m = K.kernel_trace(M.SCORE_CHANNEL, pair, "M", 0, policy, H)
    mp = K.kernel_trace(M.SCORE_CHANNEL, pair, "M'", 0, policy, H)
    # Turn 3 reads position 1: blood-sugar-conscious scores 1 under M, 2/5 under M'.
    assert m.turns[2].control == (Fraction(1),) and mp.turns[2].control != m.turns[2].control


def test_build_messages_is_exactly_query_conditioning_and_prefix():
    cond = TurnConditioning("What now?", "views", ("Prefer low-cost meals.",))
    messages = build_messages(cond, (("Q1", "A1"),))
    assert messages == [
        {"role": "system", "content": SYSTEM_INSTRUCTION + "\nResponse guidance:\n- Prefer low-cost meals."},
        {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "What now?"},
    ]
    assert window((("a", "b"), ("c", "d")), 1) == (("c", "d"),)
    assert window((("a", "b"),), None) == (("a", "b"),)
    assert window((("a", "b"),), 0) == ()


@pytest.mark.parametrize("key", ["generic_only", "raw_read_set", "typed_mask", "task_min", "dp_on", "dp_pre"])
def test_response_llm_receives_nothing_but_query_conditioning_and_prefix(tmp_path, pair, policy, key):
    """Eq. (2) as a property of the whole generation path: every message the model gets is
    the system instruction + this turn's conditioning, earlier (query, response) pairs, and
    the query; no store item reaches a DP-MemView / GenericOnly / TypedMask prompt."""
    spec = method(key)
    config = replace(PRESETS["smoke"], horizon=H, history_turns=None)
    transcripts = []
    for side in M.SIDES:
        if spec.kind == "dp":
            cond = K.dp_conditioning(pair, K.kernel_trace(spec, pair, side, 0, policy, H))
        else:
            cond = M.baseline_conditioning(spec, pair, side, policy, H)
        transcripts.append(Transcript(spec.key, pair.pair_id, pair.attribute, "test", side, 0, cond))
    backend = EchoBackend()
    generator = CachedGenerator(backend, ResponseCache(tmp_path / "c.sqlite"), DecodingConfig(max_new_tokens=64),
                                progress=False)
    generate_transcripts(transcripts, generator, config)
    allowed_system = set()
    for t in transcripts:
        for turn, cond in enumerate(t.conditioning):
            expected = build_messages(cond, tuple((c.query, r) for c, r in zip(t.conditioning[:turn], t.responses[:turn], strict=True)))
            assert expected in backend.calls or turn > 0 and any(call == expected for call in backend.calls)
            allowed_system.add(expected[0]["content"])
    store_texts = {i.text for i in STORE_M + STORE_M_PRIME}
    for call in backend.calls:
        assert call[0]["content"] in allowed_system
        for message in call:
            assert set(message) == {"role", "content"}
            if spec.kind not in ("raw", "task-min"):
                assert not any(text in message["content"] for text in store_texts)
            assert "M'" not in message["content"] and spec.name not in message["content"]


def test_fixed_policy_groups_take_precedence_over_the_pair_groups(pair, policy):
    """The evaluation policy is fixed before any store is seen (the data package's union
    groups); a pair's own groups are only the fallback."""
    union = replace(policy, groups={"diabetes": (1, 2, 3), "debt": (2, 3, 4)})
    interface = K.kernel_interface(method("dp_on"), pair, union, H)
    assert interface.policy.attribute("debt").group == frozenset({2, 3, 4})
    assert M.baseline_conditioning(method("typed_mask"), pair, "M", union, H)[1].lines == ("[finance item withheld]",)


@pytest.mark.slow
def test_table4_dp_bounds_from_kernel_charge_traces_at_the_paper_setting():
    """Table 4's DP-bound column at T=16, B_a=2, K=3 on PairedMem test pairs, from the
    kernel's slot plans: 2.0 (compliant), 10/3 > B_a with the ledger still reporting 2.0
    (IncompleteCharge; the paper's 4.0 needs three overlap reads per block, ours have two),
    inf (CappedArgmax), 16/3 = 5.33 (NoCap)."""
    from dpmem_eval.data import build_dataset

    test_pairs = build_dataset(0, transfer=False).split("test")
    real = M.load_public_policy()

    def worst(key):
        spec = method(key)
        traces = [K.kernel_trace(spec, p, side, seed, real, 16) for p in test_pairs for side in M.SIDES
                  for seed in ((0, 1, 2) if spec.stochastic else (0,))]
        return max(t.final_reconstructed for t in traces), max(t.final_ledger for t in traces), traces[0].selector_violates

    assert worst("dp_on") == (Fraction(2), Fraction(2), None)
    recon, ledger, _ = worst("incomplete_charge")
    # 3 target-charged releases + the 2 target-overlapping reads of block 1 charged elsewhere
    assert ledger == Fraction(2) and recon == Fraction(2) + 2 * Fraction(2, 3)
    assert worst("capped_argmax")[2] == "C3"  # reported as inf: no finite pure-DP bound
    assert worst("no_cap")[0] == Fraction(16, 3)
