"""Bounded work and no tracebacks on every input: special and oversized
files, query-line limits, coprime caps (exact-ledger digit bound), huge keys, undecodable
names, newlines in arguments, the z3 budget, and linear `dpmem run`."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmem_ref.audit.sensitivity import prove_linear_sensitivity
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import (
    MAX_CONFIG_BYTES,
    MAX_LEDGER_DIGITS,
    MAX_QUERIES_BYTES,
    MAX_QUERY_LINES,
    digits,
    ledger_digit_bound,
    read_bounded,
)
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn import run_interaction
from tests.kernel_fixtures import run_cli

ROOT = Path(__file__).resolve().parents[2]
FIGURE2 = ROOT / "examples" / "figure2.toml"
PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97)


def assert_refused(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpmem: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture
def queries(tmp_path: Path) -> Path:
    path = tmp_path / "q.txt"
    path.write_text("affordable-dinner\ncheckup-reminder\n")
    return path


def special_files(tmp_path: Path) -> list[tuple[str, str]]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    found = [("FIFO", str(fifo)), ("directory", str(tmp_path))]
    for device in ("/dev/zero", "/dev/null", "/dev/urandom"):
        if os.path.exists(device) and stat.S_ISCHR(os.stat(device).st_mode):
            found.append(("character device", device))
    return found


def test_special_files_are_refused_before_reading(tmp_path: Path, queries: Path) -> None:
    for kind, path in special_files(tmp_path):
        code, _, err = run_cli(["check", path])
        assert_refused(code, err, "file: expected a regular TOML file", kind)
        code, _, err = run_cli(["audit", path, "--store-a", "M", "--store-b", "M", "--horizon", "1"])
        assert_refused(code, err, kind)
        code, _, err = run_cli(["run", str(FIGURE2), "--store", "M", "--queries", path])
        assert_refused(code, err, "--queries: expected a regular file of query names", kind)


def test_oversized_files_are_refused_by_size(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with big.open("wb") as handle:
        handle.truncate(MAX_CONFIG_BYTES + 1)  # sparse: refused by its size, never read
    code, _, err = run_cli(["check", str(big)])
    assert_refused(code, err, f"at most {MAX_CONFIG_BYTES} bytes", f"{MAX_CONFIG_BYTES + 1} bytes")
    big_queries = tmp_path / "big.txt"
    with big_queries.open("wb") as handle:
        handle.truncate(MAX_QUERIES_BYTES + 1)
    code, _, err = run_cli(["run", str(FIGURE2), "--store", "M", "--queries", str(big_queries)])
    assert_refused(code, err, "--queries", f"at most {MAX_QUERIES_BYTES} bytes")
    at_limit = tmp_path / "exact.bin"
    at_limit.write_bytes(b"#" * 100)
    assert read_bounded(at_limit, 100, "f") == b"#" * 100
    with pytest.raises(InputError, match="at most 99 bytes"):
        read_bounded(at_limit, 99, "f")


def test_query_line_limit(tmp_path: Path) -> None:
    over = tmp_path / "over.txt"
    over.write_text("affordable-dinner\n" * (MAX_QUERY_LINES + 1))
    code, _, err = run_cli(["run", str(FIGURE2), "--store", "M", "--queries", str(over)])
    assert_refused(code, err, f"at most {MAX_QUERY_LINES} queries")


def test_run_without_history_matches_the_kernel(tmp_path: Path) -> None:
    """`dpmem run` drops the history when nothing reads it (linear time); the transcript
    and ledgers must equal the kernel's run with the full history."""
    names = ["affordable-dinner", "checkup-reminder", "affordable-dinner"] * 7
    path = tmp_path / "q.txt"
    path.write_text("\n".join(names) + "\n")
    code, out, err = run_cli(
        ["run", str(FIGURE2), "--store", "M", "--queries", str(path), "--seed", "4", "--json", "--no-release-deadline"]
    )
    assert code == 0, err
    turns = json.loads(out)["turns"]
    loaded = load_interface_file(FIGURE2)
    state = run_interaction(loaded.interface, names, loaded.store("M"), SeededRandomSource(4))
    assert len(state.history) == len(turns) == len(names)
    for record, turn in zip(state.history, turns, strict=True):
        assert [view for _, view in record.views] == [slot["view"] for slot in turn["slots"]]
    final = {a: Fraction(v) for a, v in turns[-1]["ledgers"].items()}
    assert final == dict(state.ledger_map(loaded.interface))


def coprime_caps(attributes: int) -> str:
    lines = ['positions = ["s"]']
    for index in range(attributes):
        prime, power = PRIMES[index], 1
        while len(str(prime ** (power + 1))) < 190:
            power += 1
        lines.append(f'[attributes.a{index}]\ngroup = [1]\ncap = "1/{prime**power}"')
    lines.append('[budget]\nrule = "online"\nK = 3\n[slots.s]\ngeneric = "g"\n[slots.s.views.g]\n[slots.s.views.x]')
    lines.append('compatible = ["t"]\nspecific = ["t"]\n[[queries]]\nname = "q"\n[[queries.reads]]\nslot = "s"')
    lines.append('positions = [1]\n[stores.M]\n1 = ["t"]')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("attributes", [6, 12, 25])
def test_coprime_caps_are_refused_statically(tmp_path: Path, attributes: int) -> None:
    path = tmp_path / "caps.toml"
    path.write_text(coprime_caps(attributes))
    q = tmp_path / "q.txt"
    q.write_text("q\n" * 30)
    for argv in (
        ["check", str(path)],
        ["check", str(path), "--json"],
        ["audit", str(path), "--store-a", "M", "--store-b", "M", "--horizon", "2"],
        ["run", str(path), "--store", "M", "--queries", str(q), "--no-release-deadline"],
    ):
        code, _, err = run_cli(argv)
        assert_refused(code, err, f"need at most {MAX_LEDGER_DIGITS} digits")


def test_a_durable_session_refuses_coprime_caps_built_in_code() -> None:
    """The same static bound for an interface that never went through a file: a durable
    interaction accumulates charges for up to MAX_TURNS_PER_INTERACTION turns."""
    import attrs

    from dpmem_ref import Attribute, Policy, SeededRandomSource
    from dpmem_ref.config.load import interface_from_dict
    from dpmem_ref.ledger import MemoryLedgerStore
    from dpmem_ref.turn.durable import DurableSession

    small = tomllib.loads(coprime_caps(1))
    loaded = interface_from_dict(small, "caps.toml")
    policy = loaded.interface.policy
    attributes = tuple(
        Attribute(name=f"a{i}", group=frozenset({1}), cap=Fraction(1, PRIMES[i] ** 80)) for i in range(12)
    )
    interface = attrs.evolve(loaded.interface, policy=Policy(layout=policy.layout, attributes=attributes))
    with pytest.raises(InputError, match=f"need at most {MAX_LEDGER_DIGITS} digits"):
        DurableSession.open(interface, MemoryLedgerStore(), "u", "i", loaded.store("M"), SeededRandomSource(0))
    # Within the bound it opens.
    DurableSession.open(loaded.interface, MemoryLedgerStore(), "u", "i", loaded.store("M"), SeededRandomSource(0))


def test_coprime_caps_within_the_bound_run_exactly(tmp_path: Path) -> None:
    path = tmp_path / "caps.toml"
    path.write_text(coprime_caps(4))
    q = tmp_path / "q.txt"
    q.write_text("q\n" * 30)
    code, out, err = run_cli(["run", str(path), "--store", "M", "--queries", str(q), "--json", "--no-release-deadline"])
    assert code == 0, err
    assert all(Fraction(v) <= Fraction(1, 2) for v in json.loads(out)["turns"][-1]["ledgers"].values())


@given(
    caps=st.lists(
        st.fractions(min_value=Fraction(1, 10**6), max_value=100, max_denominator=10**12), min_size=1, max_size=5
    ),
    k=st.integers(1, 50),
    picks=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 10**6)), min_size=1, max_size=30),
)
def test_ledger_digit_bound_covers_every_sum(caps: list[Fraction], k: int, picks: list[tuple[int, int]]) -> None:
    """Every ledger reachable in `charges` charges (picks: epsilon index, how many times),
    that ledger plus one more epsilon, and its distance to each cap, fit in the bound."""
    epsilons = [c / k for c in caps]
    charges = sum(count for _, count in picks) + 1
    bound = ledger_digit_bound(epsilons, caps, charges)
    ledger = Fraction(0)
    for index, count in picks:
        epsilon = epsilons[index % len(epsilons)]
        ledger += count * epsilon
        for value in (ledger, ledger + epsilon, *(ledger + epsilon - c for c in caps)):
            assert digits(value.numerator) <= bound and digits(value.denominator) <= bound


@pytest.mark.parametrize(
    "exponent,offset", [(0, 0), (0, 8), (1, 0), (2, -1), (2, 0), (4299, 0), (4300, -1), (4300, 0), (6000, 7)]
)
def test_digits_without_str(exponent: int, offset: int) -> None:
    value = 10**exponent + offset
    assert 10 ** (digits(value) - 1) <= value < 10 ** digits(value)
    if value < 10**4000:
        assert digits(value) == len(str(value))
    assert digits(0) == 1 and digits(-value) == digits(value)


def test_huge_store_keys_and_numbers_are_refused(tmp_path: Path, queries: Path) -> None:
    text = FIGURE2.read_text()
    head = text.split("[stores.M]")[0]
    cases = {
        "5000-digit store key": (head + f'[stores.M]\n"{"9" * 5000}" = ["x"]\n', "stores.M"),
        "1000-char store key": (head + f'[stores.M]\n"{"1" * 1000}" = ["x"]\n', "stores.M"),
        "5000-digit integer": (text.replace("cap = 2\n", f"cap = {'9' * 5000}\n", 1), "file"),
        "5000-char table key": (text.replace("[attributes.diabetes]", f"[attributes.{'d' * 5000}]"), "attributes"),
        "200000-deep nesting": ("a = " + "[" * 200_000 + "]" * 200_000 + "\n", "file"),
    }
    for name, (body, field) in cases.items():
        path = tmp_path / "case.toml"
        path.write_text(body)
        for argv in (["check", str(path)], ["run", str(path), "--store", "M", "--queries", str(queries)]):
            code, _, err = run_cli(argv)
            assert_refused(code, err, field)
            assert len(err) < 400, (name, err)


def test_undecodable_names_and_newlines_are_one_line(tmp_path: Path, queries: Path) -> None:
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b"/bad\xff\xfe.toml")
    Path(odd).write_bytes(FIGURE2.read_bytes())
    code, out, err = run_cli(["check", odd])
    assert code == 0 and "Traceback" not in err, err
    code, _, err = run_cli(["check", odd + "x"])
    assert_refused(code, err, "file")
    for argv in (
        ["run", str(FIGURE2), "--bogus=a\nb"],
        ["x\ny"],
        ["run", str(FIGURE2), "--store", "M\nX", "--queries", str(queries)],
        ["run", str(FIGURE2), "--store", "M", "--queries", str(queries), "--seed", "x\ny"],
        ["run", str(FIGURE2), "--store", "M", "--queries", str(queries), "--release-deadline-ms", "nan"],
        ["check", "x" * 5000],
        ["check", str(tmp_path / "a\nb.toml")],
    ):
        code, _, err = run_cli(argv)
        assert_refused(code, err)
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    code, _, err = run_cli(["check", str(loop)])
    assert_refused(code, err, "file")


def test_z3_out_of_time_is_unproved_never_proved() -> None:
    loaded = load_interface_file(FIGURE2)
    scorer = loaded.interface.scorer
    vocabulary = loaded.interface.vocabulary("food")
    proof = prove_linear_sensitivity(scorer, vocabulary, z3_deadline_ns=0)  # the budget is already spent
    assert proof.z3 == "unproved"
    assert proof.holds and proof.exact == Fraction(3, 5)  # the exact argument still decides
    assert prove_linear_sensitivity(scorer, vocabulary).z3 == "proved"


def test_debug_mode_is_named_and_warns(tmp_path: Path, queries: Path) -> None:
    code, _, err = run_cli(["run", str(FIGURE2), "--store", "M", "--queries", str(queries), "--unsafe"])
    assert_refused(code, err, "unrecognized arguments: --unsafe")
    argv = ["run", str(FIGURE2), "--store", "M", "--queries", str(queries), "--debug-print-private-scores"]
    code, _, err = run_cli([*argv, "--no-release-deadline"])
    assert code == 0
    assert err.splitlines()[0].startswith("dpmem: WARNING: --debug-print-private-scores breaks the DP guarantee")
    code, _, err = run_cli(["run", str(FIGURE2), "--store", "M", "--queries", str(queries), "--no-release-deadline"])
    assert code == 0 and err == ""
