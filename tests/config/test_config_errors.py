"""Malformed interface descriptions: one-line errors naming field, expectation and finding,
exit code 2 through `dpmem_ref.cli.main`, and no traceback (also from the console script)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dpmem_ref.cli import main
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
FIGURE2 = (ROOT / "examples" / "figure2.toml").read_text(encoding="utf-8")


def _drop_schedule_views(text: str) -> str:
    return re.sub(r"\[slots\.schedule\.views\.[^\]]+\]\n(?:[a-z].*\n)*", "", text)


Edit = Callable[[str], str]


def _replace(old: str, new: str, count: int = 1) -> Edit:
    def edit(text: str) -> str:
        assert old in text, f"fixture drift: {old!r} not in figure2.toml"
        return text.replace(old, new, count)

    return edit


# (case id, edit of examples/figure2.toml, exact message)
BAD_FILES: list[tuple[str, Edit, str]] = [
    (
        "unknown slot",
        _replace('slot = "food"', 'slot = "fod"'),
        "queries.affordable-dinner.reads[0].slot: expected a declared slot "
        "['finance', 'food', 'health', 'schedule'], found 'fod'",
    ),
    (
        "position out of range",
        _replace("positions = [2, 3]", "positions = [2, 9]"),
        "queries.affordable-dinner.reads[0].positions[1]: expected a position in 1..6, found 9",
    ),
    (
        "group position out of range",
        _replace("group = [1, 2, 3]", "group = [1, 2, 30]"),
        "attributes.diabetes.group[2]: expected a position in 1..6, found 30",
    ),
    (
        "cap -1",
        _replace("cap = 2", 'cap = "-1"'),
        "attributes.diabetes.cap: expected a positive number, found '-1'",
    ),
    (
        "cap float",
        _replace("cap = 2", "cap = 0.5"),
        'attributes.diabetes.cap: expected an integer or an exact rational string like "2/3" '
        "(floats are not exact), found 0.5",
    ),
    (
        "negative weight",
        _replace('weights = { r = "2/5"', 'weights = { r = "-1/5"'),
        "scorer.weights.r: expected a non-negative weight, found '-1/5'",
    ),
    (
        "weights sum above 1",
        _replace('weights = { r = "2/5"', 'weights = { r = "3/5"'),
        "scorer.weights: expected non-negative weights summing to at most 1, found '6/5'",
    ),
    (
        "zero sensitivity",
        _replace('sensitivity = "3/5"', 'sensitivity = "0"'),
        "scorer.sensitivity: expected a positive number, found '0'",
    ),
    (
        "empty vocabulary",
        _drop_schedule_views,
        "slots.schedule.views: expected a non-empty vocabulary, found 'an empty table'",
    ),
    (
        "missing generic view",
        _replace('generic = "schedule-generic"\n', ""),
        "slots.schedule.generic: expected the name of one of its views ['quick-prep', 'schedule-generic'], "
        "found nothing",
    ),
    (
        "generic view outside the vocabulary",
        _replace('generic = "schedule-generic"', 'generic = "schedule-busy"'),
        "slots.schedule.generic: expected the name of one of its views ['quick-prep', 'schedule-generic'], "
        "found 'schedule-busy'",
    ),
    (
        "slot without a vocabulary",
        _replace('"finance", "schedule"]', '"finance", "schedule", "travel"]'),
        "slots: expected a vocabulary for every slot ['finance', 'food', 'health', 'schedule', 'travel'], "
        "found \"none for ['travel']\"",
    ),
    (
        "vocabulary for a slot with no positions",
        lambda text: text.replace("[slots.schedule", "[slots.schedul"),
        "slots.schedul: expected a slot used by some position ['finance', 'food', 'health', 'schedule'], "
        "found 'schedul'",
    ),
    (
        "K = 0",
        _replace("K = 3", "K = 0"),
        "budget.K: expected a positive integer, found 0",
    ),
    (
        "unknown budget rule",
        _replace('rule = "online"', 'rule = "onlin"'),
        'budget.rule: expected "online" or "preallocated", found \'onlin\'',
    ),
    (
        "relevance above 1",
        _replace('relevance = { strict-budget = "1" }', 'relevance = { strict-budget = "3/2" }'),
        "queries.affordable-dinner.reads[1].relevance.strict-budget: expected a number in [0, 1], found '3/2'",
    ),
    (
        "charge names an unknown attribute",
        _replace('relevance = { strict-budget = "1" }', 'relevance = { strict-budget = "1" }\ncharge = ["dept"]'),
        "queries.affordable-dinner.reads[1].charge: expected attributes among ['diabetes', 'debt'], found 'dept'",
    ),
    (
        "store position 0",
        _replace("[stores.M]\n1 =", "[stores.M]\n0 ="),
        "stores.M.0: expected a position in 1..6, found 0",
    ),
    (
        "unknown top-level key",
        _replace('name = "figure2"', 'name = "figure2"\nbogus = 1'),
        "top level: expected only the keys ['attributes', 'budget', 'deployment', 'description', 'name', "
        "'positions', 'queries', 'reuse', 'scorer', 'slot_order', 'slots', 'stores'], found \"unknown key 'bogus'\"",
    ),
    (
        "unknown selector",
        _replace('selector = "em"', 'selector = "softmax"'),
        "deployment.selector: expected one of ['argmax', 'em'], found 'softmax'",
    ),
    (
        "missing positions",
        lambda text: re.sub(r"(?m)^positions = \[\"health\".*\n", "", text),
        "positions: expected a list, found nothing",
    ),
]


@pytest.mark.parametrize(("edit", "message"), [(e, m) for _, e, m in BAD_FILES], ids=[c for c, _, _ in BAD_FILES])
def test_bad_file_message_is_exact(tmp_path: Path, edit: Edit, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(edit(FIGURE2), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_interface_file(path)
    assert str(caught.value) == message


@pytest.mark.parametrize("command", ["check", "audit"])
@pytest.mark.parametrize(("edit", "message"), [(e, m) for _, e, m in BAD_FILES], ids=[c for c, _, _ in BAD_FILES])
def test_bad_file_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, edit: Edit, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(edit(FIGURE2), encoding="utf-8")
    extra = ["--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "2"] if command == "audit" else []
    assert main([command, str(path), *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"dpmem: error: {message}\n"


def test_invalid_toml_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("positions = [\n", encoding="utf-8")
    assert main(["check", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"dpmem: error: file {path}: expected valid TOML, found 'Invalid value (at end of document)'\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--store-a", "M", "--store-b", "nobody", "--horizon", "4"],
            "dpmem: error: store: expected one of the stores ",
        ),
        (
            ["--store-a", "M", "--store-b", "M_no_diabetes", "--horizon", "0"],
            "dpmem: error: horizon: expected an integer in 1..256, found 0\n",
        ),
    ],
)
def test_bad_audit_arguments_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(["audit", str(ROOT / "examples" / "figure2.toml"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["audit", str(ROOT / "examples" / "figure2.toml"), "--store-a", "M", "--store-b", "M", "--horizon", "four"]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err == "dpmem: error: argument --horizon: invalid int value: 'four'\n"


def test_missing_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "absent.toml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpmem: error: file: expected a readable TOML file, found ")
    assert err.count("\n") == 1


def test_console_script_exit_codes_without_traceback(tmp_path: Path) -> None:
    """One real subprocess: the installed `dpmem` script (or `python -m dpmem_ref.cli`)."""
    bad = tmp_path / "bad.toml"
    bad.write_text(FIGURE2.replace("cap = 2", 'cap = "-1"', 1), encoding="utf-8")
    script = shutil.which("dpmem", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "dpmem_ref.cli"]
    done = subprocess.run([*command, "check", str(bad)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "dpmem: error: attributes.diabetes.cap: expected a positive number, found '-1'\n"
    assert "Traceback" not in done.stderr
