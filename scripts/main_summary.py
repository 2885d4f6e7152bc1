"""The closing lines of `make run` in plain words (scripts/run_main.sh): what the Figure 2
run released, whether the exact audit's worst adaptive strategy stays within the promised
bound, and what the smoke benchmark wrote.

    python scripts/main_summary.py AUDIT_JSON RUN_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _number(text: object) -> float:
    return float(str(text))


def audit_sentence(audit: dict) -> str:
    loss, bound = _number(audit["worst_case_loss"]), audit["bound"]
    verdict = "holds" if audit["holds"] else "BROKEN"
    certified = " (certified by exact interval arithmetic)" if audit.get("certified") else ""
    return (f"exact audit, T = {audit['horizon']}: the worst adaptive strategy's privacy loss is {loss:.2f} "
            f"of a promised {bound}: {verdict}{certified}")


def smoke_sentence(run_dir: Path) -> str:
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    gen = next(iter(run["generation"].values()), {})
    seconds = run["timings"].get("total_s", 0.0)
    return (f"smoke benchmark: every interface and Tables 2-4 in {seconds:.0f} s ({gen.get('generated', 0)} "
            f"generations), written to {run_dir}/ (its numbers check the pipeline, they measure nothing)")


def main(argv: list[str]) -> int:
    audit_path, run_dir = Path(argv[0]), Path(argv[1])
    lines = ["== make run: summary"]
    try:
        audit = json.loads(audit_path.read_text(encoding="utf-8"))
        lines.append("  " + audit_sentence(audit))
    except (OSError, ValueError, KeyError) as exc:
        lines.append(f"  exact audit: see its output above (summary unavailable: {type(exc).__name__})")
    try:
        lines.append("  " + smoke_sentence(run_dir))
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        lines.append(f"  smoke benchmark: see its output above (summary unavailable: {type(exc).__name__})")
    print("\n".join(lines))
    return 0 if "BROKEN" not in lines[1] else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
