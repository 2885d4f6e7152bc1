"""dpmem_ref: the exact, contract-checked DP-MemView kernel (paper: DP-MemView).

One turn of Algorithm 1 is driven by one planner (`begin_turn` -> `TurnCursor`), which
the runner (`run_turn`), the durable session, the exact engine and the proofs all drive;
`plan_slot` gives the exact description of every slot-level release.

The one public face: every public name is importable from here; kernel modules import the
defining modules instead. Floors, bottom first (docs/development.md, "Layers"): `core`
(errors, exact rationals, transcript, ledgers, policy, views), `mechanism` (the EM, its exact
tables, randomness, timing), `parts` (every part behind its protocol, budget rules and scorers
included), `interface` (the Interface record), `contract` (the static check of Definition 1),
`ledger`, `turn` (plan, planner, runner, channel, durable session), `analysis`, `config`,
`audit`, `runtime`, `serve`, and `cli` (the command line).

The names below are imported on first use (PEP 562): `import dpmem_ref` loads none of the
kernel, so that a program (and `dpmem --help`) pays only for the parts it touches.
"""

from dpmem_ref.core.lazy import TYPE_CHECKING, attach
from dpmem_ref.core.version import __version__ as __version__

if TYPE_CHECKING:
    from dpmem_ref.audit.cover import Cover, minimum_cover
    from dpmem_ref.config.load import InterfaceFile, interface_from_dict, load_interface_file
    from dpmem_ref.core.errors import VIOLATION_CODES, ContractViolation, InputError, Violation
    from dpmem_ref.core.policy import (
        Attribute,
        Layout,
        MemoryItem,
        Policy,
        Store,
        adjacent_attributes,
        differing_positions,
        is_adjacent,
    )
    from dpmem_ref.core.rational import decimal_text, fraction_text
    from dpmem_ref.core.transcript import PublicPrefix, Query, SlotRead, TurnRecord
    from dpmem_ref.core.views import View, Vocabulary
    from dpmem_ref.interface import Interface
    from dpmem_ref.mechanism.bernoulli import bernoulli_exp_minus
    from dpmem_ref.mechanism.construction import exponential_mechanism
    from dpmem_ref.mechanism.em import ExponentialWeights, PointMass
    from dpmem_ref.mechanism.randomness import (
        RandomSource,
        RecordingSource,
        SeededRandomSource,
        SystemRandomSource,
        TapeSource,
    )
    from dpmem_ref.parts.broken import ArgmaxSelector, NoCap, PrivateHooks, RawEvidenceControl, TopScoreControl
    from dpmem_ref.parts.budget import BudgetRule, OnlineBudget, PreallocatedBudget
    from dpmem_ref.parts.caps import ProspectiveCap
    from dpmem_ref.parts.controls import FallbackControl, NoControl
    from dpmem_ref.parts.protocols import CapRule, ControlContext, ControlRule, PrivateTurnData, Router, Selector
    from dpmem_ref.parts.reuse import ReusePolicy, ReuseRule
    from dpmem_ref.parts.routers import FixedRouter
    from dpmem_ref.parts.scoring import FunctionScorer, LinearTagScorer, LinearWeights, Scorer
    from dpmem_ref.parts.selectors import ExponentialMechanismSelector
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

# defining module -> the public names it gives the face (imported on first use)
_MODULES = {
    "dpmem_ref.audit.cover": ("Cover", "minimum_cover",),
    "dpmem_ref.config.load": ("InterfaceFile", "interface_from_dict", "load_interface_file",),
    "dpmem_ref.core.errors": ("VIOLATION_CODES", "ContractViolation", "InputError", "Violation",),
    "dpmem_ref.core.policy": (
        "Attribute",
        "Layout",
        "MemoryItem",
        "Policy",
        "Store",
        "adjacent_attributes",
        "differing_positions",
        "is_adjacent",
    ),
    "dpmem_ref.core.rational": ("decimal_text", "fraction_text",),
    "dpmem_ref.core.transcript": ("PublicPrefix", "Query", "SlotRead", "TurnRecord",),
    "dpmem_ref.core.views": ("View", "Vocabulary",),
    "dpmem_ref.interface": ("Interface",),
    "dpmem_ref.mechanism.bernoulli": ("bernoulli_exp_minus",),
    "dpmem_ref.mechanism.construction": ("exponential_mechanism",),
    "dpmem_ref.mechanism.em": ("ExponentialWeights", "PointMass",),
    "dpmem_ref.mechanism.randomness": (
        "RandomSource",
        "RecordingSource",
        "SeededRandomSource",
        "SystemRandomSource",
        "TapeSource",
    ),
    "dpmem_ref.parts.broken": ("ArgmaxSelector", "NoCap", "PrivateHooks", "RawEvidenceControl", "TopScoreControl",),
    "dpmem_ref.parts.budget": ("BudgetRule", "OnlineBudget", "PreallocatedBudget",),
    "dpmem_ref.parts.caps": ("ProspectiveCap",),
    "dpmem_ref.parts.controls": ("FallbackControl", "NoControl",),
    "dpmem_ref.parts.protocols": ("CapRule", "ControlContext", "ControlRule", "PrivateTurnData", "Router", "Selector",),
    "dpmem_ref.parts.reuse": ("ReusePolicy", "ReuseRule",),
    "dpmem_ref.parts.routers": ("FixedRouter",),
    "dpmem_ref.parts.scoring": ("FunctionScorer", "LinearTagScorer", "LinearWeights", "Scorer",),
    "dpmem_ref.parts.selectors": ("ExponentialMechanismSelector",),
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
}

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
    "ReusePolicy",
    "ReuseRule",
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
