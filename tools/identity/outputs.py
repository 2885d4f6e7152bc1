"""The shipped examples' outputs, one file per command, for a byte-for-byte comparison of two trees.

    python tools/identity/outputs.py OUT                         # this tree
    PYTHONPATH=/tmp/base:/tmp/base/eval python tools/identity/outputs.py OUT-base --root /tmp/base
    diff -r OUT-base OUT                                         # or: tools/identity/compare.sh BASE

Each command runs in a fresh temporary folder (examples are never written to), under the
tree that PYTHONPATH names, with a fixed seed, the public development ledger key and no
terminal, and its exit status, stdout and stderr go to OUT/<name>.txt: `dpmem check`,
`audit`, `run` (text and --json) on the shipped examples, every counterexample as JSON,
Table 4 and the broken examples' refusals, a `dpmem chat` transcript (echo channel,
ephemeral and on a SQLite ledger), and `dpmem serve` answers to a fixed sequence of
requests (echo channel, --seed, a loopback port). Paths of the temporary folders are
replaced by placeholders, so only behaviour differs between two trees.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES = "What should I cook for dinner tonight?\nHow should I plan my money this month?\nAny tips for a quiet evening?\n"
APP_TOKEN = "demo-recipes-token-change-me"  # the documented demo token of examples/agent/keys.example.toml
OWNER_TOKEN = "demo-owner-token-change-me"


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPMEM_")}
    env.update({
        "PYTHONPATH": f"{root}:{root / 'eval'}", "DPMEM_LEDGER_DEV_KEY": "1", "NO_COLOR": "1",
        "HF_HUB_OFFLINE": "1", "PYTHONHASHSEED": "0",
    })  # fmt: skip
    return env


def _dpmem(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from dpmem_ref.cli import main; sys.exit(main())", *args]


def _scrub(text: str, folders: list[Path]) -> str:
    for n, folder in enumerate(folders):
        text = text.replace(str(folder), f"<tmp{n}>")
    text = re.sub(r'"seconds": [0-9.e-]+', '"seconds": <time>', text)  # the audit's timings
    # a turn past the release deadline depends on the machine's load, not on the tree
    text = re.sub(r"dpmem: warning: \d+ turn\(s\) overran the release deadline.*\n", "", text)
    text = re.sub(r"in [0-9.]+ s\b", "in <time> s", text)
    text = re.sub(r'"created": \d+', '"created": <time>', text)  # OpenAI answers: the clock and a random id
    text = re.sub(r'"id": "chatcmpl-[0-9a-f]+"', '"id": "chatcmpl-<random>"', text)
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)


def _run(out: Path, name: str, argv: list[str], root: Path, stdin: str = "") -> None:
    with tempfile.TemporaryDirectory(prefix="dpmem-identity-") as raw:
        work = Path(raw)
        shutil.copytree(root / "examples", work / "examples")
        done = subprocess.run(
            argv, cwd=work, env=_env(root), input=stdin, capture_output=True, text=True, timeout=600, check=False
        )
        text = f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
        (out / f"{name}.txt").write_text(_scrub(text, [work]))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(out: Path, root: Path) -> None:
    """`dpmem serve` on a SQLite ledger, echo channel, fixed seed: a fixed request sequence."""
    import httpx

    with tempfile.TemporaryDirectory(prefix="dpmem-identity-") as raw:
        work = Path(raw)
        shutil.copytree(root / "examples", work / "examples")
        shutil.copy(work / "examples/agent/memory.jsonl", work / "memory.jsonl")
        port = _free_port()
        server = subprocess.Popen(
            _dpmem("serve", "examples/agent/assistant.toml", "--memory", "memory.jsonl", "--keys",
                   "examples/agent/keys.example.toml", "--store-url", "sqlite:///ledgers.db", "--llm", "echo",
                   "--seed", "0", "--port", str(port), "--workers", "1"),
            cwd=work, env=_env(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        lines: list[str] = []
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(300):
                if server.poll() is not None:  # it refused to start: its output is the result
                    lines.append(f"exit {server.returncode}\n{server.stdout.read() if server.stdout else ''}")
                    break
                try:
                    if httpx.get(f"{base}/healthz", timeout=1).status_code < 500:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            app = {"Authorization": f"Bearer {APP_TOKEN}"}
            owner = {"Authorization": f"Bearer {OWNER_TOKEN}"}
            requests: list[tuple[str, str, dict[str, str], object]] = [
                *(("POST", "/v1/turns", app, {"user": "alice", "interaction": "c1", "query": q})
                  for q in QUERIES.splitlines() * 2),
                ("GET", "/v1/budget?user=alice", app, None),
                ("POST", "/v1/chat/completions", app, {"model": "dpmem", "user": "alice",
                                                       "messages": [{"role": "user", "content": "dinner ideas?"}]}),
                ("GET", "/v1/users/alice/ledgers", owner, None),
                ("POST", "/v1/turns", app, {"user": "bob", "interaction": "c1", "query": "dinner?"}),
                ("POST", "/v1/turns", owner, {"user": "alice", "interaction": "c1", "query": "dinner?"}),
                ("POST", "/v1/turns", app, {"user": "alice", "query": "no interaction"}),
            ]  # fmt: skip
            for method, path, headers, body in requests if server.poll() is None else ():
                answer = httpx.request(method, f"{base}{path}", headers=headers, json=body, timeout=60)
                shown = json.dumps(answer.json(), sort_keys=True) if answer.content else ""
                lines.append(f"{method} {path} {json.dumps(body, sort_keys=True)}\n{answer.status_code} {shown}\n")
        finally:
            server.terminate()
            server.wait(timeout=30)
        (out / "serve.txt").write_text(_scrub("".join(lines), [work]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2], help="the tree whose examples run")
    args = parser.parse_args()
    out, root = args.out, args.root.resolve()
    out.mkdir(parents=True, exist_ok=True)
    figure2 = "examples/figure2.toml"
    runs: dict[str, list[str]] = {
        "check-figure2": _dpmem("check", figure2, "--json"),
        "check-figure2-text": _dpmem("check", figure2),
        "check-reuse": _dpmem("check", "examples/figure2-reuse.toml", "--json"),
        "check-evaluation": _dpmem("check", "examples/evaluation.toml", "--json"),
        "check-agent": _dpmem("check", "examples/agent/interface.toml", "--json"),
        "audit-figure2": _dpmem("audit", figure2, "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "16", "--json"),
        "audit-figure2-text": _dpmem("audit", figure2, "--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "16"),
        "audit-reuse": _dpmem("audit", "examples/figure2-reuse.toml", "--store-a", "M", "--store-b", "M_no_diabetes",
                              "--horizon", "12", "--json"),
        "run-figure2": _dpmem("run", figure2, "--store", "M", "--queries", "examples/figure2-queries.txt", "--seed", "0"),
        "run-figure2-json": _dpmem("run", figure2, "--store", "M", "--queries", "examples/figure2-queries.txt", "--seed", "0",
                                   "--json"),
        "run-figure2-sqlite": _dpmem("run", figure2, "--store", "M", "--queries", "examples/figure2-queries.txt", "--seed",
                                     "0", "--json", "--store-url", "sqlite:///l.db"),
        "counterexamples": [sys.executable, "-m", "counterexamples", "--json"],
        "table4": [sys.executable, "-m", "counterexamples", "table4", "--json"],
        "version": _dpmem("--version"),
    }  # fmt: skip
    for broken in sorted((root / "examples/broken").glob("*.toml")):
        runs[f"check-broken-{broken.stem}"] = _dpmem("check", f"examples/broken/{broken.name}", "--json")
    for name, argv in runs.items():
        _run(out, name, argv, root)
    chat = ["examples/agent/assistant.toml", "--memory", "examples/agent/memory.jsonl", "--user", "alice", "--app",
            "recipes", "--seed", "0"]  # fmt: skip
    _run(out, "chat-ephemeral", _dpmem("chat", *chat, "--ephemeral"), root, QUERIES)
    _run(out, "chat-sqlite", _dpmem("chat", *chat, "--store-url", "sqlite:///chat.db"), root, QUERIES)
    _serve(out, root)
    print(f"{len(list(out.iterdir()))} outputs in {out}")


if __name__ == "__main__":
    main()
