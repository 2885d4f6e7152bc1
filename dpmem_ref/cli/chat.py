"""`dpmem chat`: free-text queries on stdin, one JSON object per turn on stdout.

    dpmem chat CONFIG --memory FILE --user U --app A [--interaction I] (--store-url URL | --ephemeral)
               [--llm echo|smollm2|hf:ID|openai:URL#MODEL] [--seed N] [--new-epoch REASON]

With a budget period declared by the interface (`[budget] period = "30 days"`), chat
prints at start the current period and the guarantee composed over the periods elapsed
(k x the application's share, k x U_a, with the caveat; docs/agent.md).

Safe defaults: without a durable ledger (--store-url sqlite:///... or postgresql://...)
chat refuses to run unless --ephemeral says so (printed at start: a restart grants every
budget again); a --memory file that does not exist is an error. Chat never writes the
memory file (it changes no memory).

Each output line has `query`, `route` (the catalogue query or null), `response`, `control`
(JSON), `remaining` (attribute -> exact "p/q" left to this application for this user),
`interaction` and `views`. A second run for the same user and application continues the
same scope (with a durable --store-url), whatever the interaction id.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import check_id

MAX_LINES = 100_000


def command_chat(args: argparse.Namespace) -> int:
    from dpmem_ref.ledger import LedgerStoreError
    from dpmem_ref.ledger.chain import ChainKey, dev_key_notice
    from dpmem_ref.runtime.agent import AgentRuntime
    from dpmem_ref.runtime.memory import check_memory_file

    for field in ("user", "app", "interaction"):
        check_id(getattr(args, field), f"--{field}")
    check_memory_file(args.memory)
    if args.store_url is None or args.store_url == "memory:":
        if not args.ephemeral:
            raise InputError("--store-url", "a durable ledger (sqlite:///PATH, postgresql://...) or --ephemeral", "none")
    elif args.ephemeral:
        raise InputError("--ephemeral", "no --store-url (ledgers in this process only)", "both")
    try:
        runtime = AgentRuntime.open(
            args.file,
            memory=args.memory,
            store_url=args.store_url,
            llm=args.llm,
            seed=args.seed,
            new_epoch=args.new_epoch,
            fresh_budget=args.fresh_budget,
        )
    except LedgerStoreError as error:
        raise InputError("--store-url", "a usable ledger database", str(error)) from None
    if runtime.epoch > 0 or runtime.interface.period is not None:
        _print_guarantee(runtime, args.app)
    key = getattr(runtime.ledger_store, "key", None)
    notice = dev_key_notice(key) if isinstance(key, ChainKey) else None
    if notice is not None:  # keys are explicit: the development key is announced at start
        sys.stderr.write(notice + "\n")
    if args.ephemeral:  # said at start (once everything opened: an error stays one line)
        sys.stderr.write("dpmem chat: --ephemeral: ledgers live in this process only; a restart grants every budget again\n")
        sys.stderr.flush()
    try:
        for number, line in enumerate(sys.stdin, start=1):
            if number > MAX_LINES:
                raise InputError("stdin", f"at most {MAX_LINES} queries", number)
            text = line.strip()
            if not text:
                continue
            try:
                turn = runtime.turn(args.user, args.app, args.interaction, text)
            except LedgerStoreError as error:
                raise InputError(f"stdin line {number}", "a turn the ledger database commits", str(error)) from None
            except InputError as error:
                raise InputError(f"stdin line {number}: {error.field}", error.expected, error.found) from None
            sys.stdout.write(json.dumps(turn.to_json(), sort_keys=True) + "\n")
            sys.stdout.flush()
    finally:
        runtime.close()
    return 0


def _print_guarantee(runtime: Any, app: str) -> None:
    """What epochs and periods cost, on stderr at start: the caps add up over epochs, and
    over the k budget periods elapsed (k x share, k x U_a; the kernel's ComposedGuarantee
    lines, each with its caveat)."""
    report = runtime.guarantee()
    if runtime.epoch > 0:
        fresh = f", {len(report['fresh_budget_epochs'])} over an unchanged interface" if report["fresh_budget_epochs"] else ""
        total = ", ".join(f"{a} <= {v}" for a, v in report["per_application"].items())
        over = "epochs and periods" if "periods_per_epoch" in report else "epochs"
        sys.stderr.write(f"dpmem chat: budget epoch {runtime.epoch} ({report['epochs']} epochs{fresh}); per application over all {over}: {total}\n")
    current = report.get("current_epoch")
    if current is not None:
        sys.stderr.write(
            f"dpmem chat: budget period {current['period_index']} of {current['period']} since the recorded origin "
            f"(epoch {current['epoch']}); the guarantee composed over the {current['periods']} elapsed:\n"
        )
        mine = f"application {app}, "
        for line in current["lines"]:
            if line.startswith(mine) or not line.startswith("application "):
                sys.stderr.write(f"  {line}\n")
    sys.stderr.flush()


def add_chat_command(sub: Any) -> None:
    chat = sub.add_parser("chat", help="serve free-text queries from stdin through the agent runtime (docs/agent.md)")
    chat.add_argument("file", help="agent file (TOML; e.g. examples/agent/assistant.toml)")
    chat.add_argument("--memory", default=None, help="memory file (JSON lines; must exist; chat never writes it)")
    chat.add_argument("--user", required=True, help="user id ([A-Za-z0-9._-])")
    chat.add_argument("--app", required=True, help="application id: the budget scope with --user")
    chat.add_argument("--interaction", default="chat", help="label of this conversation (never selects a ledger)")
    chat.add_argument("--store-url", default=None, help="durable ledger store: sqlite:///PATH or postgresql://...")
    chat.add_argument("--ephemeral", action="store_true", help="no durable ledger: budgets live in this process only")
    chat.add_argument("--llm", default="echo", help="echo (default) | smollm2 | hf:ID_OR_PATH | openai:URL#MODEL")
    chat.add_argument("--seed", type=int, default=None, help="seed for reproducible EM draws (default: OS entropy)")
    chat.add_argument("--new-epoch", default=None, metavar="REASON", help="start a new recorded budget epoch")
    chat.add_argument(
        "--fresh-budget", action="store_true", help="with --new-epoch over an unchanged interface: reset every budget on purpose"
    )
    chat.set_defaults(handler=command_chat)
