"""DP-MemView in front of a real agent: budget scopes, a free-text router, memory that
grows, an LLM channel (issue 23). Built on the kernel's planner (`begin_turn` /
`plan_slot`, driven by `DurableSession.run_turn`) and ledger stores; no second copy of
Algorithm 1 or of the ledger. Light: stdlib + attrs + kernel; the MiniLM encoder,
transformers, httpx and langchain-core are imported only when a part that needs them is
chosen (extras `agent`, `langchain`). Guide: docs/agent.md.

API (stable; additions only)
----------------------------
    from dpmem_ref.runtime import AgentRuntime, AgentTurn, MemoryEntry, InputError

    rt = AgentRuntime.open(config, memory=None, store_url=None, llm="echo", seed=None,
                           user_caps=None, new_epoch=None, turn_deadline_s=0.05)
        config:    the agent file (TOML; `interface = "..."` plus [router], [tagger],
                   [scopes]; see examples/agent/assistant.toml)
        memory:    a JSONL memory file (one {"slot", "text"[, "id", "tags"]} per line),
                   rewritten atomically by add/update/delete; None = in-memory only
        store_url: ledger store URL (dpmem_ref.ledger.urls: sqlite:///path, postgresql://...,
                   memory:); None = in-process memory store
        llm:       "echo" | "smollm2" | "hf:ID_OR_PATH" | "openai:URL#MODEL", or any object
                   with respond(query, views, prefix) -> str (the kernel's LLMChannel)
        seed:      None = OS entropy (deployment); an int = reproducible draws (tests)
        user_caps: None = the file's [scopes.user_caps]; a mapping attribute -> cap
                   (exact "p/q" text, int or Fraction) for the per-user scope across all
                   applications; False = no per-user scope
        new_epoch: None, or a reason (str): start a new recorded budget epoch when the
                   interface changed in a way that cannot carry the ledgers over
        turn_deadline_s: the kernel's release deadline of the mechanism part of a turn
                   (dpmem_ref.mechanism.timing); None = off (tests, benchmarks)
    rt.turn(user, app, interaction, query, respond=True) -> AgentTurn
        respond=False: release the views without calling the LLM channel (response "")
        AgentTurn: query, route (catalogue query name or None), response (str),
        control (JSON-able), remaining ({attribute: "p/q"} this app may still spend
        for this user: min over its scopes), interaction, views ({slot: view name});
        .to_json() -> dict (one `dpmem chat` output line)
    rt.add_memory(user, slot, text, tags=None) -> str           (the item id)
    rt.update_memory(user, item_id, text, tags=None) -> None
    rt.delete_memory(user, item_id) -> None
    rt.memory_items(user) -> list[MemoryEntry]                  (trusted side only)
    rt.ledgers(user) -> list[dict]   every scope of that user:
        {"scope": {"user", "app" | None, "epoch"}, "ledgers": {a: "p/q"}, "caps": {a: "p/q"}}
    rt.remaining(user, app) -> dict[str, str]
    rt.epochs() -> list[dict]        the recorded binding log (epochs, carried-over changes)
    rt.view_texts(turn) -> [(slot, view text)]   the public conditioning text of a turn
    rt.interface -> the kernel Interface served (the one the auditor audits)
    rt.close()

Errors: bad input raises the kernel's `InputError` (one line naming the field; memory
text is never echoed); ledger store failures raise `LedgerStoreError` (one line).
Memory is per user: each user id has its own store over the interface's layout (items
without a "user" belong to every user). Ids (user, app, interaction) are 1..128 of
[A-Za-z0-9._-]. Thread-safe for concurrent turns of different scopes (the stores lock;
memory changes are serialised). Modules: scopes, router, tagger, similarity, memory,
evolution, binding, settings, langchain (the adapter); `dpmem chat` is dpmem_ref.cli.chat.
"""

from dpmem_ref.core.lazy import TYPE_CHECKING, attach

if TYPE_CHECKING:
    from dpmem_ref.core.errors import InputError
    from dpmem_ref.ledger.contract import LedgerStoreError
    from dpmem_ref.runtime.agent import AgentRuntime, AgentTurn
    from dpmem_ref.runtime.memory import MemoryEntry

# defining module -> the public names it gives this face (imported on first use)
_MODULES = {
    "dpmem_ref.core.errors": ("InputError",),
    "dpmem_ref.ledger.contract": ("LedgerStoreError",),
    "dpmem_ref.runtime.agent": ("AgentRuntime", "AgentTurn"),
    "dpmem_ref.runtime.memory": ("MemoryEntry",),
}

__all__ = ["AgentRuntime", "AgentTurn", "InputError", "LedgerStoreError", "MemoryEntry"]

__getattr__, __dir__ = attach(__name__, _MODULES, __all__)
