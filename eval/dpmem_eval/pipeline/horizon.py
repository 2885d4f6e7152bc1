"""Long horizons: what a budget buys over T = 16, 64 and 128 turns, with and without reuse.

    dpmem-eval long-horizon [--preset long-cpu|long-smoke] [--horizons 16,64,128] [--out DIR]
                            [--kernel-only] [--judge checklist|proxy] [--calibrate-from DIR]

Each PairedMem pair's first 16 queries (the paper's T = 16 trajectory) are asked again and
again, as a user returns to the same topics: turn i asks query i mod 16. DP-MemView (on)
and (pre) run through the kernel (`dpmem_ref.turn.run_turn`, the same Algorithm 1 as every
run), without reuse and with one reuse rule per slot (docs/reuse.md: the latest fresh view
of the slot serves the slot's queries for `refresh_after` turns; a refresh the cap refuses
re-serves it). (pre) plans its C_a over the whole trajectory: without reuse every charged
read, with reuse the fresh reads of the reuse schedule (public: the trajectory and the rule).

Unless --kernel-only, every turn is also answered by the cpu preset's response model and
judged (`horizon_llm`): tRec, Unsup and the response-level AUC, and a GenericOnly row per T.

Measured from the kernel alone (no LLM):

- personalised turns: turns whose released view on M is not the slot's generic view;
- matched turns: personalised turns whose view is the one the scorer ranks first on M (the
  kernel-only proxy for tRec: a near-uniform draw at a tiny eps personalises often, but
  rarely with the right view); and the same share over the turns whose read touches a
  protected group (the reads the budget governs; the others run uncharged, Lemma 1), beside
  its chance level (a uniform draw over the slot's views at every protected read);
- fresh selections (admitted; uncharged reads included), charged selections (a non-empty
  charge set) and reused turns on M, means over the test pairs and seeds;
- L_target: the pathwise ledger of the target attribute at T (<= B_a, C5);
- exact loss: |log Pr[w | M] / Pr[w | M']| of the released transcript w on M, exact
  (`dpmem_ref.analysis.replay_transcript` under both stores), <= L_target (Theorem 1);
- view AUC: the pipeline's auditor (`auditor.audit`: logistic regression on train pairs,
  calibrated on validation, macro-AUC on test) fitted on the released views themselves
  (one-hot per slot view, mean over the prefix), an auditor that sees everything the response
  LLM is given.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

BASE_TURNS = 16  # the paper's T: each pair's trajectory, repeated


@dataclass(frozen=True)
class LongConfig:
    preset: str
    horizons: tuple[int, ...]
    seeds: tuple[int, ...]
    refresh_after: int
    pairs_per_split: int | None  # None: every pair of the cpu preset's splits (no transfer track)
    methods: tuple[str, ...] = ("dp_on", "dp_pre")


PRESETS: dict[str, LongConfig] = {
    "long-smoke": LongConfig("long-smoke", (16, 32), (0,), 16, 2),
    "long-cpu": LongConfig("long-cpu", (16, 64, 128), (0, 1, 2), 16, None),
}


def trajectory(pair: Any, horizon: int) -> list[str]:
    """The query ids of T turns: the pair's first 16 queries, asked again in order."""
    base = [q.query_id for q in pair.queries[:BASE_TURNS]]
    return [base[i % len(base)] for i in range(horizon)]


def fresh_schedule(slots: Sequence[str], refresh_after: int | None) -> list[bool]:
    """Which turns select afresh under the reuse rule when every planned selection is admitted
    (the (pre) plan's premise): a slot re-serves its view for `refresh_after` turns."""
    last: dict[str, int] = {}
    fresh = []
    for turn, slot in enumerate(slots):
        again = refresh_after is not None and slot in last and turn - last[slot] <= refresh_after
        if not again:
            last[slot] = turn
        fresh.append(not again)
    return fresh


def long_interface(method: Any, pair: Any, policy: Any, horizon: int, refresh_after: int | None) -> Any:
    """The method's kernel interface over the pair's 16 queries, with one reuse rule per slot
    (refresh_after None: no reuse), and (pre)'s plan C_a over the T-turn trajectory."""
    import attrs

    from dpmem_eval.pipeline.kernel_runs import kernel_interface
    from dpmem_ref.config.registry import BUDGET_RULES
    from dpmem_ref.parts.reuse import ReusePolicy, ReuseRule

    base = kernel_interface(method, pair, policy, BASE_TURNS)
    changes: dict[str, Any] = {}
    if refresh_after is not None:
        by_slot: dict[str, set[str]] = {}
        for query in base.queries:
            by_slot.setdefault(query.reads[0].slot, set()).add(query.name)
        rules = tuple(ReuseRule(slot, frozenset(names), refresh_after) for slot, names in sorted(by_slot.items()))
        changes["reuse"] = ReusePolicy(rules)
    if method.budget == "preallocated":
        names = trajectory(pair, horizon)
        reads = [base.query(name).reads[0] for name in names]
        fresh = fresh_schedule([read.slot for read in reads], refresh_after)
        plan: dict[str, int] = {}
        for read, planned in zip(reads, fresh, strict=True):
            for attribute in base.policy.gamma_star(read.positions) if planned else ():
                plan[attribute] = plan.get(attribute, 0) + 1
        changes["budget"] = BUDGET_RULES.make("preallocated", f"method {method.key}.budget", plan=plan)
    return attrs.evolve(base, **changes) if changes else base


@dataclass(frozen=True)
class SideRun:
    views: tuple[tuple[tuple[str, str], ...], ...]
    kinds: tuple[tuple[str, ...], ...]
    records: tuple[Any, ...]
    target_ledger: Fraction


def run_side(interface: Any, pair: Any, store: Any, names: Sequence[str], seed: int, key: str) -> SideRun:
    from dpmem_eval.pipeline.kernel_runs import _seed_int
    from dpmem_ref.mechanism.randomness import SeededRandomSource
    from dpmem_ref.turn import InterfaceState, run_turn

    source = SeededRandomSource(_seed_int("em", key, pair.pair_id, seed))  # M and M' share it
    state = InterfaceState.initial(interface)
    views, kinds, records = [], [], []
    for name in names:
        result = run_turn(interface, state, name, store, source)
        state = result.state
        views.append(result.record.views)
        kinds.append(tuple(kind for _, kind in result.kinds))
        records.append(result.record)
    target = interface.policy.attribute_names.index(pair.attribute)
    return SideRun(tuple(views), tuple(kinds), tuple(records), state.ledgers[target])


def exact_loss(interface: Any, store_m: Any, store_m_prime: Any, records: Sequence[Any]) -> float:
    """|log Pr[w | M] - log Pr[w | M']| of the released transcript w, exact (mpmath)."""
    from dpmem_ref.analysis import replay_transcript

    a = replay_transcript(interface, store_m, records).log_probability
    b = replay_transcript(interface, store_m_prime, records).log_probability
    return float(abs(a - b))


def best_views(interface: Any, store: Any) -> dict[str, str]:
    """Per query: the view the scorer ranks first on this store (Eq. 5; first on ties), the
    view a perfectly informed interface would release. Evaluation code reads the store here
    (as the judge reads it for tRec); nothing of it reaches the kernel's releases."""
    out = {}
    for query in interface.queries:
        read = query.reads[0]
        vocabulary = interface.vocabulary(read.slot)
        items = tuple(store.items[p - 1] for p in sorted(read.positions))
        scores = list(interface.scorer.scores(read.relevance_map, vocabulary, items))
        out[query.name] = vocabulary.names[scores.index(max(scores))]
    return out


def view_features(views: Sequence[tuple[tuple[str, str], ...]], index: dict[tuple[str, str], int]) -> Any:
    import numpy as np

    rows = np.zeros((len(views), len(index)))
    for t, turn in enumerate(views):
        for pair in turn:
            rows[t, index[pair]] = 1.0
    return rows


def measure(config: LongConfig, pairs: Sequence[Any] | None = None, llm: Any | None = None,
            calibration: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """One row per (method, reuse, T): the kernel-only metrics (module docstring); with `llm`
    (a `dpmem-eval run` configuration: model, decoding, encoder, judge, cache) also tRec, Unsup
    and the response AUC (`horizon_llm`; a checklist judge is calibrated on `calibration`, the
    transcripts of a `dpmem-eval run`: `horizon_llm.calibration_rows`), and one GenericOnly row per T."""
    import numpy as np

    from dpmem_eval.pipeline import auditor
    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline.config import PRESETS as RUN_PRESETS
    from dpmem_eval.pipeline.kernel_runs import kernel_store
    from dpmem_eval.pipeline.runner import load_pairs, split_of

    if pairs is None:
        run = replace(RUN_PRESETS["cpu"], transfer_pairs=0)
        if config.pairs_per_split is not None:
            n = config.pairs_per_split
            run = replace(run, train_pairs=n, validation_pairs=n, test_pairs=n)
        pairs = load_pairs(run)
    policy = M.load_public_policy()
    generic = policy.generic
    index = {(slot, v.name): i for i, (slot, v) in enumerate((s, v) for s, vs in policy.views.items() for v in vs)}
    attributes = sorted({p.attribute for p in pairs})
    methods = {m.key: m for m in M.all_methods()}
    from dpmem_eval.pipeline.horizon_llm import LongTranscript, view_conditioning

    transcripts: list[LongTranscript] = []
    rows = []
    for key in config.methods:
        method = methods[key]
        for reuse in (False, True):
            for horizon in config.horizons:
                start = time.perf_counter()
                samples, personal, matched, fresh, charged, reused, ledgers, losses = [], [], [], [], [], [], [], []
                matched_protected: list[float] = []
                chance: list[float] = []
                for pair in pairs:
                    interface = long_interface(method, pair, policy, horizon, config.refresh_after if reuse else None)
                    names = trajectory(pair, horizon)
                    protected = {q.name: bool(interface.policy.gamma_star(q.reads[0].positions)) for q in interface.queries}
                    stores = {side: kernel_store(policy, s, side) for side, s in (("M", pair.store_m), ("M'", pair.store_m_prime))}
                    split = split_of(pair)
                    for seed in config.seeds:
                        for side, store in stores.items():
                            side_run = run_side(interface, pair, store, names, seed, key)
                            if llm is not None:
                                transcripts.append(LongTranscript(
                                    (key, reuse, horizon), pair.pair_id, pair.attribute, split, side, seed, tuple(names),
                                    view_conditioning(pair, interface, names, side_run.views)))
                            features = auditor.prefix_features(view_features(side_run.views, index))[-1:]
                            samples.append(auditor.Sample(pair.pair_id, pair.attribute, split, side, seed, features))
                            ledgers.append(side_run.target_ledger)
                            if side == "M" and split == "test":
                                best = best_views(interface, store)
                                personal.append(sum(any(v != generic[s] for s, v in t) for t in side_run.views))
                                hits = [
                                    any(v != generic[s] and v == best[name] for s, v in t)
                                    for name, t in zip(names, side_run.views, strict=True)
                                ]
                                matched.append(sum(hits))
                                guarded = [protected[name] for name in names]
                                matched_protected.append(sum(h for h, g in zip(hits, guarded, strict=True) if g)
                                                         / max(1, sum(guarded)))
                                # a uniform draw over V_g at every protected read: the proxy's chance level
                                chance.append(sum(
                                    (best[name] != generic[interface.query(name).reads[0].slot])
                                    / len(interface.vocabulary(interface.query(name).reads[0].slot).names)
                                    for name in names if protected[name]
                                ) / max(1, sum(guarded)))
                                fresh.append(sum(k.count("fresh") for k in side_run.kinds))
                                charged.append(sum(bool(c) for r in side_run.records for (_, c, _), ok in zip(r.charges, r.admitted, strict=True) if ok))
                                reused.append(sum(k.count("reused") for k in side_run.kinds))
                                losses.append(exact_loss(interface, stores["M"], stores["M'"], side_run.records))
                result = auditor.audit(samples, attributes, 1, seed=0, n_boot=200)
                test = result.at("test")
                rows.append({
                    "method": method.name, "key": key, "reuse": reuse, "T": horizon,
                    "refresh_after": config.refresh_after if reuse else None,
                    "personalised_turns": float(np.mean(personal)), "personalised_share": float(np.mean(personal)) / horizon,
                    "matched_turns": float(np.mean(matched)), "matched_share": float(np.mean(matched)) / horizon,
                    "matched_protected_share": float(np.mean(matched_protected)),
                    "matched_protected_chance": float(np.mean(chance)),
                    "fresh_selections": float(np.mean(fresh)), "charged_selections": float(np.mean(charged)),
                    "reused_turns": float(np.mean(reused)),
                    "bound_B_a": float(method.cap), "L_target_max": float(max(ledgers)),
                    "exact_loss_mean": float(np.mean(losses)), "exact_loss_max": float(max(losses)),
                    "view_auc": test["auc"], "view_auc_lo": test.get("auc_lo"), "view_auc_hi": test.get("auc_hi"),
                    "test_pairs": len({p.pair_id for p in pairs if split_of(p) == "test"}),
                    "seconds": round(time.perf_counter() - start, 2),
                })
                print(f"long-horizon: {key} reuse={reuse} T={horizon}: {rows[-1]['personalised_turns']:.1f} personalised, "
                      f"view AUC {test['auc']:.3f} ({rows[-1]['seconds']} s)", flush=True)
    if llm is not None:
        rows = with_responses(rows, transcripts, config, pairs, policy, attributes, llm, calibration)
    return rows


def with_responses(rows: list[dict[str, Any]], transcripts: list[Any], config: LongConfig, pairs: Sequence[Any],
                   policy: Any, attributes: Sequence[str], llm: Any,
                   calibration: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """The kernel rows with tRec, Unsup and the response AUC added (`horizon_llm`), and a
    GenericOnly row per T (the generic view at every turn: deterministic, one seed)."""
    from dpmem_eval.pipeline.horizon_llm import (
        GENERIC_ONLY,
        LongTranscript,
        generic_conditioning,
        respond,
        score,
    )
    from dpmem_eval.pipeline.runner import split_of

    for horizon in config.horizons:
        for pair in pairs:
            names = trajectory(pair, horizon)
            for side in ("M", "M'"):
                transcripts.append(LongTranscript((GENERIC_ONLY, False, horizon), pair.pair_id, pair.attribute, split_of(pair),
                                                  side, config.seeds[0], tuple(names),
                                                  generic_conditioning(pair, policy, side, names)))
    responses, stats = respond(transcripts, llm)
    print(f"long-horizon: {stats['requested']} turns generated or looked up: {stats['cache_hits']} cache hits, "
          f"{stats['repeated']} repeats, {stats['generated']} generated ({stats['wall_s']} s)", flush=True)
    metrics, judge_label = score(transcripts, responses, {p.pair_id: p for p in pairs}, llm, attributes, calibration)
    out = [{**row, **metrics[(row["key"], row["reuse"], row["T"])], "judge": judge_label, "generation": stats} for row in rows]
    for horizon in config.horizons:
        out.append({"method": "GenericOnly", "key": GENERIC_ONLY, "reuse": False, "T": horizon,
                    "personalised_turns": 0.0, "personalised_share": 0.0, "bound_B_a": 0.0,
                    **metrics[(GENERIC_ONLY, False, horizon)], "judge": judge_label, "generation": stats})
    return out
