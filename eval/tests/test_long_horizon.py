"""The long-horizon study (dpmem_eval.pipeline.horizon): the trajectory repeats the pair's
16 queries, reuse gives one rule per slot, (pre) plans only the fresh reads of the reuse
schedule, and a small run reproduces the expected shape: with reuse, no more charged
selections and no fewer personalised turns, every ledger within B_a."""

from __future__ import annotations

from dataclasses import replace

from dpmem_eval.pipeline import methods as M
from dpmem_eval.pipeline.config import PRESETS as RUN_PRESETS
from dpmem_eval.pipeline.horizon import PRESETS, fresh_schedule, long_interface, measure, trajectory
from dpmem_eval.pipeline.horizon_report import table
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


def _echo_run(tmp_path):
    return replace(RUN_PRESETS["cpu"], backend="echo", cache_dir=str(tmp_path / "cache"), progress=False)


def test_generated_run_adds_trec_unsup_response_auc_and_generic_only(tmp_path) -> None:
    config = replace(PRESETS["long-smoke"], horizons=(16, 32), pairs_per_split=1, methods=("dp_on",))
    rows = measure(config, _pairs(), llm=_echo_run(tmp_path))
    assert [(r["key"], r["reuse"], r["T"]) for r in rows] == [
        ("dp_on", False, 16), ("dp_on", False, 32), ("dp_on", True, 16), ("dp_on", True, 32),
        ("generic_only", False, 16), ("generic_only", False, 32)]
    for row in rows:
        assert 0.0 <= row["Unsup"] <= 1.0 and 0.0 <= row["tRec"] <= 1.0
        low, high = row["tRec_ci"]
        assert low <= row["tRec"] <= high
        assert 0.0 <= row["response_auc"] <= 1.0
        assert "NOT the paper's" in row["judge"]  # the proxy judge is labelled as such
    generic = [r for r in rows if r["key"] == "generic_only"]
    # the generic view at every turn: the same 16 prompts again, the same judgement per turn
    assert generic[0]["tRec"] == generic[1]["tRec"] and generic[0]["personalised_turns"] == 0.0
    stats = rows[0]["generation"]
    assert stats["requested"] == stats["cache_hits"] + stats["repeated"] + stats["generated"]
    assert stats["generated"] < stats["requested"] / 10  # no history in a prompt: turns repeat
    text = table(rows)
    assert "| GenericOnly | off | 32 | 0.000 | – |" in text and "not run" not in text


def test_each_turn_is_judged_on_the_gold_of_the_query_asked_then(tmp_path, monkeypatch) -> None:
    from dpmem_eval.pipeline.judge import ProxyJudge
    from dpmem_eval.pipeline.runner import split_of

    seen = []
    original = ProxyJudge.judge

    def spy(self, items):
        seen.extend(items)
        return original(self, items)

    monkeypatch.setattr(ProxyJudge, "judge", spy)
    pairs = _pairs()
    tests = [p for p in pairs if split_of(p) == "test"]  # only test pairs are judged
    config = replace(PRESETS["long-smoke"], horizons=(40,), pairs_per_split=1, methods=("dp_on",))
    measure(config, pairs, llm=_echo_run(tmp_path))
    assert len(seen) == 3 * 2 * len(tests)  # dp_on without and with reuse, GenericOnly; M and M'

    def expected(pair):
        # turn i asks query i mod 16, and is judged on that query's gold record only
        names = trajectory(pair, 40)
        texts = {q.query_id: q.text for q in pair.queries}
        gold = {g.query_id: g for g in pair.gold}
        asked = [texts[n] for n in names]
        on_m = [list(gold[n].target_required) if n in gold else [] for n in names]
        on_m_prime = [list(gold[n].unsupported_target_specific) if n in gold else [] for n in names]
        return asked, (on_m, on_m_prime)

    for item in seen:
        judged: dict[int, list[str]] = {}
        for turn, text in item.behaviours:
            judged.setdefault(turn, []).append(text)
        found = [judged.get(t, []) for t in range(40)]
        matches = [p for p in tests if expected(p)[0] == [q for q, _ in item.turns] and found in expected(p)[1]]
        assert matches and any(found), item.behaviours[:3]


def test_generation_refuses_a_prompt_with_history(tmp_path) -> None:
    import pytest

    from dpmem_eval.pipeline.horizon_llm import respond

    with pytest.raises(ValueError, match="history_turns = 0"):
        respond([], replace(_echo_run(tmp_path), history_turns=2))


def test_checklist_judge_is_calibrated_as_the_committed_cpu_run(tmp_path) -> None:
    from pathlib import Path

    config = replace(PRESETS["long-smoke"], horizons=(16,), pairs_per_split=1, methods=("dp_on",))
    repo = Path(__file__).resolve().parents[2]
    from dpmem_eval.pipeline.horizon_llm import calibration_rows

    run = replace(_echo_run(tmp_path), judge="checklist")
    rows = measure(config, _pairs(), llm=run, calibration=calibration_rows(run, repo / "results" / "cpu"))
    assert all(r["judge"].startswith("checklist-judge") for r in rows)
    assert all(0.0 <= r["tRec"] <= 1.0 for r in rows)


def test_cli_names_a_missing_calibration_run_in_one_line(tmp_path, capsys) -> None:
    from dpmem_eval.cli import main

    status = main(["long-horizon", "--preset", "long-smoke", "--backend", "echo", "--cache-dir", str(tmp_path / "c"),
                   "--calibrate-from", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "--calibrate-from" in err[0] and "transcripts-smollm2.jsonl" in err[0]
    assert not (tmp_path / "out").exists()
