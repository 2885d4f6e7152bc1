"""`dpmem ledger backup DB DEST` and `dpmem ledger verify DB` (issue 13.7), and the
`--store-url` option of `dpmem run`. `dpmem_ref.cli` calls `add_ledger_commands`.

Exit codes as everywhere in `dpmem`: 0 ok, 1 a verified file breaks a ledger invariant,
2 bad input (missing file, not a ledger, unreadable): one line, no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from dpmem_ref.durable import DurableSession, DurableTurn
from dpmem_ref.errors import InputError
from dpmem_ref.interface import Interface
from dpmem_ref.ledger.backup import backup_sqlite, verify_sqlite
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.ledger.urls import open_ledger_store
from dpmem_ref.policy import Store
from dpmem_ref.randomness import RandomSource
from dpmem_ref.timing import DEFAULT_TURN_DEADLINE_S
from dpmem_ref.turn import LLMChannel

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2


def _fail(error: Exception) -> int:
    print(f"dpmem: error: {error}", file=sys.stderr)
    return EXIT_BAD_INPUT


def command_backup(args: argparse.Namespace) -> int:
    try:
        report = backup_sqlite(args.database, args.destination)
    except (InputError, LedgerStoreError) as error:
        return _fail(error)
    print(f"backup written: {report.line()}")
    return EXIT_OK


def command_verify(args: argparse.Namespace) -> int:
    try:
        report = verify_sqlite(args.database)
    except (InputError, LedgerStoreError) as error:
        return _fail(error)
    print(report.line())
    return EXIT_OK if report.ok else EXIT_VIOLATION


def add_ledger_commands(sub: Any) -> None:
    """Register `ledger backup` and `ledger verify` on the `dpmem` subparsers."""
    ledger = sub.add_parser("ledger", help="back up and verify durable SQLite ledger files")
    commands = ledger.add_subparsers(dest="ledger_command", required=True)
    backup = commands.add_parser(
        "backup", help="copy a live ledger through SQLite's online backup API (WAL included), then verify the copy"
    )
    backup.add_argument("database", help="the SQLite ledger file")
    backup.add_argument("destination", help="the backup file to create (never overwritten)")
    backup.set_defaults(handler=command_backup)
    verify = commands.add_parser(
        "verify", help="check schema, fingerprint, L <= B and the charge log of a ledger file (one line)"
    )
    verify.add_argument("database", help="the SQLite ledger file")
    verify.set_defaults(handler=command_verify)
    for parser in (ledger, backup, verify):  # usage errors: dpmem's one line, exit 2
        parser.error = _delegate_error(sub)


def _delegate_error(sub: Any) -> Callable[[str], NoReturn]:
    def error(message: str) -> NoReturn:
        print(f"dpmem: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)

    return error


def add_store_url_arguments(run: argparse.ArgumentParser) -> None:
    """`dpmem run --store-url URL [--user U] [--interaction I]`: a durable ledger."""
    run.add_argument(
        "--store-url",
        default=None,
        help="durable ledger: sqlite:///PATH (one host), postgresql://... (several hosts) or memory: "
        "(default: in-memory ledgers, no DurableSession)",
    )
    run.add_argument("--user", default="user", help="ledger key with --store-url (default: user)")
    run.add_argument("--interaction", default="default", help="ledger key with --store-url (default: default)")


def _ledger_failure(error: LedgerStoreError) -> NoReturn:
    print(f"dpmem: error: {error}", file=sys.stderr)
    raise SystemExit(EXIT_BAD_INPUT)


def durable_turns(
    args: argparse.Namespace,
    interface: Interface,
    memory: Store,
    source: RandomSource,
    channel: LLMChannel,
    turn_deadline_s: float | None = DEFAULT_TURN_DEADLINE_S,
) -> Callable[[str], DurableTurn] | None:
    """With `--store-url`: the turn function of a DurableSession on that ledger (charge
    before release, bound to the interface's fingerprint); None without it.
    `turn_deadline_s=None` when the caller releases on its own deadline grid (`dpmem run`)."""
    url = getattr(args, "store_url", None)
    if url is None:
        return None
    try:
        store = open_ledger_store(url)
        session = DurableSession.open(
            interface, store, args.user, args.interaction, memory, source, channel=channel, turn_deadline_s=turn_deadline_s
        )
    except LedgerStoreError as error:
        _ledger_failure(error)

    def step(query: str) -> DurableTurn:
        try:
            return session.run_turn(query)
        except LedgerStoreError as error:
            _ledger_failure(error)

    return step
