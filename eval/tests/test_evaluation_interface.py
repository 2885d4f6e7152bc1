"""One evaluation configuration: `examples/evaluation.toml` is the data package's export.

The kernel side (counterexamples/table4.py, benchmarks/bench_audit.py and bench_kernel.py,
tests/audit/test_auditor_*.py) loads the committed file; the kernel never imports dpmem_eval, so the
direction is eval -> file -> kernel, and this test keeps the file equal to a fresh export."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from dpmem_eval.data.interface import audit_stores, evaluation_interface_toml
from dpmem_eval.data.scaffold import ATTRIBUTES, LAYOUT, SLOTS, UNION_GROUPS

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "examples" / "evaluation.toml"


def test_committed_file_equals_a_fresh_export():
    assert COMMITTED.read_text(encoding="utf-8") == evaluation_interface_toml(), (
        "examples/evaluation.toml is stale: run `dpmem-eval data export-interface --out examples/evaluation.toml`")


def test_export_command_writes_the_same_bytes(tmp_path):
    from dpmem_eval.cli import main

    out = tmp_path / "evaluation.toml"
    assert main(["data", "export-interface", "--out", str(out)]) == 0
    assert out.read_bytes() == COMMITTED.read_bytes()


def test_kernel_loads_the_eval_policy():
    from dpmem_ref.config.load import load_interface_file

    loaded = load_interface_file(COMMITTED)
    policy = loaded.interface.policy
    assert tuple(policy.layout.position_slots) == LAYOUT and set(policy.layout.slots) == set(SLOTS)
    assert {a.name: tuple(sorted(a.group)) for a in policy.attributes} == UNION_GROUPS
    assert {a.cap for a in policy.attributes} == {Fraction(2)}
    assert set(loaded.stores) == set(audit_stores())


def test_audit_stores_differ_where_their_names_say():
    stores = audit_stores()
    neutral = stores["neutral"]

    def differs(a, b):
        return {i for i, (x, y) in enumerate(zip(a, b, strict=True), start=1) if x != y}

    for attribute in ATTRIBUTES:
        assert differs(stores[f"M_{attribute}"], neutral) <= set(UNION_GROUPS[attribute])
    assert differs(stores["M_debt_and_job_loss"], stores["M_job_loss"]) <= set(UNION_GROUPS["debt"])
    both = differs(stores["M_debt_and_job_loss"], neutral)
    assert both <= set(UNION_GROUPS["debt"]) | set(UNION_GROUPS["job_loss"])
    assert not both <= set(UNION_GROUPS["debt"]) and not both <= set(UNION_GROUPS["job_loss"])
    assert differs(stores["neutral_non_runner"], neutral) == {5}
    assert all(5 not in group for group in UNION_GROUPS.values())
