"""Algorithm 1: the slot plan, the turn planner, the runner, the LLM channel and the durable session.

- `plan`: `plan_slot`, the one exact description of a slot-level release (`SlotPlan`);
- `caches`: `PlanCaches`, the planner's memoized steps (routes, read sets, selections), one per interface;
- `planner`: `begin_turn` / `TurnCursor`, the one turn loop every consumer drives;
- `record`: `observe_control` / `turn_record`, the control signal and the record of a turn;
- `runner`: `run_turn` / `run_interaction`, sampling through the planner;
- `channel`: where the LLM channel (Eq. 2, `dpmem_ref.channel`) is called; `state`: `InterfaceState`;
- `durable`: `DurableSession`, the turn loop over a ledger store (C5 across processes).

May import: `core/`, `channel/`, `mechanism/`, `parts/`, `interface`, `contract`, `ledger/`.
"""

from dpmem_ref.channel.protocol import LLMChannel
from dpmem_ref.channel.standin import TemplateChannel
from dpmem_ref.core.ledgers import Ledgers
from dpmem_ref.turn.channel import respond, view_texts
from dpmem_ref.turn.plan import SlotPlan, TurnFrame, active_slots, plan_slot, plan_units, zero_ledgers
from dpmem_ref.turn.planner import TurnCursor, begin_turn
from dpmem_ref.turn.record import observe_control, turn_record
from dpmem_ref.turn.runner import TurnResult, run_interaction, run_turn
from dpmem_ref.turn.state import InterfaceState

__all__ = [
    "InterfaceState",
    "LLMChannel",
    "Ledgers",
    "SlotPlan",
    "TemplateChannel",
    "TurnCursor",
    "TurnFrame",
    "TurnResult",
    "active_slots",
    "begin_turn",
    "observe_control",
    "plan_slot",
    "plan_units",
    "respond",
    "run_interaction",
    "run_turn",
    "turn_record",
    "view_texts",
    "zero_ledgers",
]
