"""Compatibility re-exports: the interface's types now live in `dpmem_ref.core`,
`dpmem_ref.parts` and `dpmem_ref.contract`. Import from the top-level `dpmem_ref`."""

from dpmem_ref.contract import Violation
from dpmem_ref.core.interface import ChargePlan, Interface, fallback_distribution
from dpmem_ref.core.transcript import PublicPrefix, Query, SlotRead, TurnRecord
from dpmem_ref.parts.broken import (
    ArgmaxSelector,
    FallbackHook,
    NoCap,
    PrivateHooks,
    RawEvidenceControl,
    RoutingHook,
    TopScoreControl,
    VocabularyHook,
)
from dpmem_ref.parts.caps import ProspectiveCap
from dpmem_ref.parts.controls import FallbackControl, NoControl
from dpmem_ref.parts.protocols import CapRule, ControlContext, ControlRule, PrivateTurnData, Router, Selector
from dpmem_ref.parts.routers import FixedRouter
from dpmem_ref.parts.selectors import ExponentialMechanismSelector

__all__ = [
    "ArgmaxSelector",
    "CapRule",
    "ChargePlan",
    "ControlContext",
    "ControlRule",
    "ExponentialMechanismSelector",
    "FallbackControl",
    "FallbackHook",
    "FixedRouter",
    "Interface",
    "NoCap",
    "NoControl",
    "PrivateHooks",
    "PrivateTurnData",
    "ProspectiveCap",
    "PublicPrefix",
    "Query",
    "RawEvidenceControl",
    "Router",
    "RoutingHook",
    "Selector",
    "SlotRead",
    "TopScoreControl",
    "TurnRecord",
    "Violation",
    "VocabularyHook",
    "fallback_distribution",
]
