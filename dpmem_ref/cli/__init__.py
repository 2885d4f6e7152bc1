"""The command line: the only place in the kernel that parses arguments, prints errors and
exits (exit codes: `dpmem_ref.core.exits`; the one error printer: `dpmem_ref.cli.errors`).

- `dpmem`: the `dpmem` program (`main`, `build_parser`) and `dpmem run`;
- `audit`: `dpmem check` and `dpmem audit`; `ledger`: `dpmem ledger ...` and `--store-url`;
- `chat`: `dpmem chat`; `serve`: `dpmem serve` and its replica supervisor.

Nothing else imports this package; the console script `dpmem` (pyproject.toml) and
`python -m dpmem_ref.cli` are its entry points.

May import: every floor (nothing imports it but its entry points).
"""

from dpmem_ref.cli.dpmem import main

__all__ = ["main"]
