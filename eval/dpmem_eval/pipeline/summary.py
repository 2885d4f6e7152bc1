"""The closing summary of `dpmem-eval run`, in plain words: does each DP-MemView variant keep
its promised bound (Table 4, from the kernel's charge traces), how distinguishable are the
transcripts (Table 2's auditor AUC, 0.5 = chance), which judge scored utility, and what the
numbers of this preset can and cannot say."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

from dpmem_eval.pipeline import methods as M

# What each Table 4 variant is expected to do (paper, Table 4 and Proposition 1).
EXPECTED = {
    "dp_on": "holds",
    "incomplete_charge": "the ledger under-reports (C2)",
    "capped_argmax": "no finite bound (C3: deterministic selection)",
    "no_cap": "exceeds the cap (C5: no cap)",
}
FEW_TEST_PAIRS = 16


def bound_lines(bounds: dict[str, dict[str, float]], traces: int) -> list[str]:
    """One sentence per Table 4 variant: largest cumulative charge against its promised cap."""
    lines = []
    for method in (M.method_by_key(M.MAIN_METHODS, "dp_on"), *M.ABLATIONS):
        b = bounds.get(method.key)
        if b is None:
            continue
        cap, worst, ledger = float(method.cap), b["reconstructed_max"], b["ledger_max"]
        if math.isinf(worst):
            verdict = "no finite bound: a deterministic selector's releases are not DP (C3), as expected"
        elif worst <= cap + 1e-12:
            verdict = "holds" if method.violates is None else f"holds on these transcripts ({method.violates} broken)"
        else:
            verdict = f"broken ({method.violates}), as the paper's Table 4 predicts"
        reported = f"; its ledger reports {ledger:.2f}" if method.incomplete_charge else ""
        worst_text = "inf" if math.isinf(worst) else f"{worst:.2f}"
        lines.append(f"{method.name}: the largest cumulative charge of the protected attribute is {worst_text} "
                     f"of a promised B_a = {cap:g}{reported}: {verdict}")
    if lines:
        lines.append(f"(over the kernel traces of {traces} transcripts)")
    return lines


def _auc(audit: dict[str, Any], model: str, key: str) -> tuple[float, float, float, bool] | None:
    entry = audit.get(model, {}).get(key)
    rows = (entry or {}).get("by_prefix", {}).get("test", [])
    if not rows:
        return None
    ci = entry.get("ci", {}).get("test", {}).get("auc", [math.nan, math.nan])
    return rows[-1]["auc"], ci[0], ci[1], bool(entry.get("identical_sides"))


def auc_lines(audit: dict[str, Any], models: Sequence[str], n_test_pairs: int) -> list[str]:
    lines = []
    for model in models:
        parts = []
        for key in ("raw_read_set", "dp_on", "dp_pre", "generic_only"):
            found = _auc(audit, model, key)
            if found is None:
                continue
            auc, lo, hi, dagger = found
            name = M.method_by_key(M.MAIN_METHODS, key).name
            parts.append(f"{name} 0.500 (identical views by construction)" if dagger
                         else f"{name} {auc:.3f} [{lo:.3f}, {hi:.3f}]")
        if parts:
            lines.append(f"{model}: auditor AUC on test pairs (0.5 = chance, 1 = always tells M from M'): "
                         + ", ".join(parts))
    if n_test_pairs < FEW_TEST_PAIRS:
        lines.append(f"only {n_test_pairs} test pairs per method: these AUCs carry no information; "
                     "this preset checks that every stage runs (the cpu preset measures, see results/cpu)")
    return lines


def summary_text(out: Any, config: Any, audit: dict[str, Any], bounds: dict[str, dict[str, float]],
                 traces: int, judge_label: str, n_test_pairs: int, corpora: str | None) -> str:
    lines = [f"== summary of this run (preset {config.preset}, T = {config.horizon}, EM seeds {list(config.seeds)})"]
    lines += ["  " + line for line in bound_lines(bounds, traces)]
    lines += ["  " + line for line in auc_lines(audit, config.models, n_test_pairs)]
    lines.append(f"  utility judge: {judge_label}")
    if corpora == "excerpt":
        lines.append("  transfer track: built from the corpus excerpt shipped with dpmem-eval (the full corpora "
                     "were not given; the same transfer pairs)")
    lines.append(f"  results: {out}/ (table2.md, table3.md, table4.md, plots/, run.json)")
    return "\n".join(lines)


# --- what the run prints while it works ---------------------------------------------------

STAGES = 6


def stage(number: int, title: str) -> None:
    """A header per stage on stderr, so a person watching the run knows where it is."""
    print(f"== [{number}/{STAGES}] {title}", file=sys.stderr, flush=True)


def note(text: str) -> None:
    print(f"   {text}", file=sys.stderr, flush=True)


def generation_line(model: str, stats: dict[str, Any]) -> str:
    """What the generation stage did, in words: prompts generated now, repeats of a prompt
    generated earlier in this run, and answers found in the response cache from earlier runs."""
    line = (f"[{model}] {stats['requested']} prompts: {stats['generated']} generated, "
            f"{stats.get('repeated', 0)} repeated an earlier prompt of this run, "
            f"{stats['cache_hits']} answered from the response cache of earlier runs")
    if stats["generated"]:
        line += f"; {stats['tokens_per_second']} tok/s, model load {stats['load_seconds']:.1f} s"
    return line
