"""An independent check of the promise, straight from the database: the committed release
rows (selected in SQL, summed exactly with Fractions; no runtime code) give, per subject and
application, total charges within the promised bound, across many ids, epochs (reported),
restarts, replicas and channel failures with retries; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.runtime.agent import AgentRuntime, ChannelUnavailable
from tests.runtime.test_runtime_retry import FlakyChannel
from tests.runtime_fixtures import copy_example, open_runtime, store_url

IDS = ["alice", "Alice", "alice.", "bob", "0"]
QUERIES = ["What should I cook for dinner tonight?", "Budget tips please", "Any advice before my doctor check-up?"]
SHARES = {"recipes": {"diabetes": Fraction(2), "debt": Fraction(1)}, "finance": {"diabetes": Fraction(1), "debt": Fraction(2)}}
USER_CAPS = {"diabetes": Fraction(3), "debt": Fraction(3)}
SCOPE = re.compile(r"^e(\d+):app:(.+)$")


def _serve(runtime: AgentRuntime | list[AgentRuntime], rounds: int, tag: str) -> int:
    """Turns of every id and application, each retried with its turn id until answered;
    with several runtimes (replicas on one ledger), each attempt goes to the next one."""
    replicas = runtime if isinstance(runtime, list) else [runtime]
    failures = attempts = 0
    for n in range(rounds):
        for user in IDS:
            for app in SHARES:
                for k, query in enumerate(QUERIES):
                    while True:
                        attempts += 1
                        try:
                            replicas[attempts % len(replicas)].turn(user, app, "i", query, turn_id=f"{tag}-{n}-{k}")
                            break
                        except ChannelUnavailable:
                            failures += 1
    return failures


def _rows(url: str, tmp_path: Path) -> list[tuple[str, str, str, str]]:
    """(subject, interaction, charge_set, epsilon) of every admitted release, in SQL."""
    if url.startswith("sqlite:"):
        connection = sqlite3.connect(tmp_path / "ledgers.db")
        try:
            found = connection.execute(
                "SELECT user, interaction, charge_set, epsilon FROM releases WHERE admitted = 1 ORDER BY seq"
            ).fetchall()
        finally:
            connection.close()
        return [tuple(map(str, row)) for row in found]  # type: ignore[misc]
    import psycopg

    with psycopg.connect(url) as connection:
        found = connection.execute(
            "SELECT user_name, interaction, charge_set, epsilon FROM dpmem_releases WHERE admitted ORDER BY seq"
        ).fetchall()
    return [tuple(map(str, row)) for row in found]  # type: ignore[misc]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sql_totals_per_subject_and_application_within_the_promise(backend: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    url = store_url(backend, tmp_path)
    options = {"user_caps": USER_CAPS, "shares": SHARES}
    failures = 0
    runtime = open_runtime(agent, memory, url, llm=FlakyChannel(3), **options)
    failures += _serve(runtime, 2, "a")
    runtime.close()
    runtime = open_runtime(agent, memory, url, llm=FlakyChannel(2), seed=7, **options)  # a restart
    failures += _serve(runtime, 2, "b")
    other = open_runtime(agent, memory, url, seed=9, **options)  # two replicas on one ledger
    failures += _serve([runtime, other], 2, "r")
    other.close()
    runtime.close()
    runtime = open_runtime(agent, memory, url, llm=FlakyChannel(1), seed=8, new_epoch="reset", fresh_budget=True, **options)
    failures += _serve(runtime, 2, "c")
    report = runtime.guarantee()
    runtime.close()
    assert failures == 6  # every failure was retried

    totals: dict[tuple[str, int, str], dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for subject, interaction, charge_set, epsilon in _rows(url, tmp_path):
        scope = SCOPE.fullmatch(interaction)
        assert scope is not None, interaction  # every charge is an application scope's
        for attribute in json.loads(charge_set):
            totals[(subject, int(scope.group(1)), scope.group(2))][attribute] += Fraction(epsilon)
    epochs = {epoch for _, epoch, _ in totals}
    assert epochs == {0, 1} and report["epochs"] == 2 and report["fresh_budget_epochs"] == [1]  # reported
    for (subject, epoch, app), spent in totals.items():
        assert all(spent[a] <= SHARES[app][a] for a in spent), (subject, epoch, app, spent)  # per application
    for subject in {s for s, _, _ in totals}:
        for epoch in epochs:
            per_user = {a: sum((totals[(subject, epoch, app)][a] for app in SHARES), Fraction(0)) for a in USER_CAPS}
            assert all(per_user[a] <= USER_CAPS[a] for a in per_user)  # per subject, per epoch
        over_epochs = {a: sum((t[a] for (s, _, _), t in totals.items() if s == subject), Fraction(0)) for a in USER_CAPS}
        assert all(over_epochs[a] <= Fraction(report["per_user"][a]) for a in over_epochs)  # the reported total
    # The cap was reached (the check is live): alice's scopes spent their whole shares.
    assert dict(totals[("alice", 0, "recipes")]) == SHARES["recipes"]
    # And the tamper-evident chain replays (durable turn ids, epochs, restarts).
    from dpmem_ref.ledger.backup import verify_sqlite
    from dpmem_ref.ledger.postgres.verify import verify_postgres

    report_chain = verify_sqlite(tmp_path / "ledgers.db") if backend == "sqlite" else verify_postgres(url)
    assert report_chain.problem is None, report_chain.problem
