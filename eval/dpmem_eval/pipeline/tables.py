"""Tables 2-4 as CSV and Markdown, the paper's values beside ours where the setting matches,
and the plots (matplotlib, Agg backend)."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from dpmem_eval.pipeline import methods as M
from dpmem_eval.pipeline import paper_values as P


def _f(value: Any, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def _write(out: Path, stem: str, header: Sequence[str], rows: Sequence[Sequence[Any]], title: str, notes: Sequence[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{stem}.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            writer.writerow([_f(v) if not isinstance(v, str) else v for v in row])
    lines = [f"# {title}", ""]
    lines += [f"> {n}" for n in notes]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(_f(v) if not isinstance(v, str) else v for v in row) + " |")
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def setting_matches(config: dict[str, Any], model: str) -> bool:
    """The paper's numbers are comparable only for its models at T=16 on the full test set."""
    return (model in P.PAPER_MODELS and config["horizon"] == 16 and config["test_pairs"] is None
            and tuple(config["seeds"]) == (0, 1, 2))


class Metric(TypedDict):
    """One method's figures on one track, as the tables and plots read them."""

    auc: float
    tpr5: float
    auc_lo: float
    auc_hi: float
    tRec: float
    U: float
    Unsup: float
    dagger: bool
    tRec_ci: list[float]
    Unsup_ci: list[float]
    U_ci: list[float]


def metric(audit: dict[str, Any], judge: dict[str, Any], model: str, method: str, track: str) -> Metric:
    a = audit.get(model, {}).get(method, {})
    rows = a.get("by_prefix", {}).get("test" if track == "pairedmem" else "transfer", [])
    auc = rows[-1]["auc"] if rows else float("nan")
    tpr = rows[-1]["tpr5"] if rows else float("nan")
    ci = a.get("ci", {}).get("test" if track == "pairedmem" else "transfer", {}).get("auc", [float("nan")] * 2)
    j = judge.get(model, {}).get(method, {}).get(track, {})
    if a.get("identical_sides", False):
        # Identical conditioning under M and M': chance by construction (paper's dagger);
        # a random guesser's TPR at 5% FPR is 0.05 (ties give the ROC diagonal).
        auc, tpr = P.CHANCE[0], P.CHANCE[1]
    nan2 = [float("nan")] * 2
    judge_ci = j.get("ci", {})
    return {"auc": auc, "tpr5": tpr, "auc_lo": ci[0], "auc_hi": ci[1], "tRec": j.get("tRec", float("nan")),
            "U": j.get("U", float("nan")), "Unsup": j.get("Unsup", float("nan")), "dagger": a.get("identical_sides", False),
            "tRec_ci": judge_ci.get("tRec", nan2), "Unsup_ci": judge_ci.get("Unsup", nan2), "U_ci": judge_ci.get("U", nan2)}


def _ci(bounds: Sequence[float]) -> str:
    """A CI as [lo, hi]; 'n/a' when the judge file predates per-pair CIs."""
    return "n/a" if any(math.isnan(b) for b in bounds) else f"[{_f(bounds[0])}, {_f(bounds[1])}]"


def table2(out: Path, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any], judge_label: str) -> None:
    header = ["track", "model", "method", "AUC", "AUC 95% CI", "TPR@5", "tRec", "tRec 95% CI", "U", "Unsup", "Unsup 95% CI",
              "paper AUC", "paper TPR@5", "paper tRec", "paper U", "paper Unsup", "paper setting matches"]
    rows = []
    for track in ("pairedmem", "transfer"):
        for model in config["models"]:
            match = setting_matches(config, model)
            paper_model = P.PAPER_MODELS.get(model, "Qwen2.5-7B")
            for method in M.MAIN_METHODS:
                m = metric(audit, judge, model, method.key, track)
                dagger = "†" if m["dagger"] else ""
                paper = P.TABLE2[track].get(method.name, {}).get(paper_model, (None,) * 5)
                auc_ci = "none (0.5 by construction)" if m["dagger"] else _ci([m["auc_lo"], m["auc_hi"]])
                rows.append([track, model, method.name, _f(m["auc"]) + dagger, auc_ci,
                             _f(m["tpr5"]) + dagger, m["tRec"], _ci(m["tRec_ci"]), m["U"], m["Unsup"], _ci(m["Unsup_ci"]), *paper,
                             "yes" if match else f"no (paper: {paper_model}, T=16, full test set)"])
    notes = [f"T={config['horizon']}, B_a=2, K=3 for DP-MemView (on); preset {config['preset']}.",
             f"Utility judge: {judge_label}.",
             "† identical conditioning under M and M' (chance-level distinguishability by construction).",
             "Paper columns are the paper's Table 2; they are comparable only where 'paper setting matches' is yes.",
             "CIs: 95% bootstrap over pairs (AUC: resampled within attribute; tRec/Unsup: pair means, seeds averaged first)."]
    _write(out, "table2", header, rows, "Table 2: RQ1 privacy-utility", notes)


def table3(out: Path, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any], judge_label: str,
           grid: Sequence[M.MethodSpec]) -> None:
    header = ["model", "sweep", "B_a", "K", "eps_t,g", "AUC", "tRec", "Unsup", "paper eps", "paper AUC", "paper tRec", "paper Unsup"]
    rows = []
    main = M.method_by_key(M.MAIN_METHODS, "dp_on")
    settings = list(dict.fromkeys([(c, 3) for c in config["caps"]] + [(2, k) for k in config["ks"]]))
    for model in config["models"]:
        for cap, k in settings:
            method = main if (cap, k) == (2, 3) else next((g for g in grid if g.cap == cap and g.K == k), None)
            if method is None:
                continue
            m = metric(audit, judge, model, method.key, "pairedmem")
            paper = P.TABLE3.get((cap, k), (None,) * 4)
            sweep = "main setting (both sweeps)" if (cap, k) == (2, 3) else ("cap magnitude (K=3)" if k == 3 else "granularity (B_a=2)")
            rows.append([model, sweep, cap, k, f"{cap / k:.3f}", m["auc"], m["tRec"], m["Unsup"], *paper])
    notes = ["DP-MemView (on), PairedMem test pairs, eps_t,g = B_a/K.", f"Utility judge: {judge_label}.",
             "Paper columns: Qwen2.5-7B at T=16 (Table 3)."]
    _write(out, "table3", header, rows, "Table 3: budget sensitivity", notes)


def table4(out: Path, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any], judge_label: str,
           bounds: dict[str, dict[str, float]]) -> None:
    header = ["model", "variant", "violated", "DP bound (charge trace)", "ledger reports", "AUC", "tRec", "U", "Unsup",
              "paper bound", "paper AUC", "paper tRec", "paper U", "paper Unsup"]
    rows = []
    variants = [M.method_by_key(M.MAIN_METHODS, "dp_on"), *M.ABLATIONS]
    for model in config["models"]:
        for method in variants:
            m = metric(audit, judge, model, method.key, "pairedmem")
            b = bounds.get(method.key, {})
            bound = b.get("reconstructed_max", float("nan"))
            ledger = b.get("ledger_max", float("nan"))
            cap = float(method.cap)
            relation = "n/a" if math.isnan(bound) else "inf" if math.isinf(bound) else (f"{bound:.2f} <= B_a" if bound <= cap + 1e-12 else f"{bound:.2f} > B_a")
            paper = P.TABLE4.get(method.name, ("", "", None, None, None, None))
            rows.append([model, method.name, method.violates or "-", relation, _f(ledger, 2), m["auc"], m["tRec"], m["U"],
                         m["Unsup"], paper[1], *paper[2:]])
    sc = audit.get(config["models"][0], {}).get(M.SCORE_CHANNEL.key, {})
    sc_rows = sc.get("by_prefix", {}).get("test", [])
    sc_auc = sc_rows[-1]["auc"] if sc_rows else float("nan")
    notes = [f"PairedMem test pairs, T={config['horizon']}, B_a=2, K=3. Utility judge: {judge_label}.",
             "DP bound: the largest cumulative target-attribute charge over all evaluated transcripts, reconstructed "
             "from the kernel's slot plans including charges an ablation omitted from its ledger; inf when the selector "
             "is deterministic (C3).",
             f"Score-channel diagnostic (top internal score exposed as c_t, C3/C6): AUC {_f(sc_auc)} "
             f"(paper {P.SCORE_CHANNEL_AUC})."]
    _write(out, "table4", header, rows, "Table 4: safeguard ablations", notes)


def charge_bounds(trace_rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for row in trace_rows:
        entry = out.setdefault(row["method"], {"reconstructed_max": 0.0, "ledger_max": 0.0})
        entry["reconstructed_max"] = max(entry["reconstructed_max"], float(row["reconstructed_target"]))
        entry["ledger_max"] = max(entry["ledger_max"], float(row["ledger_target"]))
    return out

