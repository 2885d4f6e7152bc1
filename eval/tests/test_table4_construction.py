"""Table 4's DP-bound column by construction: PairedMem pairs re-ordered into the paper's
trajectory shape give, through the kernel's `run_turn`, exactly the paper's bounds
(2, 4, inf, 16/3 at T = 16, B_a = 2, K = 3)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_eval.data import build_dataset
from dpmem_eval.data.scaffold import UNION_GROUPS
from dpmem_eval.pipeline import table4_construction as T4


@pytest.fixture(scope="module")
def test_pairs():
    return [p for p in build_dataset(0, transfer=False).pairedmem if p.split == "test"]


@pytest.fixture(scope="module")
def built(test_pairs):
    pairs = T4.constructed_pairs(test_pairs, dict(UNION_GROUPS))
    # one pair per attribute the construction reaches keeps the test in seconds
    return list({p.attribute: p for p in pairs}.values())


def test_constructed_trajectories_have_the_papers_shape(built):
    groups = dict(UNION_GROUPS)
    assert {p.attribute for p in built} == {"job_loss", "pregnancy"}
    for pair in built:
        touched = [T4._touched(q.read_positions, groups) for q in pair.queries[: T4.HORIZON]]
        assert len(pair.queries) == 32 and len({q.query_id for q in pair.queries}) == 32
        assert sum(t == {pair.attribute} for t in touched) == 4
        overlap = [t for t in touched if pair.attribute in t and len(t) == 2]
        assert len(overlap) == 4 and len({frozenset(t) for t in overlap}) == 1
        assert sum(not t for t in touched) == 8
        assert [g.query_id for g in pair.gold] == [q.query_id for q in pair.queries]


def test_kernel_bounds_equal_the_papers_table4_exactly(built):
    result = T4.bounds(built)
    assert result["dp_on"]["bound"] == Fraction(2)
    assert result["incomplete_charge"]["bound"] == Fraction(4)
    assert result["incomplete_charge"]["ledger"] == Fraction(2)  # the ledger never sees the omitted charges
    assert result["capped_argmax"]["bound"] is None  # inf: argmax, C3
    assert result["no_cap"]["bound"] == Fraction(16, 3)
    assert {k: v["bound"] for k, v in result.items()} == T4.PAPER


def test_pairedmem_trajectories_as_they_are_give_fewer_overlap_reads(test_pairs):
    """Why the construction exists: the pairs' own first block reaches 10/3, not 4."""
    pair = next(p for p in test_pairs if p.attribute == "job_loss" and T4.construct(p, dict(UNION_GROUPS)))
    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline.kernel_runs import kernel_trace

    method = next(m for m in M.ABLATIONS if m.key == "incomplete_charge")
    traces = [kernel_trace(method, pair, side, 0, M.load_public_policy(), T4.HORIZON) for side in ("M", "M'")]
    assert max(t.final_reconstructed for t in traces) < Fraction(4)


def test_constructed_data_directory_loads_for_a_pipeline_run(tmp_path):
    from dpmem_eval.data import load_dataset

    assert T4.write_constructed_data(tmp_path) == 192
    loaded = load_dataset(tmp_path)
    assert {p.split for p in loaded.pairedmem} == {"train", "validation", "test", "reserve"}
    assert all(len(p.queries) == 32 for p in loaded.pairedmem) and not loaded.transfer
