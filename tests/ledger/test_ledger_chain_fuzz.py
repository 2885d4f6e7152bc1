"""ANY single plain-SQL change to ANY committed row fails verify.

Hypothesis picks a table (ledgers, releases, turns, meta, chain), a row, a column and a
new value (text, integer, a fraction, a JSON list, raw bytes), or deletes a row, or
inserts a copy of one under a fresh key; `dpmem ledger verify` (with the key, against the
high-water mark) must report FAILED in one line, never pass, never raise. The template is
Figure 2 over two interactions as a key holder wrote it (tests/ledger/test_ledger_chain.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ledger_chain import KEY, fresh, populate

from dpmem_ref.ledger.backup import verify_sqlite
from dpmem_ref.ledger.chain import ChainKey

TABLES = {
    "ledgers": ("user", "interaction", "attribute", "spent", "cap"),
    "releases": ("seq", "user", "interaction", "release_id", "turn_id", "slot_index", "slot", "view", "admitted",
                 "charge_set", "epsilon"),
    "turns": ("seq", "user", "interaction", "turn_id", "record"),
    "meta": ("key", "value"),
    "chain": ("seq", "kind", "body", "mac"),
}  # fmt: skip
VALUES = st.one_of(
    st.text(min_size=0, max_size=12),
    st.integers(min_value=-3, max_value=10_000),
    st.builds(lambda p, q: f"{p}/{q}", st.integers(0, 12), st.integers(1, 12)),
    st.lists(st.sampled_from(["diabetes", "debt", "x"]), max_size=3).map(lambda xs: str(xs).replace("'", '"')),
    st.binary(min_size=1, max_size=6),
)
ACTIONS = st.sampled_from(["edit", "delete", "insert"])


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPMEM_LEDGER_KEY", KEY)
        path = tmp_path_factory.mktemp("fuzz") / "template.db"
        populate(str(path))
        yield path


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.sampled_from(sorted(TABLES)), action=ACTIONS, pick=st.integers(0, 10_000), column=st.integers(0, 10),
       value=VALUES)  # fmt: skip
def test_any_single_change_fails_verify(
    template: Path, tmp_path: Path, table: str, action: str, pick: int, column: int, value: object
) -> None:
    folder = tmp_path / f"{table}-{action}-{pick}-{column}-{abs(hash(repr(value)))}"
    folder.mkdir()
    path = fresh(template, folder)
    raw = sqlite3.connect(path)
    try:
        rowids = [r for (r,) in raw.execute(f"SELECT rowid FROM {table} ORDER BY rowid")]  # noqa: S608
        rowid = rowids[pick % len(rowids)]
        name = TABLES[table][column % len(TABLES[table])]
        if action == "edit":
            (current,) = raw.execute(f"SELECT {name} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()  # noqa: S608
            if value == current or str(value) == str(current):
                return  # not a change
            changed = raw.execute(f"UPDATE OR IGNORE {table} SET {name} = ? WHERE rowid = ?", (value, rowid)).rowcount  # noqa: S608
        elif action == "delete":
            changed = raw.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,)).rowcount  # noqa: S608
        else:  # a copy of the row under fresh unique values
            columns = ", ".join(TABLES[table])
            row = list(raw.execute(f"SELECT {columns} FROM {table} WHERE rowid = ?", (rowid,)).fetchone())  # noqa: S608
            for index, col in enumerate(TABLES[table]):
                if col in ("seq",):
                    row[index] = 10_000 + pick
                elif col in ("release_id", "turn_id", "key", "attribute"):
                    row[index] = f"{row[index]}-copy{pick}"
            placeholders = ", ".join("?" for _ in row)
            changed = raw.execute(f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({placeholders})", row).rowcount  # noqa: S608
        raw.commit()
    except sqlite3.IntegrityError:
        return  # the schema itself refuses this value (NOT NULL, CHECK): nothing changed
    finally:
        raw.close()
    if not changed:
        return
    report = verify_sqlite(path, key=ChainKey(secret=KEY.encode(), keyed=True))
    assert not report.ok, (table, action, name if action == "edit" else "", value, report.line())
    assert "\n" not in report.line()
