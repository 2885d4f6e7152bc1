"""`dpmem ledger backup | verify | restore | migrate`, and the
`--store-url` option of `dpmem run`. `dpmem_ref.cli.dpmem` calls `add_ledger_commands`.

Exit codes as everywhere in `dpmem`: 0 ok, 1 a verified file breaks a ledger invariant,
2 bad input (missing file, not a ledger, unreadable): one line, no traceback.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from dpmem_ref.cli.errors import say, usage_error
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.exits import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION
from dpmem_ref.mechanism.timing import DEFAULT_TURN_DEADLINE_S

if TYPE_CHECKING:  # the commands import what they run (`dpmem --help` imports none of it)
    from collections.abc import Callable
    from typing import Any

    from dpmem_ref.channel.protocol import LLMChannel
    from dpmem_ref.core.policy import Store
    from dpmem_ref.interface import Interface
    from dpmem_ref.ledger.backup import LedgerReport
    from dpmem_ref.mechanism.randomness import RandomSource
    from dpmem_ref.turn.durable import DurableTurn


def _fail(error: Exception) -> int:
    say(f"dpmem: error: {error}")
    return EXIT_BAD_INPUT


def command_backup(args: argparse.Namespace) -> int:
    from dpmem_ref.ledger.backup import backup_sqlite
    from dpmem_ref.ledger.contract import LedgerStoreError

    try:
        report = backup_sqlite(args.database, args.destination)
    except (InputError, LedgerStoreError) as error:
        return _fail(error)
    print(f"backup written: {report.line()}")
    return EXIT_OK


def _verify(target: str, high_water: bool) -> LedgerReport:
    if target.startswith(("postgresql://", "postgres://")):
        from dpmem_ref.ledger.postgres.verify import verify_postgres  # needs the postgres extra

        return verify_postgres(target)
    from dpmem_ref.ledger.backup import verify_sqlite

    return verify_sqlite(target, high_water=high_water)


def command_verify(args: argparse.Namespace) -> int:
    from dpmem_ref.ledger.contract import LedgerStoreError

    try:
        report = _verify(args.database, not args.no_high_water)
    except (InputError, LedgerStoreError) as error:
        return _fail(error)
    print(report.line())
    return EXIT_OK if report.ok else EXIT_VIOLATION


def command_restore(args: argparse.Namespace) -> int:
    from dpmem_ref.ledger.contract import LedgerStoreError
    from dpmem_ref.ledger.restore import restore_sqlite

    try:
        report = restore_sqlite(args.backup, args.database, allow_rollback=args.allow_rollback)
    except (InputError, LedgerStoreError) as error:
        return _fail(error)
    print(f"restored: {report.line()}")
    return EXIT_OK if report.ok else EXIT_VIOLATION


def command_reanchor(args: argparse.Namespace) -> int:
    from dpmem_ref.ledger.contract import LedgerStoreError
    from dpmem_ref.ledger.restore import reanchor_sqlite

    try:
        if args.database.startswith(("postgresql://", "postgres://")):
            from dpmem_ref.ledger.postgres.verify import reanchor_postgres  # needs the postgres extra

            report = reanchor_postgres(args.database)
        else:
            report = reanchor_sqlite(args.database)
    except (InputError, LedgerStoreError) as error:
        return _fail(error)
    print(f"re-anchored: {report.line()}")
    return EXIT_OK if report.ok else EXIT_VIOLATION


def command_migrate(args: argparse.Namespace) -> int:
    from dpmem_ref.config.load import load_interface_file
    from dpmem_ref.ledger.contract import LedgerStoreError
    from dpmem_ref.ledger.fingerprint import interface_fingerprint
    from dpmem_ref.ledger.migrate import Routes
    from dpmem_ref.ledger.restore import migrate_sqlite

    try:
        interface = load_interface_file(args.interface).interface
        fingerprint, routes = interface_fingerprint(interface), Routes.of(interface)
        if args.database.startswith(("postgresql://", "postgres://")):
            from dpmem_ref.ledger.postgres.verify import migrate_postgres  # needs the postgres extra

            report = migrate_postgres(args.database, fingerprint, routes=routes)
        else:
            report = migrate_sqlite(args.database, fingerprint, routes=routes)
    except (InputError, LedgerStoreError) as error:
        return _fail(error)
    print(f"migrated: {report.line()}")
    return EXIT_OK if report.ok else EXIT_VIOLATION


def add_ledger_commands(sub: Any) -> None:
    """Register `ledger backup | verify | restore | migrate` on the `dpmem` subparsers."""
    ledger = sub.add_parser("ledger", help="back up, verify, restore and migrate durable ledgers")
    commands = ledger.add_subparsers(dest="ledger_command", required=True)
    backup = commands.add_parser(
        "backup", help="copy a live ledger through SQLite's online backup API (WAL included), then verify the copy"
    )
    backup.add_argument("database", help="the SQLite ledger file")
    backup.add_argument("destination", help="the backup file to create (never overwritten; DEST.hwm beside it)")
    backup.set_defaults(handler=command_backup)
    verify = commands.add_parser(
        "verify", help="check schema, the HMAC chain, every ledger (L = sum of charges <= B) and the high-water mark"
    )
    verify.add_argument("database", help="the SQLite ledger file, or a postgresql:// URL")
    verify.add_argument(
        "--no-high-water", action="store_true", help="check the chain alone (a copy without its .hwm file)"
    )
    verify.set_defaults(handler=command_verify)
    restore = commands.add_parser(
        "restore", help="put a verified backup in place; refused if older than the high-water mark"
    )
    restore.add_argument("backup", help="the backup file (from dpmem ledger backup)")
    restore.add_argument("database", help="the SQLite ledger file to restore into")
    restore.add_argument(
        "--allow-rollback",
        action="store_true",
        help="restore an older backup: re-grants the charges made since; recorded as a rollback that verify reports",
    )
    restore.set_defaults(handler=command_restore)
    reanchor = commands.add_parser(
        "reanchor",
        help="after a missing, foreign or unreadable anchor: verify the chain alone, record a reanchor event "
        "in it and anchor the head (accepts that this file is the live database)",
    )
    reanchor.add_argument("database", help="the SQLite ledger file, or a postgresql:// URL")
    reanchor.set_defaults(handler=command_reanchor)
    migrate = commands.add_parser(
        "migrate", help="bind a ledger written before the chain or the fingerprint to the interface that wrote it"
    )
    migrate.add_argument("database", help="the SQLite ledger file, or a postgresql:// URL")
    migrate.add_argument("--interface", required=True, help="the interface file (TOML) whose charges it holds")
    migrate.set_defaults(handler=command_migrate)
    for parser in (ledger, backup, verify, restore, reanchor, migrate):  # usage errors: dpmem's one line, exit 2
        parser.error = usage_error


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


def durable_turns(
    url: str | None,
    user: str,
    interaction: str,
    interface: Interface,
    memory: Store,
    source: RandomSource,
    channel: LLMChannel,
    turn_deadline_s: float | None = DEFAULT_TURN_DEADLINE_S,
) -> Callable[[str], DurableTurn] | None:
    """With a `--store-url` (`url`): the turn function of a DurableSession on that ledger
    (charge before release, bound to the interface's fingerprint); None without one.
    `turn_deadline_s=None` when the caller releases on its own deadline grid (`dpmem run`).
    A ledger that fails raises LedgerStoreError; `dpmem_ref.cli.dpmem.main` reports it (exit 2)."""
    if url is None:
        return None
    from dpmem_ref.ledger.chain import ChainKey, dev_key_notice
    from dpmem_ref.ledger.urls import open_ledger_store
    from dpmem_ref.turn.durable import DurableSession

    ledger_store = open_ledger_store(url)
    key = getattr(ledger_store, "key", None)
    notice = dev_key_notice(key) if isinstance(key, ChainKey) else None
    if notice is not None:
        say(notice)  # keys are explicit: the development key is announced at start
    session = DurableSession.open(
        interface, ledger_store, user, interaction, memory, source, channel=channel, turn_deadline_s=turn_deadline_s
    )
    return session.run_turn
