"""`dpmem serve CONFIG --memory FILE --keys FILE [--store-url URL] [--llm ...] [--host H] [--port N]
[--replicas N]`. Imports nothing heavy: fastapi and uvicorn load only when serving.

`--replicas N` (N > 1) starts N server processes on ports PORT, PORT+1, ... (each its own
process, all on the one `--store-url` ledger; each starts once the one before listens) and
supervises them: SIGINT/SIGTERM stops every
replica; the command exits once all have stopped. Several replicas need a shared durable
ledger (postgresql:// across hosts, sqlite:/// on one host): with in-process ledgers each
replica would grant the whole budget again, so that is refused.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
import time
from types import FrameType
from typing import Any

from dpmem_ref.cli.errors import say
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import check_int, check_real

MAX_REPLICAS = 64
STOP_WAIT_S = 20.0
START_WAIT_S = 300.0


def add_serve_parser(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve the runtime to applications over HTTP (extra `serve`; docs/serve.md)",
        description="Applications POST /v1/turns with their token; the owner manages memory. See docs/serve.md.",
    )
    serve.add_argument("config", help="the agent file (TOML, docs/agent.md)")
    serve.add_argument("--memory", default=None, help="the memory file (JSONL); default: in-memory only")
    serve.add_argument("--keys", required=True, help="the keys file (TOML: sha256 hashes of the tokens)")
    serve.add_argument(
        "--store-url", default=None, help="durable ledger store: sqlite:///PATH, postgresql://... (replicas)"
    )
    serve.add_argument("--ephemeral", action="store_true", help="no durable ledger: budgets live in this process only")
    serve.add_argument("--llm", default="echo", help="echo | smollm2 | hf:ID | openai:URL#MODEL (default echo)")
    serve.add_argument("--seed", type=int, default=None, help="reproducible draws (tests only; default OS entropy)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 = any free port)")
    serve.add_argument("--replicas", type=int, default=1, help="server processes on PORT, PORT+1, ... (default 1)")
    serve.add_argument("--tls-cert", default=None, help="PEM certificate: serve HTTPS directly (with --tls-key)")
    serve.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
    add_limit_options(serve)
    serve.set_defaults(handler=command_serve)


def add_limit_options(serve: Any) -> None:
    """Connection bounds and front doors (docs/serve.md, "Bounded connections")."""
    serve.add_argument(
        "--release-deadline", type=float, default=None, help="seconds from a turn's start to its release (default 0.05)"
    )
    serve.add_argument("--workers", type=int, default=None, help="kernel turns at once (default 2 x CPU cores)")
    serve.add_argument("--mcp", action="store_true", help="also serve the MCP server at /v1/mcp/ (streamable HTTP)")
    serve.add_argument("--header-timeout", type=float, default=10.0, help="seconds for a request's headers (default 10)")
    serve.add_argument("--body-timeout", type=float, default=30.0, help="seconds for a request's body (default 30)")
    serve.add_argument("--idle-timeout", type=float, default=5.0, help="seconds a kept-alive idle connection stays open (default 5)")
    serve.add_argument("--max-connections", type=int, default=4096, help="open connections per process (default 4096)")
    serve.add_argument("--max-connections-per-client", type=int, default=64, help="open connections per peer address (default 64)")


def deadline_of(args: argparse.Namespace) -> float:
    from dpmem_ref.mechanism.timing import DEFAULT_DURABLE_TURN_DEADLINE_S, check_deadline

    return DEFAULT_DURABLE_TURN_DEADLINE_S if args.release_deadline is None else check_deadline(args.release_deadline, "--release-deadline")


def limits_of(args: argparse.Namespace) -> Any:
    for flag in ("header_timeout", "body_timeout", "idle_timeout"):
        check_real(getattr(args, flag), "--" + flag.replace("_", "-"), 0, 3600, above=True, expected="seconds in (0, 3600]")
    if args.workers is not None:
        check_int(args.workers, "--workers", 1, 1024, expected="1..1024")
    for flag in ("max_connections", "max_connections_per_client"):
        check_int(getattr(args, flag), "--" + flag.replace("_", "-"), 1, 1_000_000, expected="1..1000000")
    from dpmem_ref.serve.limits import Limits

    return Limits(args.header_timeout, args.body_timeout, args.idle_timeout, args.max_connections_per_client, args.max_connections)


def command_serve(args: argparse.Namespace) -> int:
    check_int(args.port, "--port", 0, 65535, expected="0..65535")
    check_int(args.replicas, "--replicas", 1, MAX_REPLICAS, expected=f"1..{MAX_REPLICAS}")
    limits = limits_of(args)
    deadline_of(args)
    if args.replicas == 1:
        from dpmem_ref.serve.server import _import_serving, serve_one

        _import_serving()  # the serve extra first: its message says what to install
        _safe_defaults(args)
        return serve_one(
            args.config,
            keys_path=args.keys,
            memory=args.memory,
            store_url=args.store_url,
            llm=args.llm,
            seed=args.seed,
            host=args.host,
            port=args.port,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            limits=limits,
            mcp=args.mcp,
            deadline_s=deadline_of(args),
            workers=args.workers,
        )
    if args.store_url is None or args.store_url == "memory:":
        raise InputError("--replicas", "a shared --store-url (postgresql://... or sqlite:///PATH)", "in-process ledgers")
    if args.port and args.port + args.replicas - 1 > 65535:
        raise InputError("--port", f"room for {args.replicas} consecutive ports", args.port)
    _safe_defaults(args)  # one copy of an example memory file, shared by every replica
    return supervise([replica_argv(args, index) for index in range(args.replicas)])


def _safe_defaults(args: argparse.Namespace) -> None:
    """Safe defaults: every application of the keys file has a share in the agent file (with
    per-user caps); a durable ledger unless --ephemeral (printed at start); a
    --memory file must exist, and one under the shipped examples/ is copied into runs/ first
    (the example is never written). The keys and TLS options are checked first, as before."""
    from pathlib import Path

    from dpmem_ref.runtime.memory import check_memory_file, private_copy
    from dpmem_ref.serve.keys import check_shares_cover, load_keys

    keys = load_keys(args.keys)
    if (args.tls_cert is None) != (args.tls_key is None):
        return  # serve_one reports it
    check_shares_cover(keys, args.config)  # every application has a share of the per-user caps
    memory = check_memory_file(args.memory)
    if args.store_url is None or args.store_url == "memory:":
        if not args.ephemeral:
            raise InputError("--store-url", "a durable ledger (sqlite:///PATH, postgresql://...) or --ephemeral", "none")
        say("dpmem serve: --ephemeral: ledgers live in this process only; a restart grants every budget again")
        args.store_url = "memory:"
    elif args.ephemeral:
        raise InputError("--ephemeral", "no --store-url (ledgers in this process only)", "both")
    if memory is not None:
        copy = private_copy(memory, Path("runs"), "serve")
        if copy != memory:
            say(f"dpmem serve: --memory {memory} is a shipped example: serving a copy, {copy}")
            args.memory = str(copy)


def replica_argv(args: argparse.Namespace, index: int) -> list[str]:
    """The command line of replica `index` (its own port; port 0 stays 0: any free port)."""
    argv = [sys.executable, "-m", "dpmem_ref.cli", "serve", args.config, "--keys", args.keys, "--llm", args.llm]
    for flag, value in (("--memory", args.memory), ("--store-url", args.store_url), ("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
        if value is not None:
            argv += [flag, value]
    if args.seed is not None:
        argv += ["--seed", str(args.seed + index)]
    argv += ["--mcp"] if args.mcp else []
    argv += [] if args.release_deadline is None else ["--release-deadline", str(args.release_deadline)]
    argv += [] if args.workers is None else ["--workers", str(args.workers)]
    for flag in ("header_timeout", "body_timeout", "idle_timeout", "max_connections", "max_connections_per_client"):
        argv += ["--" + flag.replace("_", "-"), str(getattr(args, flag))]
    return [*argv, "--host", args.host, "--port", str(args.port + index if args.port else 0)]


def _wait_listening(child: subprocess.Popen[bytes]) -> bool:
    """Relay the child's "listening" line to our stdout; False if it exits (or stays silent) first."""
    assert child.stdout is not None
    deadline = time.monotonic() + START_WAIT_S
    pending = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([child.stdout], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(child.stdout.fileno(), 4096) if ready else b""
        if not chunk:
            return False
        pending += chunk
        if b"\n" in pending:
            sys.stdout.write(pending.decode(errors="replace"))
            sys.stdout.flush()
            return True
    return False


def supervise(commands: list[list[str]]) -> int:
    """Start the replicas one after the other (each once it listens: no two bind the ledger at
    once); forward SIGINT/SIGTERM; exit with the worst exit status once all have stopped."""
    children: list[subprocess.Popen[bytes]] = []

    def stop(signum: int, _: FrameType | None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    codes: list[int] = []
    try:
        for command in commands:
            child = subprocess.Popen(command, stdout=subprocess.PIPE)
            children.append(child)
            if not _wait_listening(child):
                stop(signal.SIGTERM, None)
                say(f"dpmem: error: replica {len(children) - 1} did not start (see its log above)")
                break
        codes = [child.wait() for child in children]
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for child in children:
            if child.poll() is None:
                try:
                    child.wait(STOP_WAIT_S)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
            if child.stdout is not None:
                child.stdout.close()
    return max((abs(code) for code in codes), default=0)
