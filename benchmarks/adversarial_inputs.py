"""Adversarial inputs to the `dpmem` command line, by class (issue 13.2, 13.3, 13.4).

Each input runs `dpmem` (or `python -m counterexamples`) in a subprocess; the script prints,
per class, how many inputs were tried, their exit codes, and the largest wall time and
peak memory (ru_maxrss) of any refused input (exit 2), and fails (exit 1) on any input
that printed a traceback, a multi-line error, a memory marker, or an unexpected exit code.

Classes:
- hygiene: malformed stores of every shape (wrong type at every store field, bad keys,
  huge and nested values, broken TOML next to the value) with a marker in the memory
  text, through check, audit, run (text and JSON) and counterexamples;
- bounds: special files (FIFO, /dev/zero, directory, /dev/stdin), oversized files, query
  files at and past the line limit, z3-heavy sensitivity proofs, deep nesting;
- tracebacks: coprime caps (ledger digits), huge keys and integers, non-UTF-8 names and
  contents, newlines and NULs in arguments, bad seeds, name-too-long and symlink loops;
- toml: the TOML pre-scan (issue 21): a 200 KB table header of 100,000 dotted parts (over
  60 s to parse before the pre-scan), dotted keys and inline-table keys, nesting past the
  depth limit, more keys than the limit; each run through `dpmem check` and `dpmem-eval run
  --config`, and the in-process pre-scan and parse time of each printed beside it.

Usage: python benchmarks/adversarial_inputs.py [--quick] [--only CLASS ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: the test suite's input generators live in tests/
from benchmarks.adversarial_cases import (  # noqa: E402  # the inputs of each class
    MARK,
    heavy_sensitivity,
    hygiene_cases,
    toml_cases,
    toml_timings,
)
from tests.hygiene.test_hygiene_bounds import coprime_caps  # noqa: E402  # the same coprime-caps inputs as the tests

FIGURE2 = (ROOT / "examples" / "figure2.toml").read_text()
CLASSES = ("hygiene", "bounds", "tracebacks", "toml")


@attrs.frozen
class Outcome:
    kind: str
    label: str
    code: int
    wall_s: float
    maxrss_kb: int
    problem: str


def run(argv: list[str | bytes], timeout: float = 180) -> tuple[int, bytes, bytes, float, int]:
    """Exit code, stdout, stderr, wall seconds and peak memory (KiB, via /usr/bin/time)."""
    if argv[:1] == ["-cx"]:
        module = ["-m", "counterexamples", *argv[1:]]
    elif argv[:1] == ["-eval"]:
        module = ["-m", "dpmem_eval", *argv[1:]]
    else:
        module = ["-m", "dpmem_ref.cli", *argv]
    with tempfile.NamedTemporaryFile("r") as rss:
        command = ["/usr/bin/time", "-q", "-o", rss.name, "-f", "%M", sys.executable, *module]
        started = time.perf_counter()
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, cwd=ROOT, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            return 124, expired.stdout or b"", expired.stderr or b"", time.perf_counter() - started, 0
        wall = time.perf_counter() - started
        lines = rss.read().split()
    return done.returncode, done.stdout, done.stderr, wall, int(lines[-1]) if lines and lines[-1].isdigit() else 0


def judge(kind: str, label: str, argv: list[str | bytes], allowed: set[int], expect: str = "") -> Outcome:
    code, out, err, wall, rss = run(argv)
    problem = ""
    text = err.decode("utf-8", "replace")
    if code not in allowed:
        problem = f"exit {code} not in {sorted(allowed)}"
    elif expect and expect not in text:
        problem = f"message without {expect!r}"
    elif b"Traceback" in err:
        problem = "traceback"
    elif code == 2 and len(text.strip().splitlines()) != 1:
        problem = f"{len(text.strip().splitlines())} stderr lines"
    elif MARK.encode() in out or MARK.encode() in err:
        problem = "memory marker in output"
    return Outcome(kind, label, code, wall, rss, problem + (f": {text.strip()[:160]}" if problem else ""))


def figure2_with(store_block: str) -> str:
    head = FIGURE2.split("[stores.M]")[0]
    # Dotted top-level keys must precede every table header; table blocks follow the head.
    return head + store_block if store_block.startswith("[") else store_block + head


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="skip the slowest inputs")
    parser.add_argument("--only", choices=CLASSES, action="append", help="run only this class (repeatable)")
    args = parser.parse_args(argv)
    classes = set(args.only or CLASSES)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        queries = folder / "q.txt"
        queries.write_text("affordable-dinner\ncheckup-reminder\n")

        def add(kind: str, label: str, argv: list[str | bytes], allowed: set[int], expect: str = "") -> None:
            outcomes.append(judge(kind, label, argv, allowed, expect))

        # ---- hygiene: every malformed store through every command
        if "hygiene" in classes:
            for index, (label, block) in enumerate(hygiene_cases()):
                path = folder / f"h{index}.toml"
                path.write_text(figure2_with(block), encoding="utf-8")
                p = str(path)
                for command in (
                    ["check", p],
                    ["check", p, "--json"],
                    ["audit", p, "--store-a", "M", "--store-b", "M", "--horizon", "1", "--json"],
                    ["run", p, "--store", "M", "--queries", str(queries), "--no-release-deadline"],
                    ["run", p, "--store", "M", "--queries", str(queries), "--json", "--no-release-deadline"],
                ):
                    # Some shapes are valid (multi-line or 200 KB texts): any exit, but no marker.
                    add("hygiene", f"{label} / {command[0]}", list(command), {0, 1, 2})
            add("hygiene", "counterexamples --json", ["-cx", "--json"], {0})

        # ---- bounds
        if "bounds" in classes:
            fifo = folder / "fifo"
            os.mkfifo(fifo)
            fig = folder / "figure2.toml"
            fig.write_text(FIGURE2)
            big = folder / "big.toml"
            with big.open("wb") as handle:
                handle.truncate(1_048_577)
            for label, path in (
                ("/dev/zero", "/dev/zero"),
                ("FIFO", str(fifo)),
                ("directory", str(folder)),
                ("/dev/stdin", "/dev/stdin"),
                ("1 MiB + 1 sparse file", str(big)),
            ):
                add("bounds", f"check {label}", ["check", path], {2})
                add("bounds", f"audit {label}", ["audit", path, "--store-a", "M", "--store-b", "M", "--horizon", "1"], {2})
                add("bounds", f"run config {label}", ["run", path, "--store", "M", "--queries", str(queries)], {2})
                add("bounds", f"run --queries {label}", ["run", str(fig), "--store", "M", "--queries", path], {2})
            big_queries = folder / "big-queries.txt"
            with big_queries.open("wb") as handle:
                handle.truncate(8_388_609)
            add("bounds", "queries 8 MiB + 1", ["run", str(fig), "--store", "M", "--queries", str(big_queries)], {2})
            over = folder / "over.txt"
            over.write_text("affordable-dinner\n" * 100_001)
            add("bounds", "queries 100,001 lines", ["run", str(fig), "--store", "M", "--queries", str(over)], {2})
            unknown = folder / "unknown.txt"
            unknown.write_text("affordable-dinner\n" * 99_999 + "no-such-query\n")
            add(
                "bounds",
                "99,999 lines then an unknown query",
                ["run", str(fig), "--store", "M", "--queries", str(unknown)],
                {2},
            )
            if not args.quick:
                at_limit = folder / "limit.txt"
                at_limit.write_text("affordable-dinner\n" * 100_000)
                add(
                    "bounds",
                    "queries 100,000 lines (accepted)",
                    ["run", str(fig), "--store", "M", "--queries", str(at_limit), "--no-release-deadline", "--seed", "0"],
                    {0},
                )
            nested = folder / "nested.toml"
            nested.write_text("a = " + "[" * 200_000 + "]" * 200_000 + "\n")
            add("bounds", "nesting 200,000 deep", ["check", str(nested)], {2})
            long_line = folder / "long.toml"
            long_line.write_text('name = "' + "x" * 1_000_000 + '"\n')
            add("bounds", "1 MB string", ["check", str(long_line)], {2})
            for shape in (
                (1, 1, 120, "3/5"),
                (1, 1, 120, "1/2"),
                (1, 2, 500, "1/2"),
                (3, 2, 1000, "1/2"),
                (20, 10, 200, "1/2"),
                (100, 2, 200, "3/5"),
                (1, 255, 16, "1/2"),
                (40, 20, 40, "1/2"),
            ):
                path = folder / f"z3-{'-'.join(map(str, shape)).replace('/', '_')}.toml"
                path.write_text(heavy_sensitivity(*shape))  # type: ignore[arg-type]
                add("bounds", f"z3 {shape} ({path.stat().st_size} bytes)", ["check", str(path)], {0, 1, 2})
            many_queries = folder / "many-queries.toml"
            many_queries.write_text(
                FIGURE2
                + "".join(
                    f'[[queries]]\nname = "extra{i}"\n[[queries.reads]]\nslot = "food"\npositions = [2]\n'
                    for i in range(10_001)
                )
            )
            add("bounds", "10,001 declared queries", ["check", str(many_queries)], {2})

        # ---- tracebacks
        if "tracebacks" in classes:
            for attributes in (5, 6, 25):
                path = folder / f"caps{attributes}.toml"
                path.write_text(coprime_caps(attributes))
                allowed = {0} if attributes == 5 else {2}
                one_q = folder / "one-q.txt"
                one_q.write_text("q\n" * 50)
                add("tracebacks", f"coprime caps x{attributes} check", ["check", str(path)], allowed)
                add(
                    "tracebacks",
                    f"coprime caps x{attributes} run",
                    ["run", str(path), "--store", "M", "--queries", str(one_q), "--no-release-deadline"],
                    allowed,
                )
            for label, text in (
                ("4000-digit integer cap", FIGURE2.replace("cap = 2\n", f"cap = {'9' * 4000}\n", 1)),
                ("5000-digit integer cap", FIGURE2.replace("cap = 2\n", f"cap = {'9' * 5000}\n", 1)),
                ("5000-digit K", FIGURE2.replace("K = 3", f"K = {'9' * 5000}")),
                ("4000-digit K", FIGURE2.replace("K = 3", f"K = {'9' * 4000}")),
                ("5000-digit group position", FIGURE2.replace("group = [1, 2, 3]", f"group = [{'9' * 5000}]")),
                ("huge float cap", FIGURE2.replace("cap = 2\n", "cap = 1e308\n", 1)),
                ("nan cap", FIGURE2.replace("cap = 2\n", "cap = nan\n", 1)),
                ("5000-char attribute name", FIGURE2.replace("[attributes.diabetes]", f"[attributes.{'d' * 5000}]")),
                ("UTF-8 BOM", "\ufeff" + FIGURE2),
                ("non-UTF-8 content", None),
            ):
                path = folder / f"t-{label.replace(' ', '-')}.toml"
                if text is None:
                    path.write_bytes(FIGURE2.encode() + b"\n# \xff\xfe\n")
                else:
                    path.write_text(text)
                add("tracebacks", f"{label} check", ["check", str(path)], {0, 1, 2})
                add("tracebacks", f"{label} run", ["run", str(path), "--store", "M", "--queries", str(queries)], {0, 1, 2})
            odd = os.fsencode(str(folder)) + b"/bad\xff\xfe.toml"
            with open(odd, "wb") as handle:
                handle.write(FIGURE2.encode())
            add("tracebacks", "non-UTF-8 file name (exists)", ["check", odd], {0})
            add(
                "tracebacks",
                "non-UTF-8 file name (run)",
                ["run", odd, "--store", "M", "--queries", str(queries), "--no-release-deadline"],
                {0},
            )
            add("tracebacks", "non-UTF-8 file name (absent)", ["check", odd + b"x"], {2})
            add(
                "tracebacks", "non-UTF-8 store name", ["run", str(fig), "--store", b"M\xff", "--queries", str(queries)], {2}
            )
            add("tracebacks", "newline in unknown argument", ["run", str(fig), f"--bogus=a\nb{MARK}"], {2})
            add("tracebacks", "newline in command", ["x\ny"], {2})
            add("tracebacks", "newline in store name", ["run", str(fig), "--store", "M\nX", "--queries", str(queries)], {2})
            add("tracebacks", "no arguments", [], {2})
            add(
                "tracebacks",
                "seed 10^5000",
                ["run", str(fig), "--store", "M", "--queries", str(queries), "--seed", "9" * 5000],
                {0, 2},
            )
            add(
                "tracebacks",
                "seed -1",
                ["run", str(fig), "--store", "M", "--queries", str(queries), "--seed", "-1"],
                {0, 2},
            )
            add("tracebacks", "seed x", ["run", str(fig), "--store", "M", "--queries", str(queries), "--seed", "x"], {2})
            add(
                "tracebacks",
                "deadline nan",
                ["run", str(fig), "--store", "M", "--queries", str(queries), "--release-deadline-ms", "nan"],
                {2},
            )
            add(
                "tracebacks",
                "horizon 10^30",
                ["audit", str(fig), "--store-a", "M", "--store-b", "M", "--horizon", "1" + "0" * 30],
                {2},
            )
            add("tracebacks", "name too long", ["check", "x" * 5000], {2})
            loop = folder / "loop"
            os.symlink(loop, loop)
            add("tracebacks", "symlink loop", ["check", str(loop)], {2})
            add("tracebacks", "queries symlink loop", ["run", str(fig), "--store", "M", "--queries", str(loop)], {2})
            bad_q = folder / "bad-q.txt"
            bad_q.write_bytes(b"affordable-dinner\n\xff\n")
            add("tracebacks", "non-UTF-8 queries", ["run", str(fig), "--store", "M", "--queries", str(bad_q)], {2})

        # ---- toml: the pre-scan refuses before parsing (issue 21, class 8)
        if "toml" in classes:
            toml_inputs = toml_cases()
            for index, (label, text) in enumerate(toml_inputs):
                path = folder / f"toml{index}.toml"
                path.write_text(text)
                add("toml", f"check: {label}", ["check", str(path)], {2}, "expected TOML within the documented limits")
                add(
                    "toml",
                    f"dpmem-eval --config: {label}",
                    ["-eval", "run", "--config", str(path), "--out", str(folder / "eval-out")],
                    {2},
                    "expected TOML within the documented limits",
                )

    failures = [o for o in outcomes if o.problem]
    print(f"python {sys.version.split()[0]}; {len(outcomes)} inputs")
    for kind in CLASSES:
        if kind not in classes:
            continue
        chosen = [o for o in outcomes if o.kind == kind]
        refused = [o for o in chosen if o.code == 2]
        codes = Counter(o.code for o in chosen)
        slowest = max(refused, key=lambda o: o.wall_s, default=None)
        print(f"\n== {kind}: {len(chosen)} inputs; exit codes {dict(sorted(codes.items()))}")
        if slowest is not None:
            print(f"   slowest refused: {slowest.wall_s:.2f} s ({slowest.label})")
            biggest = max(refused, key=lambda o: o.maxrss_kb)
            print(f"   largest peak memory of a refused input: {biggest.maxrss_kb / 1024:.0f} MiB ({biggest.label})")
        slowest_all = max(chosen, key=lambda o: o.wall_s)
        print(f"   slowest of all: {slowest_all.wall_s:.2f} s ({slowest_all.label}, exit {slowest_all.code})")
    if "toml" in classes:
        print("\n== toml pre-scan, in process")
        for line in toml_timings(toml_cases()):
            print(line)
    for failure in failures:
        print(f"FAIL [{failure.kind}] {failure.label}: {failure.problem}")
    print(f"\n{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
