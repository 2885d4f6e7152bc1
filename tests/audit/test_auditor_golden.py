"""What an auditor reads, pinned byte for byte: `dpmem check` and `dpmem audit` (text and JSON)
on the shipped examples and the broken ones, each compared with its committed golden output in
tests/audit/golden/. The witness table, the verdict lines, the violation lines and the JSON
fields are the product an auditor signs off on; a change to any of them must be deliberate.

Regenerate after a deliberate change: DPMEM_UPDATE_GOLDEN=1 pytest tests/audit/test_auditor_golden.py
(then read the diff). Timings are the only text masked."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.kernel_fixtures import run_cli

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLES = "examples"

FIGURE2 = f"{EXAMPLES}/figure2.toml"
REUSE = f"{EXAMPLES}/figure2-reuse.toml"
EVALUATION = f"{EXAMPLES}/evaluation.toml"
BROKEN = sorted(p.stem for p in (ROOT / EXAMPLES / "broken").glob("*.toml"))

CASES: dict[str, list[str]] = {
    "check-figure2": ["check", FIGURE2],
    "check-figure2-json": ["check", FIGURE2, "--json"],
    "check-reuse": ["check", REUSE],
    "audit-figure2-diabetes-T16": ["audit", FIGURE2, "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "16"],
    "audit-figure2-neutral-T6-json": ["audit", FIGURE2, "--store-a", "M", "--store-b", "neutral", "--horizon", "6", "--json"],
    "audit-figure2-debt-T8-periods": ["audit", FIGURE2, "--store-a", "M", "--store-b", "M_no_debt", "--horizon", "8",
                                      "--periods", "12"],
    "audit-reuse-T4": ["audit", REUSE, "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "4"],
    "audit-reuse-T4-json": ["audit", REUSE, "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "4", "--json"],
    "audit-figure2-same-store": ["audit", FIGURE2, "--store-a", "M", "--store-b", "M", "--horizon", "3"],
    "audit-figure2-max-states": ["audit", FIGURE2, "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "16",
                                 "--max-states", "5"],
    "audit-figure2-neutral-T6": ["audit", FIGURE2, "--store-a", "M", "--store-b", "neutral", "--horizon", "6"],
    "audit-figure2-debt-T8-json": ["audit", FIGURE2, "--store-a", "M", "--store-b", "M_no_debt", "--horizon", "8", "--json",
                                   "--periods", "3"],
    "audit-reuse-neutral-T5": ["audit", REUSE, "--store-a", "neutral", "--store-b", "M", "--horizon", "5"],
    # The controls differ on the first turn, a two-slot turn: its note is printed once, on its first line.
    "audit-broken-raw-evidence-control-neutral-T1": ["audit", f"{EXAMPLES}/broken/raw-evidence-control.toml",
                                                     "--store-a", "M", "--store-b", "neutral", "--horizon", "1"],
    **{f"audit-evaluation-{a}-{b}-T2{suffix}": ["audit", EVALUATION, "--store-a", a, "--store-b", b, "--horizon", "2",
                                                 *(["--json"] if suffix else [])]
       for a, b in (("neutral", "M_debt_and_job_loss"), ("neutral", "neutral_non_runner"), ("neutral", "neutral"),
                    ("M_debt", "M_diabetes"))
       for suffix in ("", "-json")},
    "check-evaluation": ["check", EVALUATION],
    **{f"check-broken-{name}": ["check", f"{EXAMPLES}/broken/{name}.toml"] for name in BROKEN},
    **{f"check-broken-{name}-json": ["check", f"{EXAMPLES}/broken/{name}.toml", "--json"] for name in BROKEN},
}


def _audited_stores(name: str) -> list[str]:
    """Two stores of a broken example for its audit (the first two it names)."""
    import tomllib

    with (ROOT / EXAMPLES / "broken" / f"{name}.toml").open("rb") as handle:
        stores = list(tomllib.load(handle).get("stores", {}))
    return stores[:2]


for _name in BROKEN:
    _stores = _audited_stores(_name)
    if len(_stores) == 2:
        CASES[f"audit-broken-{_name}-T4"] = ["audit", f"{EXAMPLES}/broken/{_name}.toml", "--store-a", _stores[0],
                                             "--store-b", _stores[1], "--horizon", "4"]
        CASES[f"audit-broken-{_name}-T4-json"] = CASES[f"audit-broken-{_name}-T4"] + ["--json"]


def _masked(text: str) -> str:
    text = re.sub(r"in [0-9.]+ s\b", "in <time> s", text)
    return re.sub(r'"seconds": [0-9.e-]+', '"seconds": <time>', text)


def _rendered(argv: list[str]) -> str:
    code, out, err = run_cli(argv)
    return f"$ dpmem {' '.join(argv)}\nexit {code}\n--- stdout\n{_masked(out)}--- stderr\n{_masked(err)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_matches_its_golden_file(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples by their relative names, as a user types them
    text = _rendered(CASES[name])
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("DPMEM_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden output for {name}: run with DPMEM_UPDATE_GOLDEN=1 and read the diff"
    assert text == path.read_text()


def test_every_golden_file_has_a_case() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(CASES)
