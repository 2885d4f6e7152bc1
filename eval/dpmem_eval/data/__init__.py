"""PairedMem and the corpus-sourced transfer track (paper, Appendix C.1-C.3).

Public API for the pipeline:

    from dpmem_eval.data import build_dataset, load_dataset, write_dataset
    ds = build_dataset(seed=0)                  # or corpora_dir=Path(...)
    ds = load_dataset("data/pairedmem")         # what `dpmem-eval data build` wrote
    for pair in ds.selected():                  # 320 PairedMem pairs (train/validation/test)
        pair.attribute, pair.split, pair.track, pair.target_positions, pair.group_map
        pair.store_m[i - 1].tags, pair.store_m[i - 1].text   # position i
        for q in pair.queries: q.query_id, q.block, q.kind, q.slot, q.read_positions, q.text
        pair.gold                                # GoldRecord per query
    ds.transfer                                 # 80 transfer pairs (split "transfer")

Records are frozen dataclasses (see `records.py`); documentation in docs/eval-data.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dpmem_eval.data.records import DATA_VERSION, GoldRecord, MemoryItem, PairRecord, QueryRecord
from dpmem_eval.data.validation import validate_pair

__all__ = ["DATA_VERSION", "Dataset", "GoldRecord", "MemoryItem", "PairRecord", "QueryRecord",
           "build_dataset", "load_dataset", "validate_pair", "write_dataset"]


@dataclass(frozen=True)
class Dataset:
    """All PairedMem pairs (selected and reserves) and the transfer pairs."""

    seed: int | None
    pairedmem: tuple[PairRecord, ...]
    transfer: tuple[PairRecord, ...]
    transfer_stats: tuple[tuple[str, object], ...] = ()

    def selected(self) -> tuple[PairRecord, ...]:
        """The 320 selected PairedMem pairs."""
        return tuple(p for p in self.pairedmem if p.selected)

    def split(self, name: str) -> tuple[PairRecord, ...]:
        """Pairs of one split: train, validation, test, reserve, or transfer."""
        return tuple(p for p in self.pairedmem + self.transfer if p.split == name)

    def pair(self, pair_id: str) -> PairRecord:
        for p in self.pairedmem + self.transfer:
            if p.pair_id == pair_id:
                return p
        raise KeyError(f"no pair {pair_id!r} (ids look like pm-diabetes-007 or tr-debt-03)")


def build_dataset(seed: int = 0, corpora_dir: str | Path | None = None, *, transfer: bool = True) -> Dataset:
    """Build PairedMem (and, unless `transfer=False`, the transfer track) from `seed`.
    `corpora_dir` defaults to --corpora / DPMEM_CORPORA / ../shared/data/corpora."""
    from dpmem_eval.data.corpus_files import resolve_corpora
    from dpmem_eval.data.pairedmem import build_pairedmem
    from dpmem_eval.data.transfer import build_transfer

    pairedmem = build_pairedmem(seed)
    pairs: list[PairRecord] = []
    stats: dict[str, object] = {}
    if transfer:
        corpora = resolve_corpora(str(corpora_dir) if corpora_dir is not None else None)
        pairs, stats = build_transfer(pairedmem, corpora, seed)
    return Dataset(seed, tuple(pairedmem), tuple(pairs), tuple(sorted(stats.items())))


def write_dataset(dataset: Dataset, out: str | Path) -> list[Path]:
    """Write the JSONL files, datacard.{json,md} and interface.toml; return their paths."""
    import json

    from dpmem_eval.data.export import datacard, datacard_markdown, write_jsonl
    from dpmem_eval.data.interface import interface_toml
    from dpmem_eval.readers import write_atomic

    out = Path(out)
    pairs = list(dataset.pairedmem + dataset.transfer)
    write_jsonl(pairs, out)
    card = datacard(pairs, dataset.seed, dict(dataset.transfer_stats))
    write_atomic(out / "datacard.json", json.dumps(card, sort_keys=True, indent=2) + "\n")
    write_atomic(out / "datacard.md", datacard_markdown(card))
    examples = []
    for attribute in ("debt", "diabetes", "job_loss", "pregnancy"):
        chosen = [p for p in dataset.selected() if p.attribute == attribute]
        examples += [next(p for p in chosen if not p.overlapping), next(p for p in chosen if p.overlapping)]
    write_atomic(out / "interface.toml", interface_toml(examples))
    names = ["stores.jsonl", "pairs.jsonl", "trajectories.jsonl", "gold.jsonl", "splits.jsonl",
             "datacard.json", "datacard.md", "interface.toml"]
    return [out / n for n in names]


def load_dataset(directory: str | Path) -> Dataset:
    """Read what `write_dataset` wrote."""
    from dpmem_eval.data.export import read_datacard_seed, read_pairs

    directory = Path(directory)
    pairs = read_pairs(directory)
    seed = read_datacard_seed(directory)
    return Dataset(seed, tuple(p for p in pairs if p.track == "pairedmem"),
                   tuple(p for p in pairs if p.track == "transfer"))
