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
from dpmem_eval.pipeline.tables import Metric, metric

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
          grid: Sequence[M.MethodSpec], judge_note: str = "") -> list[str]:
    """Every plot of a run; `judge_note` (the judge and its agreement with gold) is printed under
    the privacy-utility plot."""
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
            fig = draw(plt, {**config, "_judge_note": judge_note}, audit, judge, model, name, grid)
            path = plot_dir / f"{stem}_{slug}.png"
            fig.savefig(path, dpi=130, bbox_inches="tight")
            plt.close(fig)
            written.append(str(path))
    return written


def _legend_outside(ax: Any) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)


TINY_SET = 10
"""Fewer test pairs than this: a pipeline check, no result (the smoke preset's 4)."""
SMALL_SET = 40
"""Fewer test pairs than this and a figure says its set is too small to mean much (the AUC's
95% CI at 64 pairs is already about +-0.05)."""


def _note(fig: Any, lines: Sequence[str]) -> None:
    """Notes under the axes, where a reader sees them (set size, judge agreement, offsets)."""
    import textwrap

    if lines:
        text = "\n".join(textwrap.fill(line, 150) for line in lines)
        fig.text(0.01, -0.06, text, ha="left", va="top", fontsize=7.5)


def _set_size_note(audit: dict[str, Any], model: str) -> list[str]:
    sizes = {e.get("n_test_pairs") for e in audit.get(model, {}).values() if isinstance(e, dict) and "n_test_pairs" in e}
    n = min((v for v in sizes if isinstance(v, int)), default=None)
    if n is None:
        return []
    if n < TINY_SET:
        return [f"WARNING: only {n} test pairs - too few for the AUCs or utility scores to mean anything "
                f"(a pipeline check, not a result)."]
    if n < SMALL_SET:
        return [f"WARNING: only {n} test pairs - a small set: the 95% CIs (bootstrap over pairs) are wide; "
                f"read only differences larger than them."]
    return [f"{n} test pairs; CIs: 95% bootstrap over pairs (EM seeds averaged within a pair side)."]


def _offsets(points: dict[str, tuple[float, float]], span_x: float, span_y: float) -> dict[str, tuple[float, float]]:
    """Small offsets for points that would sit on top of each other (within 1% of the axes)."""
    out: dict[str, tuple[float, float]] = {}
    placed: list[tuple[float, float]] = []
    for key, (x, y) in points.items():
        clashes = sum(1 for px, py in placed if abs(px - x) <= 0.01 * span_x and abs(py - y) <= 0.01 * span_y)
        out[key] = (x + clashes * 0.03 * span_x, y)
        placed.append((x, y))
    return out


def _privacy_utility(plt: Any, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any], model: str,
                     name: str, grid: Sequence[M.MethodSpec]) -> Any:
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    found: dict[str, tuple[M.MethodSpec, Metric]] = {}
    for method in M.MAIN_METHODS + M.ABLATIONS:
        m = metric(audit, judge, model, method.key, "pairedmem")
        if _finite(m["auc"], m["tRec"]):
            found[method.key] = (method, m)
    xs = [m["tRec"] for _, m in found.values()] or [0.0]
    ys = [m["auc"] for _, m in found.values()] or [0.5]
    shifted = _offsets({k: (m["tRec"], m["auc"]) for k, (_, m) in found.items()},
                       max(max(xs) - min(xs), 0.05), max(max(ys) - min(ys), 0.05))
    moved = []
    for key, (method, m) in found.items():
        colour, marker = STYLES[key]
        x, y = shifted[key]
        if x != m["tRec"]:
            moved.append(method.name)
        yerr = None
        if _finite(m["auc_lo"], m["auc_hi"]) and not m["dagger"]:
            yerr = [[max(m["auc"] - m["auc_lo"], 0.0)], [max(m["auc_hi"] - m["auc"], 0.0)]]
        xerr = None
        if _finite(*m["tRec_ci"]):
            xerr = [[max(m["tRec"] - m["tRec_ci"][0], 0.0)], [max(m["tRec_ci"][1] - m["tRec"], 0.0)]]
        label = method.name + (" (identical views: AUC 0.5 by construction)" if m["dagger"] else "")
        ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt=marker, color=colour, ms=7, capsize=3, label=label, alpha=0.9)
    ax.axhline(0.5, ls="--", c="grey", lw=0.8, label="chance (AUC 0.5)")
    ax.set_xlabel("tRec: target-required behaviours shown on M (judge; higher is better)")
    ax.set_ylabel("auditor macro-AUC at T (lower is more private)")
    ax.set_title(f"Privacy vs utility, {name} (PairedMem test pairs, 95% CIs both axes)")
    _legend_outside(ax)
    notes = _set_size_note(audit, model)
    if moved:
        notes.append("Shifted right by 3% of the tRec range to stay visible (same value as a method drawn earlier): "
                     + ", ".join(moved) + ".")
    if config.get("_judge_note"):
        notes.append(config["_judge_note"])
    _note(fig, notes)
    return fig


PANELS = (
    ("memory-text baselines and the score channel", ("generic_only", "raw_read_set", "typed_mask", "task_min",
                                                      "output_filter", "score_channel")),
    ("DP-MemView and its safeguard ablations", ("dp_on", "dp_pre", "incomplete_charge", "capped_argmax", "no_cap")),
)


def _auc_by_prefix(plt: Any, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any], model: str,
                   name: str, grid: Sequence[M.MethodSpec]) -> Any:
    from matplotlib.ticker import MaxNLocator

    by_key = {m.key: m for m in (*M.MAIN_METHODS, *M.ABLATIONS, M.SCORE_CHANNEL)}
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.2), sharey=True)
    for ax, (title, keys) in zip(axes, PANELS, strict=True):
        drawn = 0
        for index, key in enumerate(keys):
            method = by_key[key]
            entry = audit.get(model, {}).get(key, {})
            rows = entry.get("by_prefix", {}).get("test", [])
            if not rows:
                continue
            colour, marker = STYLES[key]
            xs, ys = [r["prefix"] for r in rows], [r["auc"] for r in rows]
            dagger = entry.get("identical_sides", False)
            drawn += 1
            shift = (index - len(keys) / 2) * 0.06  # side by side, so no marker hides another
            ax.plot([x + shift for x in xs], ys, marker=marker, ms=5, lw=1.3, color=colour,
                    ls=":" if dagger else "-", label=method.name + (" (identical views: 0.5 by construction)" if dagger else ""))
            ci = entry.get("ci", {}).get("test", {}).get("auc")
            if ci and _finite(*ci) and not dagger:
                ax.errorbar([xs[-1] + shift], [ys[-1]], yerr=[[max(ys[-1] - ci[0], 0)], [max(ci[1] - ys[-1], 0)]],
                            color=colour, capsize=3, lw=1, fmt="none")
        ax.axhline(0.5, ls="--", c="grey", lw=0.8, label="chance (AUC 0.5)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if not drawn:
            ax.text(0.5, 0.5, "none of these methods in this run", transform=ax.transAxes, ha="center", color="grey")
            ax.set_xticks([])
        ax.set_xlabel("prefix length t (turns the auditor has seen)")
        ax.set_title(title)
        ax.legend(loc="upper left", frameon=False, fontsize=7)
    axes[0].set_ylabel("auditor macro-AUC (0.5 = chance)")
    fig.suptitle(f"Distinguishability by prefix length, {name} (test pairs; 95% CI at t = T)")
    _note(fig, _set_size_note(audit, model) + ["Series are offset by up to +-0.18 on t so that equal values stay visible."])
    return fig


def _budget(plt: Any, config: dict[str, Any], audit: dict[str, Any], judge: dict[str, Any], model: str, name: str,
            grid: Sequence[M.MethodSpec]) -> Any:
    main = M.method_by_key(M.MAIN_METHODS, "dp_on")
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.6), sharey=True)
    for ax, sweep, values in ((axes[0], "cap", config["caps"]), (axes[1], "K", config["ks"])):
        aucs, lows, highs, trecs, t_lows, t_highs = [], [], [], [], [], []
        for v in values:
            cap, k = (v, 3) if sweep == "cap" else (2, v)
            method = main if (cap, k) == (2, 3) else next((g for g in grid if g.cap == cap and g.K == k), None)
            m = metric(audit, judge, model, method.key, "pairedmem") if method else None
            aucs.append(m["auc"] if m else math.nan)
            lows.append(m["auc_lo"] if m else math.nan)
            highs.append(m["auc_hi"] if m else math.nan)
            trecs.append(m["tRec"] if m else math.nan)
            t_ci = m["tRec_ci"] if m else [math.nan, math.nan]
            t_lows.append(t_ci[0])
            t_highs.append(t_ci[1])
        positions = list(range(len(values)))  # evenly spaced, labelled with the integer values
        ax.plot(positions, aucs, marker="o", color=STYLES["dp_on"][0], label="auditor AUC")
        ax.fill_between(positions, lows, highs, color=STYLES["dp_on"][0], alpha=0.15, lw=0, label="AUC 95% CI")
        ax.plot(positions, trecs, marker="s", color="#ff7f0e", label="tRec")
        ax.fill_between(positions, t_lows, t_highs, color="#ff7f0e", alpha=0.15, lw=0, label="tRec 95% CI")
        if len(positions) == 1:  # a band of one point is invisible: error bars instead
            for ys, lo, hi, colour in ((aucs, lows, highs, STYLES["dp_on"][0]), (trecs, t_lows, t_highs, "#ff7f0e")):
                if _finite(ys[0], lo[0], hi[0]):
                    ax.errorbar(positions, ys, yerr=[[ys[0] - lo[0]], [hi[0] - ys[0]]], color=colour, capsize=4, fmt="none")
        ax.axhline(0.5, ls="--", c="grey", lw=0.8)
        ax.set_xticks(positions, [str(v) for v in values])
        ax.set_xlabel("cap B_a (K = 3)" if sweep == "cap" else "K, releases per cap (B_a = 2)")
    axes[0].set_ylabel("AUC (0.5 = chance) / tRec")
    _legend_outside(axes[1])
    fig.suptitle(f"Budget sensitivity of DP-MemView (on), {name} (PairedMem test pairs)")
    _note(fig, _set_size_note(audit, model))
    return fig
