"""The exit status of every `dpmem` command, defined once.

The command line (`dpmem_ref.cli`, the only place that exits) exits with these; `dpmem audit`'s
report repeats its status as `exit_code` (dpmem_ref.audit.verdict), which is why they live on
the ground floor rather than in cli/.
"""

from __future__ import annotations

EXIT_OK = 0
"""Success: the contract holds, the bound holds, the ledger verifies."""
EXIT_VIOLATION = 1
"""Contract violations; a bound broken or not certified; a verified ledger breaks an invariant."""
EXIT_BAD_INPUT = 2
"""Malformed input or an unusable store: one line on stderr, never a traceback."""
EXIT_NO_GUARANTEE = 3
"""`dpmem audit` of a pair no guarantee applies to (the stores differ outside every group)."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C)."""
