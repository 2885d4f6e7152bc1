"""Typed frozen records of the PairedMem and transfer data (Appendix C.2, C.3).

These are what `build_dataset` returns and `load_dataset` reads back; the JSONL files are
their `to_json` forms. Positions are 1-based everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dpmem_eval.readers import Record

DATA_VERSION = "pairedmem-1.0.0"
N_POSITIONS = 28
"""Positions of the fixed scaffold (scaffold.N_POSITIONS; repeated here to keep records import-light)."""
QUERY_KINDS = ("target", "neutral", "distractor")
TRACKS = ("pairedmem", "transfer")
SPLITS = ("train", "validation", "test", "reserve", "transfer")


@dataclass(frozen=True)
class MemoryItem:
    """Content of one memory position: scorer tags, text, and where the text came from
    (a template id such as `tpl:evidence:diabetes:1:2`, or a corpus source id)."""

    tags: tuple[str, ...]
    text: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"tags": list(self.tags), "text": self.text, "source": self.source}

    @staticmethod
    def from_json(d: Record) -> MemoryItem:
        """From one checked JSON object of a data file: errors name the field, never the text."""
        item = MemoryItem(d.strs("tags"), d.text("text"), d.text("source"))
        d.done()
        return item


Store = tuple[MemoryItem, ...]
"""A store: store[i - 1] is the content of position i (28 items)."""


@dataclass(frozen=True)
class QueryRecord:
    """One turn of a trajectory (S4): written from (kind, slot, family intent) only."""

    query_id: str
    block: int  # 1 or 2
    kind: str  # "target" | "neutral" | "distractor"
    family: str
    slot: str
    read_positions: tuple[int, ...]
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "block": self.block, "kind": self.kind,
                "family": self.family, "slot": self.slot,
                "read_positions": list(self.read_positions), "text": self.text}

    @staticmethod
    def from_json(d: Record) -> QueryRecord:
        query = QueryRecord(d.text("query_id"), d.integer("block", 1, 2), d.text("kind"), d.text("family"),
                            d.text("slot"), d.ints("read_positions", 1, N_POSITIONS), d.text("text"))
        if query.kind not in QUERY_KINDS:
            raise d.fail("kind", f"expected one of {', '.join(QUERY_KINDS)}")
        d.done()
        return query


@dataclass(frozen=True)
class GoldRecord:
    """Deterministic gold for one query (S4): behaviours the answer must show under M
    (`target_required`) and target-specific behaviours unsupported under M'
    (`unsupported_target_specific`). Both are empty for neutral and distractor queries."""

    query_id: str
    target_required: tuple[str, ...]
    unsupported_target_specific: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "target_required": list(self.target_required),
                "unsupported_target_specific": list(self.unsupported_target_specific)}

    @staticmethod
    def from_json(d: Record) -> GoldRecord:
        gold = GoldRecord(d.text("query_id"), d.strs("target_required"), d.strs("unsupported_target_specific"))
        d.done()
        return gold


@dataclass(frozen=True)
class PairRecord:
    """One adjacent-store pair M ~_attribute M'.

    `groups` is the pair's public policy (attribute -> I_a); `target_positions` = I_target;
    `overlap_partner` names the attribute sharing a position with I_target (or None);
    `template_id` is the evidence template index used for the selection quota;
    `split` is train / validation / test / reserve (PairedMem) or transfer."""

    pair_id: str
    track: str  # "pairedmem" | "transfer"
    attribute: str
    split: str
    selected: bool
    template_id: int
    overlap_partner: str | None
    groups: tuple[tuple[str, tuple[int, ...]], ...]
    target_positions: tuple[int, ...]
    store_m: Store
    store_m_prime: Store
    queries: tuple[QueryRecord, ...]
    gold: tuple[GoldRecord, ...]
    matched_pair: str | None = None  # transfer: the PairedMem pair whose scaffold it copies
    history_id: str | None = None  # transfer: the LoCoMo background history
    validation: tuple[str, ...] = field(default=())  # S3 failures (empty = passed)

    @property
    def overlapping(self) -> bool:
        return self.overlap_partner is not None

    @property
    def group_map(self) -> dict[str, tuple[int, ...]]:
        return dict(self.groups)

    def item(self, side: str, position: int) -> MemoryItem:
        """Content of `position` (1-based) in store `side` ("M" or "M'")."""
        store = self.store_m if side == "M" else self.store_m_prime
        return store[position - 1]
