"""Algorithm 1 over a durable ledger: charge-before-release, restartable, multi-process.

`DurableSession.run_turn` is `dpmem_ref.turn.run_turn` with the ledgers and the released
history living in a `LedgerStore` instead of an in-memory `InterfaceState`. The mechanism
is the kernel's: every slot is planned with `plan_slot` (read set, charge set, eps,
admission and the exact release distribution, all fixed before any view is drawn). Per
slot, in this order:

1. plan the slot from the committed ledgers and history (public prefix, C4);
2. if admitted, draw the candidate view *privately* from the plan's distribution
   (nothing is observable yet);
3. ONE transaction (`charge_and_record`): commit the plan's charge to every attribute of
   the charge set or none, re-checking L_a <= B_a (C5) on the committed ledgers, and
   persist the release row (admission itself is the plan's, from the interface's cap rule);
4. only after the commit: release the committed view (the generic view if the
   transaction refused because another process spent the budget meanwhile).

A crash before 3 commits releases nothing and charges nothing; a crash after 3 and before
4 leaves a charge for a view nobody saw (over-charge, safe); no path releases a view whose
charge is not committed. A new process that opens the same (user, interaction) continues
the same ledgers and history. `open` binds the ledger database to the interface's
fingerprint (`dpmem_ref.ledger.fingerprint`): another interface on it is refused;
`on_session` serves a session its caller opened (and bound) itself, with the same checks.
See docs/durability.md.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Hashable
from fractions import Fraction

import attrs

from dpmem_ref.channel.protocol import LLMChannel
from dpmem_ref.contract import require_contract
from dpmem_ref.core.errors import ContractViolation, InputError
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import Query, TurnRecord
from dpmem_ref.interface import Interface, check_ledger_size
from dpmem_ref.ledger.contract import LedgerSession, LedgerStore
from dpmem_ref.ledger.facts import ReleaseRequest, SessionKey, SessionSnapshot, SlotRelease, check_key_part
from dpmem_ref.ledger.fingerprint import interface_fingerprint
from dpmem_ref.mechanism.randomness import RandomSource
from dpmem_ref.mechanism.timing import DEFAULT_TURN_DEADLINE_S, check_deadline, wait_until
from dpmem_ref.turn.channel import respond
from dpmem_ref.turn.plan import SlotPlan
from dpmem_ref.turn.planner import begin_turn
from dpmem_ref.turn.state import InterfaceState

MAX_TURNS_PER_INTERACTION = 100_000
"""The horizon limit of one durable interaction (turns); the next turn is refused."""

logger = logging.getLogger("dpmem_ref.durable")  # the name operators configure: kept through the move to turn/

Checkpoint = Callable[[str], None]
ReleaseListener = Callable[[SlotRelease], None]


@attrs.frozen
class DurableTurn:
    """A completed turn: its record, the committed slot releases, and the state as this
    process saw it (other processes may have charged the same ledgers meanwhile)."""

    record: TurnRecord
    releases: tuple[SlotRelease, ...]
    state: InterfaceState
    plans: tuple[SlotPlan, ...] = attrs.field(repr=False)
    overran: bool = False  # the turn missed its release deadline (turn_deadline_s)


def _ordered(interface: Interface, ledgers: tuple[tuple[str, Fraction], ...]) -> tuple[Fraction, ...]:
    table = dict(ledgers)
    return tuple(table[a] for a in interface.policy.attribute_names)


def _check_interface(interface: object) -> None:
    if not isinstance(interface, Interface):
        raise InputError("interface", "a dpmem_ref Interface", type(interface).__name__)


def _check_parts(
    interface: Interface,
    memory: object,
    source: object,
    channel: object,
    checkpoint: object,
    on_release: object,
    turn_deadline_s: object,
) -> None:
    """The arguments of a session besides its ledgers (`open`, `on_session`), each refused with
    an `InputError` naming it; then the interface itself (strict, C1-C6)."""
    if not isinstance(memory, Store) or memory.layout != interface.policy.layout:
        raise InputError("memory", "a store over the interface's layout", type(memory).__name__)
    if not isinstance(source, RandomSource):
        raise InputError("source", "a RandomSource (randbelow)", type(source).__name__)
    if channel is not None and not callable(getattr(channel, "respond", None)):
        raise InputError("channel", "None or an LLMChannel (respond)", type(channel).__name__)
    for name, hook in (("checkpoint", checkpoint), ("on_release", on_release)):
        if hook is not None and not callable(hook):
            raise InputError(name, "None or a callable", type(hook).__name__)
    if turn_deadline_s is not None:
        check_deadline(turn_deadline_s, "turn_deadline_s")
    require_contract(interface)
    # Exact ledgers stay exact over MAX_TURNS_PER_INTERACTION turns: an
    # interface built in code gets the same static size check as a loaded file.
    check_ledger_size(interface, MAX_TURNS_PER_INTERACTION)


@attrs.frozen(repr=False)
class DurableSession:
    """One (user, interaction) served by Algorithm 1 against a durable ledger.

    `checkpoint` (tests only) is called with "turn:start", "slot:before-charge",
    "slot:before-release", "slot:released", "turn:before-record" and "turn:recorded";
    `on_release` receives every committed slot release when the turn is released.

    Timing side channel (dpmem_ref.mechanism.timing): by default a turn is handed out at a fixed
    deadline after it starts (`turn_deadline_s`, default DEFAULT_TURN_DEADLINE_S), and
    everything observable about its releases waits for that deadline: the `on_release`
    callbacks, the DEBUG log records and the return. `turn_deadline_s=None` opts out.
    """

    interface: Interface
    ledgers: LedgerSession
    memory: Store = attrs.field(repr=False)
    source: RandomSource = attrs.field(repr=False)
    channel: LLMChannel | None = None
    checkpoint: Checkpoint | None = None
    on_release: ReleaseListener | None = None
    turn_deadline_s: float | None = DEFAULT_TURN_DEADLINE_S

    def __attrs_post_init__(self) -> None:
        if self.turn_deadline_s is not None:
            check_deadline(self.turn_deadline_s, "turn_deadline_s")

    def __repr__(self) -> str:
        key = self.ledgers.key
        return f"DurableSession(interface={self.interface.name!r}, user={key.user!r}, interaction={key.interaction!r})"

    @classmethod
    def open(
        cls,
        interface: Interface,
        ledger_store: LedgerStore,
        user: str,
        interaction: str,
        memory: Store,
        source: RandomSource,
        channel: LLMChannel | None = None,
        checkpoint: Checkpoint | None = None,
        on_release: ReleaseListener | None = None,
        turn_deadline_s: float | None = DEFAULT_TURN_DEADLINE_S,
    ) -> DurableSession:
        """Open (or resume) the session; refuses a contract-breaking interface (strict).

        The validated boundary: every argument is checked, with an `InputError`
        naming it, before the ledger store is touched, so a refused call writes nothing."""
        _check_interface(interface)
        if not callable(getattr(ledger_store, "open_session", None)) or isinstance(ledger_store, type):
            found = type(ledger_store).__name__
            raise InputError("ledger_store", "a LedgerStore (dpmem_ref.ledger.open_ledger_store)", found)
        check_key_part(user, "user")
        check_key_part(interaction, "interaction")
        _check_parts(interface, memory, source, channel, checkpoint, on_release, turn_deadline_s)
        # The ledger database is bound to this interface's fingerprint: the
        # ledgers count charges of one set of groups, routes and budget rule only.
        fingerprint = interface_fingerprint(interface)
        session = ledger_store.open_session(user, interaction, interface.caps, fingerprint=fingerprint)
        return cls(interface, session, memory, source, channel, checkpoint, on_release, turn_deadline_s)

    @classmethod
    def on_session(
        cls,
        interface: Interface,
        session: LedgerSession,
        memory: Store,
        source: RandomSource,
        channel: LLMChannel | None = None,
        checkpoint: Checkpoint | None = None,
        on_release: ReleaseListener | None = None,
        turn_deadline_s: float | None = DEFAULT_TURN_DEADLINE_S,
    ) -> DurableSession:
        """The session over a `LedgerSession` already opened (a budget scope of the runtime),
        with the checks of `open`. Binding the database to the interface's fingerprint is
        the opener's: `LedgerStore.open_session(..., fingerprint=interface_fingerprint(interface))`."""
        _check_interface(interface)
        if isinstance(session, type) or not isinstance(getattr(session, "key", None), SessionKey) or not all(
            callable(getattr(session, name, None)) for name in ("load", "charge_and_record", "record_turn")
        ):
            raise InputError("session", "an opened LedgerSession (LedgerStore.open_session)", type(session).__name__)
        _check_parts(interface, memory, source, channel, checkpoint, on_release, turn_deadline_s)
        return cls(interface, session, memory, source, channel, checkpoint, on_release, turn_deadline_s)

    def _at(self, point: str) -> None:
        if self.checkpoint is not None:
            self.checkpoint(point)

    def state(self) -> InterfaceState:
        """The committed state: ledgers and completed-turn history."""
        return self._state_of(self.ledgers.load())

    def _state_of(self, snapshot: SessionSnapshot) -> InterfaceState:
        return InterfaceState(
            turn=len(snapshot.history),
            ledgers=_ordered(self.interface, snapshot.ledgers),
            history=snapshot.history,
        )

    def _query(self, query: Query | str) -> Query:
        if isinstance(query, str):
            return self.interface.query(query)
        if not isinstance(query, Query) or self.interface.query(query.name) != query:
            raise InputError("query", "a query from the interface's catalogue", getattr(query, "name", query))
        return query

    def run_turn(self, query: Query | str, loaded: SessionSnapshot | None = None) -> DurableTurn:
        """Algorithm 1 at the next turn, charge-before-release for every slot.

        `loaded`: this session's snapshot (`ledgers.load()`), loaded by the caller just before
        (to route on its history), so the turn loads the session once; None: loaded here.
        A writer in between is met as with any load: each charge re-checks C5 on the
        committed ledgers in its transaction, and a refusal re-plans on them (the fallback)."""
        started = time.perf_counter_ns()
        interface = self.interface
        query = self._query(query)
        if loaded is not None and not isinstance(loaded, SessionSnapshot):
            raise InputError("loaded", "None or a SessionSnapshot of this session (ledgers.load())", type(loaded).__name__)
        self._at("turn:start")
        state = self.state() if loaded is None else self._state_of(loaded)
        if state.turn >= MAX_TURNS_PER_INTERACTION:
            raise InputError("turn", f"at most {MAX_TURNS_PER_INTERACTION} turns per interaction", state.turn)
        turn_id = secrets.token_hex(16)
        releases: list[SlotRelease] = []
        cursor = begin_turn(interface, state, query, self.memory)  # the kernel's one turn loop
        while not cursor.done:
            plan = cursor.plan()
            generic = plan.vocabulary.generic
            if plan.reused:  # a released view re-served at no charge (parts/reuse.py): the uncharged release
                generic = plan.distribution.sample(self.source)  # a point mass: no draw
            # Drawn privately: not observable until the charge below has committed.
            candidate = plan.distribution.sample(self.source) if plan.admitted else generic
            request = ReleaseRequest(
                release_id=secrets.token_hex(16),
                turn_id=turn_id,
                index=len(cursor.released),
                slot=plan.slot,
                view=candidate,
                fallback_view=generic,
                charge_set=plan.charge_set,
                epsilon=plan.epsilon if not plan.reused else interface.uncharged_epsilon,  # unused: not requested
                requested=plan.admitted,
            )
            self._at("slot:before-charge")
            outcome = self.ledgers.charge_and_record(request)  # lines 9 and 15, one transaction
            committed = _ordered(interface, outcome.ledgers)
            if plan.admitted and not outcome.admitted:
                # Another process spent the budget since we read it: the committed ledgers
                # refuse the charge, so the kernel's plan is now the generic fallback.
                cursor = cursor.rebase(committed)
                if cursor.plan().admitted:
                    raise ContractViolation(
                        "C5.store_refusal_admitted", f"slot {plan.slot}: the cap rule admits what the ledger store refused"
                    )
            self._at("slot:before-release")
            release = outcome.release
            releases.append(release)
            cursor = cursor.release(release.view, ledgers=committed)
            self._at("slot:released")
        control: Hashable = cursor.control()  # line 19
        response = ""
        if self.channel is not None:  # line 20: public inputs only (Eq. 2)
            response = respond(self.channel, interface, query, cursor.released, cursor.history)
        new_state, record = cursor.finish(response, control)
        self._at("turn:before-record")
        self.ledgers.record_turn(turn_id, record)  # line 21: the history routing reads (C4)
        self._at("turn:recorded")
        overran = self._release_at_deadline(started, releases, state.turn + 1)
        return DurableTurn(
            record=record, releases=tuple(releases), state=new_state, plans=cursor.plans, overran=overran
        )

    def _release_at_deadline(self, started_ns: int, releases: list[SlotRelease], turn: int) -> bool:
        """Wait for the turn's deadline, then make its releases observable: callbacks and
        DEBUG log records only after it, so neither shows the data-dependent time
        (dpmem_ref.mechanism.timing). True if the turn overran its deadline."""
        overran = False
        if self.turn_deadline_s is not None:
            overran = wait_until(started_ns + int(self.turn_deadline_s * 1e9))
        for release in releases:
            if self.on_release is not None:
                self.on_release(release)
            logger.debug(
                "slot %s: %s, charged %s to %s",
                release.slot,
                "released" if release.admitted else "fallback",
                release.epsilon,
                sorted(release.charge_set),
            )
        logger.debug("turn %d of interaction recorded (%d slots)", turn, len(releases))
        return overran
