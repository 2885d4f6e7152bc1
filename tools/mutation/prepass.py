#!/usr/bin/env python3
"""A cheap first pass over the mutants mutmut holds no verdict for, before its own run.

Over ledger/ and serve/ mutmut is slow: per mutant it runs every test that reaches the mutated
function (its stats, plus the edges of tools/mutation/subprocess_reach.py), and a function of a
ledger store or of the server is reached by hundreds of tests that start PostgreSQL or `dpmem
serve`. A killed mutant stops at its first failing test (cheapest file first: conftest.py), but a
worker still starts on the slowest mutants last, and the round-4 run went at 2-3 mutants a minute.

Here each pending mutant (`run PATTERN...`) runs, under the same pytest options as mutmut's
workers (`[tool.mutmut] pytest_add_cli_args`, in `mutants/`, with `MUTANT_UNDER_TEST` naming it),
only the cheapest of the tests mutmut maps to its function, by mutmut's recorded durations, up to
`--budget-s` seconds of them, stopping at the first failure. A failure is a kill only when it is
confirmed: the failing test, run again without any mutant, passes (so a flaky test or a test
broken on its own is never a kill); or, when the tests cannot even be collected under the mutant
(a test module that calls the mutated function as it is imported), the same tests collect without
it; or, when the tests ran past their time-out (tests that hang under the mutant: mutmut books a
time-out as a kill), the same tests pass without it. Anything else (every selected test passed, an
error of pytest itself) gives no verdict: mutmut tests the mutant with every test that reaches it.
So a verdict here is what mutmut would find with a subset of its own tests: a kill by a test of the
suite, never a survivor.

The tests that killed other mutants of the same function (in this pass or an earlier one) run
first, on their own: most mutants of a function fail the same test, and one test module is
collected far faster than the dozens the cheapest tests come from. Mutants left when
`--deadline-s` passes are not tried (the last line counts them). A mutant tried without a verdict
is recorded in `mutants/prepass-tried.json` with a digest of its function's code (mutmut's hash)
and the tests run, and is not tried again until one of them changes.

The verdicts go to `mutants/prepass.json` (name -> the failing test), not into mutmut's `.meta`
files: a running mutmut rewrites a whole `.meta` file from its own copy at each result. `apply`
writes them into the `.meta` files as kills (exit code 1) where mutmut holds no verdict, when no
mutmut runs (tools/mutation/run.sh does, before its mutmut run; results.py `save` keeps them).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report  # noqa: E402  (tools/mutation/report.py: where the judgements are kept)
import subprocess_reach  # noqa: E402  (tools/mutation/subprocess_reach.py: where its edges are kept)

import results  # noqa: E402  (tools/mutation/results.py: mutmut's cache, read one way)

ROOT = Path(__file__).resolve().parents[2]
MUTANTS = ROOT / "mutants"
VERDICTS = "prepass.json"
TRIED = "prepass-tried.json"  # mutants tried without a verdict: name -> digest of its function and tests
KILLED = 1  # pytest's exit code when a test failed: mutmut books it as killed
NOT_COLLECTED = (2, 4)  # pytest's exit codes for errors during collection / tests it found no collector for
TIMEOUT_S = 60.0  # seconds a run may take beyond 10 times its tests' recorded durations
HINTS = 2  # tests that killed a sibling mutant, tried first
NOT_TRIED = "not tried: the deadline passed"  # a mutant left after the deadline: neither a kill nor a survivor


def cheapest_tests(
    tests: Iterable[str], durations: Mapping[str, float], budget_s: float, through_a_child: Iterable[str] = ()
) -> list[str]:
    """The cheapest `tests` (by their recorded duration) whose durations add up to at most
    `budget_s`; at least the cheapest one. Tests without a recorded duration are left out (mutmut
    has no stats of them: it collects them again at its next run). Tests that reach the function
    only `through_a_child` process (tools/mutation/subprocess_reach.py's edges) come after the
    others: their recorded durations leave out the module set-up that starts the child (a live
    server), so they look free and are the dearest."""
    later = set(through_a_child)
    timed = sorted((t in later, durations[t], t) for t in tests if t in durations)
    chosen: list[str] = []
    spent = 0.0
    for _, duration, test in timed:
        if chosen and spent + duration > budget_s:
            break
        chosen.append(test)
        spent += duration
    return chosen


def _failed_test(output: str, tests: list[str]) -> str | None:
    """The test of `tests` named by the first FAILED/ERROR line of pytest's short summary (`-rfE`:
    "FAILED node-id - message"; the longest id that starts the line, as an id may hold " - ").
    A line that names none of them is passed over: a failure's captured log shows records as
    "ERROR    logger:file:line message", ahead of the summary."""
    for line in output.splitlines():
        for prefix in ("FAILED ", "ERROR "):
            if line.startswith(prefix):
                named = [t for t in tests if line[len(prefix) :] == t or line[len(prefix) :].startswith(t + " - ")]
                if named:
                    return max(named, key=len)
    return None


Runner = Callable[[list[str], list[str], "str | None", float], "tuple[int | None, str]"]
"""(pytest options, tests, the mutant or None, time-out in seconds) -> (pytest's exit code or None
at a time-out, its output)."""


def _environment() -> dict[str, str]:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "ci", "DPMEM_MUTATION_RUN": "1", "DPMEM_MUTMUT": "1"}
    env.pop("PYTHONPATH", None)
    env.pop("MUTANT_UNDER_TEST", None)
    return env


def _pytest(
    mutants: Path, args: list[str], tests: list[str], mutant: str | None, timeout_s: float
) -> tuple[int | None, str]:
    env = _environment()
    if mutant is not None:
        env["MUTANT_UNDER_TEST"] = mutant
    command = [sys.executable, "-m", "pytest", *args, "-p", "no:randomly", "-rfE", *tests]
    try:
        done = subprocess.run(command, cwd=mutants, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stdout + done.stderr


class ForkServer:
    """A process in `mutants/` that imported pytest, its plugins, the conftest files and the test
    modules of `warm` once (a collection without any mutant, as mutmut's own run imports the suite
    before it forks a worker per mutant); each pytest run is then a fork of it, with the mutant
    named in its environment (mutmut's trampolines read it at every call). A run so pays for its
    tests, not for a Python start and those imports: about 1.2 s of the 1.4 s a one-test run takes
    as a fresh process here. The test modules under tests/ (not the conftest files) are dropped
    after the warm-up and imported again by each child, under its mutant, as a fresh process
    would. A module of the code under test that calls the mutated function as it is imported was
    imported without the mutant, so such a mutant is not caught here (never a wrong kill: mutmut
    tests it). A child still running at its time-out is killed with its process group."""

    def __init__(self, mutants: Path, args: list[str], warm: list[str]) -> None:
        self._process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "serve"],
            cwd=mutants,
            env=_environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._ask({"args": [*args, "--collect-only", "-p", "no:randomly"], "tests": warm, "fork": False})

    def _ask(self, request: dict[str, Any]) -> tuple[int | None, str]:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"mutation prepass: the fork server exited ({self._process.wait()})")
        reply = json.loads(line)
        return reply["code"], reply["output"]

    def __call__(
        self, args: list[str], tests: list[str], mutant: str | None, timeout_s: float
    ) -> tuple[int | None, str]:
        return self._ask(
            {
                "args": [*args, "-p", "no:randomly", "-rfE"],
                "tests": tests,
                "mutant": mutant,
                "timeout_s": timeout_s,
                "fork": True,
            }
        )

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=60)


def serve() -> int:
    """The fork server's side (`prepass.py serve`, started by ForkServer): one JSON request a line on
    stdin, one JSON reply a line on the stdout it was started with (pytest's own output, of the
    warm-up and of each child, never goes there)."""
    import pytest

    sys.path[0] = os.getcwd()  # as `python -m pytest` started in mutants/: its copy comes first
    replies = os.fdopen(os.dup(1), "w")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    for line in sys.stdin:
        request = json.loads(line)
        command = [*request["args"], *request["tests"]]
        if not request["fork"]:
            code: int | None = int(pytest.main(command)) if request["tests"] else 0  # the imports stay here
            output = ""
            # ...except the test modules themselves: each child imports them again (from their
            # cached bytecode, the modules they import being here), so a test module that calls
            # the mutated function as it is imported still fails to collect under the mutant.
            tests = Path.cwd() / "tests"
            for module_name, module in list(sys.modules.items()):
                origin = Path(getattr(module, "__file__", None) or "/")
                if origin.is_relative_to(tests) and origin.name != "conftest.py":
                    del sys.modules[module_name]
        else:
            with tempfile.TemporaryFile() as out:
                code = _forked(pytest.main, command, request["mutant"], request["timeout_s"], out.fileno())
                out.seek(0)
                output = out.read().decode(errors="replace")
        replies.write(json.dumps({"code": code, "output": output}) + "\n")
        replies.flush()
    return 0


def _forked(
    main: Callable[[list[str]], Any], command: list[str], mutant: str | None, timeout_s: float, out: int
) -> int | None:
    """`main(command)` in a forked child writing to `out`, with `mutant` (or none) named in its
    environment; its exit code, or None when it ran past `timeout_s` (then killed)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 3  # pytest's "internal error" if main itself raises
        try:
            os.setpgid(0, 0)
            os.dup2(out, 1)
            os.dup2(out, 2)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115  # whatever sys.stdout was (a capture), fd 1 now
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            if mutant is None:
                os.environ.pop("MUTANT_UNDER_TEST", None)
            else:
                os.environ["MUTANT_UNDER_TEST"] = mutant
            code = int(main(command))
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also here: a time-out right after the fork still finds the group
    stop = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > stop:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.01)


def _attempt(
    runner: Runner, args: list[str], name: str, tests: list[str], timeout_s: float, passing: set[str] | None
) -> str | None:
    """The failing test of `tests` that kills `name` (confirmed: it passes without any mutant), else
    None. `passing` holds the tests confirmed in this pass (a test's outcome without a mutant is the
    same for every mutant: each is run clean once)."""
    code, output = runner(args, tests, name, timeout_s)
    if code is None:
        # Past the time-out (tests that take `budget_s` recorded seconds, given several times
        # that and a minute): the mutant made them hang (a blocking open, an endless loop), a kill
        # as mutmut books it, when the same tests pass without any mutant in that time.
        clean, _ = runner(args, tests, None, timeout_s)
        return f"time-out of {tests[0]}" if clean == 0 else None
    if code in NOT_COLLECTED:
        # A test module that calls the mutated function when it is imported cannot be collected
        # under the mutant: a kill when the same tests collect without any mutant.
        clean, _ = runner([*args, "--collect-only"], tests, None, timeout_s)
        return f"collection of {tests[0].split('::')[0]}" if clean == 0 else None
    if code != KILLED:
        return None
    failed = _failed_test(output, tests)
    if failed is None:
        return None
    if passing is not None and failed in passing:
        return failed
    clean, _ = runner(args, [failed], None, timeout_s)
    if clean != 0:
        return None
    if passing is not None:
        passing.add(failed)
    return failed


def test_one(
    runner: Runner,
    args: list[str],
    name: str,
    tests: list[str],
    budget_s: float,
    passing: set[str] | None = None,
    first: Iterable[str] = (),
) -> str | None:
    """The failing test of `first` or `tests` that kills `name` (confirmed: it passes without any
    mutant), else None. The tests of `first` (those that killed other mutants of the same
    function, and the run's `--hint` tests; the caller keeps only tests that reach the function,
    cheap or not) run on their own before the rest: a mutant tends to fail the test its siblings
    failed, and a run of one or two test modules is collected in a fraction of the time of the
    cheapest tests' dozens, which mostly pass."""
    timeout_s = TIMEOUT_S + 10 * budget_s
    leading = list(dict.fromkeys(first))
    for group in (leading, [t for t in tests if t not in leading]):
        if group and (failed := _attempt(runner, args, name, group, timeout_s, passing)) is not None:
            return failed
    return None


def _function_hashes(mutants: Path) -> dict[str, str]:
    """mutmut's hash of each mutated function's source (it regenerates a function's mutants, and
    drops their verdicts, when it changes), by the function's mangled name."""
    hashes: dict[str, str] = {}
    for meta_path, meta in results._metas(mutants):  # noqa: SLF001  # the sibling tool's reader of mutmut's cache
        module = meta_path.relative_to(mutants).as_posix().removesuffix(".py.meta").replace("/", ".")
        for function, digest in meta.get("hash_by_function_name", {}).items():
            hashes[f"{module}.{function}"] = str(digest)
    return hashes


def _digest(function_hash: str, tests: list[str]) -> str:
    """What a pre-pass verdict depends on: the mutated function's code and the tests run (the
    Hypothesis ci profile is derandomized). A mutant tried without a verdict is tried again only
    when either changed: a new test that reaches its function, another budget, edited code."""
    return hashlib.sha256("\n".join([function_hash, *tests]).encode()).hexdigest()[:16]


def _write(path: Path, data: dict[str, str]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")
    temporary.replace(path)


def run(
    mutants: Path,
    patterns: list[str],
    budget_s: float,
    jobs: int,
    deadline_s: float,
    fork: bool = False,
    hints: Iterable[str] = (),
    judged: Collection[str] = (),
) -> tuple[int, int]:
    """Test the pending mutants matching `patterns`; (kills found, mutants tried). `fork`: each job's
    pytest runs are forks of a ForkServer that imported their test modules once. `hints`: tests run
    first, on their own, for each mutant whose function they reach (mutmut's stats and the child-
    process edges), whatever their recorded duration: a test written to kill a survivor. `judged`:
    mutants judged equivalent, not tried: what they need is mutmut's "survived" with every test
    that reaches them, which a pass that can only kill never gives (tried, each ran every hint and
    its cheapest tests for nothing; a judgement a test contradicts shows in mutmut's run)."""
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    reach, durations = stats["tests_by_mangled_function_name"], stats["duration_by_test"]
    args = list(tomllib.loads((mutants / "pyproject.toml").read_text())["tool"]["mutmut"]["pytest_add_cli_args"])
    store = mutants / VERDICTS
    verdicts: dict[str, str] = json.loads(store.read_text()) if store.exists() else {}
    tried_store = mutants / TRIED
    tried_before: dict[str, str] = json.loads(tried_store.read_text()) if tried_store.exists() else {}
    hashes = _function_hashes(mutants)
    edges = mutants / subprocess_reach.EDGES
    through_a_child: dict[str, list[str]] = json.loads(edges.read_text()) if edges.exists() else {}
    todo = []
    digests: dict[str, str] = {}
    skipped = 0
    judged_here = 0
    hints = list(dict.fromkeys(hints))
    reaching: dict[str, frozenset[str]] = {}  # function -> every test mapped to it, cheap or not
    for name in results.pending(patterns, mutants):
        if name in verdicts:
            continue
        if name in judged:
            judged_here += 1
            continue
        function = name.partition("__mutmut_")[0]
        if function not in reaching:
            reaching[function] = frozenset(reach.get(function, ()))
        tests = cheapest_tests(reach.get(function, ()), durations, budget_s, through_a_child.get(function, ()))
        hinted = [t for t in hints if t in reaching[function]]
        digests[name] = _digest(hashes.get(function, ""), [*(t for t in hinted if t not in tests), *tests])
        if tried_before.get(name) == digests[name]:
            skipped += 1
        elif tests or hinted:
            todo.append((name, tests, hinted))
    if skipped:
        print(f"prepass: {skipped} mutants skipped: tried before on the same code and tests, no verdict", flush=True)
    if judged_here:
        print(
            f"prepass: {judged_here} mutants skipped: judged equivalent (mutmut's run gives their verdict)", flush=True
        )
    stop = time.monotonic() + deadline_s
    tried = 0
    passing: set[str] = set()  # shared by the threads: set.add is atomic under the GIL
    # function -> the tests that killed its mutants, this pass's latest kill first (read and
    # extended by the threads: a lost update costs a hint, never a verdict)
    killers: dict[str, list[str]] = {}
    for name, test in sorted(verdicts.items()):
        if "::" in test:
            killers.setdefault(name.partition("__mutmut_")[0], []).insert(0, test)

    runners: queue.SimpleQueue[Runner] = queue.SimpleQueue()  # one per job, each used by one thread at a time
    servers: list[ForkServer] = []
    if fork and todo:
        warm = sorted({test.split("::")[0] for _, tests, hinted in todo for test in (*hinted, *tests)})
        servers = [ForkServer(mutants, args, warm) for _ in range(jobs)]
        for server in servers:
            runners.put(server)
    else:
        for _ in range(jobs):
            runners.put(lambda args_, tests, mutant, timeout_s: _pytest(mutants, args_, tests, mutant, timeout_s))

    def one(item: tuple[str, list[str], list[str]]) -> tuple[str, str | None]:
        name, tests, hinted = item
        if time.monotonic() > stop:
            return name, NOT_TRIED
        function = name.partition("__mutmut_")[0]
        runner = runners.get()
        try:
            first = [t for t in killers.get(function, []) if t in reaching[function]][:HINTS] + hinted
            failed = test_one(runner, args, name, tests, budget_s, passing, first=first)
        finally:
            runners.put(runner)
        if failed is not None and "::" in failed:
            killers[function] = [failed, *(t for t in killers.get(function, []) if t != failed)]
        return name, failed

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for name, failed in pool.map(one, todo):
                if failed == NOT_TRIED:
                    continue
                tried += 1
                if failed is not None:
                    verdicts[name] = failed
                    _write(store, verdicts)  # whole or not at all: an interrupted pass keeps its kills
                else:
                    tried_before[name] = digests[name]
                    if tried % 25 == 0:
                        _write(tried_store, tried_before)
                print(
                    f"prepass {tried}/{len(todo)}: {name}: {'killed by ' + failed if failed else 'no verdict'}",
                    flush=True,
                )
    finally:
        _write(tried_store, tried_before)
        for server in servers:
            server.close()
    if tried < len(todo):
        print(f"prepass: deadline reached, {len(todo) - tried} mutants not tried", flush=True)
    return sum(1 for name, _, _ in todo if name in verdicts), tried


def apply(mutants: Path) -> int:
    """Write the pre-pass kills into mutmut's `.meta` files where mutmut holds no verdict (run
    only when no mutmut runs); the number written."""
    store = mutants / VERDICTS
    verdicts: dict[str, Any] = json.loads(store.read_text()) if store.exists() else {}
    written = 0
    for meta_path, meta in results._metas(mutants):  # noqa: SLF001  # the sibling tool's reader of mutmut's cache
        codes = meta["exit_code_by_key"]
        fresh = [n for n in codes if codes[n] is None and n in verdicts]
        if not fresh:
            continue
        for name in fresh:
            codes[name] = KILLED
        temporary = meta_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(meta, indent=4))
        temporary.replace(meta_path)
        written += len(fresh)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ran = sub.add_parser("run", help="test the pending mutants matching the patterns on their cheapest tests")
    ran.add_argument("patterns", nargs="+", help="mutant-name patterns, e.g. 'dpmem_ref.ledger.*'")
    ran.add_argument("--budget-s", type=float, default=10.0, help="recorded seconds of tests per mutant (10)")
    ran.add_argument("--jobs", type=int, default=1, help="mutants at once (1)")
    ran.add_argument("--deadline-s", type=float, default=3600.0, help="start no mutant after this (3600)")
    ran.add_argument(
        "--hint",
        action="append",
        default=[],
        metavar="TEST",
        help="a test id run first for each mutant whose function it reaches, cheap or not (repeatable)",
    )
    ran.add_argument(
        "--no-fork", dest="fork", action="store_false", help="a fresh pytest process per run, not a fork of a warm one"
    )
    sub.add_parser("serve", help="(internal) the fork server's side, started by `run`")
    sub.add_parser("apply", help="write the kills into mutmut's .meta files (no mutmut running)")
    options = parser.parse_args()
    if options.command == "run":
        judged = report.judgements()
        killed, tried = run(
            MUTANTS,
            options.patterns,
            options.budget_s,
            options.jobs,
            options.deadline_s,
            options.fork,
            options.hint,
            judged,
        )
        print(f"mutation prepass: {killed} killed of {tried} tried")
    elif options.command == "serve":
        return serve()
    else:
        print(f"mutation prepass: {apply(MUTANTS)} kills written into mutants/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
