#!/usr/bin/env python3
"""How often the proof suite reaches the cases that decide the theorems (issue 15).

Runs `pytest proofs_as_tests --hypothesis-show-statistics` under the `ci` profile (the
profile CI uses), reads Hypothesis's per-test event shares and prints them beside the
acceptance floors:

- Corollary 1 (`test_composite_loss_at_most_kappa`): >= 40% of examples need a
  multi-attribute cover and have a non-zero loss;
- Theorem 1 (both transcript tests): >= 50% of examples have T >= 3 with a fallback,
  >= 20% reach a certified loss above 0.9 B_a;
- the wall time of the whole proofs suite: < 90 s.

Shares are over every test case Hypothesis ran in the generate phase, invalid ones
included (the conservative denominator). Exit status 1 when a floor is missed.
Then the same for the differential properties of issue 27 (tests/analysis/test_differential_*.py):
the shapes each reaches (multi-slot turns, broken parts with strict off, over- and
under-charged declarations, preallocated plans, fallbacks on the tape's path), with floors.
Usage: python scripts/proof_coverage.py [extra pytest args]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from proofs_as_tests.strategies.events import (  # noqa: E402
    COROLLARY1_HARD,
    THEOREM1_FALLBACK,
    THEOREM1_NEAR_CAP,
)

COROLLARY1 = "test_corollary1.py::test_composite_loss_at_most_kappa"
THEOREM1 = (
    "test_theorem1.py::test_every_augmented_transcript_loss_below_pathwise_ledger",
    "test_theorem1.py::test_ordinary_transcript_loss_below_augmented",
)
FLOORS = [
    (COROLLARY1, COROLLARY1_HARD, 40.0),
    *((test, THEOREM1_FALLBACK, 50.0) for test in THEOREM1),
    *((test, THEOREM1_NEAR_CAP, 20.0) for test in THEOREM1),
]
WALL_LIMIT_S = 90.0

# Issue 27: the differential properties (tests/analysis/test_differential_*.py) report the shapes
# they reach; each floor is about half the share measured under the ci profile.
AUDIT = "test_differential_audit.py::test_fast_audit_equals_general_search_and_the_witness_replays"
ENGINES = "test_differential_engines.py::test_runner_durable_session_and_walker_agree_on_one_tape"
DIFFERENTIAL_FLOORS = [
    (AUDIT, "multi-slot turn", 30.0),
    (AUDIT, "positive finite loss", 20.0),
    (AUDIT, "infinite loss", 6.0),
    (AUDIT, "preallocated plan", 6.0),
    (AUDIT, "over-charged declaration", 1.5),
    (AUDIT, "under-charged declaration", 5.0),
    (AUDIT, "uncharged read", 7.0),
    (AUDIT, "broken C2 (strict off)", 5.0),
    (AUDIT, "broken C3 (strict off)", 10.0),
    (AUDIT, "broken C5 (strict off)", 20.0),
    (AUDIT, "broken C6 (strict off)", 5.0),
    (ENGINES, "multi-slot turn on the tape's path", 7.0),
    (ENGINES, "a fallback on the tape's path", 35.0),
]
DIFFERENTIAL_PATHS = ["tests/analysis/test_differential_audit.py", "tests/analysis/test_differential_engines.py"]


def parse_statistics(output: str) -> dict[str, dict[str, float]]:
    """test id -> {event: percent}, from Hypothesis's statistics section."""
    stats: dict[str, dict[str, float]] = {}
    current = None
    for line in output.splitlines():
        header = re.match(r"^(\S+::\S+):$", line.strip())
        if header:
            current = header.group(1)
            stats[current] = {}
            continue
        match = re.match(r"^\s*\*\s+([\d.]+)%, (.+)$", line)
        if match and current is not None:
            stats[current][match.group(2).strip()] = float(match.group(1))
        counts = re.match(r"^\s*- (\d+) passing, (\d+) failing, and (\d+) invalid", line)
        if counts and current is not None:
            stats[current]["__cases__"] = float(sum(int(x) for x in counts.groups()))
    return stats


def _run(paths: list[str], argv: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    env = dict(os.environ, HYPOTHESIS_PROFILE="ci")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "eval"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider",
               "--hypothesis-show-statistics", *argv]
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    tail = completed.stdout.strip().splitlines()[-1:] or [""]
    print(f"pytest {' '.join(paths)} (profile ci): {tail[0]}  [exit {completed.returncode}]")
    return completed, wall


def _floors(stats: dict[str, dict[str, float]], floors: list[tuple[str, str, float]]) -> bool:
    ok = True
    print(f"{'test':<75} {'event':<36} {'share':>7} {'floor':>6}  ok")
    for test, label, floor in floors:
        found = next((v for k, v in stats.items() if k.endswith(test)), None)
        share = (found or {}).get(label, 0.0)
        cases = int((found or {}).get("__cases__", 0))
        good = found is not None and share >= floor
        ok &= good
        print(f"{test:<75} {label:<36} {share:>6.2f}% {floor:>5.0f}%  {'yes' if good else 'NO'}  (of {cases} cases)")
    return ok


def main(argv: list[str]) -> int:
    completed, wall = _run(["proofs_as_tests"], argv)
    ok = _floors(parse_statistics(completed.stdout), FLOORS) and completed.returncode == 0
    differential, _ = _run(DIFFERENTIAL_PATHS, argv)
    ok &= _floors(parse_statistics(differential.stdout), DIFFERENTIAL_FLOORS) and differential.returncode == 0
    fast = wall < WALL_LIMIT_S
    ok &= fast
    print(f"wall time of the proofs suite: {wall:.1f} s (limit {WALL_LIMIT_S:.0f} s)  {'yes' if fast else 'NO'}")
    if completed.returncode != 0:
        print(completed.stdout[-4000:], completed.stderr[-2000:], sep="\n")
    print("acceptance:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
