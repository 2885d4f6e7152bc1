"""Persistent response cache (SQLite), keyed by model, decoding configuration and prompt.

Every generation is written as soon as its batch finishes, so an interrupted run resumes
where it stopped and a rerun with the same model, decoding and prompts generates nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    decoding TEXT NOT NULL,
    prompt TEXT NOT NULL,
    response TEXT NOT NULL,
    new_tokens INTEGER NOT NULL DEFAULT 0
)
"""


def cache_key(model: str, decoding: Mapping[str, object], prompt: str) -> str:
    payload = json.dumps({"model": model, "decoding": dict(sorted(decoding.items())), "prompt": prompt},
                         sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    """A tiny key-value store over SQLite (WAL mode; safe to reopen after a crash)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def get_many(self, keys: Iterable[str]) -> dict[str, str]:
        keys = list(dict.fromkeys(keys))
        found: dict[str, str] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for key, response in self._db.execute(f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk):
                    found[key] = response
        return found

    def put_many(self, rows: Iterable[tuple[str, str, str, str, str, int]]) -> None:
        """rows: (key, model, decoding_json, prompt, response, new_tokens)."""
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)", list(rows))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
