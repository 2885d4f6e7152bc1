"""Table 4's DP-bound column by construction: PairedMem pairs re-ordered into the paper's
trajectory shape, run through the kernel (`kernel_runs.kernel_trace`, i.e. `run_turn`), and
the reconstructed bound read off in exact Fractions.

Why: on the PairedMem test pairs every first 16-query block has exactly two reads that touch
the target group and another group, so IncompleteCharge reconstructs to 2 + 2 x 2/3 = 3.33
(docs/eval.md). The paper's 4.0 = 6 x 2/3 needs at least three such reads admitted, and its
NoCap 5.33 = 8 x 2/3 eight target-touching reads in T = 16 turns. The construction takes a
pair's own 32 queries (both blocks, the same texts, read sets and gold) and orders 16 of them:

- 4 *overlap* target queries: they read a position that the target's group shares with one
  partner attribute whose name sorts first (the IncompleteCharge ablation declares the first
  touched attribute in sorted order, `kernel_runs.kernel_interface`, so these reads are
  charged to the partner only);
- 4 *target-only* target queries: they touch the target group and no other group;
- 8 queries that touch no protected group (neutral and distractor);

interleaved target-only, overlap, other, other (the counterexample's schedule,
`counterexamples/table4.py`), then the pair's other 16 queries (a trajectory keeps 32). With B_a = 2, K = 3 (eps = 2/3): DP-MemView (on) admits 3
target-touching releases (2.0); IncompleteCharge 3 target-only releases on the target's
ledger plus 3 overlap releases on the partner's (4.0); NoCap all 8 (16/3 = 5.33);
CappedArgmax's argmax has no finite local bound (inf, C3).

Run: `python -m dpmem_eval.pipeline.table4_construction --out results/cpu` writes
`table4-construction.md` and `.json` there.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

HORIZON = 16
SEEDS = (0, 1, 2)
VARIANTS = ("dp_on", "incomplete_charge", "capped_argmax", "no_cap")
PAPER = {"dp_on": Fraction(2), "incomplete_charge": Fraction(4), "capped_argmax": None, "no_cap": Fraction(16, 3)}
"""The paper's Table 4 DP bounds (2.0, 4.0, inf, 5.33 = 16/3); None = inf."""


def _touched(positions: Sequence[int], groups: dict[str, tuple[int, ...]]) -> set[str]:
    return {a for a, g in groups.items() if set(positions) & set(g)}


def construct(pair: Any, groups: dict[str, tuple[int, ...]]) -> Any | None:
    """The pair with its trajectory re-ordered into the paper's shape, or None when its 32
    queries do not hold 4 overlap reads with one earlier-sorted partner, 4 target-only reads
    and 8 reads outside every group."""
    target = pair.attribute
    by_partner: dict[str, list[Any]] = {}
    target_only, others = [], []
    for query in pair.queries:
        touched = _touched(query.read_positions, groups)
        if query.kind == "target" and touched == {target}:
            target_only.append(query)
        elif query.kind == "target" and target in touched and len(touched) == 2:
            (partner,) = touched - {target}
            if partner < target:  # the ablation's one-attribute charge set names the partner
                by_partner.setdefault(partner, []).append(query)
        elif not touched:
            others.append(query)
    overlap = next((qs for _, qs in sorted(by_partner.items()) if len(qs) >= 4), None)
    if overlap is None or len(target_only) < 4 or len(others) < 8:
        return None
    order = []
    for i in range(4):
        order += [target_only[i], overlap[i], others[2 * i], others[2 * i + 1]]
    order += [q for q in pair.queries if q not in order]  # the other 16 follow (T = 16 reads only the first)
    gold = {g.query_id: g for g in pair.gold}
    return dataclasses.replace(pair, pair_id=pair.pair_id + "-t4", queries=tuple(order),
                               gold=tuple(gold[q.query_id] for q in order))


def constructed_pairs(pairs: Sequence[Any], groups: dict[str, tuple[int, ...]]) -> list[Any]:
    return [c for c in (construct(p, groups) for p in pairs) if c is not None]


def bounds(pairs: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Per variant: the largest reconstructed target charge over pairs, sides and EM seeds
    (None = inf), the ledger's largest report, and the number of traces, all exact."""
    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline.kernel_runs import kernel_trace

    policy = M.load_public_policy()
    specs = {m.key: m for m in (*M.MAIN_METHODS, *M.ABLATIONS)}
    out: dict[str, dict[str, Any]] = {}
    for key in VARIANTS:
        method = specs[key]
        largest: Fraction | None = Fraction(0)
        ledger = Fraction(0)
        traces = 0
        for pair in pairs:
            for side in ("M", "M'"):
                for seed in SEEDS:
                    trace = kernel_trace(method, pair, side, seed, policy, HORIZON)
                    traces += 1
                    ledger = max(ledger, trace.final_ledger)
                    if trace.selector_violates == "C3" and trace.final_reconstructed > 0:
                        largest = None  # a non-EM selection touched I_target: no finite bound
                    elif largest is not None:
                        largest = max(largest, trace.final_reconstructed)
        out[key] = {"bound": largest, "ledger": ledger, "traces": traces}
    return out


def _show(value: Fraction | None) -> str:
    return "inf" if value is None else f"{float(value):.2f} ({value})"


def report(pairs: Sequence[Any], groups: dict[str, tuple[int, ...]], auc: dict[str, float] | None = None) -> tuple[str, dict[str, Any]]:
    """Markdown and JSON: the constructed bounds beside the paper's and, where given, the
    empirical AUC of the committed run (on PairedMem's own test trajectories, not these)."""
    from dpmem_eval.pipeline import methods as M

    built = constructed_pairs(pairs, groups)
    result = bounds(built)
    names = {m.key: m.name for m in (*M.MAIN_METHODS, *M.ABLATIONS)}
    per_attribute: dict[str, int] = {}
    for pair in built:
        per_attribute[pair.attribute] = per_attribute.get(pair.attribute, 0) + 1
    lines = ["# Table 4 by construction: the DP-bound column from the kernel", "",
             f"> {len(built)} of {len(pairs)} PairedMem test pairs hold the paper's trajectory shape in their own 32 queries "
             f"({', '.join(f'{a}: {n}' for a, n in sorted(per_attribute.items()))}); T = {HORIZON}, B_a = 2, K = 3, "
             f"EM seeds {{0,1,2}}, both sides. Bounds are exact (Fractions) from `kernel_runs.kernel_trace` (the kernel's "
             "`run_turn`); `python -m dpmem_eval.pipeline.table4_construction --out DIR` regenerates this file.",
             "> The AUC column is the committed run's (PairedMem's own test trajectories, T = 8); no responses were "
             "generated for the constructed trajectories (that needs a generation run).", "",
             "| variant | DP bound (constructed) | paper bound | equal | ledger reports | traces | empirical AUC (run) |",
             "|---|---|---|---|---|---|---|"]
    rows = {}
    for key in VARIANTS:
        ours, paper = result[key]["bound"], PAPER[key]
        equal = ours == paper
        a = (auc or {}).get(key, math.nan)
        lines.append(f"| {names[key]} | {_show(ours)} | {_show(paper)} | {'yes' if equal else 'no'} | "
                     f"{_show(result[key]['ledger'])} | {result[key]['traces']} | {'n/a' if math.isnan(a) else f'{a:.3f}'} |")
        rows[key] = {"bound": None if ours is None else str(ours), "paper": None if paper is None else str(paper),
                     "equal": equal, "ledger": str(result[key]["ledger"]), "traces": result[key]["traces"], "auc": a}
    data = {"horizon": HORIZON, "seeds": list(SEEDS), "pairs": [p.pair_id for p in built], "variants": rows}
    return "\n".join(lines) + "\n", data


def _run_auc(out: Path) -> dict[str, float]:
    path = out / "audit.json"
    if not path.is_file():
        return {}
    results = json.loads(path.read_text(encoding="utf-8"))["results"]
    model = sorted(results)[0]
    auc = {}
    for key in VARIANTS:
        rows = results[model].get(key, {}).get("by_prefix", {}).get("test", [])
        if rows:
            auc[key] = float(rows[-1]["auc"])
    return auc


def write_constructed_data(out: Path) -> int:
    """The constructed PairedMem pairs of every split (same pair ids, trajectories re-ordered)
    as a data directory for `dpmem-eval run --data-dir` (JSONL files and datacard; no
    interface.toml: its examples need pairs without an overlap). Returns the pair count."""
    from dpmem_eval.data import build_dataset
    from dpmem_eval.data.export import datacard, datacard_markdown, write_jsonl
    from dpmem_eval.data.scaffold import UNION_GROUPS
    from dpmem_eval.readers import write_atomic

    dataset = build_dataset(seed=0, corpora_dir=None, transfer=False)
    pairs = [dataclasses.replace(c, pair_id=p.pair_id) for p in dataset.pairedmem
             for c in [construct(p, dict(UNION_GROUPS))] if c is not None]
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(pairs, out)
    card = datacard(pairs, dataset.seed, {})
    write_atomic(out / "datacard.json", json.dumps(card, sort_keys=True, indent=2) + "\n")
    write_atomic(out / "datacard.md", datacard_markdown(card))
    return len(pairs)


def main(argv: Sequence[str] | None = None) -> int:
    from dpmem_eval.data import build_dataset
    from dpmem_eval.data.scaffold import UNION_GROUPS
    from dpmem_eval.readers import write_atomic

    parser = argparse.ArgumentParser(prog="python -m dpmem_eval.pipeline.table4_construction", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="results directory (its audit.json, if any, gives the AUC column)")
    parser.add_argument("--write-data", metavar="DIR", help="also write the constructed pairs of every split as a "
                        "data directory for `dpmem-eval run --data-dir DIR`")
    args = parser.parse_args(argv)
    if args.write_data:
        n = write_constructed_data(Path(args.write_data))
        print(f"wrote {n} constructed pairs to {args.write_data}")
    out = Path(args.out)
    pairs = [p for p in build_dataset(seed=0, corpora_dir=None).pairedmem if p.split == "test"]
    text, data = report(pairs, dict(UNION_GROUPS), _run_auc(out))
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "table4-construction.md", text)
    write_atomic(out / "table4-construction.json", json.dumps(data, indent=1, default=float))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
