"""The ledger-store contract over generated request sequences, on every
backend (memory, SQLite, PostgreSQL), against a reference model of Algorithm 1, line 15.

tests/ledger/test_ledger_contract.py pins hand-picked cases with one request builder (first slot
of a turn, one slot name, one eps). Here every field the stores branch on or persist is
drawn: the slot index within a turn, the slot, the candidate and fallback views, charge
sets of 0-3 attributes (some exactly filling a cap), eps, the plan's admission, and the
caps. Each outcome and the reloaded rows (a fresh connection for the databases) must be
what the reference model says, field by field.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from fractions import Fraction

import attrs
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import tests.postgres_server as postgres_server
from dpmem_ref.ledger import (
    LedgerStore,
    MemoryLedgerStore,
    ReleaseRequest,
    SlotRelease,
    SQLiteLedgerStore,
    open_ledger_store,
)

ATTRIBUTES = ("debt", "diabetes", "pregnancy")
SLOTS = ("food", "finance", "health")
EPSILONS = (Fraction(1, 3), Fraction(1, 2), Fraction(2, 3), Fraction(1), Fraction(3, 2))
CAPS = (Fraction(1), Fraction(2), Fraction(5, 2))


@attrs.frozen
class Step:
    index: int
    slot: str
    charge_set: frozenset[str]
    epsilon: Fraction
    requested: bool


steps = st.builds(
    Step,
    index=st.integers(0, 3),
    slot=st.sampled_from(SLOTS),
    charge_set=st.frozensets(st.sampled_from(ATTRIBUTES), max_size=3),
    epsilon=st.sampled_from(EPSILONS),
    requested=st.integers(0, 4).map(bool),  # mostly requested
)
programmes = st.tuples(
    st.fixed_dictionaries({a: st.sampled_from(CAPS) for a in ATTRIBUTES}),
    st.lists(steps, min_size=1, max_size=10),
)


def reference(caps: dict[str, Fraction], programme: list[Step]) -> Iterator[tuple[bool, dict[str, Fraction]]]:
    """(admitted, ledgers after) per request: commit iff requested and L_a + eps <= B_a
    for every a in the charge set (all or none, C5)."""
    ledgers = {a: Fraction(0) for a in caps}
    for step in programme:
        admitted = step.requested and all(ledgers[a] + step.epsilon <= caps[a] for a in step.charge_set)
        if admitted:
            for a in step.charge_set:
                ledgers[a] += step.epsilon
        yield admitted, dict(ledgers)


_STORES: dict[str, LedgerStore] = {}
_URLS: dict[str, str] = {}


def backend(kind: str, tmp_path_factory: pytest.TempPathFactory) -> LedgerStore:
    if kind not in _STORES:
        if kind == "memory":
            _STORES[kind] = MemoryLedgerStore()
        elif kind == "sqlite":
            _STORES[kind] = SQLiteLedgerStore(tmp_path_factory.mktemp("paths") / "l.db")
        else:
            _URLS[kind] = postgres_server.new_database()
            _STORES[kind] = open_ledger_store(_URLS[kind])
    return _STORES[kind]


def reopened(kind: str, ledger_store: LedgerStore) -> LedgerStore:
    """A second connection to the same database (opened once): committed rows only."""
    key = kind + ":reader"
    if key not in _STORES:
        if isinstance(ledger_store, SQLiteLedgerStore):
            _STORES[key] = SQLiteLedgerStore(ledger_store.path)
        elif kind == "postgres":
            _STORES[key] = open_ledger_store(_URLS[kind])
        else:
            _STORES[key] = ledger_store
    return _STORES[key]


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_generated_requests_commit_exactly_what_the_model_says(
    kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    ledger_store = backend(kind, tmp_path_factory)

    @settings(max_examples=10 if kind == "postgres" else 25)  # a server round trip per charge
    @given(programmes)
    def run(drawn: tuple[dict[str, Fraction], list[Step]]) -> None:
        caps, programme = drawn
        session = ledger_store.open_session(secrets.token_hex(6), "i", caps)  # a fresh session per example
        turn_id = secrets.token_hex(8)
        expected = list(reference(caps, programme))
        outcomes = []
        for step, (admitted, ledgers) in zip(programme, expected, strict=True):
            request = ReleaseRequest(
                release_id=secrets.token_hex(8),
                turn_id=turn_id,
                index=step.index,
                slot=step.slot,
                view=f"{step.slot}-specific",
                fallback_view=f"{step.slot}-generic",
                charge_set=step.charge_set,
                epsilon=step.epsilon,
                requested=step.requested,
            )
            outcome = session.charge_and_record(request)
            want = SlotRelease(
                seq=outcome.release.seq,
                release_id=request.release_id,
                turn_id=turn_id,
                index=step.index,
                slot=step.slot,
                view=request.view if admitted else request.fallback_view,
                admitted=admitted,
                charge_set=step.charge_set if admitted else frozenset(),
                epsilon=step.epsilon if admitted and step.charge_set else Fraction(0),
            )
            assert outcome.release == want
            assert outcome.ledger_map() == ledgers
            outcomes.append(outcome.release)
            if step.requested and not admitted:
                event("refused at commit (C5 re-check)")
            if admitted and len(step.charge_set) > 1:
                event("joint charge committed")
            if step.index > 0:
                event("later slot of a turn")
        seqs = [r.seq for r in outcomes]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        snapshot = reopened(kind, ledger_store).open_session(session.key.user, "i", caps).load()
        assert snapshot.releases == tuple(outcomes)  # every field persisted and read back
        assert snapshot.ledger_map() == expected[-1][1]
        assert dict(snapshot.caps) == caps

    run()
