"""`dpmem serve` on the command line: bad input is one line and exit 2 before anything listens;
`--replicas N` starts N processes with one command and stops them all on SIGTERM."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.kernel_fixtures import run_cli
from tests.serve.live import (
    AGENT,
    DINNER,
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    LiveServer,
    agent_of,
    auth,
    child_environment,
    httpx,
    marked_memory,
    write_keys,
)

ENV = child_environment()


def dpmem(*args: str) -> tuple[int, str, str]:
    """In process (the refusals come before anything listens): (exit code, stdout, stderr)."""
    return run_cli(list(args))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--replicas", "2"],
            "dpmem: error: --replicas: expected a shared --store-url (postgresql://... or sqlite:///PATH), found 'in-process ledgers'",
        ),
        (["--replicas", "0"], "dpmem: error: --replicas: expected 1..64, found 0"),
        (["--port", "70000"], "dpmem: error: --port: expected 0..65535, found 70000"),
        (["--tls-cert", "cert.pem"], "dpmem: error: --tls-cert/--tls-key: expected both or neither, found 'only one'"),
        (
            ["--release-deadline", "0"],
            "dpmem: error: --release-deadline: expected a number of seconds in (0, 10.0], found 0.0",
        ),
        (["--header-timeout", "0"], "dpmem: error: --header-timeout: expected seconds in (0, 3600], found 0.0"),
        (["--body-timeout", "nan"], "dpmem: error: --body-timeout: expected seconds in (0, 3600], found nan"),
        (
            ["--max-connections-per-client", "0"],
            "dpmem: error: --max-connections-per-client: expected 1..1000000, found 0",
        ),
        (["--workers", "0"], "dpmem: error: --workers: expected 1..1024, found 0"),
    ],
)
def test_bad_options_are_one_line_exit_2(tmp_path: Path, extra: list[str], message: str) -> None:
    keys, _ = write_keys(tmp_path)
    assert dpmem("serve", str(AGENT), "--keys", str(keys), "--port", "0", *extra) == (2, "", message + "\n")


def test_a_bad_keys_file_is_one_line_exit_2_and_never_echoes_a_token(tmp_path: Path) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text('[owner]\ntoken_sha256 = "my-plain-token-0123"\n')
    assert dpmem("serve", str(AGENT), "--keys", str(keys), "--port", "0") == (
        2,
        "",
        "dpmem: error: --keys: owner.token_sha256: expected 64 lowercase hex digits (sha256 of the token), "
        "found 'a string of 19 characters'\n",
    )
    code, out, err = dpmem("serve", str(AGENT), "--port", "0")
    assert (code, out) == (2, "") and err.count("\n") == 1 and "--keys" in err


def test_a_ledger_is_durable_unless_ephemeral_is_asked_for(tmp_path: Path) -> None:
    keys, _ = write_keys(tmp_path)
    assert dpmem("serve", str(AGENT), "--keys", str(keys), "--port", "0") == (
        2,
        "",
        "dpmem: error: --store-url: expected a durable ledger (sqlite:///PATH, postgresql://...) or --ephemeral, found 'none'\n",
    )
    url = f"sqlite:///{tmp_path / 'ledgers.db'}"
    assert dpmem("serve", str(AGENT), "--keys", str(keys), "--store-url", url, "--ephemeral", "--port", "0") == (
        2,
        "",
        "dpmem: error: --ephemeral: expected no --store-url (ledgers in this process only), found 'both'\n",
    )


@pytest.mark.parametrize("replicas", ["1", "2"])
def test_an_application_without_a_share_is_refused_at_start_one_line_exit_2(tmp_path: Path, replicas: str) -> None:
    keys, _ = write_keys(tmp_path, {"recipes": ["alice"], "calendar": ["alice"]})
    url = f"sqlite:///{tmp_path / 'ledgers.db'}"
    argv = ["serve", str(AGENT), "--keys", str(keys), "--store-url", url, "--port", "0", "--replicas", replicas]
    message = "dpmem: error: --keys: apps.calendar: expected an application with a share in the agent file's [scopes.shares], found 'none'\n"
    if replicas == "1":
        assert dpmem(*argv) == (2, "", message)
    else:  # a process of its own, bounded: were the check missing, replicas would start serving
        command = [sys.executable, "-m", "dpmem_ref.cli", *argv]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True
        )
        try:
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:  # the whole group: the command and any replica it started
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
        assert (process.returncode, out, err) == (2, "", message)
    assert not (tmp_path / "ledgers.db").exists()  # refused before the ledger store opens
    # the same keys with an agent file that gives calendar a share pass the check (and reach the store)
    absent = "sqlite:///nonexistent-dir/ledgers.db"
    code, _, err = dpmem("serve", str(agent_of(keys)), "--keys", str(keys), "--store-url", absent, "--port", "0")
    assert code == 2 and err.startswith("dpmem: error: --store-url: expected a ledger store that opens"), err


def test_replicas_start_with_one_command_share_the_ledger_and_stop_together(tmp_path: Path) -> None:
    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    url = f"sqlite:///{tmp_path / 'ledgers.db'}"  # one host: SQLite serves several processes too
    command = [
        sys.executable,
        "-m",
        "dpmem_ref.cli",
        "serve",
        str(agent_of(keys)),
        "--memory",
        str(memory),
        "--keys",
        str(keys),
    ]
    command += ["--store-url", url, "--host", "127.0.0.1", "--port", "0", "--replicas", "2"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV, cwd=tmp_path)
    assert process.stdout is not None
    urls: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT_S
    text = b""
    try:
        while len(urls) < 2 and select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                break
            text += chunk
            urls = re.findall(r"listening on (http://127\.0\.0\.1:\d+)", text.decode())
        assert len(urls) == 2 and urls[0] != urls[1], text
        spent = []
        for base in urls:
            with httpx.Client(base_url=base, timeout=60, trust_env=False) as client:
                body = {"user": "alice", "interaction": base[-5:], "query": "Help me with my budget and bills"}
                answer = client.post("/v1/turns", headers=auth(tokens["recipes"]), json=body)
                assert answer.status_code == 200, answer.text
                spent.append(answer.json()["remaining"]["debt"])
        # recipes' share of debt is 1 (examples/agent/assistant.toml): remaining = share - spent,
        # 1 - 1/2 then 1 - 1: the second replica continues the first one's scope
        assert spent == ["1/2", "0/1"]
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(STOP_TIMEOUT_S * 2)
        process.stdout.close()
    assert code == 0


def test_tls_direct_serves_https_with_the_given_certificate(tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl binary to make a self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    server = LiveServer(tmp_path, keys, memory, "memory:", extra=["--tls-cert", str(cert), "--tls-key", str(key)])
    with server:
        assert server.url.startswith("https://127.0.0.1:")
        trusted = ssl.create_default_context(cafile=str(cert))  # the self-signed certificate only
        with httpx.Client(base_url=server.url, verify=trusted, timeout=60, trust_env=False) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            turn = client.post(
                "/v1/turns", headers=auth(tokens["recipes"]), json={"user": "alice", "interaction": "t", "query": "hi"}
            )
            assert turn.status_code == 200
        with pytest.raises(httpx.TransportError):  # plain HTTP on the TLS port gets no answer
            httpx.get(server.url.replace("https://", "http://") + "/healthz", timeout=30, trust_env=False)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("postgresql://u:secretpw@/db?host=/nonexistent-dir", "'cannot reach the server'"),
        # an error's found value is cut at 60 characters
        ("sqlite:///nonexistent-dir/ledgers.db", "'cannot open the file (missing folder, a directory, or no..."),
    ],
    ids=["postgresql", "sqlite"],
)
def test_a_ledger_store_that_does_not_open_is_one_line_exit_2_without_its_password(
    tmp_path: Path, url: str, why: str
) -> None:
    """The store's own reason, without the database's name (the option names it)."""
    keys, _ = write_keys(tmp_path)
    code, out, err = dpmem("serve", str(AGENT), "--keys", str(keys), "--store-url", url, "--port", "0")
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert err == f"dpmem: error: --store-url: expected a ledger store that opens, found {why}\n"
    assert "secretpw" not in err and "internal error" not in err


def test_without_the_serve_extra_the_command_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys, _ = write_keys(tmp_path)
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if the extra were not installed
    assert dpmem("serve", str(AGENT), "--keys", str(keys), "--port", "0") == (
        2,
        "",
        "dpmem: error: dpmem serve: expected the serve extra (pip install 'dpmem-ref[serve]'), found 'uvicorn missing'\n",
    )


def test_dpmem_and_the_serve_package_import_no_web_framework() -> None:
    probe = (
        "import sys, dpmem_ref.cli, dpmem_ref.serve, dpmem_ref.cli.serve, dpmem_ref.serve.keys, dpmem_ref.serve.gate; "
    )
    probe += "print(sorted(m for m in ('fastapi', 'starlette', 'uvicorn', 'pydantic') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=ENV, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


def test_loopback_hosts_are_told_from_the_others_that_get_the_no_tls_warning() -> None:
    """`dpmem serve` warns when it listens on a non-loopback address without TLS: the test of
    which hosts are loopback (an address in 127/8 or ::1, or the name localhost)."""
    from dpmem_ref.serve.server import is_loopback

    for host in ("127.0.0.1", "127.8.9.10", "::1", "localhost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.0.0.1", "192.168.1.5", "2001:db8::1", "example.org", "localhost.example.org"):
        assert not is_loopback(host), host


@pytest.mark.parametrize(("host", "family"), [("127.0.0.1", "AF_INET"), ("::1", "AF_INET6")])
def test_the_listening_socket_has_the_family_of_its_host(host: str, family: str) -> None:
    """An IPv6 host (`--host ::1`) gets an IPv6 socket, not inherited by child processes; it accepts
    a connection at once."""
    import socket

    from dpmem_ref.serve.server import bind

    probe = socket.socket(getattr(socket, family), socket.SOCK_STREAM)
    try:
        probe.bind((host, 0))
    except OSError as error:  # a machine without IPv6 on loopback
        pytest.skip(f"this machine cannot listen on {host}: {error}")
    finally:
        probe.close()
    sock = bind(host, 0)
    try:
        assert sock.family == getattr(socket, family)
        assert not sock.get_inheritable()  # a process the server starts does not hold its port
        client = socket.create_connection(sock.getsockname()[:2], timeout=5)
        accepted, _ = sock.accept()
        accepted.close()
        client.close()
    finally:
        sock.close()


def test_an_address_this_host_cannot_listen_on_is_one_line_naming_the_options() -> None:
    """A port another socket listens on, a host name that does not resolve, a port past 65535:
    one InputError naming --host/--port and the address, with the kind of failure (never a traceback)."""
    from dpmem_ref.core.errors import InputError
    from dpmem_ref.serve.server import bind

    held = bind("127.0.0.1", 0)
    port = held.getsockname()[1]
    try:
        for host, at, kind in (
            ("127.0.0.1", port, "OSError"),
            ("no-such-host.invalid", 0, "gaierror"),
            ("127.0.0.1", 70000, "OverflowError"),
        ):
            with pytest.raises(InputError) as refused:
                bind(host, at)
            assert str(refused.value) == (
                f"--host/--port: expected an address this host can listen on, found '{host}:{at} ({kind})'"
            )
    finally:
        held.close()


def test_a_ledger_store_refused_on_open_is_named_by_its_whole_reason_not_its_last_clause(tmp_path: Path) -> None:
    """A store whose verification on open fails (a ledger row edited by hand): the refusal shows
    the store's reason from its start ("refused, verification on open failed: ..."), not only the
    text after its last ': '."""
    import sqlite3

    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    store = f"sqlite:///{tmp_path / 'ledgers.db'}"
    with LiveServer(tmp_path, keys, memory, store) as server, server.client() as client:
        turn = client.post(
            "/v1/turns", headers=auth(tokens["recipes"]), json={"user": "alice", "interaction": "t", "query": DINNER}
        )
        assert turn.status_code == 200 and turn.json()["control"][0] == ["food", "released"]  # charged
    raw = sqlite3.connect(tmp_path / "ledgers.db")
    raw.execute("UPDATE ledgers SET spent = '0/1'")
    raw.commit()
    raw.close()
    code, out, err = dpmem("serve", str(AGENT), "--keys", str(keys), "--store-url", store, "--port", "0")
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert err == (
        "dpmem: error: --store-url: expected a ledger store that opens, "
        "found 'refused, verification on open failed: ledgers row (alice...\n"
    )


def test_a_store_refused_for_its_anchor_file_names_the_anchor_file_before_why(tmp_path: Path) -> None:
    """An anchor file that is not an anchor: the store refuses to open ("ledger database NAME:
    refused, anchor PATH: why"), and the refusal is shown from after the name (the option's), so
    it still names the anchor file before why."""
    from dpmem_ref.ledger.sqlite.store import SQLiteLedgerStore

    keys, _ = write_keys(tmp_path)
    SQLiteLedgerStore(tmp_path / "ledgers.db")  # a new ledger database and its anchor beside it
    (tmp_path / "ledgers.db.hwm").write_text("not an anchor")
    code, out, err = dpmem(
        "serve", str(AGENT), "--keys", str(keys), "--store-url", f"sqlite:///{tmp_path / 'ledgers.db'}"
    )
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert err.startswith("dpmem: error: --store-url: expected a ledger store that opens, found 'refused, anchor "), err
