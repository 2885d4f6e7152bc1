"""Versioned JSONL files (written, and read back field by field) and the datacard (paper,
Appendix C.1-C.3); the interface TOML is `interface.py`.

All writers sort keys and records, so the same seed gives byte-identical files.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from dpmem_eval.data.corpus_files import SOURCES_AND_LICENCES
from dpmem_eval.data.records import (
    DATA_VERSION,
    SPLITS,
    TRACKS,
    GoldRecord,
    MemoryItem,
    PairRecord,
    QueryRecord,
)
from dpmem_eval.data.scaffold import ATTRIBUTES, LAYOUT, SLOTS, UNION_GROUPS
from dpmem_eval.errors import UserError
from dpmem_eval.readers import Record, display, iter_jsonl, read_json, write_atomic

FILES = ("stores.jsonl", "pairs.jsonl", "trajectories.jsonl", "gold.jsonl", "splits.jsonl")
PAIR_ID = re.compile(r"[a-z]{2}-[a-z_]{1,20}-[0-9]{1,6}")


class DataError(UserError):
    """A data directory that `dpmem-eval data build` did not write (or that was damaged since)."""


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False) + "\n"


def pair_rows(pair: PairRecord) -> dict[str, dict[str, Any]]:
    """The five JSONL rows of one pair, keyed by file name."""
    head = {"version": DATA_VERSION, "pair_id": pair.pair_id}
    return {
        "stores.jsonl": {**head, "M": [i.to_json() for i in pair.store_m],
                         "M_prime": [i.to_json() for i in pair.store_m_prime]},
        "pairs.jsonl": {**head, "track": pair.track, "attribute": pair.attribute,
                        "template_id": pair.template_id, "overlap_partner": pair.overlap_partner,
                        "groups": {a: list(g) for a, g in pair.groups},
                        "target_positions": list(pair.target_positions), "selected": pair.selected,
                        "matched_pair": pair.matched_pair, "history_id": pair.history_id,
                        "validation": list(pair.validation)},
        "trajectories.jsonl": {**head, "queries": [q.to_json() for q in pair.queries]},
        "gold.jsonl": {**head, "gold": [g.to_json() for g in pair.gold]},
        "splits.jsonl": {**head, "split": pair.split, "track": pair.track},
    }


def write_jsonl(pairs: list[PairRecord], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines: dict[str, list[str]] = {name: [] for name in FILES}
    for pair in sorted(pairs, key=lambda p: (p.track, p.pair_id)):
        for name, row in pair_rows(pair).items():
            lines[name].append(_line(row))
    for name, rows in lines.items():
        write_atomic(out / name, "".join(rows))


def _rows(directory: Path, name: str) -> dict[str, Record]:
    """One data file's rows by pair id, each a checked `Record` (version, pair id, no duplicates)."""
    path = directory / name
    if not path.exists():
        raise DataError(f"{display(path)}: missing (run `dpmem-eval data build --out {display(directory)}`)")
    rows: dict[str, Record] = {}
    for where, value in iter_jsonl(path):
        row = Record(value, where)
        if row.text("version") != DATA_VERSION:
            raise row.fail("version", f"expected {DATA_VERSION!r} (rebuild with `dpmem-eval data build`)")
        pair_id = row.text("pair_id")
        if not PAIR_ID.fullmatch(pair_id):
            raise row.fail("pair_id", "expected an id like pm-diabetes-007 or tr-debt-03")
        if pair_id in rows:
            raise row.fail("pair_id", f"duplicate pair {pair_id}")
        rows[pair_id] = row
    return rows


def _row(tables: dict[str, dict[str, Record]], name: str, pair_id: str, directory: Path) -> Record:
    if pair_id not in tables[name]:
        raise DataError(f"{display(directory / name)}: no row for pair {pair_id} (listed in pairs.jsonl)")
    return tables[name][pair_id]


def _store(row: Record, key: str) -> tuple[MemoryItem, ...]:
    items = row.records(key)
    if len(items) != len(LAYOUT):
        raise row.fail(key, f"expected {len(LAYOUT)} memory items, found {len(items)}")
    return tuple(MemoryItem.from_json(item) for item in items)


def _pair(tables: dict[str, dict[str, Record]], pair_id: str, directory: Path) -> PairRecord:
    meta = tables["pairs.jsonl"][pair_id]
    stores, split_row = _row(tables, "stores.jsonl", pair_id, directory), _row(tables, "splits.jsonl", pair_id, directory)
    trajectory, gold = _row(tables, "trajectories.jsonl", pair_id, directory), _row(tables, "gold.jsonl", pair_id, directory)
    track, attribute = meta.text("track"), meta.text("attribute")
    if track not in TRACKS:
        raise meta.fail("track", f"expected one of {', '.join(TRACKS)}")
    if attribute not in ATTRIBUTES:
        raise meta.fail("attribute", f"expected one of {', '.join(ATTRIBUTES)}")
    groups_row = meta.obj("groups")
    assert groups_row is not None
    groups = tuple((a, groups_row.ints(a, 1, len(LAYOUT))) for a in ATTRIBUTES)
    groups_row.done()
    partner = meta.text("overlap_partner", nullable=True)
    if partner is not None and partner not in ATTRIBUTES:
        raise meta.fail("overlap_partner", f"expected null or one of {', '.join(ATTRIBUTES)}")
    split = split_row.text("split")
    if split not in SPLITS:
        raise split_row.fail("split", f"expected one of {', '.join(SPLITS)}")
    if split_row.text("track") != track:
        raise split_row.fail("track", "differs from pairs.jsonl")
    queries = tuple(QueryRecord.from_json(q) for q in trajectory.records("queries"))
    for i, query in enumerate(queries):
        if query.slot not in SLOTS:
            raise trajectory.fail(f"queries[{i}].slot", f"expected one of {', '.join(SLOTS)}")
    pair = PairRecord(
        pair_id=pair_id, track=track, attribute=attribute, split=split, selected=meta.flag("selected"),
        template_id=meta.integer("template_id", 0, 10**6), overlap_partner=partner, groups=groups,
        target_positions=meta.ints("target_positions", 1, len(LAYOUT)),
        store_m=_store(stores, "M"), store_m_prime=_store(stores, "M_prime"), queries=queries,
        gold=tuple(GoldRecord.from_json(g) for g in gold.records("gold")),
        matched_pair=meta.text("matched_pair", nullable=True), history_id=meta.text("history_id", nullable=True),
        validation=meta.strs("validation"))
    for row in (meta, stores, split_row, trajectory, gold):
        row.done()
    return pair


def read_pairs(directory: Path) -> list[PairRecord]:
    """Inverse of `write_jsonl`. Every row is checked field by field (`dpmem_eval.readers`):
    a bad file raises `DataError`/`InputFileError`, one line naming the file, line and field."""
    directory = Path(directory)
    tables = {name: _rows(directory, name) for name in FILES}
    if not tables["pairs.jsonl"]:
        raise DataError(f"{display(directory / 'pairs.jsonl')}: no pairs (an empty dataset; rebuild it)")
    pairs = [_pair(tables, pair_id, directory) for pair_id in tables["pairs.jsonl"]]
    return sorted(pairs, key=lambda p: (p.track, p.pair_id))


def read_datacard_seed(directory: Path) -> int | None:
    """The seed recorded in `datacard.json`, or None when the file is absent."""
    path = Path(directory) / "datacard.json"
    if not path.exists():
        return None
    card = Record(read_json(path), display(path))
    seed: int | None = card.integer("seed", 0, 2**63, nullable=True)
    return seed


def datacard(pairs: list[PairRecord], seed: int | None, transfer_stats: dict[str, object]) -> dict[str, Any]:
    """Counts per attribute / split / template / overlap, validation results, sources."""
    pm = [p for p in pairs if p.track == "pairedmem"]
    tr = [p for p in pairs if p.track == "transfer"]
    selected = [p for p in pm if p.selected]

    def count(items: Iterable[PairRecord], key: Callable[[PairRecord], object]) -> dict[Any, int]:
        return dict(sorted(Counter(key(p) for p in items).items()))

    def corpus_share(items: Iterable[PairRecord],
                     positions: Callable[[PairRecord], Iterable[int]]) -> dict[str, int]:
        used = [p.store_m[i - 1].source for p in items for i in positions(p)]
        return {"corpus": sum(not s.startswith("tpl:") for s in used),
                "pairedmem_fallback": sum(s.startswith("tpl:") for s in used)}

    failures = Counter(f.split(":")[0] for p in pairs for f in p.validation)
    return {
        "version": DATA_VERSION,
        "seed": seed,
        "scaffold": {"positions": len(LAYOUT), "slots": list(SLOTS), "layout": list(LAYOUT),
                     "union_groups": {a: list(g) for a, g in UNION_GROUPS.items()}},
        "pairedmem": {
            "specifications": len(pm),
            "per_attribute": count(pm, lambda p: p.attribute),
            "overlapping": sum(p.overlapping for p in pm),
            "overlapping_fraction": f"{sum(p.overlapping for p in pm)}/{len(pm)}",
            "group_sizes": count(pm, lambda p: len(p.target_positions)),
            "validation": {"passed": sum(not p.validation for p in pm),
                           "failed": sum(bool(p.validation) for p in pm)},
            "selected": len(selected),
            "reserves": sum(p.split == "reserve" for p in pm),
            "selected_per_attribute": count(selected, lambda p: p.attribute),
            "selected_per_template": count(selected, lambda p: f"{p.attribute}/t{p.template_id}"),
            "selected_overlapping": sum(p.overlapping for p in selected),
            "selected_per_split": count(selected, lambda p: p.split),
            "selected_per_attribute_split": count(selected, lambda p: f"{p.attribute}/{p.split}"),
            "queries_per_pair": sorted({len(p.queries) for p in pm}),
            "paired_query_turns_selected": sum(len(p.queries) for p in selected),
        },
        "transfer": {
            "pairs": len(tr),
            "per_attribute": count(tr, lambda p: p.attribute),
            "histories": len({p.history_id for p in tr}),
            "validation": {"passed": sum(not p.validation for p in tr),
                           "failed": sum(bool(p.validation) for p in tr)},
            "target_positions_text": corpus_share(tr, lambda p: p.target_positions),
            "background_positions_text": corpus_share(
                tr, lambda p: [i for i in range(1, len(LAYOUT) + 1)
                               if i not in p.target_positions and not p.store_m[i - 1].source.startswith("tpl:evidence")]),
            **transfer_stats,
        },
        "validation_failures_by_check": dict(sorted(failures.items())),
        "sources": [{"source": s, "used_for": u, "licence": lic} for s, u, lic in SOURCES_AND_LICENCES]
                   + [{"source": "PairedMem templates (this repository)", "used_for": "all synthetic text",
                       "licence": "project licence; fully synthetic, no personal data"}],
    }


def datacard_markdown(card: dict[str, Any]) -> str:
    pm, tr = card["pairedmem"], card["transfer"]
    lines = [f"# PairedMem datacard ({card['version']}, seed {card['seed']})", "",
             "Built by `dpmem-eval data build`; paper Appendix C.1-C.3. All counts are computed.", "",
             "## PairedMem", ""]
    for key in ("specifications", "per_attribute", "overlapping", "overlapping_fraction", "group_sizes",
                "validation", "selected", "reserves", "selected_per_attribute", "selected_overlapping",
                "selected_per_split", "selected_per_template", "queries_per_pair",
                "paired_query_turns_selected"):
        lines.append(f"- **{key}**: {json.dumps(pm[key], sort_keys=True)}")
    lines += ["", "## Transfer track", ""]
    for key in sorted(tr):
        lines.append(f"- **{key}**: {json.dumps(tr[key], sort_keys=True)}")
    lines += ["", "## Scaffold", "", f"- positions: {card['scaffold']['positions']}",
              f"- slots: {', '.join(card['scaffold']['slots'])} (`household` holds home-life memories: "
              "nursery preparation, household cost cutting, living arrangement, chores)",
              f"- layout: {json.dumps(card['scaffold']['layout'])}",
              f"- union groups (interface TOML): {json.dumps(card['scaffold']['union_groups'], sort_keys=True)}",
              "", "## Validation failures by check", "",
              f"{json.dumps(card['validation_failures_by_check'], sort_keys=True) or '{}'}",
              "", "## Sources and licences", ""]
    for s in card["sources"]:
        lines.append(f"- {s['source']} - {s['used_for']} - {s['licence']}")
    lines += ["", "Corpus text is read from the corpora directory (`corpora: full`) or from the excerpt shipped in",
              "`dpmem_eval/data/corpus_excerpt/` with its licences and SOURCE files (`corpora: excerpt`; the same",
              "transfer pairs, fewer rejected candidates counted).", ""]
    return "\n".join(lines)
