"""The auditor's engine behind `dpmem check` and `dpmem audit` (DESIGN.md, "Command line"; the
commands themselves are parsed in `dpmem_ref.cli.audit`).

- `check`: the static contract (C1-C6) with Eq. (6) proved (`dpmem_ref.audit.check`);
- `audit`: the verdict for two stores (`adjacency`: kappa and its cover; `verdict`: the
  exact worst case, certificate and witness);
- `render`: text and JSON output.

Exit codes (`dpmem audit`): 0 the bound holds and the contract C1-C6 holds; 1 the bound is
broken or not certified, or a contract violation (`dpmem check` would report it) leaves the
bound unguaranteed beyond the audited horizon; 2 malformed input; 3 no guarantee applies
(the stores differ outside every protected group, kappa = inf). `dpmem check`: 0 ok, 1
violations, 2 malformed input.
"""

from __future__ import annotations

from dpmem_ref.audit.adjacency import Adjacency, decide_adjacency
from dpmem_ref.audit.check import CheckReport, charged_reads, check_interface, sensitivity_violations
from dpmem_ref.audit.render import audit_json, audit_text, check_text
from dpmem_ref.audit.verdict import (
    AuditReport,
    CoverVerdict,
    audit,
    certify,
)
from dpmem_ref.core.exits import EXIT_BAD_INPUT, EXIT_NO_GUARANTEE, EXIT_OK, EXIT_VIOLATION

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_NO_GUARANTEE",
    "EXIT_OK",
    "EXIT_VIOLATION",
    "Adjacency",
    "AuditReport",
    "CheckReport",
    "CoverVerdict",
    "audit",
    "audit_json",
    "audit_text",
    "certify",
    "charged_reads",
    "check_interface",
    "check_text",
    "decide_adjacency",
    "sensitivity_violations",
]
