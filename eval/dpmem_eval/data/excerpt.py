"""The corpus excerpt shipped with dpmem-eval (`dpmem_eval/data/corpus_excerpt/`).

A clone with nothing beside it has no public corpora, yet the smoke preset and the tests
build the transfer track. The excerpt keeps, from the full corpora, only the records that
contribute a sentence to the transfer track, in their original order and under their
original source ids (a `row` field carries the record's index in the full file):

- LoCoMo (CC BY-NC 4.0): the turns whose sentences the background filter keeps (every
  conversation, both speakers): the 20 histories are identical to the full corpora's.
- EmpatheticDialogues situations via HypEmo (CC BY-NC 4.0): the situations that give debt
  or job-loss evidence: those two evidence pools are identical to the full corpora's.
- ChatDoctor GenMedGPT-5k (Apache-2.0): the patient messages that give diabetes or
  pregnancy evidence. The MEDIQA 2019 and TREC 2017 LiveQA-Medical questions carry no
  licence that allows redistribution and are left out; none of their sentences passes the
  evidence filter, so all 80 transfer pairs equal the full corpora's (a test checks it when
  the full corpora are present). Only the counts of rejected candidates differ.

Every output built from it says so (`corpora: excerpt` in the datacard and run.json, and a
line on the console). Rebuild it from the full corpora with

    python -m dpmem_eval.data.excerpt --corpora /path/to/corpora
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
from pathlib import Path

from dpmem_eval.data.corpus_files import CHATDOCTOR, ED_SITUATIONS, EXCERPT_DIR, LICENCE_FILES, LOCOMO, MARKER


def _used_sources(corpora: Path) -> set[str]:
    from dpmem_eval.data.corpora import evidence_pools, locomo_histories

    pools, _ = evidence_pools(corpora)
    used = {e.source for pool in pools.values() for e in pool}
    used |= {s.source for h in locomo_histories(corpora) for s in h.sentences}
    return {source.rsplit(":s", 1)[0] for source in used}  # the record, without the sentence index


def write_excerpt(corpora: Path, out: Path = EXCERPT_DIR) -> dict[str, int]:
    """Write the excerpt of `corpora` to `out`; return the number of records kept per file."""
    used = _used_sources(corpora)
    counts: dict[str, int] = {}
    out.mkdir(parents=True, exist_ok=True)
    with open(corpora / LOCOMO, encoding="utf-8") as fh:
        samples = json.load(fh)
    kept_samples = []
    for sample in samples:
        conversation = sample["conversation"]
        trimmed: dict[str, object] = {"speaker_a": conversation["speaker_a"], "speaker_b": conversation["speaker_b"]}
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                trimmed[key] = [{"speaker": t["speaker"], "dia_id": t["dia_id"], "text": t["text"]} for t in turns
                                if f"locomo10:{sample['sample_id']}:{t['dia_id']}" in used]
        kept_samples.append({"sample_id": sample["sample_id"], "conversation": trimmed})
    counts[LOCOMO] = sum(len(v) for s in kept_samples for k, v in s["conversation"].items() if k.startswith("session_"))
    _write(out / LOCOMO, json.dumps(kept_samples, ensure_ascii=False, indent=0) + "\n")
    with open(corpora / CHATDOCTOR, encoding="utf-8") as fh:
        rows = [{"row": i, "input": r["input"]} for i, r in enumerate(json.load(fh)) if f"chatdoctor5k:{i}" in used]
    counts[CHATDOCTOR] = len(rows)
    _write(out / CHATDOCTOR, json.dumps(rows, ensure_ascii=False, indent=0) + "\n")
    for name, relative in ED_SITUATIONS:
        with open(corpora / relative, encoding="utf-8", newline="") as fh:
            kept = [(i, r["text"]) for i, r in enumerate(csv.DictReader(fh)) if f"{name}:{i}" in used]
        counts[relative] = len(kept)
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        with open(out / relative, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["row", "text"])
            writer.writerows(kept)
    for relative in LICENCE_FILES:
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpora / relative, out / relative)
    return counts


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpmem_eval.data.excerpt", description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", required=True, help="the full public corpora directory")
    parser.add_argument("--out", default=str(EXCERPT_DIR), help="where to write the excerpt (default: the package's)")
    args = parser.parse_args(argv)
    for relative, n in write_excerpt(Path(args.corpora), Path(args.out)).items():
        print(f"{relative}: {n} records")
    print(f"write {Path(args.out) / MARKER} and SOURCE by hand (licences and commits; see the existing ones)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
