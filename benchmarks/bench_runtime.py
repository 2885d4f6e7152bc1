"""Agent runtime cost per turn, beside the kernel's DurableSession.run_turn, in one run.

    .venv/bin/python benchmarks/bench_runtime.py                  # echo channel, SQLite, keyword router
    .venv/bin/python benchmarks/bench_runtime.py --turns 200 --minilm

Columns (median and p95 milliseconds per call, best of --repeats):
- `DurableSession.run_turn`: the kernel alone on the example interface (examples/agent),
  one SQLite file, the same catalogue query sequence, no release deadline;
- `AgentRuntime.turn`: the same queries as free text: router + scoped ledgers (the
  (user, app) scope and the per-user scope, one transaction per charge) + echo channel,
  same SQLite settings, no release deadline;
- router and tagger cost per call (keyword rules; with --minilm also the shipped MiniLM
  encoder on the CPU).
The release deadline (dpmem_ref.mechanism.timing) is off in both so the figures show compute and
commit time, not the padding.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpmem_ref.ledger import SQLiteLedgerStore  # noqa: E402
from dpmem_ref.mechanism.randomness import SeededRandomSource  # noqa: E402
from dpmem_ref.runtime import AgentRuntime  # noqa: E402
from dpmem_ref.runtime.tagger import slot_tags  # noqa: E402
from dpmem_ref.turn.durable import DurableSession  # noqa: E402

EXAMPLE = ROOT / "examples" / "agent"
TEXT = "I check my glucose after lunch and money is tight."
FREE_TEXT = {
    "affordable-dinner": "What should I cook for dinner tonight?",
    "checkup-reminder": "Any advice before my doctor check-up?",
    "budget-review": "Budget tips please",
    "weeknight-plan": "Plan my weeknight evenings",
}


def timed(calls: int, action: Callable[[int], object]) -> list[float]:
    out = []
    for n in range(calls):
        start = time.perf_counter()
        action(n)
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def runtime_turns(folder: Path, turns: int, encoder: bool) -> tuple[AgentRuntime, list[float]]:
    for name in ("assistant.toml", "interface.toml", "memory.jsonl"):
        shutil.copy(EXAMPLE / name, folder / name)
    agent = folder / "assistant.toml"
    if encoder:
        agent.write_text(agent.read_text().replace('threshold = "1/2"\n', 'threshold = "1/2"\nencoder = "minilm"\n'))
    runtime = AgentRuntime.open(
        agent, memory=folder / "memory.jsonl", store_url=f"sqlite:///{folder / 'rt.db'}", seed=0, turn_deadline_s=None
    )
    queries = list(FREE_TEXT.values())
    # A fresh user every 16 turns, in the example application with a share (recipes).
    samples = timed(turns, lambda n: runtime.turn(f"u{n // 16}", "recipes", "i", queries[n % len(queries)]))
    return runtime, samples


def kernel_turns(folder: Path, runtime: AgentRuntime, turns: int) -> list[float]:
    ledger_store = SQLiteLedgerStore(folder / "kernel.db")
    interface = runtime.interface
    memory = runtime.memory.store("u0")
    names = list(FREE_TEXT)
    sessions: dict[int, DurableSession] = {}

    def one(n: int) -> object:
        user = n // 16
        if user not in sessions:
            sessions[user] = DurableSession.open(
                interface, ledger_store, f"u{user}", "i", memory, SeededRandomSource(user), turn_deadline_s=None
            )
        return sessions[user].run_turn(names[n % len(names)])

    samples = timed(turns, one)
    ledger_store.close()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=160)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--minilm", action="store_true", help="also time the MiniLM router and tagger")
    args = parser.parse_args()
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            runtime, runtime_samples = runtime_turns(folder, args.turns, encoder=False)
            kernel_samples = kernel_turns(folder, runtime, args.turns)
            tags = slot_tags(runtime.interface, "food")
            tagger = runtime.memory._tag  # noqa: SLF001  # the trusted tagger the memory uses
            rows = {
                "DurableSession.run_turn (SQLite)": kernel_samples,
                "AgentRuntime.turn (echo, SQLite, 1 scope)": runtime_samples,
                "router (keywords)": timed(2000, lambda n, r=runtime.router: r.route(FREE_TEXT["budget-review"])),
                "tagger (rules)": timed(2000, lambda n, t=tagger: t("food", TEXT)),
            }
            runtime.close()
            for key, samples in rows.items():
                cell = summary(samples)
                best[key] = min(best.get(key, cell), cell)
    if args.minilm:
        with tempfile.TemporaryDirectory() as name:
            runtime, _ = runtime_turns(Path(name), 4, encoder=True)
            runtime.router.route("warm-up")
            best["router (MiniLM)"] = summary(timed(20, lambda n: runtime.router.route(f"what to eat {n}")))
            from dpmem_ref.runtime.similarity import MiniLMEmbedder
            from dpmem_ref.runtime.tagger import Tagger

            encoder_tagger = Tagger(embedder=MiniLMEmbedder())
            encoder_tagger.tag("warm-up", tags)
            best["tagger (MiniLM)"] = summary(timed(20, lambda n: encoder_tagger.tag(f"{TEXT} {n}", tags)))
            runtime.close()
    width = max(len(k) for k in best)
    print(f"{'per call':<{width}}  median ms    p95 ms   ({args.turns} turns, best of {args.repeats})")
    for key, (median, p95) in best.items():
        print(f"{key:<{width}}  {median:9.3f}  {p95:8.3f}")
    kernel = best["DurableSession.run_turn (SQLite)"][0]
    print(f"runtime / kernel median: {best['AgentRuntime.turn (echo, SQLite, 1 scope)'][0] / kernel:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
