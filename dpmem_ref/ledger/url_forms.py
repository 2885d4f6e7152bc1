"""The store URL forms a ledger backend may be named by (CLI `--store-url`, Python API), and
their one redaction. `dpmem_ref.ledger.urls` opens a store from them; the PostgreSQL backend
checks and redacts its URL here (so neither backend imports the opener).

The documented forms, and nothing else (anything else is refused in one line):

- `memory:` — in-process ledgers (forgotten on exit);
- `sqlite:///relative/path.db`, `sqlite:////absolute/path.db` or a plain file path — one
  SQLite file (one host, the embedded default). A path may not contain `=` or start with a
  scheme (`word:`), so a libpq keyword DSN (`dbname=... password=...`) or a mistyped URL
  never becomes a file name;
- `postgresql://[user[:password]@][host][:port][/database][?name=value&...]` (or
  `postgres://`) — a PostgreSQL server shared by replicas on several hosts (extra
  `dpmem-ref[postgres]`). RFC 3986 strictly: user, password and values percent-encoded
  (a raw `@`, `/`, `:`, `?`, `#` or space in a password is refused, never guessed at), the
  query names from `QUERY_NAMES` only, each once.

`redact_url` is the ONE redaction: every message, repr, log record and file name that
names a store goes through it. It keeps the scheme, user, host, port, database and the
query names; it replaces the password, and the values of `password`, `sslpassword` and
`passfile`, by `***`; anything that is not a documented form is not shown at all.
"""

from __future__ import annotations

import re

from dpmem_ref.core.errors import InputError

MAX_URL_LENGTH = 4096
FORMS = "memory:, sqlite:///PATH, a file path without '=' or postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
SECRET_QUERY_NAMES = frozenset({"password", "sslpassword", "passfile"})
QUERY_NAMES = SECRET_QUERY_NAMES | frozenset(
    {
        "host", "hostaddr", "port", "dbname", "user", "options", "application_name", "connect_timeout",
        "sslmode", "sslrootcert", "sslcert", "sslkey", "sslcrl", "target_session_attrs", "channel_binding",
        "gssencmode", "require_auth", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
    }
)  # fmt: skip
_ENCODED = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})"  # RFC 3986 unreserved, sub-delims, pct-encoded
_POSTGRES = re.compile(
    rf"^(?P<scheme>postgres|postgresql)://"
    rf"(?:(?P<user>{_ENCODED.replace('&', '').replace('=', '')}*)(?::(?P<password>{_ENCODED}*))?@)?"
    r"(?P<host>[A-Za-z0-9\-._~%]*|\[[0-9A-Fa-f:.]+\])"
    r"(?::(?P<port>[0-9]{1,5}))?"
    rf"(?:/(?P<database>{_ENCODED}*))?"
    r"(?:\?(?P<query>[^#@\s]*))?$"
)
_QUERY_VALUE = re.compile(r"^(?:[A-Za-z0-9\-._~!$'()*+,;:/]|%[0-9A-Fa-f]{2})*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class SecretURL:
    """A store URL that prints as its redaction (repr, str, vars of its holder)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The URL itself: for the driver only."""
        return self._value

    def __repr__(self) -> str:
        return f"SecretURL({redact_url(self._value)!r})"

    __str__ = __repr__


class _Refused(ValueError):
    """Not a documented form (the text says which part, never its value)."""


def _query(query: str | None) -> list[tuple[str, str]]:
    if query is None:
        return []
    pairs: list[tuple[str, str]] = []
    for part in query.split("&"):
        name, equals, value = part.partition("=")
        if not equals or name not in QUERY_NAMES or not _QUERY_VALUE.fullmatch(value):
            raise _Refused("a query parameter name=value of a libpq URL parameter, percent-encoded")
        if any(name == seen for seen, _ in pairs):
            raise _Refused("each query parameter once")
        pairs.append((name, value))
    return pairs


def _postgres(url: str) -> str:
    """The redacted form of a strict postgresql:// URL (raises _Refused otherwise)."""
    match = _POSTGRES.fullmatch(url)
    if match is None:
        raise _Refused("a postgresql:// URL of the documented form (percent-encode '@', '/', ':' in passwords)")
    pairs = _query(match["query"])
    user = match["user"]
    userinfo = "" if user is None else f"{user}{':***' if match['password'] is not None else ''}@"
    port = f":{match['port']}" if match["port"] else ""
    database = f"/{match['database']}" if match["database"] is not None else ""
    shown = "&".join(f"{n}={'***' if n in SECRET_QUERY_NAMES else v}" for n, v in pairs)
    return f"{match['scheme']}://{userinfo}{match['host']}{port}{database}{'?' + shown if shown else ''}"


def _sqlite_path(url: str) -> str:
    path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else url
    if not path or "=" in path or _SCHEME.match(path) or "://" in path:
        raise _Refused("an SQLite file path without '=' and without a scheme")
    return path


def redact_url(url: object) -> str:
    """What may be shown of a store URL (see the module docstring); never raises."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH or not url.isprintable():
        return "(an unusable store URL, not shown)"
    if url == "memory:":
        return url
    if url.lower().startswith(("postgres:", "postgresql:")):
        try:
            return _postgres(url)
        except _Refused:
            return "postgresql://(not a documented URL form, not shown: it may hold a password)"
    if "=" in url:
        return "(a libpq keyword DSN or a path with '=', not shown: it may hold a password)"
    if url.startswith("sqlite:///") or not _SCHEME.match(url):
        return url
    return f"{url.split(':', 1)[0]}:(not shown)"


def check_postgres_url(url: object) -> str:
    """`url` if it is a documented postgresql:// form, else InputError (redacted, one line)."""
    try:
        if not isinstance(url, str) or len(url) > MAX_URL_LENGTH or not url.isprintable():
            raise _Refused("a printable URL")
        _postgres(url)
    except _Refused as refused:
        raise InputError("--store-url", f"{FORMS} ({refused})", redact_url(url)) from None
    return url
