"""Memory that grows: items in declared slot positions, tagged inside the trusted boundary.

The interface's layout is the scaffold: slot g holds at most |positions of g| items (its
declared capacity), each at one position; an item keeps its position until deleted.
Adding an item beyond capacity is refused (grow the scaffold instead: an interface
change, see `dpmem_ref.ledger.evolution`). A memory file is JSON lines, one item per line:

    {"slot": "health", "text": "...", "id": "i-1", "tags": ["blood-sugar"], "user": "alice"}

`slot` and `text` are required; `id` (1..64 of [A-Za-z0-9_-]) is generated when absent;
`tags` (optional) must be tags the slot's vocabulary reads, else the tagger derives them;
`position` (optional) picks a free position of the slot. Every item has exactly one owner,
the subject whose attributes it may imply: `user` (required), or `"public": true` for an
item that sits outside every protected group (refused at a position in a group: a public
item is unprotected by declaration, and is seen by every user). An item with neither is
refused in one line: an item that belongs to every user id would be read under as many
budgets as there are ids. Owner ids are compared exactly (case-sensitive, no folding, no
trimming; 1..128 of [A-Za-z0-9._-]): an item is read only under its owner's exact id, so
another spelling ("Alice", "alice.") reads public items only and protects nothing of
alice's. Errors name the line and the field, never the text.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import read_bounded
from dpmem_ref.core.policy import MemoryItem, Store
from dpmem_ref.core.validate import ALNUM, IdRule, check_id, check_int
from dpmem_ref.interface import Interface

MAX_MEMORY_BYTES = 16 << 20
MAX_TEXT_CHARS = 8192
ITEM_ID = IdRule(
    "an item id of 1..64 characters of [A-Za-z0-9_-]",
    r"^[A-Za-z0-9_-]{1,64}$",
    allowed=ALNUM | frozenset("_-"),
    max_chars=64,
)
"""Memory item ids: their own alphabet (no '.'), as the memory file and the owner's API name them."""
_KEYS = {"slot", "text", "id", "tags", "user", "position", "public"}

Tag = Callable[[str, str], frozenset[str]]  # (slot, text) -> tags, the trusted tagger


@attrs.frozen
class MemoryEntry:
    """One memory item on the trusted side: id, slot, position, tags, text and owner
    (None: a public item, outside every group). Private: the repr shows the id, slot and
    position only."""

    item_id: str
    slot: str
    position: int
    tags: frozenset[str] = attrs.field(repr=False)
    text: str = attrs.field(repr=False)
    user: str | None = None

    def to_json(self) -> dict[str, object]:
        line: dict[str, object] = {"id": self.item_id, "slot": self.slot, "position": self.position}
        line.update(text=self.text, tags=sorted(self.tags))
        if self.user is not None:
            line["user"] = self.user
        else:
            line["public"] = True
        return line


def check_text(text: object, field: str) -> str:
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
        shown = f"{len(text)} characters" if isinstance(text, str) else type(text).__name__
        raise InputError(field, f"memory text of 1..{MAX_TEXT_CHARS} characters", shown)
    return text


def check_item_id(value: object, field: str) -> str:
    return ITEM_ID.check(value, field)


class MemoryBook:
    """Every user's memory over one interface's layout (trusted: never app-facing)."""

    def __init__(self, interface: Interface, tag: Tag, path: Path | None = None) -> None:
        self.interface = interface
        self.layout = interface.policy.layout
        self._tag = tag
        self.path = path
        self._entries: dict[str, MemoryEntry] = {}

    # ------------------------------------------------------------ reading and writing the file
    @classmethod
    def load(cls, interface: Interface, tag: Tag, path: str | Path | None) -> MemoryBook:
        book = cls(interface, tag, None if path is None else Path(path))
        if book.path is None or not book.path.exists():
            return book
        raw = read_bounded(book.path, MAX_MEMORY_BYTES, "--memory", "JSON lines file")
        try:
            lines = raw.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise InputError(f"memory file {book.path}", "UTF-8 text", "undecodable bytes") from None
        for number, line in enumerate(lines, start=1):
            if line.strip():
                where = f"memory line {number}"
                book._insert(book._entry(_parse_line(line, where), where), where)
        return book

    def save(self) -> None:
        """Rewrite the memory file atomically (temporary file + rename, mode 0600)."""
        if self.path is None:
            return
        text = "".join(json.dumps(e.to_json(), sort_keys=True) + "\n" for e in self._ordered())
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".memory-", suffix=".jsonl")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _ordered(self) -> list[MemoryEntry]:
        return sorted(self._entries.values(), key=lambda e: (e.user or "", e.position, e.item_id))

    # ------------------------------------------------------------ the trusted view of one user
    def entries(self, user: str) -> list[MemoryEntry]:
        return [e for e in self._ordered() if e.user in (None, user)]

    def store(self, user: str) -> Store:
        """The user's store M over the layout (empty positions hold the empty item)."""
        contents = {e.position: MemoryItem(tags=e.tags, text=e.text) for e in self.entries(user)}
        return Store.from_mapping(self.layout, contents, name=f"memory:{user}")

    def capacity(self, slot: str) -> int:
        return len(self.layout.positions_of(slot))

    # ------------------------------------------------------------ changes (all checked first)
    def add(self, user: str | None, slot: object, text: object, tags: Iterable[str] | None = None) -> str:
        """Add an item owned by `user` (None: a public item, outside every group)."""
        entry = self._entry({"slot": slot, "text": text, "tags": tags, "user": user, "public": user is None}, "memory")
        self._insert(entry, "memory")
        return entry.item_id

    def update(self, user: str, item_id: object, text: object, tags: Iterable[str] | None = None) -> MemoryEntry:
        found = self._owned(user, item_id)
        entry = self._entry(
            {"slot": found.slot, "text": text, "tags": tags, "user": found.user, "id": found.item_id, "public": found.user is None},
            "memory",
        )
        updated = attrs.evolve(entry, position=found.position)
        self._entries[found.item_id] = updated
        return updated

    def delete(self, user: str, item_id: object) -> None:
        del self._entries[self._owned(user, item_id).item_id]

    def _owned(self, user: str, item_id: object) -> MemoryEntry:
        check_item_id(item_id, "item_id")
        found = self._entries.get(str(item_id))
        if found is None or found.user not in (None, user):
            raise InputError("item_id", "the id of one of this user's memory items", "an unknown id")
        return found

    def _entry(self, data: Mapping[str, object], where: str) -> MemoryEntry:
        slot = data.get("slot")
        if not isinstance(slot, str) or slot not in self.layout.slots:
            raise InputError(f"{where}.slot", f"a slot among {list(self.layout.slots)}", "an unknown slot")
        text = check_text(data.get("text"), f"{where}.text")
        raw_user = data.get("user")
        public = data.get("public", False)
        if not isinstance(public, bool):
            raise InputError(f"{where}.public", "true or false", type(public).__name__)
        user = None if raw_user is None else check_id(raw_user, f"{where}.user")
        item_id = data.get("id")
        item_id = secrets.token_hex(8) if item_id is None else check_item_id(item_id, f"{where}.id")
        raw_tags = data.get("tags")
        if raw_tags is None:
            tags = self._tag(slot, text)
        else:
            tags = _tags(raw_tags, f"{where}.tags")
        from dpmem_ref.runtime.tagger import slot_tags

        unknown = tags - slot_tags(self.interface, slot)
        if unknown:
            raise InputError(f"{where}.tags", f"tags the vocabulary of slot {slot} reads", f"{len(unknown)} other tag(s)")
        position = check_int(data.get("position", 0), f"{where}.position", expected="a position of the slot")
        if (user is None) == (not public):  # exactly one owner: a subject, or public
            found = "both an owner and public" if public else "no owner"
            raise InputError(f"{where}.user", 'the owner (subject) of the item, or "public": true outside every group', found)
        return MemoryEntry(item_id=item_id, slot=slot, position=position, tags=tags, text=text, user=user)

    def _insert(self, entry: MemoryEntry, where: str) -> None:
        if entry.item_id in self._entries:
            raise InputError(f"{where}.id", "an id not used before", entry.item_id)
        positions = sorted(self.layout.positions_of(entry.slot))
        taken = {e.position for e in self._entries.values() if _overlap(e.user, entry.user)}
        if entry.position:
            if entry.position not in positions or entry.position in taken:
                raise InputError(f"{where}.position", f"a free position of slot {entry.slot}", entry.position)
            position = entry.position
        else:
            free = [p for p in positions if p not in taken]
            if not free:
                raise InputError(
                    f"{where}.slot",
                    f"at most {len(positions)} items in slot {entry.slot} (its declared capacity)",
                    f"{len(positions) + 1} items",
                )
            position = free[0]
        if entry.user is None and any(position in a.group for a in self.interface.policy.attributes):
            raise InputError(f"{where}.public", "a public item at a position outside every protected group", position)
        self._entries[entry.item_id] = attrs.evolve(entry, position=position)

    def copy(self) -> MemoryBook:
        other = MemoryBook(self.interface, self._tag, self.path)
        other._entries = dict(self._entries)
        return other


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def check_memory_file(path: str | Path | None, field: str = "--memory") -> Path | None:
    """A memory file given on the command line must exist (a missing file is an error, never
    an empty memory)."""
    if path is None:
        return None
    found = Path(path)
    if not found.is_file():
        raise InputError(field, "an existing memory file (JSON lines)", "no such file")
    return found


def private_copy(path: Path, runs: Path, command: str) -> Path:
    """A memory file under the shipped examples/ is never written: it is copied into
    runs/<command>-<UTC time>/ first (mode 0600), and the copy is served."""
    if not path.resolve().is_relative_to(EXAMPLES):
        return path
    import shutil
    import time

    folder = runs / f"{command}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(3)}"
    folder.mkdir(parents=True, exist_ok=False)
    copy = folder / path.name
    shutil.copyfile(path, copy)
    os.chmod(copy, 0o600)
    return copy


def _overlap(a: str | None, b: str | None) -> bool:
    """Two items compete for a position when some user would see both."""
    return a is None or b is None or a == b


def _tags(value: object, field: str) -> frozenset[str]:
    if not isinstance(value, list | tuple | frozenset | set) or not all(isinstance(t, str) and t for t in value):
        raise InputError(field, "a list of tag names", type(value).__name__)
    return frozenset(value)


def _parse_line(line: str, where: str) -> Mapping[str, object]:
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        raise InputError(where, "one JSON object", "malformed JSON") from None
    if not isinstance(data, dict):
        raise InputError(where, "one JSON object", type(data).__name__)
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise InputError(where, f"keys among {sorted(_KEYS)}", unknown)
    return data
