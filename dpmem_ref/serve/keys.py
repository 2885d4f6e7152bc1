"""The keys file of `dpmem serve`: who may call the service, stored as SHA-256 hashes only.

```toml
[owner]                      # the user's own agent operator: memory management and ledgers
token_sha256 = "<64 hex>"

[apps.calendar]              # one table per application (the paper's adversary)
token_sha256 = "<64 hex>"
users = ["alice", "bob"]     # the users this application may query
```

A presented bearer token is hashed (SHA-256) and compared with EVERY stored hash with
`hmac.compare_digest`, without stopping at the first match: the time taken does not
depend on which entry matches, nor on how many leading bytes agree. Tokens themselves
are never stored, logged or echoed in an error; an error about the file names the
field, never a token or hash found there (application and user names are ids, checked by
the one id rule `dpmem_ref.core.validate.ID` and shown when they break it). The file is read
bounded (MAX_KEYS_FILE_BYTES) and pre-scanned in linear time before tomllib parses it
(`dpmem_ref.config.toml_bounds`), as every TOML file of dpmem is. `check_shares_cover`: with per-user caps, every application of the
keys file has a share of them in the agent file (`dpmem serve` refuses to start otherwise).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import tomllib
from pathlib import Path
from typing import Any

import attrs

from dpmem_ref.config.toml_bounds import prescan
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import read_bounded
from dpmem_ref.core.validate import check_id

MAX_KEYS_FILE_BYTES = 1_048_576
MAX_TOKEN_CHARS = 4096
"""A presented token longer than this is refused before it is hashed (bounded work)."""
HASH = re.compile(r"[0-9a-f]{64}")


def token_hash(token: str) -> str:
    """The hex SHA-256 of a token's UTF-8 bytes (what the keys file stores)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class Principal:
    """Who a request authenticated as: the owner, or one application (by name)."""

    kind: str  # "owner" or "app"
    name: str  # "owner", or the application's name
    users: frozenset[str] = frozenset()  # the users an application may query

    def may_query(self, user: str) -> bool:
        return self.kind == "app" and user in self.users


OWNER = Principal("owner", "owner")


@attrs.frozen(repr=False)
class Keys:
    """The parsed keys file: the owner's hash and one (hash, principal) per application."""

    owner_sha256: bytes = attrs.field(repr=False)
    apps: tuple[tuple[bytes, Principal], ...] = attrs.field(repr=False)

    def __repr__(self) -> str:  # never the hashes
        return f"Keys(owner, apps={[p.name for _, p in self.apps]})"

    @property
    def app_names(self) -> tuple[str, ...]:
        return tuple(p.name for _, p in self.apps)

    def authenticate(self, token: str | None) -> Principal | None:
        """The principal whose stored hash matches the token, or None (unknown or missing).

        Every entry is compared (constant-time `hmac.compare_digest` on the 32-byte
        digests), whatever matched earlier."""
        if token is None or not token or len(token) > MAX_TOKEN_CHARS:
            return None
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        found: Principal | None = None
        if hmac.compare_digest(digest, self.owner_sha256):
            found = OWNER
        for stored, principal in self.apps:
            if hmac.compare_digest(digest, stored) and found is None:
                found = principal
        return found


def _hash_field(table: Any, where: str) -> bytes:
    if not isinstance(table, dict):
        raise InputError(where, "a table", type(table).__name__)
    unknown = sorted(set(table) - {"token_sha256", "users"})
    if unknown:
        raise InputError(f"{where}.{unknown[0]}", "only the keys token_sha256 and users", "an unknown key")
    value = table.get("token_sha256")
    if not isinstance(value, str) or HASH.fullmatch(value) is None:
        shown = type(value).__name__ if not isinstance(value, str) else f"a string of {len(value)} characters"
        raise InputError(f"{where}.token_sha256", "64 lowercase hex digits (sha256 of the token)", shown)
    return bytes.fromhex(value)


def parse_keys(data: dict[str, Any], source: str = "keys file") -> Keys:
    """A Keys record from the parsed TOML, or InputError naming the field (never a token or hash)."""
    unknown = sorted(set(data) - {"owner", "apps"})
    if unknown:
        raise InputError(f"{source}: {unknown[0]}", "only the tables [owner] and [apps.NAME]", "an unknown table")
    if "owner" not in data:
        raise InputError(f"{source}: owner", "an [owner] table with token_sha256", "none")
    owner = data["owner"]
    if isinstance(owner, dict) and "users" in owner:
        raise InputError(f"{source}: owner.users", "no users list (the owner manages every user)", "a users key")
    owner_hash = _hash_field(owner, f"{source}: owner")
    apps_table = data.get("apps", {})
    if not isinstance(apps_table, dict):
        raise InputError(f"{source}: apps", "tables [apps.NAME]", type(apps_table).__name__)
    apps: list[tuple[bytes, Principal]] = []
    seen = {owner_hash}
    for name, table in sorted(apps_table.items()):
        check_id(name, f"{source}: apps")  # before the name is part of a field
        where = f"{source}: apps.{name}"
        digest = _hash_field(table, where)
        if digest in seen:
            raise InputError(f"{where}.token_sha256", "a hash no other entry uses", "a repeated hash")
        seen.add(digest)
        users = table.get("users")
        if not isinstance(users, list) or not all(isinstance(u, str) for u in users):
            raise InputError(f"{where}.users", "a list of user names", type(users).__name__)
        for index, user in enumerate(users):
            check_id(user, f"{where}.users[{index}]")
        apps.append((digest, Principal("app", name, frozenset(users))))
    return Keys(owner_hash, tuple(apps))


def load_keys(path: str | Path) -> Keys:
    """Read and parse a keys file (bounded size, UTF-8 TOML, pre-scanned: bounded work)."""
    raw = read_bounded(path, MAX_KEYS_FILE_BYTES, "--keys", "keys file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("--keys", "UTF-8 TOML", "undecodable bytes") from None
    prescan(text, "--keys")  # linear time; refuses nesting, keys and dotted parts past the limits
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        # Where, never what: the position tomllib reports, not its text about the content.
        where = re.search(r"line \d+, column \d+|end of document", str(error))
        position = where.group(0) if where else "an unknown position"
        position = "the end of the document" if position == "end of document" else position
        raise InputError("--keys", "valid TOML", f"an error at {position}") from None
    except (ValueError, RecursionError):  # integers past 4300 digits
        raise InputError("--keys", "TOML within the parser's limits", "an oversized number or nesting") from None
    return parse_keys(data, "--keys")


def check_shares_cover(keys: Keys, config_path: str | Path) -> None:
    """With per-user caps (`[scopes] user_caps`), every application of the keys file must have
    a precommitted share in the agent file's `[scopes.shares]`; otherwise its every turn would
    be refused, so `dpmem serve` refuses to start (one line, naming the first such application).
    The shares themselves are checked when the runtime opens."""
    from dpmem_ref.runtime.settings import load_agent_file

    agent = load_agent_file(config_path)
    if agent.user_caps is None:
        return  # no per-user cap: every application's scope has the interface's caps B_a
    declared = set(agent.shares or {})
    for name in keys.app_names:
        if name not in declared:
            raise InputError(f"--keys: apps.{name}", "an application with a share in the agent file's [scopes.shares]", "none")
