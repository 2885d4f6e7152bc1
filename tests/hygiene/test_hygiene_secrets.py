"""Secrets hygiene: raw memory never leaves the trusted interface.

Every memory item of every store of the Figure 2 example and of the evaluation
configuration gets a unique marker in its text AND in its tags (a tag no view reads, so
scores are unchanged). We then run the kernel, the durable session (SQLite), the CLI
(`run`, text and JSON; `check` and `audit` when the auditor is installed) and provoke
errors, and assert that no marker appears in any release, control, response, log line
(DEBUG, every logger), exception message, repr of a public object, or persisted ledger
file.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import tomllib
import uuid
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
import pytest

from dpmem_ref.cli import main
from dpmem_ref.config.load import InterfaceFile, interface_from_dict, load_interface_file
from dpmem_ref.core.errors import ContractViolation, InputError
from dpmem_ref.core.policy import MemoryItem, Store
from dpmem_ref.core.transcript import PublicPrefix
from dpmem_ref.ledger import MemoryLedgerStore, SQLiteLedgerStore
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.parts.scoring import FunctionScorer
from dpmem_ref.turn import InterfaceState, TemplateChannel, plan_slot, run_turn
from dpmem_ref.turn.durable import DurableSession

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["figure2.toml", "evaluation.toml"]
PREFIX = "SECRETMARK"


def marker(kind: str, store: str, position: int, token: str) -> str:
    return f"{PREFIX}-{kind}-{store}-{position}-{token}"


def marked_data(example: str) -> tuple[dict[str, Any], str]:
    """The example's description with a marker in the text and tags of every item."""
    data = tomllib.loads((ROOT / "examples" / example).read_text())
    token = uuid.uuid4().hex
    size = len(data["positions"])
    for store_name, spec in data.get("stores", {}).items():
        for position in range(1, size + 1):
            item = spec.get(str(position), {"tags": [], "text": ""})
            if isinstance(item, list):
                item = {"tags": item, "text": ""}
            item = dict(item)
            item["tags"] = [*item.get("tags", []), marker("tag", store_name, position, token)]
            item["text"] = f"{marker('text', store_name, position, token)} {item.get('text', '')}"
            spec[str(position)] = item
    return data, token


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_value(str(k))} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value).__name__)


def write_toml(data: dict[str, Any], path: Path) -> Path:
    path.write_text("".join(f"{_toml_value(k)} = {_toml_value(v)}\n" for k, v in data.items()), encoding="utf-8")
    return path


def assert_clean(texts: Iterable[object], where: str) -> None:
    for text in texts:
        rendered = text if isinstance(text, str) else repr(text)
        assert PREFIX not in rendered, f"memory marker leaked into {where}"


def query_sequence(loaded: InterfaceFile, turns: int) -> list[str]:
    names = [q.name for q in loaded.interface.queries]
    return [names[i % len(names)] for i in range(turns)]


@pytest.fixture(params=EXAMPLES)
def marked(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[InterfaceFile, Path]:
    data, _ = marked_data(request.param)
    path = write_toml(data, tmp_path / request.param)
    loaded = load_interface_file(path)
    # The markers really are in the trusted stores.
    some_store = next(iter(loaded.stores.values()))
    assert all(PREFIX in item.text for item in some_store.items)
    assert all(any(PREFIX in t for t in item.tags) for item in some_store.items)
    return loaded, path


def test_kernel_and_durable_runs_release_no_memory(
    marked: tuple[InterfaceFile, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loaded, _ = marked
    interface = loaded.interface
    caplog.set_level(logging.DEBUG)
    queries = query_sequence(loaded, 2 * len(interface.queries))
    for store_name, store in loaded.stores.items():
        state = InterfaceState.initial(interface)
        for query in queries:
            result = run_turn(interface, state, query, store, SeededRandomSource(1), channel=TemplateChannel())
            state = result.state
            record = result.record
            assert_clean([record.views, record.control, record.response, record.charges], "a kernel release")
            assert_clean([result, *result.plans], "a repr of a turn result or slot plan")
        assert_clean([state], "the interface state")
        ledger_store = SQLiteLedgerStore(tmp_path / f"{store_name}.db")
        session = DurableSession.open(
            interface, ledger_store, "user", store_name, store, SeededRandomSource(2), channel=TemplateChannel()
        )
        for query in queries:
            turn = session.run_turn(query)
            assert_clean([turn, turn.record, *turn.releases], "a durable release")
        assert_clean([session, session.state(), ledger_store, session.ledgers], "a durable repr")
        ledger_store.close()
        for file in tmp_path.glob(f"{store_name}.db*"):
            assert PREFIX.encode() not in file.read_bytes(), f"memory marker persisted in {file.name}"
    assert_clean([store for store in loaded.stores.values()], "a store repr")
    assert_clean([loaded, interface, *(i for s in loaded.stores.values() for i in s.items)], "a public repr")
    assert_clean([record.getMessage() for record in caplog.records], "a log line")


def test_cli_outputs_carry_no_memory(marked: tuple[InterfaceFile, Path], tmp_path: Path) -> None:
    loaded, path = marked
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(query_sequence(loaded, 2 * len(loaded.interface.queries))) + "\n")
    store_names = sorted(loaded.stores)
    commands = [["run", str(path), "--store", name, "--queries", str(queries), "--seed", "3"] for name in store_names]
    commands += [[*c, "--json"] for c in commands]
    commands += [
        ["run", str(path), "--store", name, "--queries", str(queries), "--debug-print-private-scores"]
        for name in store_names[:1]
    ]
    commands.append(["check", str(path), "--json"])
    commands.append(["check", str(path)])
    if len(store_names) >= 2:
        pair = ["--store-a", store_names[0], "--store-b", store_names[1], "--horizon", "2"]
        commands.append(["audit", str(path), *pair, "--json"])
        commands.append(["audit", str(path), *pair])
    ran = 0
    for argv in commands:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit:
                pass  # subcommand absent (auditor not installed): argparse exits 2
        assert_clean([out.getvalue(), err.getvalue()], f"the output of dpmem {argv[0]}")
        ran += 1
    assert ran == len(commands)


def test_errors_carry_no_memory(tmp_path: Path) -> None:
    data, _ = marked_data("figure2.toml")
    secret = marker("text", "M", 1, "x")
    # Malformed store items: the loader names the field but not the value.
    for bad in ([secret], {"k": secret}, 5, math.inf):
        broken = {**data, "stores": {"M": {"1": {"tags": [], "text": bad}}}}
        with pytest.raises(InputError) as info:
            interface_from_dict(broken)
        assert "stores.M.1.text" in str(info.value)
        assert_clean([str(info.value), repr(info.value)], "a loader error")
    for bad_tags in ([secret, 7], [secret, ""], secret, [[secret]]):
        broken = {**data, "stores": {"M": {"1": {"tags": bad_tags}}}}
        with pytest.raises(InputError) as info:
            interface_from_dict(broken)
        assert_clean([str(info.value)], "a loader error")
    # CLI: the same through the command line.
    path = write_toml({**data, "stores": {"M": {"1": {"tags": [secret, 7]}}}}, tmp_path / "bad.toml")
    out, err = io.StringIO(), io.StringIO()
    queries = tmp_path / "q.txt"
    queries.write_text("affordable-dinner\n")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", str(path), "--store", "M", "--queries", str(queries)])
    assert code == 2 and "stores.M.1" in err.getvalue()
    assert_clean([out.getvalue(), err.getvalue()], "a CLI error")
    # A scorer that returns out-of-range scores: C3 names the score's index, not its value.
    loaded = load_interface_file(write_toml(data, tmp_path / "ok.toml"))
    interface = attrs.evolve(
        loaded.interface,
        scorer=FunctionScorer(
            function=lambda rel, vocab, items: tuple(Fraction(7, 3) for _ in vocab.views),
            declared_sensitivity=Fraction(3, 5),
        ),
    )
    store = loaded.store("M")
    query = interface.query("affordable-dinner")
    with pytest.raises(ContractViolation) as violation:
        plan_slot(interface, (Fraction(0), Fraction(0)), PublicPrefix(history=(), query=query), "food", store)
    assert violation.value.condition == "C3" and "7/3" not in str(violation.value)
    assert_clean([str(violation.value)], "a contract violation")
    # Durable: refusing a memory store of another layout names no content.
    other = Store.from_mapping(
        attrs.evolve(store.layout, position_slots=("food",)), {1: MemoryItem(tags=frozenset({secret}), text=secret)}
    )
    with pytest.raises(InputError) as info:
        DurableSession.open(interface, MemoryLedgerStore(), "u", "i", other, SeededRandomSource(0))
    assert_clean([str(info.value), repr(other), repr(other.items[0])], "a durable error")


# ------------------------------------------------------------------ malformed files

MALFORMED_VALUES = [
    '"{m} has type-2 diabetes"',
    '["{m}", 5]',
    '[["{m}"]]',
    '{{ text = "{m}", tags = ["x"], extra = "{m}" }}',
    '{{ text = ["{m}"] }}',
    '{{ text = 5, tags = ["{m}"] }}',
    '{{ text = {{ deep = {{ deeper = "{m}" }} }} }}',
    '{{ tags = {{ x = "{m}" }} }}',
    '{{ tags = ["{m}", ""] }}',
    '{{ tags = ["{m}", 1.5] }}',
    '{{ tags = "{m}" }}',
    "{{ tags = [{many}] }}",
    '{{ text = "{m}", tags = [[[[["{m}"]]]]] }}',
    '{{ "{m}" = 1 }}',
    "true",
    "1979-05-27T07:32:00Z",
    "inf",
    "nan",
    "-7",
]
MALFORMED_STORES = [f'[stores.M]\n"1" = {value}\n' for value in MALFORMED_VALUES] + [
    'stores.M = "{m} diabetic"\n',
    "stores.M = 12\n",
    'stores = "{m}"\n',
    'stores = ["{m}"]\n',
    'stores.M = ["{m}"]\n',
    'stores.M = {{ "{m}" = "{m}" }}\n',
    '[stores.M]\n"{m} note" = ["x"]\n',
    '[stores.M]\n"{nines}" = ["{m}"]\n',
    '[stores.M]\n"99999" = ["{m}"]\n',
    '[stores.M]\n"-1" = ["{m}"]\n',
    '[stores.M]\n"1" = ["{m}"]\n"01" = ["{m}"]\n',
    '[stores.M]\n"1" = {{ text = "{m}" tags = [] }}\n',
    '[stores.M]\n"1" = {{ text = "{m}\n',
    '[stores.M]\n"1" = {{ text = "{m}\\q" }}\n',
    '[stores.M]\n"1" = ["{m}"]\n"1" = ["{m}"]\n',
    '[stores.M]\n"1" = {m}\n',
    '[stores.M]\n"1" = {{ text = "{m}\x01" }}\n',
    '[stores.M]\n"1" = {{ text = """{m}\nsecond line""", tags = 3 }}\n',
]


@pytest.mark.parametrize("block", MALFORMED_STORES, ids=range(len(MALFORMED_STORES)))
def test_malformed_stores_carry_no_memory_through_any_command(block: str, tmp_path: Path) -> None:
    """A memory marker inside a malformed store, of every shape, never reaches stdout or
    stderr of check, audit or run, text or JSON; each refusal is one line, exit 2."""
    secret = f"{PREFIX}-{uuid.uuid4().hex[:8]}"
    many = ", ".join(f'"{secret}{i}"' for i in range(1001))
    body = block.format(m=secret, many=many, nines="9" * 5000)
    head = (ROOT / "examples" / "figure2.toml").read_text().split("[stores.M]")[0]
    path = tmp_path / "malformed.toml"
    # Dotted top-level keys must precede every table header; table blocks follow the head.
    path.write_text(head + body if body.startswith("[") else body + head, encoding="utf-8")
    queries = tmp_path / "q.txt"
    queries.write_text("affordable-dinner\n")
    run = ["run", str(path), "--store", "M", "--queries", str(queries), "--no-release-deadline"]
    for argv in (
        ["check", str(path)],
        ["check", str(path), "--json"],
        ["audit", str(path), "--store-a", "M", "--store-b", "M", "--horizon", "1", "--json"],
        run,
        [*run, "--json"],
    ):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        assert code == 2, (argv[0], err.getvalue())
        assert len(err.getvalue().strip().splitlines()) == 1 and "Traceback" not in err.getvalue()
        assert secret not in out.getvalue() + err.getvalue(), f"memory marker leaked by dpmem {argv[0]}"
        assert_clean([out.getvalue(), err.getvalue()], f"the error of dpmem {argv[0]}")


def test_loader_errors_report_only_the_kind_of_a_store_value() -> None:
    data, _ = marked_data("figure2.toml")
    secret = marker("text", "M", 1, "kind")
    for value, kind in ((secret, "a string"), (7, "an integer"), ([secret], "an array"), (True, "a boolean")):
        with pytest.raises(InputError) as info:
            interface_from_dict({**data, "stores": {"M": value}})
        assert str(info.value) == (
            f"stores.M: expected a table of position -> memory item, found '{kind} (withheld: memory is private)'"
        )
