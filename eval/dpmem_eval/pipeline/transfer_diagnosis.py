"""Why the memory-text baselines barely leak on the transfer track of a run (RawReadSet
0.549 there against 0.73 in the paper, on the cpu preset), from the run's saved transcripts only.

Three measurements, per attribute, RawReadSet (any method key can be passed):

1. *transfer of the probe*: the auditor's features (the mean of the T response embeddings,
   L2-normalised) and a logistic regression fitted on the PairedMem **train** pairs, scored on
   the PairedMem test pairs and on the transfer pairs (the pipeline's protocol, without the
   sigmoid calibration, which does not change an AUC);
2. *signal inside the transfer responses*: the same features and model fitted and scored
   within the transfer pairs, 5-fold cross-validation grouped by pair (never used as a
   result: it says whether M and M' responses differ at all, whatever the direction);
3. *edit size*: words changed between M and M' at the target positions (a word-level diff),
   and the share of target turns whose M and M' responses are identical.

`python -m dpmem_eval.pipeline.transfer_diagnosis --out results/cpu` writes
`transfer-diagnosis.md` there.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from dpmem_eval.pipeline.auditor import Encoder

ATTRIBUTES = ("debt", "diabetes", "job_loss", "pregnancy")


def _features(rows: Sequence[dict[str, Any]], unit: dict[str, np.ndarray]) -> np.ndarray:
    out = []
    for row in rows:
        v = np.mean([unit[r] for r in row["responses"]], axis=0)
        out.append(v / (np.linalg.norm(v) or 1.0))
    return np.array(out)


def _auc(y: npt.ArrayLike, s: npt.ArrayLike) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s))


def changed_words(a: str, b: str) -> int:
    ops = difflib.SequenceMatcher(a=a.split(), b=b.split()).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


def diagnose(rows: Sequence[dict[str, Any]], pairs_by_id: dict[str, Any], encoder: Encoder, method: str = "raw_read_set") -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    chosen = [r for r in rows if r["method"] == method and r["responses"]]
    texts = sorted({t for r in chosen for t in r["responses"]})
    vectors = np.asarray(encoder.encode(texts), dtype=float)
    unit = {t: v / (np.linalg.norm(v) or 1.0) for t, v in zip(texts, vectors, strict=True)}
    result: dict[str, Any] = {"method": method, "attributes": {}}
    for attribute in ATTRIBUTES:
        split_rows = {s: [r for r in chosen if r["attribute"] == attribute and r["split"] == s]
                      for s in ("train", "test", "transfer")}
        if not all(split_rows.values()):
            continue
        train = split_rows["train"]
        probe = LogisticRegression(max_iter=2000).fit(_features(train, unit), [int(r["side"] == "M") for r in train])
        entry: dict[str, Any] = {}
        for split in ("test", "transfer"):
            rs = split_rows[split]
            entry[f"probe_auc_{split}"] = _auc([int(r["side"] == "M") for r in rs], probe.decision_function(_features(rs, unit)))
            by_pair: dict[str, dict[str, dict[str, Any]]] = {}
            for r in rs:
                by_pair.setdefault(r["pair_id"], {})[r["side"]] = r  # seeds: deterministic baselines run once
            ids = sorted(p for p, sides in by_pair.items() if len(sides) == 2)
            x = _features([by_pair[p][s] for p in ids for s in ("M", "M'")], unit)
            y = np.array([1, 0] * len(ids))
            groups = np.repeat(np.arange(len(ids)), 2)
            scores = np.zeros(len(y))
            for fit, held in GroupKFold(n_splits=min(5, len(ids))).split(x, y, groups):
                scores[held] = LogisticRegression(max_iter=2000).fit(x[fit], y[fit]).decision_function(x[held])
            entry[f"within_cv_auc_{split}"] = _auc(y, scores)
            target_turns = identical = 0
            edits = []
            for p in ids:
                pair = pairs_by_id[p]
                for i, query in enumerate(pair.queries[: len(by_pair[p]["M"]["responses"])]):
                    if query.kind == "target":
                        target_turns += 1
                        identical += by_pair[p]["M"]["responses"][i] == by_pair[p]["M'"]["responses"][i]
                edits += [changed_words(pair.store_m[i - 1].text, pair.store_m_prime[i - 1].text) for i in pair.target_positions]
            entry[f"identical_target_responses_{split}"] = identical / target_turns if target_turns else float("nan")
            entry[f"changed_words_{split}"] = float(np.mean(edits)) if edits else float("nan")
            if split == "transfer":
                sources = [pair.store_m[i - 1].source for p in ids for pair in (pairs_by_id[p],) for i in pair.target_positions]
                entry["template_evidence_share_transfer"] = sum(s.startswith("tpl:") for s in sources) / len(sources)
        result["attributes"][attribute] = entry
    return result


def markdown(result: dict[str, Any]) -> str:
    cols = [("probe_auc_test", "probe (fit on PairedMem train) AUC, test"),
            ("probe_auc_transfer", "same probe, transfer"),
            ("within_cv_auc_test", "within-split 5-fold CV AUC, test"),
            ("within_cv_auc_transfer", "within-split 5-fold CV AUC, transfer"),
            ("changed_words_test", "words changed M->M' per target item, test"),
            ("changed_words_transfer", "same, transfer"),
            ("identical_target_responses_test", "identical M/M' replies on target turns, test"),
            ("identical_target_responses_transfer", "same, transfer"),
            ("template_evidence_share_transfer", "transfer target items still from templates")]
    lines = [f"# Transfer track diagnosis ({result['method']})", "",
             "> `python -m dpmem_eval.pipeline.transfer_diagnosis --out DIR` (module docstring: what each column is). "
             "Unweighted logistic regressions on the auditor's features, without the pipeline's calibration.", "",
             "| attribute | " + " | ".join(c[1] for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for attribute, entry in result["attributes"].items():
        lines.append(f"| {attribute} | " + " | ".join(f"{entry.get(k, float('nan')):.3f}" for k, _ in cols) + " |")
    means = {k: np.mean([e[k] for e in result["attributes"].values() if k in e]) for k, _ in cols}
    lines.append("| **mean** | " + " | ".join(f"**{means[k]:.3f}**" for k, _ in cols) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from dpmem_eval.pipeline.auditor import Encoder
    from dpmem_eval.pipeline.readers import read_model_transcripts, read_run
    from dpmem_eval.pipeline.stages import load_encoder, pairs_by_id
    from dpmem_eval.readers import write_atomic

    parser = argparse.ArgumentParser(prog="python -m dpmem_eval.pipeline.transfer_diagnosis", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="a results directory with transcripts and run.json")
    parser.add_argument("--method", default="raw_read_set")
    args = parser.parse_args(argv)
    out = Path(args.out)
    config = read_run(out).config
    rows = read_model_transcripts(out, config)[config.models[0]]
    result = diagnose(rows, pairs_by_id(config), load_encoder(Encoder, config), args.method)
    text = markdown(result)
    write_atomic(out / "transfer-diagnosis.md", text)
    write_atomic(out / "transfer-diagnosis.json", json.dumps(result, indent=1, default=float))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
