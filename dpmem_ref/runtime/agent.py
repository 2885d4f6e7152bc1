"""`AgentRuntime`: one interface served to many (user, application) scopes.

A turn loads its scope once (a `ScopeKey`; its ledger session, `scopes.ScopedLedgers`: the
(subject, app) scope with its precommitted caps, its share of any per-user cap), then: the
router maps the free-text query to a catalogue query (public: query text and released
history only, C4); the kernel's `DurableSession.run_turn` runs Algorithm 1 over the
subject's memory on that snapshot (admission reads that scope only, C5 and C6 per
application; each charge re-checks C5 in the store's transaction); then the LLM channel
answers from the query text, the released view texts and this runtime's earlier turns of
the scope only (Eq. 2), after the release deadline, so its time depends on public inputs
only. A no-match query releases the generic view of every slot, reads no memory and
charges nothing.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Hashable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from dpmem_ref.channel.protocol import LLMChannel
from dpmem_ref.channel.registry import make_channel
from dpmem_ref.contract import require_contract
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import check_id, check_int
from dpmem_ref.interface import Interface
from dpmem_ref.ledger.codecs import fraction_to_text
from dpmem_ref.ledger.contract import LedgerStore
from dpmem_ref.ledger.epochs import bind, epoch_guarantee, epoch_log
from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.fingerprint import interface_fingerprint
from dpmem_ref.ledger.periods import Clock, epoch_origins, period_index, read_clock
from dpmem_ref.ledger.scopes import ScopeKey
from dpmem_ref.ledger.urls import open_ledger_store
from dpmem_ref.mechanism.randomness import RandomSource, SeededRandomSource, SystemRandomSource
from dpmem_ref.mechanism.timing import DEFAULT_DURABLE_TURN_DEADLINE_S
from dpmem_ref.runtime.memory import MemoryBook, MemoryEntry
from dpmem_ref.runtime.router import FreeTextRouter
from dpmem_ref.runtime.scopes import ScopedLedgers, durable_turn_id, recorded_turn, remaining
from dpmem_ref.runtime.settings import AgentFile, check_shares, check_user_caps, load_agent_file
from dpmem_ref.runtime.similarity import make_embedder
from dpmem_ref.runtime.tagger import Tagger, slot_tags
from dpmem_ref.runtime.turns import (
    MAX_RECORDED_TURNS,
    AgentTurn,
    ChannelUnavailable,
    RecordedTurn,
    channel_name,
    check_channel_answers,
)
from dpmem_ref.schemas import json_value
from dpmem_ref.turn.channel import view_texts
from dpmem_ref.turn.durable import DurableSession

MAX_QUERY_CHARS = 4096
def _text_of_query(query: object) -> str:
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_CHARS:
        shown = f"{len(query)} characters" if isinstance(query, str) else type(query).__name__
        raise InputError("query", f"a query text of 1..{MAX_QUERY_CHARS} characters", shown)
    return query


class AgentRuntime:
    """The runtime between an agent's raw memory and its response LLM (docs/agent.md)."""

    def __init__(
        self,
        agent: AgentFile,
        memory: MemoryBook,
        ledger_store: LedgerStore,
        channel: LLMChannel,
        source: RandomSource,
        router: FreeTextRouter,
        user_caps: Mapping[str, Fraction] | None,
        epoch: int,
        turn_deadline_s: float | None = DEFAULT_DURABLE_TURN_DEADLINE_S,
        shares: Mapping[str, Mapping[str, Fraction]] | None = None,
        clock: Clock = time.time,
        period_origin: int | None = None,
    ) -> None:
        self.agent = agent
        self.interface: Interface = agent.loaded.interface
        self.memory = memory
        self.ledger_store = ledger_store
        self.channel = channel
        self.source = source
        self.router = router
        self.user_caps = user_caps
        self.shares = shares
        self.epoch = epoch
        self.clock = clock  # public calendar time: the only input of the period index
        self.period_origin = period_origin  # the epoch's recorded origin (with a period)
        if (self.interface.period is None) != (period_origin is None):
            raise InputError("budget.period", "a recorded period origin exactly when the interface declares a period", period_origin)
        self.turn_deadline_s = turn_deadline_s
        self._lock = threading.RLock()
        self._sessions: dict[tuple[str, str], tuple[ScopedLedgers, DurableSession]] = {}  # the latest period's
        self._transcripts: dict[tuple[str, str], list[tuple[str, Hashable, str]]] = {}
        self._recorded: dict[tuple[str, str, str], RecordedTurn] = {}
        self.channel_name = channel_name(channel)

    @classmethod
    def open(
        cls,
        config: str | Path | AgentFile,
        memory: str | Path | None = None,
        store_url: str | None = None,
        llm: str | LLMChannel = "echo",
        seed: int | None = None,
        user_caps: Mapping[str, Fraction | int | str] | bool | None = None,
        new_epoch: str | None = None,
        turn_deadline_s: float | None = DEFAULT_DURABLE_TURN_DEADLINE_S,
        shares: Mapping[str, Mapping[str, Fraction | int | str]] | None = None,
        check_channel: bool | None = None,
        fresh_budget: bool = False,
        clock: Clock = time.time,
    ) -> AgentRuntime:
        """Bind the agent file's interface, the memory file, the ledger store and the LLM
        channel. Refuses an interface change that cannot carry the ledgers over unless
        `new_epoch` (a reason, recorded) starts a new budget epoch. `clock` (seconds, like
        time.time): the public calendar time that selects the budget period when the
        interface declares one; the epoch's origin is recorded at its first binding."""
        agent = config if isinstance(config, AgentFile) else load_agent_file(config)
        interface = agent.loaded.interface
        require_contract(interface)  # strict: the served interface satisfies C1-C6
        attributes = interface.policy.attribute_names
        caps_of_the_file = user_caps is None or user_caps is True
        if caps_of_the_file:
            caps = None if agent.user_caps is None else check_user_caps(agent.user_caps, attributes)
        elif user_caps is False:
            caps = None
        else:
            caps = check_user_caps(user_caps, attributes)
        app_shares = None
        if caps is not None:  # a per-user cap is served as precommitted per-application shares
            app_shares = check_shares(agent.shares if shares is None else shares, caps, interface.caps)
        elif shares is not None or (caps_of_the_file and agent.shares is not None):  # never ignored in silence
            raise InputError("scopes.shares", "shares of a per-user cap (scopes.user_caps)", "no per-user cap")
        if seed is not None:
            check_int(seed, "--seed", low=0)
        encoders = {agent.router.get("encoder"), agent.tagger.get("encoder")} - {None}
        embedder = make_embedder(next(iter(encoders))) if encoders else None
        router = FreeTextRouter.from_spec(agent.router, interface, embedder if agent.router.get("encoder") else None)
        known = frozenset().union(*(slot_tags(interface, s) for s in interface.policy.layout.slots))
        tagger = Tagger.from_spec(agent.tagger, known, embedder if agent.tagger.get("encoder") else None)
        book = MemoryBook.load(interface, lambda slot, text: tagger.tag(text, slot_tags(interface, slot)), memory)
        channel = make_channel(llm, seed) if isinstance(llm, str) else llm
        if check_channel is None:  # by default a remote endpoint is checked (dpmem serve, chat)
            check_channel = isinstance(llm, str) and llm.startswith("openai:")
        if check_channel:  # at start-up: a channel that cannot answer fails here, not after a charge
            check_channel_answers(channel, channel_name(llm))
        source: RandomSource = SystemRandomSource() if seed is None else SeededRandomSource(seed)
        ledger_store = open_ledger_store(store_url or "memory:")
        try:
            now = math.floor(read_clock(clock))
            epoch, _ = bind(ledger_store, interface, caps, new_epoch, app_shares, fresh_budget, now=now)
            origin = None
            if interface.period is not None:
                origin, label = epoch_origins(epoch_log(ledger_store))[epoch]
                if label != interface.period.label:  # a period change needs a new epoch (binding)
                    raise InputError("budget.period", f"the period epoch {epoch} recorded ({label})", interface.period.label)
            runtime = cls(
                agent, book, ledger_store, channel, source, router, caps, epoch, turn_deadline_s, app_shares, clock, origin
            )
        except BaseException:
            ledger_store.close()
            raise
        runtime.channel_name = channel_name(llm)
        return runtime

    # ------------------------------------------------------------ scopes
    def period(self) -> int | None:
        """The current budget period k (None: the interface declares none): a function of
        the clock and the recorded origin only (`ledger.periods`), never of memory or of a
        ledger, so no boundary can reveal anything."""
        if self.interface.period is None or self.period_origin is None:
            return None
        return period_index(self.period_origin, read_clock(self.clock), self.interface.period)

    def _scope(self, user: str, app: str) -> tuple[ScopedLedgers, DurableSession]:
        """The (user, app) scope of the current period."""
        return self._scope_at(user, app, self.period())

    def _scope_at(self, user: str, app: str, period: int | None) -> tuple[ScopedLedgers, DurableSession]:
        key = (check_id(user, "user"), check_id(app, "app"))
        scope = ScopeKey.of_app(user, app, self.epoch, period)
        with self._lock:
            found = self._sessions.get(key)
            if found is None or found[0].scope != scope:  # (an earlier period's scope: never served again)
                interface = self.interface
                share = self.share(app)
                # The scope's own caps (its share); the planner keeps the interface's. The
                # fingerprint binds the database to the interface, as `DurableSession.open` does.
                app_session = self.ledger_store.open_session(
                    user, scope.interaction, share, fingerprint=interface_fingerprint(interface)
                )
                scoped = ScopedLedgers(scope, app_session, interface.caps, share)
                session = DurableSession.on_session(
                    interface, scoped, self.memory.store(user), self.source, turn_deadline_s=self.turn_deadline_s
                )
                found = self._sessions[key] = (scoped, session)
            return found

    def share(self, app: str) -> Mapping[str, Fraction]:
        """The caps of `app`'s scopes: its declared share of the per-user caps, or the
        interface's caps B_a when there is no per-user cap. An application without a
        declared share is refused (one line): the allocation is public and precommitted."""
        check_id(app, "app")
        if self.shares is None:
            return self.interface.caps
        share = self.shares.get(app)
        if share is None:
            raise InputError("app", "an application with a declared share of the per-user caps ([scopes.shares])", "an undeclared application")
        return share

    def remaining(self, user: str, app: str) -> dict[str, str]:
        """Attribute -> exact "p/q" that `app` may still spend for `user`: its scope's caps
        minus its own ledger (a function of its own released history only, C6); with a
        budget period, the current period's room."""
        scoped, _ = self._scope(user, app)
        ledgers = scoped.load().ledger_map()
        return {a: fraction_to_text(v) for a, v in remaining(ledgers, self.interface.caps).items()}

    def ledgers(self, user: str) -> list[dict[str, Any]]:
        """Every scope of `user` in the database (all epochs and periods): {"scope": {"user",
        "app" (None for the per-user scope), "epoch"[, "period"]}, "ledgers": {a: "p/q"},
        "caps": {a: "p/q"}}. The per-user row (with user caps) sums the current epoch's (and
        period's) application scopes and carries `guarantee()` as "over_epochs". With a
        budget period, each application row of the current period carries "over_periods":
        the composed bound k x share per attribute over the k periods elapsed, with the caveat."""
        check_id(user, "user")
        out = []
        total: dict[str, Fraction] = {a: Fraction(0) for a in self.interface.caps}
        opened = False
        period = self.period()
        report = self.guarantee() if period is not None or self.user_caps is not None else {}
        now = report.get("current_epoch")
        for interaction, spent, caps in self.ledger_store.user_ledgers(user):
            name = ScopeKey.parse(SessionKey(user, interaction))
            if name is None or (name.app is None and name.epoch == self.epoch and self.user_caps is not None):
                continue  # the current epoch's per-user row is the sum below
            scope: dict[str, Any] = {"user": user, "app": name.app, "epoch": name.epoch}
            if name.period is not None:
                scope["period"] = name.period
            current = name.epoch == self.epoch and name.period == period and name.app is not None
            if current and name.app is not None:
                opened = True
                for a, v in spent.items():
                    total[a] = total.get(a, Fraction(0)) + v
                if now is not None:  # k x share (or k x B_a) over the periods elapsed
                    composed = (now["per_share"] or {}).get(name.app) or now["per_application"]
                    scope["over_periods"] = {"periods": now["periods"], "composed": composed, "caveat": now["caveat"]}
            out.append(
                {
                    "scope": scope,
                    "ledgers": {a: fraction_to_text(v) for a, v in sorted(spent.items())},
                    "caps": {a: fraction_to_text(v) for a, v in sorted(caps.items())},
                }
            )
        if self.user_caps is not None and opened:  # the per-user total: the sum of this epoch's application scopes
            total_scope: dict[str, Any] = {"user": user, "app": None, "epoch": self.epoch, "over_epochs": report}
            if period is not None:
                total_scope["period"] = period
            out.append(
                {
                    "scope": total_scope,
                    "ledgers": {a: fraction_to_text(v) for a, v in sorted(total.items())},
                    "caps": {a: fraction_to_text(v) for a, v in sorted(self.user_caps.items())},
                }
            )
        return out

    def epochs(self) -> list[dict[str, Any]]:
        """The recorded binding log: every epoch start and every carried-over change."""
        return epoch_log(self.ledger_store)

    def guarantee(self) -> dict[str, Any]:
        """The total guarantee over every epoch started (the caps add up), and the epochs
        started over an unchanged interface (`fresh_budget_epochs`)."""
        now = None if self.interface.period is None else read_clock(self.clock)
        return epoch_guarantee(self.epochs(), self.interface, self.user_caps, now, self.shares)

    # ------------------------------------------------------------ turns
    def turn(
        self, user: str, app: str, interaction: str, query: str, respond: bool = True, turn_id: str | None = None
    ) -> AgentTurn:
        """Serve one free-text query of `app` for `user`. `respond=False`: no LLM call
        (response ""), for a framework that prompts its own model (runtime.langchain).
        `turn_id` (an idempotency key, [A-Za-z0-9._-]): the released views are stored under it
        with the charge; after `ChannelUnavailable` a retry with the same id regenerates
        from them at no new charge (in this process, or from the ledger store's rows)."""
        check_id(interaction, "interaction")
        text = _text_of_query(query)
        key = None if turn_id is None else (user, app, check_id(turn_id, "turn_id"))
        period = self.period()  # once per turn: the turn charges one period's scope
        scoped, base = self._scope_at(user, app, period)
        interface = self.interface
        durable = None if turn_id is None else durable_turn_id(scoped.scope, turn_id)
        with self._lock:
            found = None if key is None else self._recorded.get(key)
        # The turn's one load of its scope: the retry lookup, routing and planning all read it.
        loaded = scoped.load()
        if found is None and durable is not None:  # recorded by another process (a restart, a replica)
            found = recorded_turn(loaded, durable, text)
        if found is not None:  # a retry: regenerate from the recorded views, no new charge
            if found.query != text:
                raise InputError("turn_id", "the query of the turn it names (an idempotency key)", "another query")
            recorded = found
            ledgers = loaded.ledger_map()
        else:
            route = self.router.route(text, loaded.history)  # the released history (C4)
            if route.query is None:  # no match: generic views only, no memory read, no charge
                released = tuple((v.slot, v.generic) for v in interface.vocabularies)
                control: Any = None
                ledgers = loaded.ledger_map()
            else:
                with self._lock:
                    memory = self.memory.store(user)
                with scoped.turn_id(durable):  # the turn's rows are stored under the durable id
                    done = attrs.evolve(base, memory=memory).run_turn(route.query, loaded)
                released = done.record.views
                control = json_value(done.record.control)  # the one JSON converter (dpmem run --json too)
                ledgers = done.state.ledger_map(interface)
            recorded = RecordedTurn(query=text, route=route.query, released=tuple(released), control=control)
            if key is not None:
                with self._lock:
                    self._recorded[key] = recorded
                    while len(self._recorded) > MAX_RECORDED_TURNS:
                        del self._recorded[next(iter(self._recorded))]
        response = ""
        if respond:
            with self._lock:
                transcript = self._transcripts.setdefault((user, app), [])
                prefix = tuple(transcript)
            try:
                response = self.channel.respond(text, view_texts(interface, recorded.released), prefix)  # Eq. 2
            except Exception as error:
                retry = "retry with the same turn_id: no new charge" if key else "send a turn_id to retry at no new charge"
                raise ChannelUnavailable(f"llm channel {self.channel_name}", f"a channel that answers ({retry})", type(error).__name__) from None
            with self._lock:
                transcript.append((text, None, response))
                del transcript[:-16]
        left = {a: fraction_to_text(v) for a, v in remaining(ledgers, interface.caps).items()}
        return AgentTurn(
            query=text,
            route=recorded.route,
            response=response,
            control=recorded.control,
            remaining=left,
            interaction=interaction,
            views=dict(recorded.released),
            turn_id=turn_id or "",
            retried=found is not None,
        )

    # ------------------------------------------------------------ memory (trusted side)
    def _change_memory(self, change: Any) -> Any:
        with self._lock:
            trial = self.memory.copy()
            result = change(trial)  # every check runs on the copy: a refusal changes nothing
            trial.save()
            self.memory = trial
            return result

    def add_memory(self, user: str, slot: str, text: str, tags: list[str] | None = None) -> str:
        """Add a memory item to the next free position of `slot` (tagged by the tagger
        unless `tags` is given); returns its id. Over capacity -> InputError."""
        check_id(user, "user")
        return str(self._change_memory(lambda book: book.add(user, slot, text, tags)))

    def update_memory(self, user: str, item_id: str, text: str, tags: list[str] | None = None) -> None:
        check_id(user, "user")
        self._change_memory(lambda book: book.update(user, item_id, text, tags))

    def delete_memory(self, user: str, item_id: str) -> None:
        check_id(user, "user")
        self._change_memory(lambda book: book.delete(user, item_id))

    def view_texts(self, turn: AgentTurn) -> list[tuple[str, str]]:
        """(slot, view text) of a turn's released views: the public conditioning text."""
        return list(view_texts(self.interface, tuple(turn.views.items())))

    def memory_items(self, user: str) -> list[MemoryEntry]:
        """The user's memory items (trusted side only: never hand these to an application)."""
        check_id(user, "user")
        with self._lock:
            return self.memory.entries(user)

    def close(self) -> None:
        close = getattr(self.channel, "close", None)
        if callable(close):
            close()
        self.ledger_store.close()


__all__ = ["MAX_QUERY_CHARS", "AgentRuntime", "AgentTurn", "ChannelUnavailable"]
