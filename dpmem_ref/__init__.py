"""dpmem_ref: the exact, contract-checked DP-MemView kernel (paper: DP-MemView).

One turn of Algorithm 1 is driven by one planner (`begin_turn` -> `TurnCursor`), which
the runner (`run_turn`), the durable session, the exact engine and the proofs all drive;
`plan_slot` gives the exact description of every slot-level release.

Packages: `core` (transcript types, the interface record, exact ledgers, `fmt`), `parts`
(part protocols with declared capabilities; routers, selectors, cap rules, controls;
`parts.broken` for the contract-breaking variants), `turn` (plan, planner, runner,
channel), `contract` (the static check of Definition 1, violations with codes).

The names below are imported on first use (PEP 562): `import dpmem_ref` loads none of the
kernel, so that a program (and `dpmem --help`) pays only for the parts it touches.
"""

from dpmem_ref.core.lazy import TYPE_CHECKING, attach

if TYPE_CHECKING:
    from dpmem_ref.budget import BudgetRule, OnlineBudget, PreallocatedBudget
    from dpmem_ref.config import InterfaceFile, interface_from_dict, load_interface_file
    from dpmem_ref.contract import Violation
    from dpmem_ref.core.fmt import decimal_text, fraction_text
    from dpmem_ref.core.interface import Interface
    from dpmem_ref.core.transcript import PublicPrefix, Query, SlotRead, TurnRecord
    from dpmem_ref.cover import Cover, minimum_cover
    from dpmem_ref.errors import VIOLATION_CODES, ContractViolation, InputError
    from dpmem_ref.mechanism import (
        ExponentialWeights,
        PointMass,
        bernoulli_exp_minus,
        exponential_mechanism,
    )
    from dpmem_ref.parts.broken import ArgmaxSelector, NoCap, PrivateHooks, RawEvidenceControl, TopScoreControl
    from dpmem_ref.parts.caps import ProspectiveCap
    from dpmem_ref.parts.controls import FallbackControl, NoControl
    from dpmem_ref.parts.protocols import CapRule, ControlContext, ControlRule, PrivateTurnData, Router, Selector
    from dpmem_ref.parts.routers import FixedRouter
    from dpmem_ref.parts.selectors import ExponentialMechanismSelector
    from dpmem_ref.policy import (
        Attribute,
        Layout,
        MemoryItem,
        Policy,
        Store,
        adjacent_attributes,
        differing_positions,
        is_adjacent,
    )
    from dpmem_ref.randomness import (
        RandomSource,
        RecordingSource,
        SeededRandomSource,
        SystemRandomSource,
        TapeSource,
    )
    from dpmem_ref.scoring import FunctionScorer, LinearTagScorer, LinearWeights, Scorer
    from dpmem_ref.turn import (
        InterfaceState,
        LLMChannel,
        SlotPlan,
        TemplateChannel,
        TurnCursor,
        TurnResult,
        begin_turn,
        plan_slot,
        run_interaction,
        run_turn,
    )
    from dpmem_ref.views import View, Vocabulary

__version__ = "0.1.0"

# defining module -> the public names it gives the face (imported on first use)
_MODULES = {
    "dpmem_ref.budget": ("BudgetRule", "OnlineBudget", "PreallocatedBudget"),
    "dpmem_ref.config": ("InterfaceFile", "interface_from_dict", "load_interface_file"),
    "dpmem_ref.contract": ("Violation",),
    "dpmem_ref.core.fmt": ("decimal_text", "fraction_text"),
    "dpmem_ref.core.interface": ("Interface",),
    "dpmem_ref.core.transcript": ("PublicPrefix", "Query", "SlotRead", "TurnRecord"),
    "dpmem_ref.cover": ("Cover", "minimum_cover"),
    "dpmem_ref.errors": ("ContractViolation", "InputError", "VIOLATION_CODES"),
    "dpmem_ref.mechanism": ("ExponentialWeights", "PointMass", "bernoulli_exp_minus", "exponential_mechanism"),
    "dpmem_ref.parts.broken": ("ArgmaxSelector", "NoCap", "PrivateHooks", "RawEvidenceControl", "TopScoreControl"),
    "dpmem_ref.parts.caps": ("ProspectiveCap",),
    "dpmem_ref.parts.controls": ("FallbackControl", "NoControl"),
    "dpmem_ref.parts.protocols": ("CapRule", "ControlContext", "ControlRule", "PrivateTurnData", "Router", "Selector"),
    "dpmem_ref.parts.routers": ("FixedRouter",),
    "dpmem_ref.parts.selectors": ("ExponentialMechanismSelector",),
    "dpmem_ref.policy": (
        "Attribute",
        "Layout",
        "MemoryItem",
        "Policy",
        "Store",
        "adjacent_attributes",
        "differing_positions",
        "is_adjacent",
    ),
    "dpmem_ref.randomness": (
        "RandomSource",
        "RecordingSource",
        "SeededRandomSource",
        "SystemRandomSource",
        "TapeSource",
    ),
    "dpmem_ref.scoring": ("FunctionScorer", "LinearTagScorer", "LinearWeights", "Scorer"),
    "dpmem_ref.turn": (
        "InterfaceState",
        "LLMChannel",
        "SlotPlan",
        "TemplateChannel",
        "TurnCursor",
        "TurnResult",
        "begin_turn",
        "plan_slot",
        "run_interaction",
        "run_turn",
    ),
    "dpmem_ref.views": ("View", "Vocabulary"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "ArgmaxSelector",
    "Attribute",
    "BudgetRule",
    "CapRule",
    "ContractViolation",
    "ControlContext",
    "ControlRule",
    "Cover",
    "ExponentialMechanismSelector",
    "ExponentialWeights",
    "FallbackControl",
    "FixedRouter",
    "FunctionScorer",
    "InputError",
    "Interface",
    "InterfaceFile",
    "InterfaceState",
    "LLMChannel",
    "Layout",
    "LinearTagScorer",
    "LinearWeights",
    "MemoryItem",
    "NoCap",
    "NoControl",
    "OnlineBudget",
    "PointMass",
    "Policy",
    "PreallocatedBudget",
    "PrivateHooks",
    "PrivateTurnData",
    "ProspectiveCap",
    "PublicPrefix",
    "Query",
    "RandomSource",
    "RawEvidenceControl",
    "RecordingSource",
    "Router",
    "Scorer",
    "SeededRandomSource",
    "Selector",
    "SlotPlan",
    "SlotRead",
    "Store",
    "SystemRandomSource",
    "TapeSource",
    "TemplateChannel",
    "TopScoreControl",
    "TurnCursor",
    "TurnRecord",
    "TurnResult",
    "VIOLATION_CODES",
    "View",
    "Violation",
    "Vocabulary",
    "adjacent_attributes",
    "begin_turn",
    "bernoulli_exp_minus",
    "decimal_text",
    "differing_positions",
    "exponential_mechanism",
    "fraction_text",
    "interface_from_dict",
    "is_adjacent",
    "load_interface_file",
    "minimum_cover",
    "plan_slot",
    "run_interaction",
    "run_turn",
]


__getattr__, __dir__ = attach(__name__, _MODULES, __all__)
