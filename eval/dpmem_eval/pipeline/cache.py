"""Persistent response cache (SQLite), keyed by model, decoding configuration and prompt.

Every generation is written as soon as its batch finishes, so an interrupted run resumes
where it stopped and a rerun with the same model, decoding and prompts generates nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from dpmem_eval.errors import UserError

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


COLUMNS = ("key", "model", "decoding", "prompt", "response", "new_tokens")


class CacheError(UserError):
    """The response cache file is unusable (not SQLite, corrupt, another program's database,
    or not a regular file): one line naming the file; delete it to start a fresh cache."""

    def __init__(self, path: Path, problem: str) -> None:
        from dpmem_eval.readers import display

        super().__init__(f"response cache {display(path)}: {problem} (move it away or delete it to start a fresh cache)")


def cache_key(model: str, decoding: Mapping[str, object], prompt: str) -> str:
    payload = json.dumps({"model": model, "decoding": dict(sorted(decoding.items())), "prompt": prompt},
                         sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResponseCache:
    """A tiny key-value store over SQLite (WAL mode; safe to reopen after a crash)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._check_path()
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        except sqlite3.Error as exc:
            raise CacheError(self.path, f"cannot open ({exc.__class__.__name__})") from None
        try:
            self._verify()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(SCHEMA)
            self._db.commit()
        except sqlite3.Error as exc:
            self._db.close()
            raise CacheError(self.path, f"not a usable SQLite database ({exc.__class__.__name__})") from None
        except CacheError:
            self._db.close()
            raise
        self.hits = 0
        self.misses = 0

    def _check_path(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(self.path, f"cannot create its directory ({exc.strerror or type(exc).__name__})") from None
        for candidate in (self.path, self.path.with_name(self.path.name + "-wal")):
            try:
                mode = os.stat(candidate).st_mode
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise CacheError(self.path, f"cannot stat ({exc.strerror or type(exc).__name__})") from None
            if not stat.S_ISREG(mode):
                raise CacheError(self.path, "is not a regular file")

    def _verify(self) -> None:
        """A foreign or damaged database is refused before anything is read from or written to it."""
        if self._db.execute("PRAGMA quick_check(1)").fetchone() != ("ok",):
            raise CacheError(self.path, "database is corrupt (quick_check failed)")
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables - {"responses"}:
            raise CacheError(self.path, f"another program's database ({len(tables)} tables, expected only 'responses')")
        if tables:
            columns = tuple(row[1] for row in self._db.execute("PRAGMA table_info(responses)"))
            if columns != COLUMNS:
                raise CacheError(self.path, "table 'responses' has a different schema")

    def get_many(self, keys: Iterable[str]) -> dict[str, str]:
        keys = list(dict.fromkeys(keys))
        found: dict[str, str] = {}
        with self._lock, self._errors():
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for key, response in self._db.execute(f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk):
                    if not isinstance(response, str):
                        raise CacheError(self.path, "a stored response is not text")
                    found[key] = response
        return found

    def put_many(self, rows: Iterable[tuple[str, str, str, str, str, int]]) -> None:
        """rows: (key, model, decoding_json, prompt, response, new_tokens)."""
        with self._lock, self._errors():
            self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)", list(rows))
            self._db.commit()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite errors after opening (a file damaged or replaced mid-run, a full disk) as one line."""
        try:
            yield
        except sqlite3.Error as exc:
            raise CacheError(self.path, f"database error ({exc.__class__.__name__})") from None

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
