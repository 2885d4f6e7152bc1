"""The long-horizon study (dpmem_eval.pipeline.horizon): the trajectory repeats the pair's
16 queries, reuse gives one rule per slot, (pre) plans only the fresh reads of the reuse
schedule, and a small run reproduces the expected shape: with reuse, no more charged
selections and no fewer personalised turns, every ledger within B_a."""

from __future__ import annotations

from dataclasses import replace

from dpmem_eval.pipeline import methods as M
from dpmem_eval.pipeline.config import PRESETS as RUN_PRESETS
from dpmem_eval.pipeline.horizon import PRESETS, fresh_schedule, long_interface, measure, table, trajectory
from dpmem_eval.pipeline.runner import load_pairs


def _pairs(n: int = 1):
    run = replace(RUN_PRESETS["cpu"], transfer_pairs=0, train_pairs=n, validation_pairs=n, test_pairs=n)
    return load_pairs(run)


def test_trajectory_repeats_the_first_sixteen_queries() -> None:
    pair = _pairs()[0]
    names = trajectory(pair, 40)
    assert names[:16] == [q.query_id for q in pair.queries[:16]]
    assert names[16:32] == names[:16] and names[32:] == names[:8]


def test_fresh_schedule_reuses_within_the_refresh_window() -> None:
    # the window counts from the fresh release: a at 0 serves turn 2, not turn 3
    assert fresh_schedule(["a", "b", "a", "a", "b", "a"], 2) == [True, True, False, True, True, False]
    assert fresh_schedule(["a", "a", "a"], None) == [True, True, True]


def test_reuse_rules_cover_each_slot_and_pre_plans_the_fresh_reads() -> None:
    pair = _pairs()[0]
    policy = M.load_public_policy()
    methods = {m.key: m for m in M.all_methods()}
    plain = long_interface(methods["dp_pre"], pair, policy, 64, None)
    reuse = long_interface(methods["dp_pre"], pair, policy, 64, 16)
    assert not plain.reuse.rules
    slots = {q.reads[0].slot for q in reuse.queries}
    assert {rule.slot for rule in reuse.reuse.rules} == slots
    # (pre): C_a counts the planned selections, far fewer with reuse over 64 turns.
    assert sum(n for _, n in reuse.budget.plan) < sum(n for _, n in plain.budget.plan)


def test_small_run_has_the_expected_shape() -> None:
    config = replace(PRESETS["long-smoke"], horizons=(32,), pairs_per_split=1, methods=("dp_on",))
    rows = measure(config, _pairs())
    off, on = rows
    assert (off["reuse"], on["reuse"]) == (False, True)
    assert on["charged_selections"] <= off["charged_selections"]  # equal once the budget binds
    assert on["personalised_turns"] >= off["personalised_turns"]
    assert on["reused_turns"] > 0 == off["reused_turns"]
    for row in rows:
        assert row["L_target_max"] <= row["bound_B_a"]
        assert row["matched_turns"] <= row["personalised_turns"] <= row["T"]
        assert row["exact_loss_max"] <= row["L_target_max"] + 1e-12  # Theorem 1, pathwise
    assert "| DP-MemView (on) | on | 32 |" in table(rows)
