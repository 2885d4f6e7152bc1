"""The plots of a run (matplotlib, Agg backend): privacy-utility, AUC by prefix length, and
budget sensitivity. Written for a reader: every series has its own colour and marker (eleven
series, no repeated colour), integer axes have integer ticks, 95% bootstrap CIs are drawn
(bands where the audit has them per prefix, error bars otherwise), legends sit beside the
axes instead of on the data, and models are named as people know them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpmem_eval.pipeline import methods as M
from dpmem_eval.pipeline.tables import metric

# One colour and marker per series; no colour repeats (matplotlib's default cycle has ten).
STYLES: dict[str, tuple[str, str]] = {
    "generic_only": ("#7f7f7f", "o"),
    "raw_read_set": ("#d62728", "s"),
    "typed_mask": ("#bcbd22", "v"),
    "task_min": ("#ff7f0e", "^"),
    "output_filter": ("#8c564b", "D"),
    "dp_on": ("#1f77b4", "o"),
    "dp_pre": ("#17becf", "s"),
    "incomplete_charge": ("#9467bd", "P"),
    "capped_argmax": ("#e377c2", "X"),
    "no_cap": ("#2ca02c", "h"),
    "score_channel": ("#000000", "*"),
}
DISPLAY_NAMES = {
    "smollm2": "SmolLM2-135M-Instruct",
    "echo": "echo backend (test stand-in)",
}


def display_name(model: str) -> str:
    """`smollm2` -> SmolLM2-135M-Instruct; a Hub id -> its name (Qwen/Qwen2.5-7B-Instruct -> Qwen2.5-7B-Instruct)."""
    return DISPLAY_NAMES.get(model, model.rstrip("/").split("/")[-1])


def _slug(model: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in model.split("/")[-1])


def _finite(*values: float) -> bool:
    return all(isinstance(v, (int, float)) and not math.isnan(v) and not math.isinf(v) for v in values)


def plots(out: Path, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any],
          grid: Sequence[M.MethodSpec]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plot_dir = out / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    written = []
    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8})
    for model in config["models"]:
        slug, name = _slug(model), display_name(model)
        for stem, draw in (("auc_vs_trec", _privacy_utility), ("auc_vs_prefix", _auc_by_prefix),
                           ("budget_sensitivity", _budget)):
            fig = draw(plt, config, audit, judge, model, name, grid)
            path = plot_dir / f"{stem}_{slug}.png"
            fig.savefig(path, dpi=130, bbox_inches="tight")
            plt.close(fig)
            written.append(str(path))
    return written


def _legend_outside(ax: Any) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


def _privacy_utility(plt: Any, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any], model: str,
                     name: str, grid: Sequence[M.MethodSpec]) -> Any:
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    for method in M.MAIN_METHODS + M.ABLATIONS:
        m = metric(audit, judge, model, method.key, "pairedmem")
        colour, marker = STYLES[method.key]
        if not _finite(m["auc"], m["tRec"]):
            continue
        err = None
        if _finite(m["auc_lo"], m["auc_hi"]) and not m["dagger"]:
            err = [[max(m["auc"] - m["auc_lo"], 0.0)], [max(m["auc_hi"] - m["auc"], 0.0)]]
        label = method.name + (" (identical views: chance by construction)" if m["dagger"] else "")
        ax.errorbar([m["tRec"]], [m["auc"]], yerr=err, fmt=marker, color=colour, ms=7, capsize=3, label=label)
    ax.axhline(0.5, ls="--", c="grey", lw=0.8, label="chance (AUC 0.5)")
    ax.set_xlabel("tRec: target-required behaviours recalled (higher is better)")
    ax.set_ylabel("auditor macro-AUC at T (lower is more private)")
    ax.set_title(f"Privacy vs utility, {name} (PairedMem test pairs, 95% CI)")
    _legend_outside(ax)
    return fig


def _auc_by_prefix(plt: Any, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any], model: str,
                   name: str, grid: Sequence[M.MethodSpec]) -> Any:
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    series = M.MAIN_METHODS + M.ABLATIONS + (M.SCORE_CHANNEL,)
    for index, method in enumerate(series):
        entry = audit.get(model, {}).get(method.key, {})
        rows = entry.get("by_prefix", {}).get("test", [])
        if not rows:
            continue
        colour, marker = STYLES[method.key]
        xs, ys = [r["prefix"] for r in rows], [r["auc"] for r in rows]
        ax.plot(xs, ys, marker=marker, ms=5, lw=1.3, color=colour, label=method.name)
        if all("auc_lo" in r and "auc_hi" in r for r in rows):  # a band: CIs at every prefix length
            ax.fill_between(xs, [r["auc_lo"] for r in rows], [r["auc_hi"] for r in rows], color=colour, alpha=0.12, lw=0)
        else:  # the audit has the CI at the full horizon only
            ci = entry.get("ci", {}).get("test", {}).get("auc")
            if ci and _finite(*ci) and not entry.get("identical_sides"):
                shift = (index - len(series) / 2) * 0.03  # side by side, not on top of each other
                ax.errorbar([xs[-1] + shift], [ys[-1]], yerr=[[max(ys[-1] - ci[0], 0)], [max(ci[1] - ys[-1], 0)]],
                            color=colour, capsize=3, lw=1, fmt="none")
    ax.axhline(0.5, ls="--", c="grey", lw=0.8, label="chance (AUC 0.5)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("prefix length t (turns the auditor has seen)")
    ax.set_ylabel("auditor macro-AUC (0.5 = chance)")
    ax.set_title(f"Distinguishability by prefix length, {name} (test pairs, 95% CI)")
    _legend_outside(ax)
    return fig


def _budget(plt: Any, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any], model: str, name: str,
            grid: Sequence[M.MethodSpec]) -> Any:
    main = M.method_by_key(M.MAIN_METHODS, "dp_on")
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.6), sharey=True)
    for ax, sweep, values in ((axes[0], "cap", config["caps"]), (axes[1], "K", config["ks"])):
        aucs, lows, highs, trecs = [], [], [], []
        for v in values:
            cap, k = (v, 3) if sweep == "cap" else (2, v)
            method = main if (cap, k) == (2, 3) else next((g for g in grid if g.cap == cap and g.K == k), None)
            m = metric(audit, judge, model, method.key, "pairedmem") if method else {}
            aucs.append(m.get("auc", math.nan))
            lows.append(m.get("auc_lo", math.nan))
            highs.append(m.get("auc_hi", math.nan))
            trecs.append(m.get("tRec", math.nan))
        positions = list(range(len(values)))  # evenly spaced, labelled with the integer values
        ax.plot(positions, aucs, marker="o", color=STYLES["dp_on"][0], label="auditor AUC")
        ax.fill_between(positions, lows, highs, color=STYLES["dp_on"][0], alpha=0.15, lw=0, label="AUC 95% CI")
        ax.plot(positions, trecs, marker="s", color="#ff7f0e", label="tRec")
        ax.axhline(0.5, ls="--", c="grey", lw=0.8)
        ax.set_xticks(positions, [str(v) for v in values])
        ax.set_xlabel("cap B_a (K = 3)" if sweep == "cap" else "K, releases per cap (B_a = 2)")
    axes[0].set_ylabel("AUC (0.5 = chance) / tRec")
    _legend_outside(axes[1])
    fig.suptitle(f"Budget sensitivity of DP-MemView (on), {name} (PairedMem test pairs)")
    return fig
