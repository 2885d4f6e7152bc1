"""The long-horizon study's table and plot (`horizon.measure`'s rows): `long_horizon.md` and
`long_horizon.png` of `dpmem-eval long-horizon`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

COLUMNS = (
    ("method", "method"), ("reuse", "reuse"), ("T", "T"), ("personalised_turns", "personalised turns"), ("matched_turns", "matched turns"),
    ("matched_protected_share", "matched share, protected reads"),
    ("matched_protected_chance", "(uniform draw)"),
    ("fresh_selections", "fresh"), ("charged_selections", "charged"), ("reused_turns", "reused (free)"), ("L_target_max", "max L_target"),
    ("exact_loss_max", "max exact loss"), ("view_auc", "view AUC"),
)


LLM_COLUMNS = (("tRec", "tRec"), ("Unsup", "Unsup"), ("response_auc", "response AUC"))


def _cell(key: str, row: dict[str, Any]) -> str:
    if key not in row or row[key] is None:
        return "–" if "tRec" in row else "not run"
    value = row[key]
    if key == "reuse":
        return "on" if value else "off"
    if key in ("tRec", "Unsup") and row.get(f"{key}_ci"):
        low, high = row[f"{key}_ci"]
        return f"{value:.3f} [{low:.3f}, {high:.3f}]"
    if key in ("view_auc", "response_auc") and row.get(f"{key}_lo") is not None and row.get(f"{key}_hi") is not None:
        return f"{value:.3f} [{row[f'{key}_lo']:.3f}, {row[f'{key}_hi']:.3f}]"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def table(rows: Sequence[dict[str, Any]]) -> str:
    columns = COLUMNS + LLM_COLUMNS
    lines = ["| " + " | ".join(title for _, title in columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(key, row) for key, _ in columns) + " |")
    return "\n".join(lines)


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """tRec and the response AUC against T (when generated), beside the kernel-only proxy,
    the view-level AUC and the exact loss; one line per method and reuse setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    kernel_rows = [r for r in rows if "matched_protected_share" in r]
    generated = any("tRec" in r for r in rows)
    panels = (["tRec", "response_auc"] if generated else []) + ["matched_protected_share", "view_auc", "exact_loss_max"]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.3 * len(panels), 3.8))
    ax = dict(zip(panels, axes, strict=True))
    for key in sorted({r["key"] for r in rows}):
        for reuse in (False, True):
            chosen = [r for r in rows if r["key"] == key and r["reuse"] == reuse]
            if not chosen:
                continue
            label = f"{chosen[0]['method']}{' + reuse' if reuse else ''}"
            style = ":" if key == "generic_only" else "-" if reuse else "--"
            ts = [r["T"] for r in chosen]
            for panel in panels:
                if all(panel in r for r in chosen):
                    ax[panel].plot(ts, [r[panel] for r in chosen], style, marker="o", label=label)
    if generated:
        ax["tRec"].set(title=f"tRec on M ({rows[0].get('judge', 'judge').split(';')[0]})", xlabel="T", ylim=(0, 1))
        ax["response_auc"].set(title="response-level auditor AUC", xlabel="T", ylim=(0.4, 1))
        ax["response_auc"].axhline(0.5, color="grey", lw=0.8)
    chance = float(np.mean([r["matched_protected_chance"] for r in kernel_rows]))
    ax["matched_protected_share"].axhline(chance, color="grey", lw=0.8, ls=":")
    ax["matched_protected_share"].set(title="protected reads served the store's best view\n(kernel-only tRec proxy)",
                                      xlabel="T", ylim=(0, 1))
    ax["view_auc"].set(title="view-level auditor AUC", xlabel="T", ylim=(0.4, 1))
    ax["view_auc"].axhline(0.5, color="grey", lw=0.8)
    bound = max(r["bound_B_a"] for r in kernel_rows)
    ax["exact_loss_max"].set(title="max exact loss of the released transcript", xlabel="T", ylim=(0, bound * 1.1))
    ax["exact_loss_max"].axhline(bound, color="grey", lw=0.8, ls=":")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
