"""dpmem_ref: the exact, contract-checked DP-MemView kernel (paper: DP-MemView).

One turn of Algorithm 1 is a pure function (`run_turn`); `plan_slot` gives the exact
description of every slot-level release, which the exact sampler, the exact engine
(`dpmem_ref.analysis`), the proofs and the counterexamples all consume.
"""

from dpmem_ref.budget import BudgetRule, OnlineBudget, PreallocatedBudget
from dpmem_ref.config import InterfaceFile, interface_from_dict, load_interface_file
from dpmem_ref.cover import Cover, minimum_cover
from dpmem_ref.errors import ContractViolation, InputError
from dpmem_ref.interface import (
    ArgmaxSelector,
    ControlContext,
    ExponentialMechanismSelector,
    FallbackControl,
    FixedRouter,
    Interface,
    NoCap,
    NoControl,
    PrivateHooks,
    ProspectiveCap,
    PublicPrefix,
    Query,
    RawEvidenceControl,
    SlotRead,
    TopScoreControl,
    TurnRecord,
    Violation,
)
from dpmem_ref.mechanism import (
    ExponentialWeights,
    PointMass,
    bernoulli_exp_minus,
    exponential_mechanism,
)
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
    TurnResult,
    plan_slot,
    run_interaction,
    run_turn,
)
from dpmem_ref.views import View, Vocabulary

__version__ = "0.1.0"

__all__ = [
    "ArgmaxSelector",
    "Attribute",
    "BudgetRule",
    "ContractViolation",
    "ControlContext",
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
    "ProspectiveCap",
    "PublicPrefix",
    "Query",
    "RandomSource",
    "RawEvidenceControl",
    "RecordingSource",
    "Scorer",
    "SeededRandomSource",
    "SlotPlan",
    "SlotRead",
    "Store",
    "SystemRandomSource",
    "TapeSource",
    "TemplateChannel",
    "TopScoreControl",
    "TurnRecord",
    "TurnResult",
    "View",
    "Violation",
    "Vocabulary",
    "adjacent_attributes",
    "bernoulli_exp_minus",
    "differing_positions",
    "exponential_mechanism",
    "interface_from_dict",
    "is_adjacent",
    "load_interface_file",
    "minimum_cover",
    "plan_slot",
    "run_interaction",
    "run_turn",
]
