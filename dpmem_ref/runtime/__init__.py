"""DP-MemView in front of a real agent: budget scopes, a free-text router, memory that
grows, an LLM channel. Built on the kernel's planner (`begin_turn` /
`plan_slot`, driven by `DurableSession.run_turn`) and ledger stores; no second copy of
Algorithm 1 or of the ledger. Light: stdlib + attrs + kernel; the MiniLM encoder,
transformers, httpx and langchain-core are imported only when a part that needs them is
chosen (extras `agent`, `langchain`). Guide: docs/agent.md.

API (stable; additions only)
----------------------------
    from dpmem_ref.runtime import AgentRuntime, AgentTurn, MemoryEntry, InputError

    rt = AgentRuntime.open(config, memory=None, store_url=None, llm="echo", seed=None,
                           user_caps=None, new_epoch=None, turn_deadline_s=0.05,
                           shares=None, check_channel=None, fresh_budget=False)
        config:    the agent file (TOML; `interface = "..."` plus [router], [tagger],
                   [scopes]; see examples/agent/assistant.toml)
        memory:    a JSONL memory file (one {"slot", "text", "user" | "public": true
                   [, "id", "tags", "position"]} per line: every item has one owner),
                   rewritten atomically by add/update/delete; None = in-memory only
        store_url: ledger store URL (dpmem_ref.ledger.urls: sqlite:///path, postgresql://...,
                   memory:); None = in-process memory store
        llm:       "echo" | "smollm2" | "hf:ID_OR_PATH" | "openai:URL#MODEL", or any object
                   with respond(query, views, prefix) -> str (the kernel's LLMChannel)
        seed:      None = OS entropy (deployment); an int = reproducible draws (tests)
        user_caps: None = the file's [scopes.user_caps]; a mapping attribute -> cap
                   (exact "p/q" text, int or Fraction) for the per-user scope across all
                   applications, served as per-application shares; False = none
        shares:    None = the file's [scopes.shares]; app -> {attribute: share}, each
                   share <= B_a, summing to at most U_a (required with user caps)
        new_epoch: None, or a reason (str): start a new recorded budget epoch when the
                   interface changed in a way that cannot carry the ledgers over
        turn_deadline_s: the kernel's release deadline of the mechanism part of a turn
                   (dpmem_ref.mechanism.timing); None = off (tests, benchmarks)
        check_channel: call the LLM channel once at start-up (ChannelUnavailable if it
                   fails); None = only for openai: endpoints
        fresh_budget: with new_epoch over an unchanged interface: reset every budget (logged)
        clock:     () -> seconds (default time.time): the public calendar time that selects
                   the budget period when the interface declares one (ledger.periods)
    rt.turn(user, app, interaction, query, respond=True, turn_id=None) -> AgentTurn
        turn_id: an idempotency key; after ChannelUnavailable a retry with the same id
        regenerates from the recorded views at no new charge
        respond=False: release the views without calling the LLM channel (response "")
        AgentTurn: query, route (catalogue query name or None), response (str),
        control (JSON-able), remaining ({attribute: "p/q"} this app may still spend
        for this user: its scope's caps minus its own ledger), interaction, views
        ({slot: view name}), turn_id, retried;
        .to_json() -> dict (one `dpmem chat` output line)
    rt.add_memory(user, slot, text, tags=None) -> str           (the item id)
    rt.update_memory(user, item_id, text, tags=None) -> None
    rt.delete_memory(user, item_id) -> None
    rt.memory_items(user) -> list[MemoryEntry]                  (trusted side only)
    rt.ledgers(user) -> list[dict]   every scope of that user:
        {"scope": {"user", "app" | None, "epoch"}, "ledgers": {a: "p/q"}, "caps": {a: "p/q"}}
    rt.remaining(user, app) -> dict[str, str]   (with a period: the current period's room)
    rt.period() -> int | None        the current budget period (None: no period declared)
    rt.epochs() -> list[dict]        the recorded binding log (epochs, carried-over changes)
    rt.guarantee() -> dict           the total guarantee over epochs and periods, fresh-budget
                                     epochs; with a period, "current_epoch": k x share,
                                     k x B_a, k x U_a, one line each with the caveat
    rt.share(app) -> caps            the caps of `app`'s scopes (its share, or B_a)
    rt.view_texts(turn) -> [(slot, view text)]   the public conditioning text of a turn
    rt.interface -> the kernel Interface served (the one the auditor audits)
    rt.close()

Errors: bad input raises the kernel's `InputError` (one line naming the field; memory
text is never echoed); a failed LLM channel raises `ChannelUnavailable` (an InputError
naming the channel); ledger store failures raise `LedgerStoreError` (one line).
Memory is per subject: each user id has its own store over the interface's layout (its
own items and the public ones; ids are compared exactly). Ids (user, app, interaction) are 1..128 of
[A-Za-z0-9._-]. Thread-safe for concurrent turns of different scopes (the stores lock;
memory changes are serialised). Modules: scopes, router, tagger, similarity, memory,
settings, langchain (the adapter); the binding of a database to the interface (epochs, the
evolution rules, budget periods) is the ledger's (`dpmem_ref.ledger.epochs`, `evolution`,
`periods`); `dpmem chat` is dpmem_ref.cli.chat.

May import: every floor up to `audit/` (heavy parts, the MiniLM encoder and SmolLM2, only through the channel registry's entry points).
"""

from dpmem_ref.core.lazy import TYPE_CHECKING, attach

if TYPE_CHECKING:
    from dpmem_ref.core.errors import InputError
    from dpmem_ref.ledger.contract import LedgerStoreError
    from dpmem_ref.runtime.agent import AgentRuntime, AgentTurn, ChannelUnavailable
    from dpmem_ref.runtime.memory import MemoryEntry

# defining module -> the public names it gives this face (imported on first use)
_MODULES = {
    "dpmem_ref.core.errors": ("InputError",),
    "dpmem_ref.ledger.contract": ("LedgerStoreError",),
    "dpmem_ref.runtime.agent": ("AgentRuntime", "AgentTurn", "ChannelUnavailable"),
    "dpmem_ref.runtime.memory": ("MemoryEntry",),
}

__all__ = ["AgentRuntime", "AgentTurn", "ChannelUnavailable", "InputError", "LedgerStoreError", "MemoryEntry"]

__getattr__, __dir__ = attach(__name__, _MODULES, __all__)
